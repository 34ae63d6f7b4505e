. .gpu/setup.sh
L=/tmp/logs8; mkdir -p $L/new
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-8 TRITON_CACHE_DIR=/tmp/tri-8
EVAL_TIMEOUT_S=230 OUT=$L/new bash tools/gpu/eval_lazy_gpu.sh eval > $L/new/eval_console.log 2>&1
sed -n '/== summary/,$p' $L/new/eval_console.log | grep -v "^  " | head -5; sed -n '/CPU by kind/,+6p' $L/new/eval_console.log
tar czf $OUT/logs8.tgz -C /tmp logs8
