. .gpu/setup.sh
L=/tmp/logs20b; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t20b-data STITCH_CACHE_DIR=/tmp/t20b-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t20b
timeout 100 python3 -m pytest -v --tb=short --timeout 90 -p no:cacheprovider tests/test_sandbox.py -k "widen or every_process_it_starts" > $L/cpuset_tests.log 2>&1
echo "cpuset tests rc $?"; tail -1 $L/cpuset_tests.log
timeout 120 python3 -m pytest -v --tb=short --timeout 100 -p no:cacheprovider tests/test_adversarial.py -k "other_room or punches or lean_door or test_door" tests/test_door.py > $L/rooms_tests.log 2>&1
echo "room buffer tests rc $?"; grep -E "PASSED|FAILED|SKIPPED|ERROR|^E " $L/rooms_tests.log | cut -c1-250; tail -1 $L/rooms_tests.log
timeout 400 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_adversarial.py tests/test_zygote.py tests/test_gpu_memory.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs20b.tgz -C /tmp logs20b
