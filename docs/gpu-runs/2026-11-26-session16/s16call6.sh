. .gpu/setup.sh
L=/tmp/logs6; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t6-data STITCH_CACHE_DIR=/tmp/t6-cache
timeout 150 python3 -m pytest -m gpu -v --tb=long --timeout 140 -p no:cacheprovider tests/test_faults_gpu.py -k never_ends > $L/gpu_tests_faults.log 2>&1
echo "faults rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_faults.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -5
timeout 380 python3 -m pytest -m gpu -v --tb=long --timeout 250 -p no:cacheprovider tests/test_check_gpu.py tests/test_rubric_gpu.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -24
tail -1 $L/gpu_tests.log
nvidia-smi --query-gpu=memory.used --format=csv,noheader | tee $L/mem_after.txt
tar czf $OUT/logs6.tgz -C /tmp logs6
