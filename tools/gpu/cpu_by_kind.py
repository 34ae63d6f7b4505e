"""Where a host's CPU time goes while an eval runs: CPU seconds by kind of process (compilers,
candidate rooms, judges, baseline workers, inductor's compile workers, ...), sampled from /proc.

    python3 tools/gpu/cpu_by_kind.py --until-pid PID --out cpu_by_kind.txt [--every 1.0]

Samples every process's user+system time every `--every` seconds until PID exits, and adds each
one's growth to its kind (decided from its name, command line and working folder, looked at again
when they change: a spare worker takes its order later). A process that starts and ends between two
samples is not seen, so the kinds add up to less than the host's busy time, which is printed
beside them (from /proc/stat) with the load average and the most processes of each kind at once.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter, defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
COMPILERS = {"nvcc", "cicc", "ptxas", "cudafe++", "fatbinary", "nvlink", "gcc", "g++", "cc1plus", "cc1", "as",
             "ld", "collect2", "ninja", "c++", "x86_64-linux-gnu-g++", "x86_64-linux-gnu-gcc", "bin2c"}


def kind_of(pid: str, comm: str) -> str:
    if comm in COMPILERS or comm.startswith("cc1"):
        return "compilers (nvcc, g++, ptxas, ninja)"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone before looked at"
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = ""
    if "stitch_mcp.room" in cmd:
        return "rooms (build and run: imports, first-use compiles, calls)"
    if "stitch_mcp.worker" in cmd:
        if "baseline-" in cwd:
            return "baseline workers (eager + torch.compile)"
        if comm == "stitch-worker" or "/run" in cwd:
            return "judges (run stage workers)"
        return "workers before their order (importing torch, or spare)"
    if "compile_worker" in cmd or "_inductor" in cmd:
        return "inductor compile workers"
    if "triton" in cmd:
        return "triton"
    if "stitch_mcp eval" in cmd or "stitch_mcp.memory_order" in cmd:
        return "eval (the server side)"
    if comm in {"bwrap", "setpriv", "unshare"}:
        return "sandbox launchers"
    if comm.startswith("python"):
        return "other python: " + " ".join(cmd.split())[:60]
    return f"other: {comm}"


def _busy_ticks() -> int:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(fields) - fields[3] - fields[4]  # all but idle and iowait


def sample(until_pid: int, every: float) -> tuple[dict[str, float], Counter, float, float, list[float]]:
    last: dict[str, tuple[str, int, str, str]] = {}  # pid -> (start time, ticks, comm, kind)
    by_kind: dict[str, float] = defaultdict(float)
    most: Counter = Counter()
    loads: list[float] = []
    t0, busy0 = time.monotonic(), _busy_ticks()
    while os.path.exists(f"/proc/{until_pid}"):
        alive: Counter = Counter()
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                raw = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            comm = raw[raw.index("(") + 1:raw.rindex(")")]
            fields = raw[raw.rindex(")") + 2:].split()
            ticks, start = int(fields[11]) + int(fields[12]), fields[19]
            before = last.get(pid)
            if before is None or before[0] != start:
                kind, grown = kind_of(pid, comm), 0
            else:
                kind = before[3] if before[2] == comm else kind_of(pid, comm)
                grown = ticks - before[1]
            by_kind[kind] += grown / TICK
            last[pid] = (start, ticks, comm, kind)
            alive[kind] += 1
        for kind, n in alive.items():
            most[kind] = max(most[kind], n)
        loads.append(float(Path("/proc/loadavg").read_text().split()[0]))
        time.sleep(every)
    return by_kind, most, time.monotonic() - t0, (_busy_ticks() - busy0) / TICK, loads


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--until-pid", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--every", type=float, default=1.0)
    args = ap.parse_args()
    by_kind, most, wall, busy, loads = sample(args.until_pid, args.every)
    cores = os.cpu_count() or 1
    lines = [f"{wall:.0f} s on {cores} cores: host busy {busy:.0f} CPU s ({busy / max(wall, 1e-9) / cores:.0%} of "
             f"the cores); load average mean {sum(loads) / max(len(loads), 1):.1f}, max {max(loads, default=0):.1f}",
             f"{'kind':<60} {'CPU s':>8} {'share':>6} {'most at once':>12}"]
    seen = sum(by_kind.values())
    for kind, secs in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        if secs >= 0.5:
            lines.append(f"{kind:<60} {secs:>8.0f} {secs / max(seen, 1e-9):>6.1%} {most[kind]:>12}")
    lines.append(f"{'seen in samples':<60} {seen:>8.0f} ({seen / max(busy, 1e-9):.0%} of the host's busy time)")
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
