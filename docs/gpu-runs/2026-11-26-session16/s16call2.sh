. .gpu/setup.sh
L=/tmp/logs2; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
EVAL_TIMEOUT_S=${EVAL_T:-290} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -14
sed -n '/not passed/,$p' $L/eval_console.log | head -8
STITCH_DATA_DIR=/tmp/g2-data STITCH_CACHE_DIR=/tmp/g2-cache timeout 250 python3 -m pytest -m gpu -v --tb=long --timeout 240 -p no:cacheprovider tests/test_check_gpu.py tests/test_ceilings.py tests/test_check_tolerance.py tests/test_compare_context.py > $L/gpu_tests_a.log 2>&1
echo "gpu tests a rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests_a.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -30
tail -2 $L/gpu_tests_a.log
tar czf $OUT/logs2.tgz -C /tmp logs2
