. .gpu/setup.sh
L=/tmp/logs8; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
python3 -m stitch_mcp doctor > $L/doctor.txt 2>&1; grep -i -A2 "isolation" $L/doctor.txt | head -8
export STITCH_DATA_DIR=/tmp/t8-data STITCH_CACHE_DIR=/tmp/t8-cache
timeout 300 python3 -m pytest -m gpu -v --tb=long --timeout 200 -p no:cacheprovider tests/test_ceilings.py tests/test_check_tolerance.py tests/test_compare_context.py tests/test_profiling_gpu.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -12
tail -1 $L/gpu_tests.log
tar czf $OUT/logs8.tgz -C /tmp logs8
