. .gpu/setup.sh
L=/tmp/logs6; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
python3 .gpu/probe_fds.py 2>&1 | grep -v Warning | tee $L/probe.txt
STITCH_DATA_DIR=/tmp/g6-data STITCH_CACHE_DIR=/tmp/g6-cache timeout 150 python3 -m pytest -m gpu -v --tb=short --timeout 120 -p no:cacheprovider tests/test_zygote.py tests/test_worker.py > $L/gpu_worker_tests.log 2>&1
echo "worker gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR" $L/gpu_worker_tests.log | sed 's/ *\[ *[0-9]*%\]//' | tail -4
EVAL_TIMEOUT_S=${EVAL_T:-290} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -14
sed -n '/not passed/,$p' $L/eval_console.log | head -8
zcat $L/eval.stderr.gz | grep -i "zygote" | head -5
tar czf $OUT/logs6.tgz -C /tmp logs6
