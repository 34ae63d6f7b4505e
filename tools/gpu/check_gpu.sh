#!/usr/bin/env bash
# compile_and_check on the GPU machine (issue 3): the GPU tests and the cold/changed/warm benchmark.
#
#   tools/gpu/check_gpu.sh prepare   # here: copy 3 KernelBench problems + candidates into .gpu/check (git-ignored)
#   tools/gpu/check_gpu.sh tests     # on the GPU machine: pytest -m gpu tests/test_check_gpu.py   (~5 min)
#   tools/gpu/check_gpu.sh bench     # on the GPU machine: tools/bench_check.py over .gpu/check     (~6 min)
#   tools/gpu/check_gpu.sh all       # both (may exceed a 10-minute command limit on a cold machine)
#
# Needs mcp/pydantic on PYTHONPATH (see ../shared/device/wheelhouse.sh) and ninja (pip or binary).
# Logs and JSON land in $OUT (or ./.gpu/out).
set -u
cd "$(dirname "$0")/../.."
KB=${KERNELBENCH:-/work/shared/kernelbench}
G=.gpu/check
OUT=${OUT:-.gpu/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export PYTHONPATH=${PYTHONPATH:-}:$PWD
export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-/tmp/stitch-check-cache}

preflight() {
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nvcc --version | tail -1
    python3 -c 'import torch,sys;print(sys.version.split()[0], torch.__version__, torch.version.cuda)'
    python3 -c 'import mcp, pydantic; print("mcp", mcp.__version__ if hasattr(mcp, "__version__") else "ok")' \
      || echo "WARNING: mcp/pydantic missing: install the wheelhouse and set PYTHONPATH"
    (command -v ninja || python3 -c 'import ninja; print(ninja.BIN_DIR)') || echo "WARNING: ninja missing"
    nproc; } 2>&1 | tee "$OUT/check_preflight.txt"
}

case "${1:-all}" in
prepare)
  mkdir -p $G
  install -m 644 "$KB/level1/19_ReLU.py" $G/relu_ref.py
  install -m 644 "$KB/level1/1_Square_matrix_multiplication_.py" $G/matmul_ref.py
  install -m 644 "$KB/level2/12_Gemm_Multiply_LeakyReLU.py" $G/gemm_fused_ref.py
  install -m 644 corpora/check/*.py $G/
  ls -l $G
  ;;
tests)
  preflight
  python3 -m pytest tests/test_check_gpu.py -m gpu -v -s -p no:cacheprovider 2>&1 | tee "$OUT/check_gpu_tests.log"
  ;;
bench)
  preflight
  [ -d $G ] || { echo "run '$0 prepare' first (and carry .gpu)"; exit 2; }
  python3 tools/bench_check.py --dir $G --json "$OUT/bench_check.json" 2>"$OUT/bench_check.stderr" \
    | tee "$OUT/bench_check.log"
  tail -20 "$OUT/bench_check.stderr"
  ;;
all)
  "$0" tests
  "$0" bench
  ;;
esac
