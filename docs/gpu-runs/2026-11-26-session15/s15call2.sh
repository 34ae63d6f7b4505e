. .gpu/setup.sh
L=/tmp/logs2; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
STITCH_DATA_DIR=/tmp/gz-data STITCH_CACHE_DIR=/tmp/gz-cache timeout 150 python3 -m pytest -m gpu -v --tb=short --timeout 120 -p no:cacheprovider tests/test_worker.py tests/test_zygote.py > $L/gpu_worker_tests.log 2>&1
echo "worker gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR" $L/gpu_worker_tests.log | sed 's/ *\[ *[0-9]*%\]//' | tail -8
EVAL_TIMEOUT_S=${EVAL_T:-330} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -16
grep -c spare_restarted $L/lazy.log
cat $L/cpu_by_kind.txt | head -12
tar czf $OUT/logs2.tgz -C /tmp logs2
