. .gpu/setup.sh
L=/tmp/logs2; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
for which in ${ORDER:-base new}; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$which-$(date +%s) TRITON_CACHE_DIR=/tmp/tri-$which-$(date +%s)
  mkdir -p $L/$which
  if [ $which = new ]; then
    EVAL_TIMEOUT_S=${NEW_T:-235} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1
  else
    (cd .gpu/base && EVAL_TIMEOUT_S=${BASE_T:-235} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1)
  fi
  echo "== $which"; sed -n '/== summary/,$p' $L/$which/eval_console.log | grep -v "^  " | head -5
done
tar czf $OUT/logs2.tgz -C /tmp logs2
