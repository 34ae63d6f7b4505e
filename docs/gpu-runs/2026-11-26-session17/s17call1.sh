. .gpu/setup.sh
L=/tmp/logs1; mkdir -p $L
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L/machine.txt
ln -sfn $PWD/.gpu/lazy .gpu/base/.gpu/lazy
export STITCH_DATA_DIR=/tmp/t1-data STITCH_CACHE_DIR=/tmp/t1-cache TORCHINDUCTOR_CACHE_DIR=/tmp/ind-t1 TRITON_CACHE_DIR=/tmp/tri-t1
timeout 100 python3 -m pytest -m gpu -v --tb=long --timeout 95 -p no:cacheprovider tests/test_gpu_memory.py "tests/test_check_gpu.py::test_honest_cuda_candidate_passes" > $L/gpu_tests.log 2>&1
echo "gpu tests rc $?"; grep -E "PASSED|FAILED|ERROR|^E |cold check" $L/gpu_tests.log | sed 's/ *\[ *[0-9]*%\]//' | cut -c1-600 | tail -12
unset STITCH_DATA_DIR STITCH_CACHE_DIR
for which in new base; do
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$which TRITON_CACHE_DIR=/tmp/tri-$which
  mkdir -p $L/$which
  if [ $which = new ]; then
    EVAL_TIMEOUT_S=220 OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1
  else
    (cd .gpu/base && EVAL_TIMEOUT_S=${BASE_T:-200} OUT=$L/$which bash tools/gpu/eval_lazy_gpu.sh eval > $L/$which/eval_console.log 2>&1)
  fi
  echo "== $which"; sed -n '/== summary/,$p' $L/$which/eval_console.log | grep -v "^  " | head -8
done
tar czf $OUT/logs1.tgz -C /tmp logs1
