. .gpu/setup.sh
L=/tmp/logs4; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export STITCH_DATA_DIR=/tmp/t4-data STITCH_CACHE_DIR=/tmp/t4-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t4
timeout 380 python3 -m pytest -m gpu -v --tb=long --timeout 300 -p no:cacheprovider tests/test_check_gpu.py tests/test_compare_context.py tests/test_check_tolerance.py tests/test_ceilings.py tests/test_worker.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
tail -1 $L/gpu_tests.log
tar czf $OUT/logs4.tgz -C /tmp logs4
