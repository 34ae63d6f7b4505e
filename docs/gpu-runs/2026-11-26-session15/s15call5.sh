. .gpu/setup.sh
L=/tmp/logs5; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
EVAL_TIMEOUT_S=${EVAL_T:-290} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -14
sed -n '/not passed/,$p' $L/eval_console.log | head -8
STITCH_DATA_DIR=/tmp/g5-data STITCH_CACHE_DIR=/tmp/g5-cache timeout 230 python3 -m pytest -m gpu -v -s --tb=short --timeout 220 -p no:cacheprovider tests/test_check_gpu.py -k "honest or dropped or real_header" > $L/gpu_check_tests.log 2>&1
echo "check gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|Error|assert" $L/gpu_check_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -12
tar czf $OUT/logs5.tgz -C /tmp logs5
