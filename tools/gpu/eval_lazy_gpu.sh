#!/usr/bin/env bash
# Throughput of `stitch-mcp eval` on candidates that build LAZILY (corpora/lazy: load_inline in
# __init__ or on the first forward, cpp_extension.load from mkdtemp files, Triton, cupy, jiterator,
# plus a few module-level load_inline controls), KernelBench levels 1 and 2.
#
#   tools/gpu/eval_lazy_gpu.sh prepare [REGEX]  # here: .gpu/lazy/{problems,candidates} from KernelBench
#                                               #   ($KERNELBENCH, default /work/shared/kernelbench) and
#                                               #   corpora/lazy/level{1,2}, flat (.gpu is git-ignored;
#                                               #   carry it). REGEX (grep -E) keeps only the matching
#                                               #   "levelN/NAME.py" paths, e.g. 'level1/' or '/(19|23)_'
#   tools/gpu/eval_lazy_gpu.sh eval             # GPU: stitch-mcp eval -> $OUT/lazy.jsonl with a fresh data
#                                               #   and cache dir; prints candidates, seconds, candidates per
#                                               #   hour, verdicts by status and by build style
#   tools/gpu/eval_lazy_gpu.sh summary [JSONL]  # the same summary for an existing results file
#
# GPU run (carry [".gpu", ".whl"]; .whl from ../shared/device/wheelhouse.sh where mcp/pydantic are missing):
#   tools/gpu/eval_lazy_gpu.sh eval
# $OUT receives preflight.txt, lazy.jsonl, lazy.log, eval.stderr.gz (the whole log), cpu_by_kind.txt (CPU seconds by kind of process),
# host_load.txt (every 5 s: seconds, load averages, running/all tasks, GPU memory used MiB, GPU
# utilisation %). Settings: EVAL_JOBS (12), EVAL_TIMEOUT_S (570: the
# command limit is 10 minutes; rows finished by then are kept and counted), STITCH_DATA_DIR /
# STITCH_CACHE_DIR (default: fresh folders under .gpu/lazy/run-<epoch>). Each eval also leaves a copy of
# its results in .gpu/lazy/last.jsonl; LAZY_RESUME=1 starts from that copy (eval skips the rows it holds;
# the per-hour figure counts only the rows judged in this run), e.g. on the same warm machine when the
# whole corpus does not fit one 10-minute command; otherwise every eval starts over.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
KB=${KERNELBENCH:-/work/shared/kernelbench}
G=.gpu/lazy
OUT=${OUT:-$ROOT/.gpu/lazy/out}
T0=$(date +%s)
export PYTHONUNBUFFERED=1
. tools/gpu/carried_wheels.sh

elapsed() { echo $(( $(date +%s) - T0 )); }
say() { echo "[eval_lazy +$(elapsed)s] $*"; }

setup_env() {
  use_carried_wheels
  local run=$ROOT/$G/run-$T0  # fresh data and cache folders: nothing built or judged before is reused
  export STITCH_DATA_DIR=${STITCH_DATA_DIR:-$run/data}
  export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-$run/cache}
  export STITCH_ALLOWED_ROOTS=$ROOT:/tmp
  mkdir -p "$STITCH_DATA_DIR" "$STITCH_CACHE_DIR" "$OUT"
}

preflight() {
  { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "no nvidia-smi"
    nvcc --version 2>&1 | tail -1
    python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())'
    python3 -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -1
    python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1 | sed 's/^\(.*Error.*\)$/WARNING: cupy missing: \1 (the style-5 candidates will fail)/'
    python3 -c 'import mcp, pydantic; print("mcp/pydantic ok, pydantic", pydantic.VERSION)'
    command -v ninja >/dev/null && echo "ninja $(ninja --version)" || echo "WARNING: ninja missing"
    echo "cores $(nproc)"
    echo "STITCH_DATA_DIR=$STITCH_DATA_DIR STITCH_CACHE_DIR=$STITCH_CACHE_DIR"; } 2>&1 | tee "$OUT/preflight.txt"
}

prepare() {
  local filter=${1:-.}
  mkdir -p $G/problems $G/candidates
  rm -f $G/problems/*.py $G/candidates/*.py
  local n=0
  for c in corpora/lazy/level1/*.py corpora/lazy/level2/*.py; do
    local level name
    level=$(basename "$(dirname "$c")"); name=$(basename "$c")
    echo "$level/$name" | grep -Eq -- "$filter" || continue
    [ -f "$KB/$level/$name" ] || { echo "no KernelBench problem $KB/$level/$name" >&2; exit 2; }
    [ -e "$G/problems/$name" ] && { echo "two problems named $name (level1 and level2)" >&2; exit 2; }
    install -m 644 "$KB/$level/$name" "$G/problems/$name"
    install -m 644 "$c" "$G/candidates/$name"
    n=$((n + 1))
  done
  [ $n -gt 0 ] || { echo "no candidate matches '$filter'" >&2; exit 2; }
  echo "prepared $(ls $G/problems | wc -l) problems and $(ls $G/candidates | wc -l) candidates in $G"
}

summary() {  # candidates, seconds, candidates per hour, verdicts by status and by build style
  python3 - "$1" "${2:-}" "${3:-}" "${4:-}" <<'EOF'
import json, re, sys
from collections import Counter, defaultdict
from pathlib import Path
path, wall, total, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []
def style(cand):
    for base in (Path(cand), Path("corpora/lazy/level1") / Path(cand).name, Path("corpora/lazy/level2") / Path(cand).name):
        try:
            m = re.match(r"#\s*style:\s*(\d+)", base.read_text().splitlines()[0])
            return m.group(1) if m else "?"
        except (OSError, IndexError):
            continue
    return "?"
print(f"rows: {len(rows)}" + (f" of {total} candidates" if total else ""))
if wall:
    s, done = float(wall), int(new) if new else len(rows)
    print(f"judged this run: {done} in {s} wall seconds")
    print(f"candidates per hour: {done * 3600 / s:.1f}" if s > 0 else "candidates per hour: -")
print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(r["verdict"] for r in rows).items())))
by = defaultdict(list)
for r in rows:
    by[style(r["candidate"])].append(r)
print(f"{'style':<6} {'n':>3} {'pass':>5} {'other':>6} {'mean s':>7}  (s = the check's own stage seconds)")
for st in sorted(by):
    rs = by[st]
    ok = sum(r["verdict"] == "pass" for r in rs)
    secs = [r.get("seconds") or 0 for r in rs]
    print(f"{st:<6} {len(rs):>3} {ok:>5} {len(rs) - ok:>6} {sum(secs) / len(secs):>7.1f}")
stages = defaultdict(float)
for r in rows:
    for k, v in (r.get("stage_seconds") or {}).items():
        stages[k] += v
if rows:
    print("mean stage seconds: " + ", ".join(f"{k} {v / len(rows):.1f}" for k, v in stages.items() if v / len(rows) >= 0.05))
bad = [r for r in rows if r["verdict"] != "pass"]
if bad:
    print("not passed:")
    for r in sorted(bad, key=lambda r: r["problem"]):
        print(f"  {r['problem'][:60]:<60} {r['verdict']:<7} {(r.get('reasons') or [''])[0][:160]}")
EOF
}

run_eval() {
  if [ ! -d $G/candidates ] || [ -z "$(ls $G/candidates 2>/dev/null)" ]; then
    if [ -d "$KB/level1" ]; then prepare; else echo "no $G/candidates: run '$0 prepare' where KernelBench is and carry .gpu" >&2; exit 2; fi
  fi
  for c in $G/candidates/*.py; do  # the committed candidates are the source of truth (same subset)
    n=$(basename "$c")
    for lv in level1 level2; do [ -f "corpora/lazy/$lv/$n" ] && install -m 644 "corpora/lazy/$lv/$n" "$c"; done
  done
  rm -f "$OUT/lazy.jsonl"
  [ "${LAZY_RESUME:-0}" = 1 ] && [ -s $G/last.jsonl ] && cp $G/last.jsonl "$OUT/lazy.jsonl" \
    && say "resuming from $G/last.jsonl ($(grep -c . $G/last.jsonl) rows)"
  local before; before=$(grep -c . "$OUT/lazy.jsonl" 2>/dev/null); before=${before:-0}
  local jobs=${EVAL_JOBS:-12} total; total=$(ls $G/candidates/*.py | wc -l)
  say "eval: $total candidates, --jobs $jobs, timeout ${EVAL_TIMEOUT_S:-570}s"
  local t_start t_end
  t_start=$(date +%s.%N)
  rm -f "$OUT/eval.end"
  # the wall clock stops when eval exits (written beside it), not at the progress loop's next 10 s poll
  ( timeout "${EVAL_TIMEOUT_S:-570}" python3 -m stitch_mcp eval $G/problems $G/candidates --jobs "$jobs" \
      --out "$OUT/lazy.jsonl" > "$OUT/eval.stdout" 2> "$OUT/eval.stderr"
    rc=$?; date +%s.%N > "$OUT/eval.end"; exit $rc ) &
  local pid=$! seen=0
  python3 tools/gpu/cpu_by_kind.py --until-pid $pid --out "$OUT/cpu_by_kind.txt" &
  local sampler=$!
  (while kill -0 $pid 2>/dev/null; do  # the host's load and the card's memory beside the checks
     echo "$(( $(date +%s) - ${t_start%.*} )) $(cut -d' ' -f1-4 /proc/loadavg) $(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader,nounits 2>/dev/null | head -1)"
     sleep 5; done > "$OUT/host_load.txt") &
  local tick=0
  while kill -0 $pid 2>/dev/null; do
    sleep 1; tick=$((tick + 1)); [ $((tick % 10)) -eq 0 ] || continue  # progress every 10 s
    local n; n=$(grep -c . "$OUT/lazy.jsonl" 2>/dev/null); n=${n:-0}
    if [ "$n" != "$seen" ]; then
      seen=$n
      say "eval: $n/$total done; latest: $(tail -1 "$OUT/lazy.jsonl" | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print(r["problem"], r["verdict"], "x eager", r.get("speedup_vs_eager"))' 2>/dev/null)"
    fi
  done
  wait $pid; local rc=$?
  wait $sampler
  t_end=$(cat "$OUT/eval.end" 2>/dev/null || date +%s.%N); rm -f "$OUT/eval.end"
  [ $rc -eq 124 ] && say "eval stopped by its ${EVAL_TIMEOUT_S:-570} s timeout: lazy.jsonl holds the rows finished so far"
  say "eval exit $rc"
  local wall after
  wall=$(python3 -c "print(round($t_end - $t_start, 1))")
  after=$(grep -c . "$OUT/lazy.jsonl" 2>/dev/null); after=${after:-0}
  { echo "== stitch-mcp eval stdout"; cat "$OUT/eval.stdout"; echo "== stderr (tail)"; tail -c 6000 "$OUT/eval.stderr"
    echo "== summary (jobs $jobs)"; summary "$OUT/lazy.jsonl" "$wall" "$total" $(( after - before ))
    echo "== CPU by kind of process (tools/gpu/cpu_by_kind.py)"; cat "$OUT/cpu_by_kind.txt" 2>/dev/null; } > "$OUT/lazy.log" 2>&1
  gzip -c "$OUT/eval.stderr" > "$OUT/eval.stderr.gz"  # whole: an internal error's traceback is in it
  rm -f "$OUT/eval.stdout" "$OUT/eval.stderr"
  [ -f "$OUT/lazy.jsonl" ] && cp "$OUT/lazy.jsonl" $G/last.jsonl
  sed -n '/== summary/,$p' "$OUT/lazy.log"
}

case "${1:-help}" in
prepare) shift; prepare "${1:-.}" ;;
eval) setup_env; preflight; run_eval ;;
summary) summary "${2:-$OUT/lazy.jsonl}" ;;
*) sed -n '2,23p' "$0"; exit 2 ;;
esac
