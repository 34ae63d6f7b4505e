#!/usr/bin/env python3
"""Dogfooding (issue 7): play the Coder against stitch-mcp through a real stdio MCP client.

For each problem folder in corpora/dogfood/ (ref.py and candidates c1.py, c2.py, ... written
naive -> improved -> more improved):

  profile_reference -> planner prompt -> save_plan (the plan below, in the planner's structure)
  then for each candidate: compile_and_check -> profile_kernel (sections quick) -> rubric_score
  -> verifier prompt -> save_feedback (the route's feedback items) -> next candidate

Every call follows job_status while the tool answers status "running" (as a client with a 60 s
tool-call limit must), is timed (wall seconds, polls), printed as one compact line, and recorded in
full. On a GPU machine the candidates' extensions are built in the background as the loop starts
(one chain per problem, in order, so c2/c3 reuse c1's binding objects) and each check waits for its
candidate's build: the build seconds are recorded separately (`prebuild`).

  python3 tools/gpu/dogfood.py                      # all problems; writes $OUT/dogfood.{json,md}
  python3 tools/gpu/dogfood.py --problems l1,l3     # a subset (folder-name prefixes)
  python3 tools/gpu/dogfood.py --budget-s 300       # stop cleanly after this many seconds
  python3 tools/gpu/dogfood.py --dry-run            # list the steps only (no server)
  python3 tools/gpu/dogfood.py --cpu-example        # the same loop on the bundled CPU example
  python3 tools/gpu/dogfood.py prebuild             # only build the candidates' extensions

Settings come from STITCH_* variables (the server inherits them); STITCH_DATA_DIR defaults to a
fresh .gpu/dogfood/data so the task history holds only this run.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

os.environ.setdefault("PYTHONUNBUFFERED", "1")
os.environ.setdefault("STITCH_LOG_LEVEL", "WARNING")  # the server's INFO log would drown the step lines
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
DOGFOOD = ROOT / "corpora" / "dogfood"
EXAMPLES = ROOT / "stitch_mcp" / "examples"
PROMPT_LINES = 60
MIN_STEP_S = 5.0  # do not start a step with less than this left in the budget

PLANS: dict[str, str] = {
    "l1_95_CrossEntropyLoss": """\
### Target ops
cross_entropy (log_softmax + nll_loss over (32768, 4096) logits, mean reduction): 100% of the GPU time.
### Fusion groups
One group: row max, sum of exp, log, target pick and the batch mean belong together; the (32768, 4096)
log_softmax output the reference writes is never needed.
### Kernels to write
ce_row_loss: one row per thread first (correct baseline), then a block or warp per row with warp-shuffle
reductions; mean: a tree over the per-row losses (second kernel, later fused with a last-block ticket).
### Data layout
Row-major contiguous fp32 logits (16 KB rows, 16-byte aligned: float4 loads), int64 targets, fp32 scalar out.
### Expected bottleneck
Memory-bound: 537 MB read once = ~0.18 ms at ~3 TB/s on an H100; the reference moves ~1.1 GB (writes and
re-reads log_softmax), so the target is >2x over eager.
### Correctness risks
exp overflow (subtract the row max; online rescaling), targets out of range, the mean's summation order
(fp32 tree), heavy-tailed inputs.
""",
    "l2_6_Conv3d_Softmax_MaxPool_MaxPool": """\
### Target ops
conv (Conv3d 3->16, k=3, on (128, 3, 16, 32, 32)), softmax over channels, max_pool (MaxPool3d(2) twice).
### Fusion groups
conv + softmax: the channel softmax needs all 16 channels of one position, which one thread can hold.
The two max pools are one 4x4x4 max; with conv+softmax fused into them no 100 MB intermediate is written.
### Kernels to write
c1: conv3d_naive, softmax_dim1, maxpool3d x2 (one thread per output). c2: conv_softmax (16 channels per
thread, weights in shared memory) + pool2_fused. c3: one kernel, 64 threads per final output, warp-shuffle max.
### Data layout
NCDHW contiguous fp32; weights (16, 3, 3, 3, 3) = 1296 floats fit in shared memory; output (128, 16, 3, 7, 7).
### Expected bottleneck
conv: 25.8M positions x 81 MACs x 16 = 1.6 GFMA (compute/latency); the reference also moves ~400 MB of
intermediates (softmax and pool passes). Target: one kernel near the conv's compute floor.
### Correctness risks
floor semantics of the two pools (14 -> 7 -> 3, 30 -> 15 -> 7), softmax overflow (max subtraction),
NaN propagation of max pooling, 64-bit offsets.
""",
    "l3_4_LeNet5": """\
### Target ops
conv (conv1 1->6 and conv2 6->16, 5x5), relu, max_pool (2x2), linear (fc1 400->120, fc2 120->84, fc3 84->20)
on a batch of 4096 32x32 images: many small kernels, launch- and memory-bound.
### Fusion groups
conv+relu+pool per stage (the unpooled activations are never needed); linear+bias+relu per layer; finally the
whole network per group of images in one kernel, all activations in shared memory.
### Kernels to write
c1: one kernel per layer op (11 launches). c2: conv_relu_pool x2 + linear_tiled x3 (32x32 smem tiles).
c3: lenet5_fused: 4 images per block, conv patches in registers, one warp per fc output row.
### Data layout
NCHW fp32; conv weights (2.6K floats) in shared memory; fc weights (~60K floats) read from L2 per block,
shared by the block's 4 images.
### Expected bottleneck
~1.5 GMAC total; the reference's ~11 launches and ~400 MB of intermediates dominate. Target: one launch
bound by shared-memory bandwidth (~0.1 ms).
### Correctness risks
relu/max order with NaN, pool floor sizes (28 -> 14, 10 -> 5), fc summation order (fp32), a batch that is not
a multiple of the images per block.
""",
    "cpu_example": """\
### Target ops
mul (scale), add (shift), gelu: the whole reference (three elementwise passes).
### Fusion groups
One group: scale, shift and GELU in one pass.
### Kernels to write
fused_kernel: one pass over x, vectorized, on the current stream (the CPU path runs C++).
### Data layout
Contiguous fp32 (batch, features); features % 4 == 0.
### Expected bottleneck
Memory-bound: read x once, write y once.
### Correctness risks
tanh approximation of GELU; broadcast of scale and bias over rows.
""",
}


def log(*parts: Any) -> None:
    print(*parts, flush=True)


class BudgetExceeded(Exception):
    pass


# ------------------------------------------------------------------ problems


def discover(cpu_example: bool) -> list[dict[str, Any]]:
    if cpu_example:
        return [{"name": "cpu_example", "level": 0, "ref": EXAMPLES / "reference.py",
                 "candidates": [EXAMPLES / "cpu_naive.py", EXAMPLES / "cpu_fused.py"], "plan": PLANS["cpu_example"]}]
    out = []
    for d in sorted(p for p in DOGFOOD.iterdir() if p.is_dir() and (p / "ref.py").exists()):
        cands = sorted(d.glob("c[0-9]*.py"), key=lambda p: int(p.stem[1:]))
        level = int(d.name[1]) if d.name[:1] == "l" and d.name[1:2].isdigit() else 0
        out.append({"name": d.name, "level": level, "ref": d / "ref.py", "candidates": cands,
                    "plan": PLANS.get(d.name) or PLANS["cpu_example"]})
    return out


def select(problems: list[dict], spec: str | None) -> list[dict]:
    if not spec:
        return problems
    want = [s.strip() for s in spec.split(",") if s.strip()]
    chosen = [p for p in problems if any(p["name"] == w or p["name"].startswith(w) for w in want)]
    missing = [w for w in want if not any(p["name"] == w or p["name"].startswith(w) for p in problems)]
    if missing:
        raise SystemExit(f"--problems: no problem folder matches {', '.join(missing)} "
                         f"(have: {', '.join(p['name'] for p in problems)})")
    return chosen


# ------------------------------------------------------------------ building ahead


def build_one(path: Path, register_kill=None) -> dict[str, Any]:
    """Build a candidate's extensions into the server's build cache (the build stage of compile_and_check)."""
    from stitch_mcp.build.cache import cached_manifest
    from stitch_mcp.build_room import build_in_room
    from stitch_mcp.check import _cuda_possible, candidate_scope
    from stitch_mcp.config import get_settings
    from stitch_mcp.sources import load_program
    from stitch_mcp.stage_results import BuildStageResult

    settings = get_settings()
    build_root = Path(settings.build_dir).expanduser()
    source = load_program(str(path), "candidate").source
    scope = candidate_scope(build_root, source)
    t0 = time.monotonic()
    if cached_manifest(scope, source) is not None:
        return {"ok": True, "cached": True, "seconds": 0.0}
    res = build_in_room(source, scope, settings, gpu=_cuda_possible(), register_kill=register_kill)
    out = res.result or BuildStageResult()
    err = out.error.model_dump() if out.error else ({"kind": res.kind, "message": res.message} if not res.ok else None)
    return {"ok": res.ok and not out.error, "cached": False, "seconds": round(time.monotonic() - t0, 1),
            "needs_gpu": out.needs_gpu or "", "error": err,
            "extensions": [e.model_dump(include={"name", "cached", "seconds"}) for e in out.extensions]}


class Prebuilder:
    """One thread per problem builds its candidates in order; check() waits for a candidate's build."""

    def __init__(self, problems: list[dict]):
        self.futures: dict[str, cf.Future] = {}
        self.results: dict[str, dict] = {}
        self.t0 = time.monotonic()
        self.stopped = False
        self.kills: set = set()
        self.lock = threading.Lock()
        self.pool = cf.ThreadPoolExecutor(max_workers=max(1, len(problems)), thread_name_prefix="prebuild")
        for p in problems:
            chain = [(f"{p['name']}/{c.name}", c) for c in p["candidates"]]
            for key, _ in chain:
                self.futures[key] = cf.Future()
            self.pool.submit(self._chain, chain)

    def _register(self, kill):
        with self.lock:
            self.kills.add(kill)
        if self.stopped:
            kill()

        def unregister():
            with self.lock:
                self.kills.discard(kill)
        return unregister

    def _chain(self, chain: list[tuple[str, Path]]) -> None:
        for key, path in chain:
            fut = self.futures[key]
            if self.stopped:
                fut.set_result({"ok": False, "error": "not built: the run stopped"})
                continue
            try:
                r = build_one(path, register_kill=self._register)
            except Exception as exc:  # a tooling bug must not stop the loop: compile_and_check builds then
                r = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-1500:]}
            r["done_at_s"] = round(time.monotonic() - self.t0, 1)
            self.results[key] = r
            state = "cached" if r.get("cached") else ("built" if r.get("ok") else "FAILED")
            log(f"  [prebuild] {key}: {state} in {r.get('seconds', 0)} s (t+{r['done_at_s']} s)"
                + (f" error: {str(r.get('error'))[:300]}" if not r.get("ok") else ""))
            fut.set_result(r)

    def wait(self, key: str, timeout: float) -> tuple[dict | None, float]:
        fut = self.futures.get(key)
        if fut is None:
            return None, 0.0
        t0 = time.monotonic()
        try:
            return fut.result(timeout=max(0.0, timeout)), round(time.monotonic() - t0, 1)
        except cf.TimeoutError:
            return None, round(time.monotonic() - t0, 1)

    def shutdown(self) -> None:
        """Stop: kill builds in flight (their workers), skip the rest, and wait for the threads."""
        self.stopped = True
        with self.lock:
            kills = list(self.kills)
        for kill in kills:
            try:
                kill()
            except Exception:
                pass
        self.pool.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------ the loop


def _text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in (result.content or []) if getattr(c, "type", "") == "text")


def _content_summary(result) -> list[dict]:
    out = []
    for c in result.content or []:
        kind = getattr(c, "type", "")
        if kind == "image":
            out.append({"type": "image", "mime_type": getattr(c, "mime_type", ""), "base64_chars": len(c.data or "")})
        elif kind == "text":
            out.append({"type": "text", "chars": len(c.text or "")})
        else:
            out.append({"type": kind})
    return out


def _fmt(v: Any, nd: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


class Runner:
    def __init__(self, client, record: dict, deadline: float, max_wait_s: float):
        self.client, self.record, self.deadline, self.max_wait_s = client, record, deadline, max_wait_s

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def _guard(self, what: str) -> None:
        if self.left() < MIN_STEP_S:
            raise BudgetExceeded(f"time budget reached before {what}")

    async def tool(self, steps: list, label: str, tool: str, args: dict) -> dict:
        """Call a tool and follow job_status until it is done; returns the step record."""
        import anyio

        self._guard(f"{label} {tool}")
        step: dict[str, Any] = {"step": label, "tool": tool, "args": args, "polls": 0, "ok": False}
        steps.append(step)
        progress: dict[str, Any] = {"count": 0, "last": ""}

        async def on_progress(done, total, message):
            progress["count"] += 1
            progress["last"] = message or ""

        t0 = time.monotonic()
        try:
            wait = max(1.0, min(self.max_wait_s, self.left()))
            with anyio.fail_after(wait + 90):
                r = await self.client.call_tool(tool, {**args, "max_wait_s": wait}, progress_callback=on_progress)
            first = r.structured_content or {}
            step["first_answer"] = first.get("status") or ("error" if r.is_error else "done")
            while not r.is_error and (r.structured_content or {}).get("status") == "running":
                job = r.structured_content["job_id"]
                step["job_id"] = job
                if self.left() < 1.0:
                    step.update(error="abandoned: time budget reached while the job was running",
                                wall_s=round(time.monotonic() - t0, 2), progress=progress)
                    raise BudgetExceeded(f"time budget reached during {label} {tool}")
                wait = max(1.0, min(self.max_wait_s, self.left()))
                with anyio.fail_after(wait + 90):
                    r = await self.client.call_tool("job_status", {"job_id": job, "max_wait_s": wait},
                                                    progress_callback=on_progress)
                step["polls"] += 1
                info = r.structured_content or {}
                if r.is_error:
                    break
                if info.get("status") == "done":
                    step["summary_text"] = info.get("summary", "")
                    step["result"] = info.get("result") or {}
                    step["ok"] = True
                    break
                if info.get("status") != "running":  # failed, cancelled, interrupted
                    step["error"] = f"job {info.get('status')}: {info.get('error')}"
                    step["result"] = info
                    break
            if r.is_error:
                step["error"] = _text(r)[:4000]
            elif "result" not in step and "error" not in step:
                step["result"] = r.structured_content or {}
                step["summary_text"] = _text(r)
                step["ok"] = True
            step["content"] = _content_summary(r)
        except BudgetExceeded:
            raise
        except TimeoutError:
            step["error"] = "client-side timeout: the server did not answer within max_wait_s + 90 s"
        except Exception as exc:  # protocol errors, a dead server: record and go on
            step["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        step["wall_s"] = round(time.monotonic() - t0, 2)
        step["progress_messages"] = progress["count"]
        step["last_progress"] = progress["last"]
        return step

    async def prompt(self, steps: list, label: str, name: str, args: dict) -> dict:
        self._guard(f"{label} prompt {name}")
        step: dict[str, Any] = {"step": label, "tool": f"prompt:{name}", "args": args, "ok": False}
        steps.append(step)
        t0 = time.monotonic()
        try:
            p = await self.client.get_prompt(name, args)
            text = "\n".join(getattr(m.content, "text", "") for m in p.messages)
            lines = text.splitlines()
            step.update(ok=True, lines=len(lines), chars=len(text), first_lines=lines[:PROMPT_LINES])
            step["route_section"] = _section(text, "## The server's routing decision", 12)
        except Exception as exc:
            step["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        step["wall_s"] = round(time.monotonic() - t0, 2)
        return step

    async def plain(self, steps: list, label: str, tool: str, args: dict) -> dict:
        """A quick tool that answers directly (save_plan, save_feedback)."""
        self._guard(f"{label} {tool}")
        step: dict[str, Any] = {"step": label, "tool": tool, "args": {k: v for k, v in args.items()}, "ok": False}
        steps.append(step)
        t0 = time.monotonic()
        try:
            r = await self.client.call_tool(tool, args)
            step["text"] = _text(r)
            step["ok"] = not r.is_error
            if r.is_error:
                step["error"] = step["text"][:2000]
        except Exception as exc:
            step["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        step["wall_s"] = round(time.monotonic() - t0, 2)
        return step

    async def resource(self, uri: str) -> Any:
        try:
            r = await self.client.read_resource(uri)
            return json.loads(r.contents[0].text)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def _section(text: str, heading: str, n: int) -> list[str]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == heading:
            return lines[i + 1:i + 1 + n]
    return []


def _top_suggestion(kp: dict | None) -> str:
    for k in (kp or {}).get("kernels") or []:
        for s in k.get("suggestions") or []:
            return f"{k.get('name', '')[:28]}: {s.get('text', '')}"[:160]
    return ""


def _line(prefix: str, step: dict, body: str) -> None:
    polls = f", {step.get('polls')} poll{'s' if step.get('polls') != 1 else ''}" if step.get("polls") else ""
    state = body if step.get("ok") else f"ERROR {step.get('error', '')[:300]}"
    log(f"{prefix} {step['tool']:<18} {step.get('wall_s', 0):6.1f}s{polls}: {state}")


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups, e.g. from the client's task group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def run_problem(runner: Runner, prob: dict, prebuild: Prebuilder | None, rec: dict) -> bool:
    """The loop on one problem; False when the time budget stopped it."""
    try:
        await _run_problem(runner, prob, prebuild, rec)
        return True
    except BudgetExceeded as exc:
        rec["stopped"] = str(exc)
        return False


async def _run_problem(runner: Runner, prob: dict, prebuild: Prebuilder | None, rec: dict) -> None:
    name = prob["name"]
    steps: list[dict] = rec["steps"]
    ref = str(prob["ref"])
    log(f"\n=== {name} (level {prob['level']}): {len(prob['candidates'])} candidates, {runner.left():.0f} s left ===")
    st = await runner.tool(steps, "reference", "profile_reference", {"reference": ref})
    task_id = None
    if st["ok"]:
        r = st["result"]
        task_id = r.get("task_id")
        ops = ", ".join(f"{o['name']} {o['share']:.0%}" for o in (r.get("ops") or [])[:3])
        _line(f"[{name}]", st, f"task {task_id} gpu {_fmt(r.get('gpu_ms_per_iter'), 3)} ms/iter, "
                               f"{_fmt(r.get('launches_per_iter'), 1)} launches; top ops: {ops} ({r.get('backend')})")
    else:
        _line(f"[{name}]", st, "")
    rec["task_id"] = task_id
    if task_id:
        st = await runner.prompt(steps, "reference", "planner", {"task_id": task_id})
        _line(f"[{name}]", st, f"{st.get('lines')} lines, {st.get('chars')} chars")
        st = await runner.plain(steps, "reference", "save_plan", {"task_id": task_id, "plan": prob["plan"]})
        _line(f"[{name}]", st, st.get("text", "")[:200])
    rec["candidates"] = []
    for cand in prob["candidates"]:
        label = cand.stem
        row: dict[str, Any] = {"candidate": label}
        rec["candidates"].append(row)
        pre = f"[{name} {label}]"
        if prebuild is not None:
            built, waited = prebuild.wait(f"{name}/{cand.name}", runner.left() - MIN_STEP_S)
            row["build_wait_s"] = waited
            row["prebuild"] = built
            if waited >= 1:
                log(f"{pre} waited {waited:.0f} s for its build")
        args = {"candidate": str(cand), **({"task_id": task_id} if task_id else {"reference": ref})}
        st = await runner.tool(steps, label, "compile_and_check", args)
        check = st.get("result") if st["ok"] else None
        cid = (check or {}).get("candidate_id")
        if check:
            task_id = task_id or check.get("task_id")
            rec["task_id"] = task_id
            b = check.get("build") or {}
            route = check.get("route") or {}
            row.update(candidate_id=cid, verdict=check.get("verdict"), speedup_vs_eager=check.get("speedup_vs_eager"),
                       speedup_vs_compile=check.get("speedup_vs_compile"), check_route=route.get("decision"),
                       build_cached=b.get("cached"), build_s=b.get("seconds"), stage_seconds=check.get("stage_seconds"),
                       timing={k: (check.get("timing") or {}).get(k) for k in ("candidate", "eager", "compiled",
                                                                                "floor_ms", "floor_fraction")})
            why = "" if check.get("verdict") == "pass" else f"; {(check.get('reasons') or [''])[0][:200]}"
            ss = check.get("stage_seconds") or {}
            other = (ss.get("total") or 0) - (ss.get("build") or 0) - (ss.get("run") or 0)
            why += f"  [stages: build {_fmt(ss.get('build'), 0)}, run {_fmt(ss.get('run'), 0)}, other {other:.0f} s]"
            _line(pre, st, f"{check.get('verdict')}  x eager {_fmt(check.get('speedup_vs_eager'))}  x compile "
                           f"{_fmt(check.get('speedup_vs_compile'))}  build {'cached' if b.get('cached') else _fmt(b.get('seconds'), 0) + ' s'}"
                           f"  route {route.get('decision')}{why}")
        else:
            _line(pre, st, "")
        row["check_s"] = st.get("wall_s")
        if not cid:
            continue
        st = await runner.tool(steps, label, "profile_kernel", {"candidate_id": cid, "task_id": task_id,
                                                                "sections": "quick"})
        row["profile_s"] = st.get("wall_s")
        if st["ok"]:
            kp = st["result"]
            ks = kp.get("kernels") or []
            row["kernels"] = [{"name": k.get("name", "")[:60], "duration_us": k.get("duration_us"),
                               "bound": k.get("bound"), "launches": k.get("launches")} for k in ks]
            row["top_suggestion"] = _top_suggestion(kp)
            desc = "; ".join(f"{k.get('name', '')[:24]} {_fmt(k.get('duration_us'), 1)}us {k.get('bound') or '?'}"
                             for k in ks[:3])
            _line(pre, st, f"{len(ks)} kernel(s): {desc}" + (f" | top: {row['top_suggestion']}" if row["top_suggestion"]
                                                              else ""))
        else:
            row["profile_error"] = st.get("error", "")[:500]
            _line(pre, st, "")
        st = await runner.tool(steps, label, "rubric_score", {"candidate_id": cid, "task_id": task_id})
        row["rubric_s"] = st.get("wall_s")
        feedback: list[str] = []
        if st["ok"]:
            rub = st["result"]
            route = rub.get("route") or {}
            feedback = list(route.get("feedback") or [])
            dims = rub.get("dimensions") or {}
            row.update(rubric=rub.get("verdict"), overall=rub.get("overall"), route=route.get("decision"),
                       route_reasons=route.get("reasons"), feedback=feedback,
                       scores={k: round(v.get("score", 0), 3) for k, v in dims.items()},
                       skill_compliance=[f.get("message") for f in (dims.get("skill_compliance") or {}).get("findings", [])
                                         if str(f.get("code", "")).startswith("feedback_")])
            _line(pre, st, f"{rub.get('verdict')} {_fmt(rub.get('overall'))}  route {route.get('decision')}"
                           + (f"  top feedback: {feedback[0][:140]}" if feedback else ""))
        else:
            _line(pre, st, "")
        st = await runner.prompt(steps, label, "verifier", {"candidate_id": cid})
        _line(pre, st, f"{st.get('lines')} lines, {st.get('chars')} chars; routing: "
                       f"{' '.join(x.strip() for x in (st.get('route_section') or [])[:2])[:160]}")
        if feedback:
            st = await runner.plain(steps, label, "save_feedback", {"candidate_id": cid, "items": feedback[:20]})
            _line(pre, st, st.get("text", "")[:160])
        else:
            log(f"{pre} save_feedback: skipped (the route has no feedback items: {row.get('route')})")
    if task_id:
        rec["history"] = await runner.resource(f"stitch://tasks/{task_id}/history")
        rec["best"] = await runner.resource(f"stitch://tasks/{task_id}/best")


async def run_all(problems: list[dict], args, record: dict, out_dir: Path) -> int:
    import anyio
    from mcp import Client

    from stitch_mcp.demo import server_params

    t_start = time.monotonic()
    deadline = t_start + args.budget_s
    prebuild = None
    if args.prebuild:
        log(f"prebuilding {sum(len(p['candidates']) for p in problems)} candidates in {len(problems)} chain(s)")
        prebuild = Prebuilder(problems)
    record["problems"] = []
    try:
        for prob in problems:
            rec: dict[str, Any] = {"name": prob["name"], "level": prob["level"], "reference": str(prob["ref"]),
                                   "plan": prob["plan"], "steps": []}
            record["problems"].append(rec)
            if deadline - time.monotonic() < MIN_STEP_S:
                rec["skipped"] = "time budget reached"
                record["stopped"] = f"time budget ({args.budget_s:.0f} s) reached before {prob['name']}"
                log(f"\n{record['stopped']}")
                break
            t_prob = time.monotonic()
            try:
                # a fresh server per problem: a crash in one cannot take the others with it
                async with Client(server_params(), read_timeout_seconds=args.max_wait_s + 120) as client:
                    if "tools" not in record:
                        record["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
                    runner = Runner(client, record, deadline, args.max_wait_s)
                    finished = await run_problem(runner, prob, prebuild, rec)
            except Exception as exc:  # the server failed to start or died: record, go on with the next problem
                leaf = _leaf(exc)
                rec["error"] = f"{type(leaf).__name__}: {leaf}"[:2000]
                rec["trace"] = "".join(traceback.format_exception(leaf))[-3000:]
                log(f"[{prob['name']}] problem aborted: {rec['error']}")
                finished = True
            finally:
                rec["wall_s"] = round(time.monotonic() - t_prob, 1)
                write_outputs(record, out_dir)  # keep what we have if the run is killed later
            if not finished:
                record["stopped"] = rec.get("stopped") or "time budget reached"
                log(f"\nstopping: {record['stopped']}")
                break
    finally:
        if prebuild is not None:
            record["prebuild"] = prebuild.results
            prebuild.shutdown()
        record["wall_s"] = round(time.monotonic() - t_start, 1)
        write_outputs(record, out_dir)
    print_summary(record)
    return 0


# ------------------------------------------------------------------ outputs


def summary_rows(record: dict) -> list[dict]:
    rows = []
    for p in record.get("problems", []):
        for c in p.get("candidates", []):
            rows.append({"problem": p["name"], **c})
    return rows


def print_summary(record: dict) -> None:
    log("\n=== summary ===")
    log(f"{'problem':<38} {'cand':<4} {'verdict':<7} {'x eager':>8} {'x comp':>7} {'rubric':<7} {'overall':>7} "
        f"{'route':<7} {'check':>6} {'prof':>6} {'rubric':>6}")
    for r in summary_rows(record):
        log(f"{r['problem'][:38]:<38} {r['candidate']:<4} {_fmt(r.get('verdict')):<7} {_fmt(r.get('speedup_vs_eager')):>8} "
            f"{_fmt(r.get('speedup_vs_compile')):>7} {_fmt(r.get('rubric')):<7} {_fmt(r.get('overall')):>7} "
            f"{_fmt(r.get('route')):<7} {_fmt(r.get('check_s'), 0):>6} {_fmt(r.get('profile_s'), 0):>6} "
            f"{_fmt(r.get('rubric_s'), 0):>6}")
    for p in record.get("problems", []):
        best = p.get("best") or {}
        if isinstance(best, dict) and best.get("candidate_id"):
            log(f"{p['name']}: best accepted {best.get('candidate_id')} "
                f"x eager {_fmt(best.get('speedup_vs_eager'))}")
    log(f"total {record.get('wall_s')} s; stopped: {record.get('stopped') or 'no (all steps ran)'}")


def markdown(record: dict) -> str:
    md = [f"# stitch-mcp dogfood run ({record.get('mode')})", "",
          f"- started: {record.get('started')}  device: {record.get('device') or '?'}",
          f"- budget {record.get('budget_s')} s, wall {record.get('wall_s')} s, "
          f"stopped early: {record.get('stopped') or 'no'}",
          f"- server tools: {', '.join(record.get('tools') or [])}", ""]
    md += ["## Results", "",
           "| problem | cand | verdict | x eager | x compile | rubric | overall | route | check s | profile s | rubric s |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in summary_rows(record):
        md.append(f"| {r['problem']} | {r['candidate']} | {_fmt(r.get('verdict'))} | {_fmt(r.get('speedup_vs_eager'))} "
                  f"| {_fmt(r.get('speedup_vs_compile'))} | {_fmt(r.get('rubric'))} | {_fmt(r.get('overall'))} "
                  f"| {_fmt(r.get('route'))} | {_fmt(r.get('check_s'), 1)} | {_fmt(r.get('profile_s'), 1)} "
                  f"| {_fmt(r.get('rubric_s'), 1)} |")
    pre = record.get("prebuild") or {}
    if pre:
        md += ["", "## Builds (in the background, before each check)", "", "| candidate | ok | seconds | done at |",
               "| --- | --- | --- | --- |"]
        for k, v in pre.items():
            md.append(f"| {k} | {v.get('ok')}{' (cached)' if v.get('cached') else ''} | {v.get('seconds')} "
                      f"| t+{v.get('done_at_s')} s |")
    for p in record.get("problems", []):
        md += ["", f"## {p['name']} (level {p['level']}, task {p.get('task_id')})", ""]
        if p.get("skipped") or p.get("error"):
            md.append(f"**{p.get('skipped') or p.get('error')}**")
        md += ["| step | tool | wall s | polls | outcome |", "| --- | --- | --- | --- | --- |"]
        for s in p.get("steps", []):
            outcome = s.get("error") or s.get("text") or (s.get("summary_text") or "").split("\n")[0] or \
                (f"{s.get('lines')} lines" if "lines" in s else "ok")
            outcome = str(outcome).replace("|", "/").replace("\n", " ")[:220]
            md.append(f"| {s['step']} | {s['tool']} | {_fmt(s.get('wall_s'), 1)} | {s.get('polls', '')} | {outcome} |")
        for c in p.get("candidates", []):
            md += ["", f"### {c['candidate']}: {_fmt(c.get('verdict'))}, x eager {_fmt(c.get('speedup_vs_eager'))}, "
                       f"x compile {_fmt(c.get('speedup_vs_compile'))}, rubric {_fmt(c.get('rubric'))} "
                       f"{_fmt(c.get('overall'))}, route {_fmt(c.get('route'))}"]
            if c.get("kernels"):
                md.append("- kernels: " + "; ".join(f"{k['name']} {_fmt(k.get('duration_us'), 1)} us {k.get('bound')}"
                                                    for k in c["kernels"][:5]))
            if c.get("top_suggestion"):
                md.append(f"- top profiler suggestion: {c['top_suggestion']}")
            if c.get("scores"):
                md.append("- rubric dimensions: " + ", ".join(f"{k} {v}" for k, v in c["scores"].items()))
            for s in c.get("skill_compliance") or []:
                md.append(f"- skill compliance: {s}")
            for i, f in enumerate(c.get("feedback") or [], 1):
                md.append(f"- feedback {i}: {f}")
    return "\n".join(md) + "\n"


def write_outputs(record: dict, out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = out_dir / "dogfood.json.tmp"
        tmp.write_text(json.dumps(record, indent=1, default=str))
        os.replace(tmp, out_dir / "dogfood.json")
        (out_dir / "dogfood.md").write_text(markdown(record))
    except Exception as exc:  # never let reporting kill the run
        log(f"(could not write outputs: {exc})")


# ------------------------------------------------------------------ entry


def dry_run(problems: list[dict], args) -> int:
    log(f"dry run: {len(problems)} problem(s), budget {args.budget_s:.0f} s, max_wait_s {args.max_wait_s:.0f}")
    for p in problems:
        missing = [str(x) for x in [p["ref"], *p["candidates"]] if not Path(x).exists()]
        log(f"\n{p['name']} (level {p['level']}){' MISSING: ' + ', '.join(missing) if missing else ''}")
        log(f"  profile_reference(reference={p['ref'].relative_to(ROOT)})")
        log("  prompt planner(task_id) -> save_plan(task_id, plan: "
            f"{len(p['plan'].splitlines())} lines, {len(p['plan'])} chars)")
        for c in p["candidates"]:
            log(f"  {c.stem}: compile_and_check(candidate={c.relative_to(ROOT)}, task_id) -> profile_kernel(candidate_id,"
                " sections=quick) -> rubric_score(candidate_id) -> prompt verifier(candidate_id) -> "
                "save_feedback(candidate_id, route.feedback)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", nargs="?", default="run", choices=["run", "prebuild"])
    ap.add_argument("--problems", help="comma-separated problem folder names or prefixes (e.g. l1,l3)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop cleanly after this many seconds (default 480)")
    ap.add_argument("--max-wait-s", type=float, default=45.0, help="max_wait_s of each call (a client's ~60 s limit)")
    ap.add_argument("--out", help="output folder (default $OUT, else .gpu/dogfood/out)")
    ap.add_argument("--data-dir", help="workspace folder for the server (default: a fresh .gpu/dogfood/data)")
    ap.add_argument("--keep-data", action="store_true", help="do not wipe the workspace folder first")
    ap.add_argument("--dry-run", action="store_true", help="list the steps; start nothing")
    ap.add_argument("--cpu-example", action="store_true", help="run the loop on stitch_mcp/examples (CPU path)")
    ap.add_argument("--prebuild", dest="prebuild", action="store_true", default=None,
                    help="build the candidates in the background (default: on when a GPU is present)")
    ap.add_argument("--no-prebuild", dest="prebuild", action="store_false")
    args = ap.parse_args(argv)

    problems = select(discover(args.cpu_example), args.problems)
    if args.dry_run:
        return dry_run(problems, args)
    if args.action == "prebuild":  # builds only: the workspace is not touched
        t0 = time.monotonic()
        pb = Prebuilder(problems)
        for key in list(pb.futures):
            pb.wait(key, 3600)
        pb.shutdown()
        ok = all(r.get("ok") or r.get("needs_gpu") for r in pb.results.values())
        log(f"prebuild: {len(pb.results)} candidate(s) in {time.monotonic() - t0:.0f} s, "
            f"{'all built' if ok else 'SOME FAILED'}")
        return 0 if ok else 1

    out_dir = Path(args.out or os.environ.get("OUT") or ROOT / ".gpu" / "dogfood" / "out").resolve()
    data = Path(args.data_dir or os.environ.get("DOGFOOD_DATA_DIR") or ROOT / ".gpu" / "dogfood" / "data").resolve()
    if data.exists() and not args.keep_data:
        shutil.rmtree(data)
    data.mkdir(parents=True, exist_ok=True)
    os.environ["STITCH_DATA_DIR"] = str(data)  # the server inherits STITCH_* (demo.server_params)
    roots = [p for p in os.environ.get("STITCH_ALLOWED_ROOTS", "").split(os.pathsep) if p]
    for need in (str(ROOT), "/tmp"):
        if need not in roots:
            roots.append(need)
    os.environ["STITCH_ALLOWED_ROOTS"] = os.pathsep.join(roots)
    gpu = any(Path("/dev").glob("nvidia[0-9]*"))
    if args.prebuild is None:
        args.prebuild = gpu and not args.cpu_example
    device = ""
    try:
        out = os.popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null").read().strip()
        device = out.splitlines()[0] if out else "cpu"
    except Exception:
        device = "?"
    record: dict[str, Any] = {"mode": "cpu-example" if args.cpu_example else "kernelbench", "device": device,
                              "started": time.strftime("%Y-%m-%d %H:%M:%S"), "budget_s": args.budget_s,
                              "max_wait_s": args.max_wait_s, "data_dir": str(data),
                              "env": {k: v for k, v in os.environ.items() if k.startswith("STITCH_")}}
    log(f"dogfood: {len(problems)} problem(s) on {device}; budget {args.budget_s:.0f} s; outputs -> {out_dir}")
    import anyio

    try:
        return anyio.run(run_all, problems, args, record, out_dir)
    except KeyboardInterrupt:
        record["stopped"] = "interrupted"
        write_outputs(record, out_dir)
        return 130


if __name__ == "__main__":
    sys.exit(main())
