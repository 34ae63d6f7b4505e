. .gpu/setup.sh
L=/tmp/logs21d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
git log --oneline -1 > $L/commit.txt 2>/dev/null
export STITCH_DATA_DIR=/tmp/t21d-data STITCH_CACHE_DIR=/tmp/t21d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t21d
timeout 150 python3 -m pytest -v --tb=short --timeout 120 -p no:cacheprovider tests/test_door.py tests/test_adversarial.py -k "other_room or punches or more_cheaply or harness or door" > $L/rooms_tests.log 2>&1
echo "room tests rc $?"; grep -E "PASSED|FAILED|SKIPPED|ERROR|^E " $L/rooms_tests.log | cut -c1-250; tail -1 $L/rooms_tests.log
timeout 330 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_adversarial.py tests/test_zygote.py tests/test_gpu_memory.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs21d.tgz -C /tmp logs21d
tar czf $OUT/logs21d.tgz -C /tmp logs21d
