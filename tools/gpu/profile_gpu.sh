#!/usr/bin/env bash
# profile_reference and profile_kernel on a level-1, level-2 and level-3 KernelBench problem (issue 4).
#
#   tools/gpu/profile_gpu.sh prepare     # here: copy the problems + write candidates into .gpu/ (git-ignored)
#   tools/gpu/profile_gpu.sh run         # on the GPU machine (carry .gpu and .whl): bench + GPU tests
#
# `run` prints each digest's head, image sizes and timings (tools/bench_profile.py) and runs the
# profiling tests; everything lands in $OUT/profile_gpu.tar.gz (kept JSON/CSV outputs for fixtures).
set -u
cd "$(dirname "$0")/../.."
KB=${KERNELBENCH:-/work/shared/kernelbench}
G=.gpu/profile
case "${1:-run}" in
prepare)
  mkdir -p $G
  install -m 644 "$KB/level1/19_ReLU.py" $G/l1_ref.py
  install -m 644 "$KB/level2/12_Gemm_Multiply_LeakyReLU.py" $G/l2_ref.py
  install -m 644 "$KB/level3/9_ResNet18.py" $G/l3_ref.py
  C=corpora/profile
  cat $C/ext.py $C/level1_body.py > $G/l1_cand.py
  cat $C/ext.py $C/level2_body.py > $G/l2_cand.py
  { cat $G/l3_ref.py; echo; sed '1d' $C/ext.py; cat $C/level3_body.py; } > $G/l3_cand.py
  ls -la $G
  ;;
run)
  OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/bench" "$OUT/keep"
  export PYTHONUNBUFFERED=1
  . tools/gpu/carried_wheels.sh
  use_carried_wheels
  export STITCH_DATA_DIR=$PWD/.gpu/data STITCH_CACHE_DIR=$PWD/.gpu/cache STITCH_ALLOWED_ROOTS=$PWD:/tmp
  export STITCH_PROFILE_KEEP=$OUT/keep
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 tools/bench_profile.py --dir $G --out "$OUT/bench" 2>"$OUT/bench/stderr.log"
  echo "bench exit $?"; tail -5 "$OUT/bench/stderr.log"
  unset STITCH_PROFILE_KEEP
  timeout 900 python3 -m pytest -q -p no:cacheprovider tests/test_profiling.py tests/test_profiling_gpu.py 2>&1 | tail -15
  tar czf "$OUT/profile_gpu.tar.gz" -C "$OUT" bench keep && rm -rf "$OUT/bench" "$OUT/keep"
  ls -la "$OUT"
  ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
