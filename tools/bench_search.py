#!/usr/bin/env python
"""Benchmark search_cuda_docs: quality (hit@k, MRR) and speed (build, cold first query, warm p50).

Usage: python tools/bench_search.py [--queries tests/search_queries.json] [--k 5] [--index-dir DIR]
                                    [--json OUT.json] [--no-build]

By default it builds a fresh default index (cards + this machine's CUDA headers) in a temporary
cache directory and times it, then times the first query in a fresh process (cold start), then
runs every query warm. Quality is reported for lexical (BM25 only), dense (vectors only) and fused
(exact symbols, then reciprocal-rank fusion) retrieval. A query whose expected ids are all absent
from this machine's index (e.g. a cuBLASLt header that is not installed) is skipped and counted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def matches(result_id: str, expected: str) -> bool:
    return result_id == expected or result_id.startswith(expected + "~")


def evaluate(idx, queries, k, modes):
    hits, rr, n = 0, 0.0, 0
    misses = []
    for q in queries:
        ranked = idx.search(q["query"], max(k, 10), None, modes=modes)
        ids = [idx.chunks[i]["id"] for i, _ in ranked]
        n += 1
        rank = next((r for r, rid in enumerate(ids, 1) if any(matches(rid, e) for e in q["expected"])), None)
        if rank is not None and rank <= k:
            hits += 1
        else:
            misses.append((q["query"], ids[:k]))
        if rank is not None:
            rr += 1.0 / rank
    return {"hit@k": round(hits / max(n, 1), 3), "mrr": round(rr / max(n, 1), 3), "n": n}, misses


COLD = r"""
import time, sys, json
t0 = time.perf_counter()
from stitch_mcp.search import search_cuda_docs
t1 = time.perf_counter()
r = search_cuda_docs(query=sys.argv[1], k=5)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_query_s": t2 - t1, "total_s": t2 - t0, "mode": r.mode}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", default=str(ROOT / "tests" / "search_queries.json"))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--index-dir", default=None, help="cache dir to use (default: a fresh temporary one)")
    ap.add_argument("--no-build", action="store_true", help="reuse the index in --index-dir as it is")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()

    cache = Path(args.index_dir) if args.index_dir else Path(tempfile.mkdtemp(prefix="stitch-bench-"))
    os.environ["STITCH_CACHE_DIR"] = str(cache)
    from stitch_mcp import search  # noqa: PLC0415
    from stitch_mcp.config import configure  # noqa: PLC0415

    configure()
    figures: dict = {"cpus": os.cpu_count(), "cache_dir": str(cache)}

    # 1. build (cards + toolkit headers), in this process
    t0 = time.perf_counter()
    report = search.build_index(force=not args.no_build)
    figures["build_s"] = round(time.perf_counter() - t0, 2)
    figures["chunks"] = report.chunks
    figures["by_kind"] = report.by_kind
    figures["dense_vectors"] = report.dense_vectors
    figures["mode"] = report.mode
    # incremental rebuild with nothing changed
    search.reset()
    t0 = time.perf_counter()
    search.build_index()
    figures["rebuild_unchanged_s"] = round(time.perf_counter() - t0, 2)

    # 2. cold first query in a fresh process (index already built)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    colds = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", COLD, "cudaMemcpyAsync stream ordering"], env=env,
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        colds.append(json.loads(out.stdout.strip().splitlines()[-1]))
    figures["cold_first_query_s"] = round(min(c["total_s"] for c in colds), 2)
    figures["cold_import_s"] = round(min(c["import_s"] for c in colds), 2)

    # 3. quality and warm latency
    queries = json.loads(Path(args.queries).read_text())
    idx, _ = search._get_index()
    known = set(c["id"] for c in idx.chunks)
    usable, skipped = [], []
    for q in queries:
        if any(e in known or any(i.startswith(e + "~") for i in known) for e in q["expected"]):
            usable.append(q)
        else:
            skipped.append(q["query"])
    figures["queries"] = len(queries)
    figures["queries_skipped"] = skipped
    allmisses = {}
    for name, modes in (("lexical", ("lexical",)), ("dense", ("dense",)), ("fused", ("exact", "lexical", "dense"))):
        if name == "dense" and idx.collection is None:
            figures[name] = None
            continue
        figures[name], allmisses[name] = evaluate(idx, usable, args.k, modes)
        for typ in ("identifier", "question"):
            sub = [q for q in usable if q.get("type") == typ]
            figures[f"{name}_{typ}"] = evaluate(idx, sub, args.k, modes)[0]
    times = []
    for _ in range(3):
        for q in usable:
            t = time.perf_counter()
            search.search_cuda_docs(query=q["query"], k=args.k)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    figures["warm_p50_ms"] = round(statistics.median(times), 1)
    figures["warm_p95_ms"] = round(times[int(0.95 * (len(times) - 1))], 1)

    print(f"machine: {figures['cpus']} CPUs; index {figures['chunks']} chunks {figures['by_kind']}, "
          f"{figures['dense_vectors']} dense vectors, mode {figures['mode']}")
    print(f"build (fresh): {figures['build_s']} s; rebuild with nothing changed: {figures['rebuild_unchanged_s']} s")
    print(f"cold first query (new process, incl. imports): {figures['cold_first_query_s']} s "
          f"(imports {figures['cold_import_s']} s)")
    print(f"warm query: p50 {figures['warm_p50_ms']} ms, p95 {figures['warm_p95_ms']} ms")
    print(f"queries: {len(usable)} used, {len(skipped)} skipped (expected ids not on this machine)")
    print(f"{'retrieval':10} {'hit@' + str(args.k):>7} {'MRR':>6}   identifier hit/MRR   question hit/MRR")
    for name in ("lexical", "dense", "fused"):
        f = figures.get(name)
        if not f:
            print(f"{name:10} (unavailable)")
            continue
        fi, fq = figures[f"{name}_identifier"], figures[f"{name}_question"]
        print(f"{name:10} {f['hit@k']:>7} {f['mrr']:>6}   {fi['hit@k']:>6} / {fi['mrr']:<6}       "
              f"{fq['hit@k']:>6} / {fq['mrr']}")
    if args.show_misses:
        for name, misses in allmisses.items():
            for q, ids in misses:
                print(f"miss [{name}] {q!r}: {ids}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
