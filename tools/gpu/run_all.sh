#!/usr/bin/env bash
# All GPU work of one device call, parts in parallel: they share one build cache (builds overlap
# on the CPU cores) and one device lock (run stages never overlap on the GPU).
#
#   tools/gpu/run_all.sh [PART ...]     PART: gputests loop demo profile checkbench eval dogfood bench
#
# Carry .gpu (prepared problems) and .whl (../shared/device/wheelhouse.sh). Logs: $OUT/logs.tar.gz,
# and each part's last lines on stdout.
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
. tools/gpu/carried_wheels.sh
use_carried_wheels
export STITCH_DATA_DIR=$PWD/.gpu/data STITCH_CACHE_DIR=$PWD/.gpu/cache STITCH_ALLOWED_ROOTS=$PWD:/tmp:$OUT
L=$OUT/logs; mkdir -p "$L"
LIMIT=${LIMIT:-560}
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader; nvcc --version | tail -1
  python3 -c 'import torch,sys;print(sys.version.split()[0], torch.__version__, torch.version.cuda)'; nproc; } \
  > "$L/machine.txt" 2>&1
run() {  # name command...
  local name=$1; shift
  ( start=$(date +%s); timeout "$LIMIT" "$@" > "$L/$name.log" 2>&1; rc=$?
    echo "[$name] exit $rc after $(( $(date +%s) - start )) s" >> "$L/$name.log" ) &
}
for part in ${@:-gputests loop demo profile}; do
  case $part in
    gputests) run gputests python3 -m pytest -m gpu -v --tb=short --timeout "${TEST_TIMEOUT:-300}" \
                -p no:cacheprovider -rs ${GPU_TESTS:-tests/} ;;
    loop) run loop python3 tools/gpu/loop_demo.py ;;
    demo) run demo python3 -m stitch_mcp demo --out "$OUT/demo" ;;
    profile) run profile python3 tools/bench_profile.py --dir .gpu/profile --out "$L/profile" ;;
    checkbench) run checkbench python3 tools/bench_check.py --dir .gpu/check --json "$L/bench_check.json" ;;
    eval) run eval tools/gpu/eval_dogfood_gpu.sh eval ;;
    dogfood) run dogfood tools/gpu/eval_dogfood_gpu.sh dogfood ${DOGFOOD_ARGS:-} ;;
    bench) run bench python3 tools/bench_suite.py --gpu --out "$L/bench" ;;
    *) echo "unknown part $part" >&2 ;;
  esac
done
wait
cat "$L/machine.txt"
for f in "$L"/*.log; do echo "=================== $(basename "$f")"; tail -n "${TAILN:-25}" "$f"; done
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs $( [ -d "$OUT/demo" ] && echo demo ) && rm -rf "$L" "$OUT/demo"
