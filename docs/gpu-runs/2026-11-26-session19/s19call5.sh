. .gpu/setup.sh
L=/tmp/logs19e; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t19e-data STITCH_CACHE_DIR=/tmp/t19e-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t19e
timeout 100 python3 -m pytest -v --tb=short --timeout 90 -p no:cacheprovider tests/test_sandbox.py -k "widen or every_process_it_starts" > $L/cpuset_tests.log 2>&1
echo "cpuset tests rc $?"; tail -1 $L/cpuset_tests.log
timeout 440 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_adversarial.py tests/test_zygote.py tests/test_gpu_memory.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs19e.tgz -C /tmp logs19e
