. .gpu/setup.sh
L=/tmp/logs5; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
# the same warm-up as call 3 (two GPU tests), then the trees in the other order
STITCH_DATA_DIR=/tmp/t5-data STITCH_CACHE_DIR=/tmp/t5-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t5 timeout 110 python3 -m pytest -m gpu -q --tb=short --timeout 100 -p no:cacheprovider tests/test_gpu_memory.py "tests/test_check_gpu.py::test_honest_cuda_candidate_passes" 2>&1 | tail -1
for which in ${ORDER:-base new}; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$which-$(date +%s) TRITON_CACHE_DIR=/tmp/tri-$which-$(date +%s)
  mkdir -p $L/$which
  if [ $which = new ]; then
    EVAL_TIMEOUT_S=${NEW_T:-225} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1
  else
    (cd .gpu/base && EVAL_TIMEOUT_S=${BASE_T:-225} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1)
  fi
  echo "== $which"; sed -n '/== summary/,$p' $L/$which/eval_console.log | grep -v "^  " | head -5
done
tar czf $OUT/logs5.tgz -C /tmp logs5
