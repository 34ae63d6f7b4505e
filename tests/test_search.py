"""search_cuda_docs: corpus extraction, index build and refresh, hybrid search, bad input, offline.

Every test here runs with a guard that makes any network connection fail (the search must work
offline) and with chromadb's default embedding function made unconstructible (it would download a
model). The fast tests use a small corpus: a handful of cards and a header written for the tests;
the full default build (all cards + this machine's CUDA headers) is the slow test.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stitch_mcp import search
from stitch_mcp.config import configure
from stitch_mcp.docs import corpus, embed
from stitch_mcp.errors import NotFound, UserError

ROOT = Path(__file__).resolve().parent.parent
TOY_HEADER = ROOT / "tests" / "fixtures" / "docs" / "toy_api.h"
SMALL_CARDS = ["warp-shuffle-reduction", "shared-memory-bank-conflicts", "stall-long-scoreboard",
               "cublaslt-epilogues", "fair-candidate-rules", "roofline", "ncu-occupancy", "online-softmax"]
MODEL = embed.model_file() is not None


# ------------------------------------------------------------------------------------ guards


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Fail loudly if anything opens a network connection (not a mock of the search itself)."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[1:] if len(args) > 1 else args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    try:
        from chromadb.utils import embedding_functions as efs

        def no_default(*args, **kwargs):
            raise AssertionError("chromadb's default embedding function was created (it downloads a model)")

        for name in ("DefaultEmbeddingFunction", "ONNXMiniLM_L6_V2"):
            cls = getattr(efs, name, None)
            if cls is not None:
                monkeypatch.setattr(cls, "__init__", no_default)
    except ImportError:
        pass
    yield


@pytest.fixture
def small_env(tmp_path, monkeypatch):
    """A small corpus (8 cards + the toy header) and a private index directory."""
    cards = tmp_path / "cards"
    cards.mkdir()
    for name in SMALL_CARDS:
        shutil.copy(ROOT / "rag_index" / f"{name}.md", cards / f"{name}.md")
    monkeypatch.setenv("STITCH_CARDS_DIR", str(cards))
    monkeypatch.setenv("STITCH_DOC_HEADERS", str(TOY_HEADER))
    monkeypatch.setenv("STITCH_DOC_BINDINGS", "0")
    monkeypatch.setenv("STITCH_CACHE_DIR", str(tmp_path / "cache"))
    configure()
    search.reset()
    embed.reset_model_cache()
    yield tmp_path
    search.reset()
    embed.reset_model_cache()
    monkeypatch.undo()
    configure()


# ------------------------------------------------------------------------------- extraction


def test_header_extraction_reads_every_doc_comment_style():
    chunks = {c.id: c for c in corpus.extract_header(TOY_HEADER)}
    assert set(chunks) == {"hdr:toy_api:TOY_MAX_WIDGETS", "hdr:toy_api:toyFrobnicateAsync",
                           "hdr:toy_api:toyStreamWait", "hdr:toy_api:toyEpilogue_t", "hdr:toy_api:toyShape",
                           "hdr:toy_api:toyCallback_t", "hdr:toy_api:toyGetVersion"}
    fn = chunks["hdr:toy_api:toyFrobnicateAsync"]
    assert fn.text.startswith("`toyStatus_t TOYAPI toyFrobnicateAsync(void *dst, const void *src, size_t count, "
                              "toyStream_t stream = 0)`")
    assert "- `count`: Number of widgets" in fn.text and "\\p" not in fn.text and "::" not in fn.text
    assert fn.kind == "header" and str(TOY_HEADER) in fn.source and "toyFrobnicateAsync" in fn.source
    enum = chunks["hdr:toy_api:toyEpilogue_t"]
    assert enum.symbols[:2] == ["toyEpilogue_t", "TOY_EPILOGUE_NONE"] and "TOY_EPILOGUE_ZORBULATE_AUX" in enum.symbols
    assert "- `TOY_EPILOGUE_RELU = 4`: Clamps negative values to zero." in enum.text  # trailing /**< */
    assert "- `TOY_EPILOGUE_BIAS = 2`: Adds a bias vector" in enum.text  # leading /** */
    assert "- `int cols`: number of columns" in chunks["hdr:toy_api:toyShape"].text
    assert "Never fails." in chunks["hdr:toy_api:toyGetVersion"].text  # //! lines
    assert all(corpus.safe_id(c.id) == c.id for c in chunks.values())


def test_cards_are_many_cited_and_unique():
    files = corpus.card_files(ROOT / "rag_index")
    assert len(files) >= 40
    cards = [corpus.parse_card(p) for p in files]
    ids = [c.id for c in cards]
    assert len(set(ids)) == len(ids)
    for c in cards:
        assert c.source.startswith("https://"), c.id
        assert c.symbols, c.id
        assert len(c.text) > 400, c.id
        assert c.dense, c.id


def test_cards_cover_every_section_stall_and_limiter():
    ids = {corpus.parse_card(p).id for p in corpus.card_files(ROOT / "rag_index")}
    symbols = {s for p in corpus.card_files(ROOT / "rag_index") for s in corpus.parse_card(p).symbols}
    for section in ("SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats",
                    "WarpStateStats", "SourceCounters"):
        assert section in symbols, section
    stalls = ["long_scoreboard", "short_scoreboard", "mio_throttle", "lg_throttle", "math_pipe_throttle", "barrier",
              "membar", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "no_instruction", "not_selected",
              "selected", "sleeping", "tex_throttle", "wait", "gmma"]  # every stall reason ncu reports but misc
    for reason in stalls:
        assert f"card:stall-{reason.replace('_', '-')}" in ids, reason
        assert reason in symbols
    for limiter in ("launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
                    "launch__occupancy_limit_warps", "launch__occupancy_limit_blocks"):
        assert limiter in symbols
    for needed in ("card:roofline", "card:fair-candidate-rules", "card:nsys-timeline", "card:cublaslt-epilogues",
                   "card:online-softmax", "card:welford-numerics", "card:cuda-graphs", "card:hopper-tma",
                   "card:tensor-cores", "card:l2-persistence"):
        assert needed in ids


def test_query_set_is_well_formed():
    queries = json.loads((ROOT / "tests" / "search_queries.json").read_text())
    assert len(queries) >= 40
    assert {q["type"] for q in queries} == {"identifier", "question"}
    card_ids = {corpus.parse_card(p).id for p in corpus.card_files(ROOT / "rag_index")}
    for q in queries:
        assert q["query"].strip() and q["expected"]
        for e in q["expected"]:
            assert e.startswith(("card:", "hdr:", "py:", "user:")), e
            if e.startswith("card:"):
                assert e in card_ids, e


def test_user_document_extraction_html_and_markdown(tmp_path):
    (tmp_path / "guide.html").write_text(
        "<html><head><title>Saved guide</title><style>p{}</style></head><body><nav>menu</nav>"
        "<h1>Intro</h1><p>Plain intro.</p><h2>Quux tuning</h2><p>Set the quux factor to 7 for speed.</p>"
        "<script>var x;</script></body></html>")
    chunks = corpus.extract_user(tmp_path / "guide.html", tmp_path)
    assert [c.title for c in chunks] == ["Saved guide: Intro", "Saved guide: Quux tuning"]
    assert "quux factor to 7" in chunks[1].text and "var x" not in chunks[1].text and "menu" not in chunks[0].text
    assert all(c.kind == "user" and corpus.safe_id(c.id) == c.id for c in chunks)


# ---------------------------------------------------------------------------- search, small


def test_search_small_index_end_to_end(small_env):
    r = search.search_cuda_docs(query="__shfl_down_sync", k=3)
    assert r.results[0].id == "card:warp-shuffle-reduction"
    assert r.mode == ("hybrid" if MODEL else "lexical")
    assert r.notes and "built the documentation index" in r.notes[0]
    assert "__shfl_down_sync" in r.results[0].snippet
    assert len(r.results) == 3 and r.summary.startswith("3 result(s)"), r.summary

    # an identifier from the header, exact match first, snippet = the matching passage, not the start
    r = search.search_cuda_docs(query="TOY_EPILOGUE_ZORBULATE_AUX", k=5)
    top = r.results[0]
    assert top.id == "hdr:toy_api:toyEpilogue_t" and top.kind == "header" and top.score >= 1.0
    assert "ZORBULATE_AUX" in top.snippet and not top.snippet.startswith("`typedef enum")
    assert top.text is None

    # a question in words, kinds filter, include_text
    r = search.search_cuda_docs(query="how do I avoid bank conflicts in shared memory", k=3, kinds=["card"],
                                include_text=True)
    assert r.results[0].id == "card:shared-memory-bank-conflicts"
    assert all(h.kind == "card" for h in r.results)
    assert r.results[0].text and "Based on: https://" in r.results[0].text
    assert "bank" in r.results[0].snippet.lower()

    r = search.search_cuda_docs(query="frobnicate widgets asynchronously", kinds=["header"])
    assert r.results and r.results[0].id == "hdr:toy_api:toyFrobnicateAsync"
    assert all(h.kind == "header" for h in r.results)

    doc = search.get_doc("hdr:toy_api:toyFrobnicateAsync")
    assert doc.startswith("# toyFrobnicateAsync (toy_api.h)") and "Number of widgets" in doc
    with pytest.raises(NotFound):
        search.get_doc("card:no-such-card")


def test_bad_input_is_a_clear_user_error(small_env):
    for bad in ("", "   \n\t"):
        with pytest.raises(UserError, match="empty"):
            search.search_cuda_docs(query=bad)
    with pytest.raises(UserError, match="limit is 2000"):
        search.search_cuda_docs(query="x " * 1500)
    with pytest.raises(UserError, match="unknown kind.*'manual'.*card, header, bindings, user"):
        search.search_cuda_docs(query="occupancy", kinds=["manual"])
    with pytest.raises(UserError, match="k must be"):
        search.search_cuda_docs(query="occupancy", k=0)
    with pytest.raises(UserError, match="no such file or folder"):
        search.add_documents(str(small_env / "does-not-exist"))
    (small_env / "empty").mkdir()
    (small_env / "empty" / "data.bin").write_bytes(b"\0")
    with pytest.raises(UserError, match="no documents to index"):
        search.add_documents(str(small_env / "empty"))
    # a query of pure punctuation answers rather than raising: nothing matches it lexically, so
    # without an embedding model there are no results, and with one only its nearest neighbours
    # (reciprocal-rank score of the dense side alone: at most 0.5)
    r = search.search_cuda_docs(query="@@@ ###")
    assert r.mode == ("hybrid" if MODEL else "lexical")
    if MODEL:
        assert r.results and all(h.id and 0 < h.score <= 0.5 for h in r.results), r.summary
    else:
        assert r.results == [], r.summary


def test_rebuilds_only_what_changed(small_env):
    report = search.build_index()
    assert report.sources_parsed == len(SMALL_CARDS) + 1 and report.chunks >= len(SMALL_CARDS) + 7
    first_embedded = report.embedded
    assert (first_embedded > 0) == MODEL
    again = search.build_index()
    assert again.sources_parsed == 0 and again.embedded == 0 and again.sources_reused == len(SMALL_CARDS) + 1
    # touching a file without changing it re-hashes but does not re-parse
    card = small_env / "cards" / "roofline.md"
    os.utime(card, ns=(1, 1))
    assert search.build_index().sources_parsed == 0
    # change one card: only it is parsed and re-embedded
    card.write_text(card.read_text().replace("Arithmetic intensity", "Arithmetic intensity (quuxity)"))
    changed = search.build_index()
    assert changed.sources_parsed == 1
    assert changed.embedded == (1 if MODEL else 0)  # only its first passage changed
    assert search.search_cuda_docs(query="quuxity").results[0].id == "card:roofline"
    # remove a card: its chunk leaves both indexes
    (small_env / "cards" / "online-softmax.md").unlink()
    removed = search.build_index()
    assert removed.sources_removed == 1
    assert all(h.id != "card:online-softmax" for h in search.search_cuda_docs(query="online softmax", k=10).results)
    # a forced rebuild parses everything again
    assert search.build_index(force=True).sources_parsed == len(SMALL_CARDS)


@pytest.mark.parametrize("damage", ["manifest", "chunks", "bm25", "chroma", "everything"])
def test_missing_or_corrupt_index_is_rebuilt(small_env, damage):
    search.build_index()
    index_dir = small_env / "cache" / "docs-index"
    if damage == "manifest":
        (index_dir / "manifest.json").write_text("{not json")
    elif damage == "chunks":
        (index_dir / "chunks.json").write_text('{"chunks": [{"id": 1}]}')
    elif damage == "bm25":
        for f in (index_dir / "bm25").iterdir():
            f.write_bytes(b"garbage")
    elif damage == "chroma":
        if not MODEL:
            pytest.skip("no dense model installed")
        for f in (index_dir / "chroma").rglob("*"):
            if f.is_file():
                f.write_bytes(b"garbage" * 10)
    else:
        shutil.rmtree(index_dir)
    search.reset()
    r = search.search_cuda_docs(query="TOY_EPILOGUE_RELU")
    assert r.results[0].id == "hdr:toy_api:toyEpilogue_t"
    assert "Clamps negative values" in r.results[0].snippet


def test_user_documents_are_added_and_searchable(small_env):
    docs = small_env / "mydocs"
    (docs / "sub").mkdir(parents=True)
    (docs / "tuning.md").write_text("# Our kernels\n\n## Blorp tiling\n\nWe tile blorps 64 wide because the "
                                    "cache line of the blorp engine is 64 bytes.\n")
    (docs / "sub" / "notes.txt").write_text("Plain notes about the snargle reduction order.\n")
    report = search.add_documents(str(docs))
    assert report.by_kind.get("user") == 2
    r = search.search_cuda_docs(query="why are blorps tiled 64 wide", kinds=["user"])
    assert r.results[0].kind == "user" and "Blorp tiling" in r.results[0].title
    assert str(docs / "tuning.md") in r.results[0].source
    assert "64 bytes" in search.get_doc(r.results[0].id)
    # still there after reopening, and refreshed when the folder changes
    search.reset()
    (docs / "sub" / "notes.txt").write_text("Plain notes about the wibble reduction order.\n")
    assert search.search_cuda_docs(query="wibble reduction").results[0].kind == "user"


def test_lexical_fallback_without_model(small_env, monkeypatch):
    monkeypatch.setenv("STITCH_DENSE", "0")
    embed.reset_model_cache()
    r = search.search_cuda_docs(query="how do I avoid bank conflicts in shared memory")
    assert r.mode == "lexical" and any("switched off" in n for n in r.notes)
    assert r.results[0].id == "card:shared-memory-bank-conflicts"


def test_model_failing_its_checksum_is_not_used(small_env, monkeypatch):
    fake = small_env / "model.onnx"
    fake.write_bytes(b"not the model")
    monkeypatch.setenv("STITCH_EMBEDDING_MODEL_PATH", str(fake))
    embed.reset_model_cache()
    r = search.search_cuda_docs(query="warp shuffle")
    assert r.mode == "lexical" and any("sha256" in n for n in r.notes)
    assert r.results


@pytest.mark.skipif(not MODEL, reason="the embedding model package is not installed")
def test_collection_reopens_with_our_embedding_function(small_env):
    search.build_index()
    import chromadb
    from chromadb.config import Settings

    from stitch_mcp.docs.index import COLLECTION

    client = chromadb.PersistentClient(path=str(small_env / "cache" / "docs-index" / "chroma"),
                                       settings=Settings(anonymized_telemetry=False))
    coll = client.get_collection(COLLECTION)  # no embedding function passed
    # the persisted config names our registered class, which chromadb rebuilds and uses for
    # query_texts (its default function would try to download a model: the guard would fail it)
    assert coll.configuration["embedding_function"].name() == embed.EF_NAME
    got = coll.query(query_texts=["avoid shared memory bank conflicts"], n_results=3, include=["metadatas"])
    assert any(m["parent"] == "card:shared-memory-bank-conflicts" for m in got["metadatas"][0])


def test_cli_index_build_and_add(small_env, capsys):
    from stitch_mcp.cli import main

    assert main(["index", "build", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["chunks"] >= len(SMALL_CARDS) + 7
    docs = small_env / "d"
    docs.mkdir()
    (docs / "a.md").write_text("# Zeta\n\nThe zeta kernel note.\n")
    assert main(["index", "add", str(docs)]) == 0
    assert "user 1" in capsys.readouterr().out
    assert main(["index", "add", str(small_env / "nope")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_importing_search_stays_light():
    code = ("import sys, stitch_mcp.search, stitch_mcp.server; "
            "print(sorted(m for m in ('chromadb', 'onnxruntime', 'bm25s', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------------- full build


@pytest.mark.slow
def test_full_default_index_quality(tmp_path, monkeypatch):
    """All cards + this machine's CUDA headers; fused hit@5 on the query set must reach 0.9."""
    for var in ("STITCH_CARDS_DIR", "STITCH_DOC_HEADERS", "STITCH_DENSE", "STITCH_EMBEDDING_MODEL_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("STITCH_CACHE_DIR", str(tmp_path / "cache"))
    configure()
    search.reset()
    embed.reset_model_cache()
    try:
        report = search.build_index()
        assert report.by_kind["card"] >= 40
        idx, _ = search._get_index()
        known = {c["id"] for c in idx.chunks}
        queries = [q for q in json.loads((ROOT / "tests" / "search_queries.json").read_text())
                   if any(e in known or any(k.startswith(e + "~") for k in known) for e in q["expected"])]
        assert len(queries) >= 40
        hits = 0
        for q in queries:
            ids = [h.id for h in search.search_cuda_docs(query=q["query"], k=5).results]
            hits += any(i == e or i.startswith(e + "~") for i in ids for e in q["expected"])
        assert hits / len(queries) >= 0.9
    finally:
        search.reset()
        monkeypatch.undo()
        configure()


def test_cuda_bindings_docstrings_when_installed():
    if corpus.bindings_version() is None:
        pytest.skip("cuda-bindings is not installed")
    chunks = {c.id: c for c in corpus.extract_bindings("cuda.bindings.runtime")}
    c = chunks.get("py:runtime:cudaMemcpyAsync")
    assert c is not None and c.kind == "bindings" and "cudaMemcpyAsync" in c.symbols
    assert c.text.startswith("`cudaMemcpyAsync(") and ":py:obj:" not in c.text
    assert "cuda-bindings" in c.source
