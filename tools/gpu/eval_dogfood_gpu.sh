#!/usr/bin/env bash
# On the GPU machine: `stitch-mcp eval` over ten level-1 KernelBench problems with our own
# CUDA candidates (corpora/eval_level1) (fast_p table), and the dogfood loop (tools/gpu/dogfood.py: the Coder's loop over
# a real stdio MCP client on a level-1, level-2 and level-3 problem).
#
#   tools/gpu/eval_dogfood_gpu.sh prepare          # here: .gpu/eval/{problems,candidates} from KernelBench level1
#                                            #   and corpora/eval_level1 (.gpu is git-ignored; carry it)
#   tools/gpu/eval_dogfood_gpu.sh eval             # GPU, ~5-7 min: eval -> $OUT/eval.jsonl, prints the fast_p table
#   tools/gpu/eval_dogfood_gpu.sh dogfood [ARGS]   # GPU, <= ~8.5 min: dogfood.py ARGS -> $OUT/dogfood.{json,md,log}
#                                            #   (ARGS e.g. --problems l3 --budget-s 300)
#   tools/gpu/eval_dogfood_gpu.sh all [ARGS]       # eval, then dogfood on what is left of EVAL_DOGFOOD_TOTAL_S (540 s)
#   tools/gpu/eval_dogfood_gpu.sh compile          # here, no GPU: build every candidate with the local nvcc
#
# GPU run (carry [".gpu", ".whl"]), one part per call to stay under the 10-minute command limit:
#   tools/gpu/eval_dogfood_gpu.sh eval      then      tools/gpu/eval_dogfood_gpu.sh dogfood
# $OUT receives at most 6 files: preflight.txt, eval.jsonl, eval.log, dogfood.json, dogfood.md, dogfood.log.
# Settings: STITCH_DATA_DIR / STITCH_CACHE_DIR default to .gpu/eval_dogfood/{data,cache}; EVAL_JOBS (8),
# EVAL_TIMEOUT_S (520), DOGFOOD_TIMEOUT_S (560), EVAL_DOGFOOD_TOTAL_S (540, for `all`).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
KB=${KERNELBENCH:-/work/shared/kernelbench}
G=.gpu/eval
OUT=${OUT:-$ROOT/.gpu/eval_dogfood/out}
T0=$(date +%s)
export PYTHONUNBUFFERED=1
. tools/gpu/carried_wheels.sh

elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[eval_dogfood +$(elapsed)s] $*"; }

setup_env() {
  use_carried_wheels
  export STITCH_DATA_DIR=${STITCH_DATA_DIR:-$ROOT/.gpu/eval_dogfood/data}
  export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-$ROOT/.gpu/eval_dogfood/cache}
  export STITCH_ALLOWED_ROOTS=$ROOT:/tmp
  mkdir -p "$STITCH_DATA_DIR" "$STITCH_CACHE_DIR" "$OUT"
}

preflight() {
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "no nvidia-smi"
    nvcc --version 2>&1 | tail -1
    (ncu --version 2>&1 | tail -1) || echo "no ncu"
    python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'
    python3 -c 'import mcp, pydantic; print("mcp/pydantic ok, pydantic", pydantic.VERSION)'
    command -v ninja >/dev/null && echo "ninja $(ninja --version)" || echo "WARNING: ninja missing"
    echo "cores $(nproc)"
    echo "STITCH_DATA_DIR=$STITCH_DATA_DIR STITCH_CACHE_DIR=$STITCH_CACHE_DIR"; } 2>&1 | tee "$OUT/preflight.txt"
}

prepare() {
  mkdir -p $G/problems $G/candidates
  rm -f $G/problems/*.py $G/candidates/*.py
  for c in corpora/eval_level1/*.py; do
    n=$(basename "$c")
    [ -f "$KB/level1/$n" ] || { echo "no KernelBench problem $KB/level1/$n" >&2; exit 2; }
    install -m 644 "$KB/level1/$n" $G/problems/$n
    install -m 644 "$c" $G/candidates/$n
  done
  echo "prepared $(ls $G/problems | wc -l) problems and $(ls $G/candidates | wc -l) candidates in $G:"
  ls $G/problems
}

eval_table() {  # per-row results and the fast_p summary, from whatever eval.jsonl holds
  python3 - "$OUT/eval.jsonl" <<'EOF'
import json, sys
from pathlib import Path
from stitch_mcp.evaluate import summary_table
p = Path(sys.argv[1])
rows = [json.loads(l) for l in p.read_text().splitlines() if l.strip()] if p.exists() else []
f = lambda v: "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))
print(f"{'problem':<55} {'verdict':<7} {'x eager':>8} {'x compile':>9} {'sec':>6}  first reason")
for r in sorted(rows, key=lambda r: r["problem"]):
    why = "" if r["verdict"] == "pass" else (r.get("reasons") or [""])[0][:150]
    print(f"{r['problem'][:55]:<55} {r['verdict']:<7} {f(r.get('speedup_vs_eager')):>8} "
          f"{f(r.get('speedup_vs_compile')):>9} {f(r.get('seconds')):>6}  {why}")
print()
print(summary_table(rows) if rows else "no rows in eval.jsonl")
EOF
}

run_eval() {
  if [ ! -d $G/problems ] || [ -z "$(ls $G/problems 2>/dev/null)" ]; then
    if [ -d "$KB/level1" ]; then prepare; else echo "no $G/problems: run '$0 prepare' where KernelBench is and carry .gpu" >&2; exit 2; fi
  fi
  install -m 644 corpora/eval_level1/*.py $G/candidates/  # the committed candidates are the source of truth
  local jobs=${EVAL_JOBS:-8}
  say "eval: $(ls $G/candidates | wc -l) candidates, --jobs $jobs (builds overlap; GPU stages one at a time)"
  timeout "${EVAL_TIMEOUT_S:-520}" python3 -m stitch_mcp eval $G/problems $G/candidates --out "$OUT/eval.jsonl" \
    --jobs "$jobs" > "$OUT/eval.stdout" 2> "$OUT/eval.stderr" &
  local pid=$! seen=0
  while kill -0 $pid 2>/dev/null; do
    sleep 10
    local n; n=$(grep -c . "$OUT/eval.jsonl" 2>/dev/null); n=${n:-0}
    if [ "$n" != "$seen" ]; then
      seen=$n
      say "eval: $n done; latest: $(tail -1 "$OUT/eval.jsonl" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["problem"], r["verdict"], "x eager", r.get("speedup_vs_eager"), "x compile", r.get("speedup_vs_compile"))' 2>/dev/null)"
    else
      say "eval: $n done, waiting (builds / GPU stages)"
    fi
  done
  wait $pid; local rc=$?
  [ $rc -eq 124 ] && say "eval stopped by its ${EVAL_TIMEOUT_S:-520} s timeout: eval.jsonl holds the rows finished so far"
  say "eval exit $rc"
  { echo "== stitch-mcp eval stdout"; cat "$OUT/eval.stdout"; echo "== stderr (tail)"; tail -c 6000 "$OUT/eval.stderr"
    echo "== results"; eval_table; } > "$OUT/eval.log" 2>&1
  rm -f "$OUT/eval.stdout" "$OUT/eval.stderr"
  sed -n '/== results/,$p' "$OUT/eval.log"
}

run_dogfood() {
  say "dogfood: tools/gpu/dogfood.py $*"
  set -o pipefail
  timeout "${DOGFOOD_TIMEOUT_S:-560}" python3 tools/gpu/dogfood.py --out "$OUT" "$@" 2>&1 | tee "$OUT/dogfood.log"
  local rc=$?
  set +o pipefail
  say "dogfood exit $rc"
}

compile_here() {  # CPU machine: compile each candidate (eval + dogfood) through `stitch-mcp check`
  local py=${PYTHON:-python3} stub=${TMPDIR:-/tmp}/eval-dogfood-stubinc log=${TMPDIR:-/tmp}/eval-dogfood-compile
  mkdir -p "$log"
  local inc; inc=$($py -c 'import torch.utils.cpp_extension as c; print(c.include_paths()[0])')
  if [ ! -f "$inc/c10/cuda/impl/cuda_cmake_macros.h" ] || ! echo '#include <cusparse.h>' | g++ -E -x c++ -I/usr/local/cuda/include - >/dev/null 2>&1; then
    # A CPU-only torch lacks c10/cuda/impl/cuda_cmake_macros.h and a minimal CUDA toolkit lacks the cuSPARSE/
    # cuBLAS/cuSOLVER headers that ATen/cuda/CUDAContext.h includes: declare just the types it mentions, so the
    # candidates' own code compiles here. (Local validation only; the GPU machine has the real headers.)
    mkdir -p "$stub/c10/cuda/impl"
    printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
    printf '#pragma once\ntypedef struct cusparseContext* cusparseHandle_t;\ntypedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\nconst char* cusparseGetErrorString(cusparseStatus_t);\n' > "$stub/cusparse.h"
    printf '#pragma once\ntypedef struct cublasContext* cublasHandle_t;\ntypedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n' > "$stub/cublas_v2.h"
    printf '#pragma once\n#include <cublas_v2.h>\ntypedef struct cublasLtContext* cublasLtHandle_t;\n' > "$stub/cublasLt.h"
    printf '#pragma once\ntypedef enum { CUSOLVER_STATUS_SUCCESS = 0 } cusolverStatus_t;\n' > "$stub/cusolver_common.h"
    printf '#pragma once\n#include <cusolver_common.h>\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n' > "$stub/cusolverDn.h"
    export CPATH=$stub${CPATH:+:$CPATH}
    say "compile: stub headers for the missing CUDA library headers in $stub (CPATH)"
  fi
  export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-${TMPDIR:-/tmp}/eval-dogfood-cache} STITCH_DATA_DIR=${STITCH_DATA_DIR:-${TMPDIR:-/tmp}/eval-dogfood-data}
  export STITCH_ALLOWED_ROOTS=$ROOT:/tmp:$KB PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
  local pairs=()
  for c in corpora/eval_level1/*.py; do pairs+=("$KB/level1/$(basename "$c")|$c"); done
  for d in corpora/dogfood/*/; do for c in "$d"c*.py; do pairs+=("${d}ref.py|$c"); done; done
  printf '%s\n' "${pairs[@]}" | xargs -P "${COMPILE_JOBS:-2}" -I{} bash -c '
    ref=${1%%|*}; cand=${1#*|}; out="'"$log"'/$(echo "$cand" | tr / _).json"
    '"$py"' -m stitch_mcp check "$ref" "$cand" --json > "$out" 2> "$out.err"
    [ -s "$out" ] || { echo "FAIL $cand: no report; $(tail -c 400 "$out.err")"; exit 0; }
    '"$py"' -c "import json,sys; d=json.load(open(sys.argv[1])); b=d[\"build\"]; ok=b[\"ok\"] and d[\"error_kind\"] in (None, \"needs_gpu\")
print((\"OK  \" if ok else \"FAIL\"), sys.argv[2], d[\"verdict\"], d[\"error_kind\"], \"build %.0fs\" % (b.get(\"seconds\") or 0), \"\" if ok else (d[\"reasons\"] or [\"\"])[0][:300])" "$out" "$cand"
  ' _ {}
}

case "${1:-help}" in
prepare) prepare ;;
eval) setup_env; preflight; run_eval ;;
dogfood) shift; setup_env; preflight; run_dogfood "$@" ;;
all)
  shift; setup_env; preflight; run_eval
  left=$(( ${EVAL_DOGFOOD_TOTAL_S:-540} - $(elapsed) - 15 ))
  [ $left -lt 90 ] && { say "only ${left}s left of EVAL_DOGFOOD_TOTAL_S: skipping dogfood (run '$0 dogfood' separately)"; exit 0; }
  run_dogfood --budget-s "$left" "$@" ;;
compile) compile_here ;;
*) sed -n '2,18p' "$0"; exit 2 ;;
esac
