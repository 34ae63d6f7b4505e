. .gpu/setup.sh
L=/tmp/logs22a; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt; uptime | tee -a $L/machine.txt; nproc >> $L/machine.txt
export STITCH_DATA_DIR=/tmp/t22a-data STITCH_CACHE_DIR=/tmp/t22a-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t22a
timeout 150 python3 -m pytest -v --tb=short --timeout 120 -p no:cacheprovider tests/test_door.py tests/test_adversarial.py -k "other_room or punches or more_cheaply or harness or door" > $L/rooms_tests.log 2>&1
echo "room tests rc $?"; grep -E "FAILED|ERROR|^E " $L/rooms_tests.log | cut -c1-250; tail -1 $L/rooms_tests.log
timeout 300 python3 -m pytest -m gpu -v --tb=long --timeout 280 -p no:cacheprovider tests/test_check_gpu.py tests/test_adversarial.py tests/test_zygote.py tests/test_gpu_memory.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
for i in 1 2 3; do
timeout 100 python3 -m pytest -v --tb=long --timeout 90 -p no:cacheprovider tests/test_adversarial.py -k "gpu_forged_event_times or gpu_honest_short" -o log_cli=false > $L/short_rep$i.log 2>&1
echo "short rep $i rc $?"; grep -E "PASSED|FAILED" $L/short_rep$i.log | cut -c1-200
done
tar czf $OUT/logs22a.tgz -C /tmp logs22a
