. .gpu/setup.sh
L=/tmp/logs4; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
STITCH_DATA_DIR=/tmp/g4-data STITCH_CACHE_DIR=/tmp/g4-cache timeout 200 python3 -m pytest -m gpu -v -s --tb=short --timeout 150 -p no:cacheprovider tests/test_check_gpu.py > $L/gpu_check_tests.log 2>&1
echo "check gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|cold check|warm check" $L/gpu_check_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-400 | tail -16
EVAL_TIMEOUT_S=${EVAL_T:-300} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -16
sed -n '/not passed/,$p' $L/eval_console.log | head -12
cat $L/cpu_by_kind.txt | head -12
tar czf $OUT/logs4.tgz -C /tmp logs4
