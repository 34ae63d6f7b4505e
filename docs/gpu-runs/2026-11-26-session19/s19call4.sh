. .gpu/setup.sh
L=/tmp/logs19d; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t19d-data STITCH_CACHE_DIR=/tmp/t19d-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t19d
timeout 540 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_worker.py tests/test_faults_gpu.py tests/test_rubric_gpu.py tests/test_profiling_gpu.py tests/test_compare_context.py tests/test_check_tolerance.py tests/test_ceilings.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-250 | tail -30
tail -1 $L/gpu_tests.log
tar czf $OUT/logs19d.tgz -C /tmp logs19d
