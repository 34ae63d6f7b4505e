. .gpu/setup.sh
L=/tmp/logs3; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
STITCH_DATA_DIR=/tmp/t3-data STITCH_CACHE_DIR=/tmp/t3-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t3 timeout 110 python3 -m pytest -m gpu -v --tb=short --timeout 100 -p no:cacheprovider tests/test_gpu_memory.py "tests/test_check_gpu.py::test_honest_cuda_candidate_passes" "tests/test_check_gpu.py::test_already_built_candidate_is_fast" > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E " $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-300 | tail -8
for which in ${ORDER:-new base}; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$which-$(date +%s) TRITON_CACHE_DIR=/tmp/tri-$which-$(date +%s)
  mkdir -p $L/$which
  if [ $which = new ]; then
    EVAL_TIMEOUT_S=${NEW_T:-225} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1
  else
    (cd .gpu/base && EVAL_TIMEOUT_S=${BASE_T:-225} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1)
  fi
  echo "== $which"; sed -n '/== summary/,$p' $L/$which/eval_console.log | grep -v "^  " | head -5
done
tar czf $OUT/logs3.tgz -C /tmp logs3
