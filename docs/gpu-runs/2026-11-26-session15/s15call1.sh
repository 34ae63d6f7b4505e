. .gpu/setup.sh
L=/tmp/logs1; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
git log --oneline | head -1 | tee $L/commit.txt
EVAL_TIMEOUT_S=${EVAL_T:-330} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  "
cat $L/cpu_by_kind.txt
tar czf $OUT/logs1.tgz -C /tmp logs1
