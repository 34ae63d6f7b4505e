. .gpu/setup.sh
L=/tmp/logs6; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
# warm-up: the new gpu-memory tests and the honest check; then the spare change (new) and 701914c (prev)
STITCH_DATA_DIR=/tmp/t6-data STITCH_CACHE_DIR=/tmp/t6-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t6 timeout 110 python3 -m pytest -m gpu -q --tb=short --timeout 100 -p no:cacheprovider tests/test_gpu_memory.py "tests/test_check_gpu.py::test_honest_cuda_candidate_passes" "tests/test_check_gpu.py::test_already_built_candidate_is_fast" 2>&1 | tail -1
for which in ${ORDER:-new prev}; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$which-$(date +%s) TRITON_CACHE_DIR=/tmp/tri-$which-$(date +%s)
  mkdir -p $L/$which
  if [ $which = new ]; then
    EVAL_TIMEOUT_S=${NEW_T:-215} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1
  else
    (cd .gpu/prev && EVAL_TIMEOUT_S=${BASE_T:-215} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1)
  fi
  echo "== $which"; sed -n '/== summary/,$p' $L/$which/eval_console.log | grep -v "^  " | head -5
done
tar czf $OUT/logs6.tgz -C /tmp logs6
