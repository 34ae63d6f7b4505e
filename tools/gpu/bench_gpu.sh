#!/usr/bin/env bash
# The benchmark suite (tools/bench_suite.py) and the GPU fault/load tests on a GPU machine (issue 8).
#
#   tools/gpu/bench_gpu.sh prepare        # here, where ../shared/kernelbench is: fills .gpu/bench (git-ignored)
#                                         # (BENCH_EVAL_CANDIDATES=0: leave out corpora/eval_level1's 10 candidates if a pass is too long)
#   then on the GPU machine (carry .gpu/bench and .whl; each step fits a 10-minute command):
#   tools/gpu/bench_gpu.sh quick          # machine, handshake, search              (~2 min)
#   tools/gpu/bench_gpu.sh check          # cold / changed / warm compile_and_check on 3 problems (~6 min)
#   tools/gpu/bench_gpu.sh repeat         # 5 timings of one candidate + ncu agreement (~3-6 min)
#   tools/gpu/bench_gpu.sh cold           # batch pass 1: empty build cache, every GPU (builds everything)
#   tools/gpu/bench_gpu.sh one            # batch pass 2: built, STITCH_GPUS=0
#   tools/gpu/bench_gpu.sh all            # batch pass 3: built, every GPU -> scaling figure
#   tools/gpu/bench_gpu.sh tests          # pytest -m gpu tests/test_faults_gpu.py + tests/test_load.py
#   tools/gpu/bench_gpu.sh report         # re-render the report from the parts so far
#
# Every step after `prepare` adds its part to .gpu/bench-work/gpu/parts and rewrites
# $OUT/gpu-<date>.md/.json (OUT defaults to /tmp/out). Copy those to docs/benchmarks/ to commit.
# Steps after the first must run on the same (still warm) machine: the work folder lives there.
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ "${1:-}" = prepare ]; then
  exec python3 tools/bench_suite.py --gpu --prepare
fi
. tools/gpu/carried_wheels.sh
use_carried_wheels
command -v ninja >/dev/null || python3 -c 'import ninja' 2>/dev/null || echo "WARNING: ninja missing" >&2
W=.gpu/bench-work/gpu
bench() { python3 tools/bench_suite.py --gpu --work "$W" --out "$OUT" --resume "$@" 2> >(tail -40 >&2); }
case "${1:-quick}" in
  quick)  bench --parts machine,handshake,search ;;
  check)  bench --parts check ;;
  repeat) bench --parts repeat ;;
  cold)   bench --parts batch --batch-passes cold ;;
  one)    bench --parts batch --batch-passes one ;;
  all)    bench --parts batch --batch-passes all ;;
  report) bench --parts "" ;;
  tests)
    timeout 570 python3 -m pytest -q -p no:cacheprovider -rs tests/test_faults_gpu.py tests/test_load.py 2>&1 \
      | tee "$OUT/faults_gpu_tests.log" | tail -30 ;;
  *) echo "usage: $0 prepare|quick|check|repeat|cold|one|all|tests|report" >&2; exit 2 ;;
esac
ls -la "$OUT"
