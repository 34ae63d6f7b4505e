. .gpu/setup.sh
L=/tmp/logs3; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
STITCH_COMPARE_COMPILE=false EVAL_TIMEOUT_S=${EVAL_T:-330} OUT=$L bash tools/gpu/eval_lazy_gpu.sh eval > $L/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/eval_console.log | grep -v "^  " | head -16
cat $L/cpu_by_kind.txt | head -12
tar czf $OUT/logs3.tgz -C /tmp logs3
