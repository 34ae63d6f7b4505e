. .gpu/setup.sh
L=/tmp/logs5; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
git log --oneline -1 2>/dev/null | cut -c1-60 | tee $L/commit.txt
EVAL_TIMEOUT_S=${EVAL_T:-250} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -14
sed -n '/not passed/,$p' $L/eval_console.log | head -8
zgrep -c "swap\|without a CUDA" $L/eval.stderr.gz 2>/dev/null | head -2
export STITCH_DATA_DIR=/tmp/t5-data STITCH_CACHE_DIR=/tmp/t5-cache
timeout 230 python3 -m pytest -m gpu -v --tb=long --timeout 200 -p no:cacheprovider tests/test_worker.py tests/test_zygote.py tests/test_adversarial.py tests/test_faults_gpu.py > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -20
tail -1 $L/gpu_tests.log
nvidia-smi --query-gpu=memory.used --format=csv,noheader | tee $L/mem_after.txt
tar czf $OUT/logs5.tgz -C /tmp logs5
