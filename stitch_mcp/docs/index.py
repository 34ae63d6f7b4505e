"""The documentation index: chunks + bm25s (lexical) + chromadb (dense), kept in settings.index_dir.

Layout of index_dir:
  manifest.json   sources with their stat stamp and content hash, user folders, format version
  chunks.json     every chunk (id, title, source, kind, text, symbols, passages to embed)
  bm25/           the bm25s index over all chunks (rebuilt whenever any chunk changed)
  chroma/         chromadb PersistentClient: one entry per embedded passage (`<chunk id>@<n>`) with
                  its text, {parent, kind, h} metadata and vector; synced by passage hash, so only
                  new or changed passages are embedded again

Opening checks every source's stat stamp (cheap), re-reads and re-hashes only those whose stamp
changed, and re-parses only those whose content hash changed. A missing or unreadable index is
rebuilt; it never makes a search fail.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from stitch_mcp.docs import corpus, lexical
from stitch_mcp.errors import NotFound, UserError

log = logging.getLogger(__name__)

FORMAT = 2
COLLECTION = "stitch_docs"
RRF_K = 60


class _NullProgress:
    def update(self, done, total=None, message=""):
        pass

    def check(self):
        pass


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}"


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------ sources


class Source:
    """One unit of re-indexing: a card file, a header file, a bindings module, a user file."""

    def __init__(self, key: str, kind: str, path: Path | None = None, root: Path | None = None,
                 module: str | None = None, version: str | None = None) -> None:
        self.key, self.kind, self.path, self.root, self.module, self.version = key, kind, path, root, module, version

    def stamp(self) -> str:
        if self.module:
            return f"{self.version}"
        return _stamp(self.path)  # type: ignore[arg-type]

    def read(self) -> str:
        if self.module:
            return f"{self.module}=={self.version}"
        return self.path.read_text(encoding="utf-8", errors="replace")  # type: ignore[union-attr]

    def parse(self, text: str) -> list[corpus.Chunk]:
        if self.kind == "card":
            chunks = [corpus.parse_card(self.path, text)]  # type: ignore[arg-type]
        elif self.kind == "header":
            label = self.path.name  # type: ignore[union-attr]
            if self.root and self.root != self.path and self.path.parent != self.root:  # type: ignore[union-attr]
                label = str(self.path.relative_to(self.root))  # type: ignore[union-attr]
            chunks = corpus.extract_header(self.path, text, label=label)  # type: ignore[arg-type]
        elif self.kind == "bindings":
            chunks = corpus.extract_bindings(self.module)  # type: ignore[arg-type]
        else:
            chunks = corpus.extract_user(self.path, self.root, text)  # type: ignore[arg-type]
        for c in chunks:
            c.src = self.key
        return chunks


def default_sources(user_paths: list[str]) -> tuple[list[Source], list[str]]:
    notes: list[str] = []
    sources: list[Source] = []
    cdir = corpus.cards_dir()
    cards = corpus.card_files(cdir)
    if not cards:
        notes.append(f"no knowledge cards found in {cdir}")
    sources += [Source(f"card:{p.name}", "card", p) for p in cards]
    headers = corpus.header_files()
    if not headers:
        notes.append("no CUDA toolkit headers found (set CUDA_HOME); API reference not indexed")
    roots = corpus.default_header_roots()
    for p in headers:
        root = next((r for r in roots if str(p.resolve()).startswith(str(r) + os.sep)), None)
        sources.append(Source(f"hdr:{p.resolve()}", "header", p, root=root))
    version = corpus.bindings_version()
    if version and os.environ.get("STITCH_DOC_BINDINGS", "1") != "0":
        sources += [Source(f"bindings:{m}", "bindings", module=m, version=version) for m in corpus.bindings_modules()]
    for up in user_paths:
        root = Path(up)
        if not root.exists():
            notes.append(f"user documents folder {root} no longer exists; its chunks were dropped")
            continue
        sources += [Source(f"user:{p.resolve()}", "user", p, root=root) for p in corpus.user_files(root)]
    return sources, notes


# -------------------------------------------------------------------------------------- index


class DocIndex:
    def __init__(self, index_dir: Path) -> None:
        self.dir = Path(index_dir)
        self.chunks: list[dict] = []
        self.by_id: dict[str, int] = {}
        self.symbols: dict[str, list[int]] = {}
        self.symbols_lower: dict[str, list[int]] = {}
        self.kinds: Any = None
        self.bm25: Any = None
        self.bm25_vocab: dict[str, int] = {}
        self.idf: dict[str, float] = {}
        self.collection: Any = None
        self.model: Any = None
        self.dense_note: str | None = None
        self.notes: list[str] = []
        self.manifest: dict = {}
        self.lock = threading.RLock()

    # ---- paths
    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def chunks_path(self) -> Path:
        return self.dir / "chunks.json"

    # ---- open / build
    def open(self, progress=None, force: bool = False) -> dict:
        """Load the index, bringing it up to date with its sources; returns a build report."""
        progress = progress or _NullProgress()
        with self.lock:
            try:
                return self._open(progress, force)
            except (UserError, KeyboardInterrupt):
                raise
            except Exception as exc:
                if type(exc).__name__ == "Cancelled":
                    raise
                log.warning("documentation index in %s unreadable (%s: %s); rebuilding it", self.dir,
                            type(exc).__name__, exc)
                self._wipe(keep_user_paths=True)
                report = self._open(progress, True)
                report["notes"].append(f"the index was unreadable ({type(exc).__name__}) and was rebuilt")
                return report

    def _wipe(self, keep_user_paths: bool) -> None:
        user_paths = []
        if keep_user_paths:
            try:
                user_paths = list(_read_json(self.manifest_path).get("user_paths", []))
            except Exception:
                user_paths = []
        self.collection = None
        # the chroma store is kept: it is synced by passage hash, so its vectors are reused
        for name in ("manifest.json", "chunks.json", "bm25"):
            p = self.dir / name
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            elif p.exists():
                p.unlink()
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_json(self.manifest_path, {"format": FORMAT, "sources": {}, "user_paths": user_paths})

    def _open(self, progress, force: bool) -> dict:
        t0 = time.perf_counter()
        self.dir.mkdir(parents=True, exist_ok=True)
        force, user_paths, old_sources, old_chunks = self._previous_build(force)
        sources, notes = default_sources(user_paths)
        new_sources, chunks, changed, reused = self._gather_chunks(sources, old_sources, old_chunks, progress, notes)
        removed = len(set(old_sources) - set(new_sources))
        content_changed = force or changed or removed or not self.chunks_path.exists() \
            or not (self.dir / "bm25" / "params.index.json").exists()
        if content_changed:
            _write_json(self.chunks_path, {"format": FORMAT, "chunks": chunks})
        self._load_chunks(chunks)
        t_parse = time.perf_counter() - t0
        if content_changed:
            progress.update(len(sources), len(sources), f"building the lexical index over {len(chunks)} chunks")
            self._build_bm25()
        else:
            try:
                self._load_bm25()
            except Exception:
                self._build_bm25()
        t_lex = time.perf_counter() - t0 - t_parse
        dense = self._sync_dense(progress, force)
        t_dense = time.perf_counter() - t0 - t_parse - t_lex
        manifest = {"format": FORMAT, "parser": corpus.PARSER_VERSION, "sources": new_sources,
                    "user_paths": user_paths, "dense": dense.get("model"), "built_at": time.time()}
        if content_changed or dense.get("added") or dense.get("deleted") or manifest["sources"] != old_sources:
            _write_json(self.manifest_path, manifest)
        self.manifest = manifest
        if self.dense_note:
            notes.append(self.dense_note)
        self.notes = notes
        by_kind: dict[str, int] = defaultdict(int)
        for c in chunks:
            by_kind[c["kind"]] += 1
        return {"index_dir": str(self.dir), "chunks": len(chunks), "by_kind": dict(by_kind),
                "sources_parsed": changed, "sources_reused": reused, "sources_removed": removed,
                "dense_vectors": dense.get("count", 0), "embedded": dense.get("added", 0),
                "mode": "hybrid" if self.collection is not None else "lexical",
                "seconds": round(time.perf_counter() - t0, 2), "notes": notes,
                "timings": {"sources_s": round(t_parse, 2), "lexical_s": round(t_lex, 2), "dense_s": round(t_dense, 2)}}

    def _previous_build(self, force: bool) -> tuple[bool, list, dict, dict[str, list[dict]]]:
        """(force, user paths, the manifest's sources, the stored chunks by source) of the last build;
        a build of another format or parser version forces a whole rebuild."""
        manifest: dict = {}
        if self.manifest_path.exists():
            manifest = _read_json(self.manifest_path)
            if not isinstance(manifest, dict) or not isinstance(manifest.get("sources"), dict):
                raise ValueError("manifest.json has no sources")
        if manifest.get("format") != FORMAT or manifest.get("parser") != corpus.PARSER_VERSION:
            force = True
        user_paths = list(manifest.get("user_paths", []))
        old_sources: dict = {} if force else manifest.get("sources", {})
        old_chunks: dict[str, list[dict]] = defaultdict(list)
        if not force and self.chunks_path.exists():
            for c in _read_json(self.chunks_path)["chunks"]:
                old_chunks[c["src"]].append(c)
        elif not force and old_sources:
            force, old_sources = True, {}
        return force, user_paths, old_sources, old_chunks

    @staticmethod
    def _gather_chunks(sources, old_sources: dict, old_chunks: dict[str, list[dict]], progress,
                       notes: list[str]) -> tuple[dict[str, dict], list[dict], int, int]:
        """(manifest entries, chunks with unique ids, sources parsed, sources reused): a source whose
        stamp or content hash is unchanged keeps its stored chunks; the others are parsed again."""
        progress.update(0, len(sources), "checking documentation sources")
        new_sources: dict[str, dict] = {}
        chunks: list[dict] = []
        changed = reused = 0
        for i, src in enumerate(sources):
            if i % 25 == 0:
                progress.check() if hasattr(progress, "check") else None
                progress.update(i, len(sources), f"indexing {src.key.split(':', 1)[0]} sources")
            old = old_sources.get(src.key)
            try:
                stamp = src.stamp()
            except OSError:
                continue
            kept = old and old.get("n", -1) == len(old_chunks.get(src.key, ()))
            if kept and old.get("stamp") == stamp:
                new_sources[src.key] = old
                chunks += old_chunks[src.key]
                reused += 1
                continue
            try:
                text = src.read()
            except OSError as exc:
                notes.append(f"could not read {src.key}: {exc}")
                continue
            digest = corpus.short_hash(text, 16)
            if kept and old.get("hash") == digest:
                new_sources[src.key] = {"stamp": stamp, "hash": digest, "n": old["n"]}
                chunks += old_chunks[src.key]
                reused += 1
                continue
            try:
                parsed = src.parse(text)
            except Exception as exc:  # a header we cannot parse should not stop the rest
                log.warning("could not parse %s: %s", src.key, exc)
                notes.append(f"could not parse {src.key}: {exc}")
                parsed = []
            chunks += [c.to_dict() for c in parsed]
            new_sources[src.key] = {"stamp": stamp, "hash": digest, "n": len(parsed)}
            changed += 1
        seen: set[str] = set()
        unique = []  # the first chunk of each id, in order (a user file and a card could collide)
        for c in chunks:
            if c["id"] not in seen:
                seen.add(c["id"])
                unique.append(c)
        return new_sources, unique, changed, reused

    def _load_chunks(self, chunks: list[dict]) -> None:
        import numpy as np  # noqa: PLC0415

        self.chunks = chunks
        self.by_id = {c["id"]: i for i, c in enumerate(chunks)}
        sym: dict[str, list[int]] = defaultdict(list)
        low: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(chunks):
            for s in c.get("symbols", []):
                sym[s].append(i)
                low[s.lower()].append(i)
        self.symbols, self.symbols_lower = dict(sym), dict(low)
        kind_codes = {k: n for n, k in enumerate(corpus.KINDS)}
        self.kinds = np.array([kind_codes.get(c["kind"], len(kind_codes)) for c in chunks], dtype=np.int8)

    def _doc_tokens(self, c: dict) -> list[str]:
        head = c["title"] + " " + " ".join(c.get("symbols", [])[:40])
        return lexical.tokens(head) * 2 + lexical.tokens(c["text"])

    def _build_bm25(self) -> None:
        import bm25s  # noqa: PLC0415

        corpus_tokens = [self._doc_tokens(c) or ["_empty_"] for c in self.chunks]
        retriever = bm25s.BM25()
        if corpus_tokens:
            retriever.index(corpus_tokens, show_progress=False)
        bdir = self.dir / "bm25"
        if bdir.exists():
            shutil.rmtree(bdir)
        retriever.save(str(bdir), show_progress=False)
        self._set_bm25(retriever)

    def _load_bm25(self) -> None:
        import bm25s  # noqa: PLC0415

        retriever = bm25s.BM25.load(str(self.dir / "bm25"), show_progress=False)
        if retriever.scores.get("num_docs") != len(self.chunks):
            raise ValueError("bm25 index does not match chunks.json")
        self._set_bm25(retriever)

    def _set_bm25(self, retriever) -> None:
        import numpy as np  # noqa: PLC0415

        self.bm25 = retriever
        self.bm25_vocab = retriever.vocab_dict
        n = max(1, len(self.chunks))
        indptr = np.asarray(retriever.scores["indptr"])
        df = np.diff(indptr)
        inv = {i: t for t, i in self.bm25_vocab.items()}
        self.idf = {inv[i]: float(np.log(1 + (n - d + 0.5) / (d + 0.5))) for i, d in enumerate(df) if i in inv}

    # ---- dense
    def _chroma_client(self):
        import chromadb  # noqa: PLC0415
        from chromadb.config import Settings  # noqa: PLC0415

        if not (self.dir / "chroma").exists():
            # chromadb keeps one system per path for the process; if the folder was deleted under
            # it, that cached system points at a database that is gone
            _clear_chroma_cache()
        return chromadb.PersistentClient(path=str(self.dir / "chroma"),
                                         settings=Settings(anonymized_telemetry=False))

    def _drop_chroma(self) -> None:
        """Delete the chroma store, first closing chromadb's cached handles on it."""
        self.collection = None
        _clear_chroma_cache()
        shutil.rmtree(self.dir / "chroma", ignore_errors=True)

    def _sync_dense(self, progress, force: bool) -> dict:
        from stitch_mcp.docs import embed  # noqa: PLC0415

        model, why = embed.load_model()
        self.model = model
        if model is None:
            self.collection = None
            self.dense_note = why
            return {"model": None}
        self.dense_note = None
        ef = embed.chroma_embedding_function()
        try:
            client = self._chroma_client()
            coll = client.get_or_create_collection(COLLECTION, embedding_function=ef,
                                                   configuration={"hnsw": {"space": "cosine"}},
                                                   metadata={"model": embed.MODEL_ID})
            got = coll.get(include=["metadatas"])
        except Exception as exc:
            log.warning("chroma store in %s unreadable (%s: %s); recreating it", self.dir / "chroma",
                        type(exc).__name__, exc)
            self._drop_chroma()
            client = self._chroma_client()
            coll = client.get_or_create_collection(COLLECTION, embedding_function=ef,
                                                   configuration={"hnsw": {"space": "cosine"}},
                                                   metadata={"model": embed.MODEL_ID})
            got = coll.get(include=["metadatas"])
        desired: dict[str, tuple[str, dict]] = {}
        for c in self.chunks:
            for j, passage in enumerate(c.get("dense") or []):
                desired[f"{c['id']}@{j}"] = (passage, {"parent": c["id"], "kind": c["kind"],
                                                       "h": corpus.short_hash(passage, 12)})
        existing: dict[str, str] = {}
        for i, meta in zip(got["ids"], got["metadatas"] or []):
            existing[i] = (meta or {}).get("h", "")
        stale = [i for i, h in existing.items() if i not in desired or desired[i][1]["h"] != h]
        todo = [i for i in desired if existing.get(i) != desired[i][1]["h"]]
        todo.sort(key=lambda i: len(desired[i][0]))  # similar lengths batch together
        for s in range(0, len(stale), 2000):
            coll.delete(ids=stale[s:s + 2000])
        batch = 128
        for s in range(0, len(todo), batch):
            if hasattr(progress, "check"):
                progress.check()
            progress.update(s, len(todo), f"embedding {len(todo)} passages")
            ids = todo[s:s + batch]
            docs = [desired[i][0] for i in ids]
            # header passages are one line (name and first sentence): a short window keeps the
            # build fast; card and user passages are paragraphs of up to ~600 characters
            vecs = model.embed(docs, max_tokens=128 if any(len(d) > 200 for d in docs) else 32, batch=64)
            coll.add(ids=ids, documents=docs, metadatas=[desired[i][1] for i in ids],
                     embeddings=[v.tolist() for v in vecs])
        if todo:
            progress.update(len(todo), len(todo), f"embedded {len(todo)} passages")
        self.collection = coll
        return {"model": embed.MODEL_ID, "count": len(desired), "added": len(todo), "deleted": len(stale)}

    # ---- user documents
    def add_user_path(self, path: str | os.PathLike, progress=None) -> dict:
        root = Path(path).expanduser()
        if not root.exists():
            raise UserError(f"no such file or folder: {root}")
        root = root.resolve()
        if not corpus.user_files(root):
            raise UserError(f"{root} has no documents to index (looked for "
                            f"{', '.join(sorted(corpus.USER_SUFFIXES))})")
        with self.lock:
            manifest = _read_json(self.manifest_path) if self.manifest_path.exists() else {}
            if not isinstance(manifest, dict):
                manifest = {}
            paths = list(manifest.get("user_paths", []))
            if str(root) not in paths:
                paths.append(str(root))
            manifest["user_paths"] = paths
            manifest.setdefault("sources", {})
            manifest.setdefault("format", FORMAT)
            self.dir.mkdir(parents=True, exist_ok=True)
            _write_json(self.manifest_path, manifest)
            return self.open(progress)

    # ---- search
    def lexical(self, query: str, allowed, n: int) -> list[int]:
        import numpy as np  # noqa: PLC0415

        toks = [t for t in lexical.tokens(query) if t in self.bm25_vocab]
        if not toks or not self.chunks:
            return []
        mask = None
        if allowed is not None:
            mask = np.isin(self.kinds, allowed).astype(np.float32)
        n = min(n, len(self.chunks))
        docs, scores = self.bm25.retrieve([toks], k=n, show_progress=False, weight_mask=mask, n_threads=0)
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]

    def dense(self, query: str, kinds: list[str] | None, n: int) -> list[int]:
        if self.collection is None or self.model is None:
            return []
        vec = self.model.embed([query], max_tokens=64)[0]
        where = {"kind": {"$in": kinds}} if kinds else None
        res = self.collection.query(query_embeddings=[vec.tolist()], n_results=n, where=where, include=["metadatas"])
        out: list[int] = []
        seen: set[int] = set()
        for meta in (res.get("metadatas") or [[]])[0]:
            i = self.by_id.get((meta or {}).get("parent", ""))
            if i is not None and i not in seen:
                seen.add(i)
                out.append(i)
        return out

    def exact(self, query: str, allowed) -> list[tuple[int, int]]:
        """(chunk index, number of query identifiers it defines) for identifiers named in the query."""
        hits: dict[int, int] = defaultdict(int)
        words = lexical.IDENT_IN_QUERY.findall(query)
        single = len(words) == 1 and len(query.split()) == 1
        for w in words:
            for cand in {w, w.split("::")[-1], w.split(".")[-1]}:
                if not (lexical.looks_like_identifier(cand) or single):
                    continue  # plain English words ("sleeping", "barrier") rank by text, not by name
                idx = self.symbols.get(cand)
                if idx is None and len(cand) >= 4:
                    idx = self.symbols_lower.get(cand.lower())
                for i in (idx or [])[:12]:
                    hits[i] += 1
        if allowed is not None:
            kinds = self.kinds
            hits = {i: n for i, n in hits.items() if kinds[i] in allowed}
        return sorted(hits.items(), key=lambda x: -x[1])

    def search(self, query: str, k: int, kinds: list[str] | None, modes=("exact", "lexical", "dense")):
        import numpy as np  # noqa: PLC0415

        allowed = None
        if kinds:
            codes = {kd: n for n, kd in enumerate(corpus.KINDS)}
            allowed = np.array([codes[kd] for kd in kinds], dtype=np.int8)
        depth = max(40, 4 * k)
        lex = self.lexical(query, allowed, depth) if "lexical" in modes else []
        den = self.dense(query, kinds, depth) if "dense" in modes else []
        fused: dict[int, float] = defaultdict(float)
        for ranking in (lex, den):
            for r, i in enumerate(ranking):
                fused[i] += 1.0 / (RRF_K + r + 1)
        ex = self.exact(query, allowed) if "exact" in modes else []
        exact_rank = {i: n for i, n in ex}
        # exact-symbol matches first (more identifiers matched, then headers before cards is not
        # assumed: fused score orders them), then everything else by reciprocal-rank fusion
        order = sorted(fused, key=lambda i: -fused[i])
        exact_sorted = sorted(exact_rank, key=lambda i: (-exact_rank[i], -fused.get(i, 0.0),
                                                         self._primary_rank(i, query)))
        final = exact_sorted + [i for i in order if i not in exact_rank]
        out = []
        for i in final[:k]:
            score = fused.get(i, 0.0) / (2.0 / (RRF_K + 1))
            if i in exact_rank:
                score = 1.0 + score
            out.append((i, round(score, 4)))
        return out

    def _primary_rank(self, i: int, query: str) -> int:
        syms = self.chunks[i].get("symbols") or []
        return 0 if syms and syms[0] in query else 1

    # ---- text
    def snippet(self, i: int, query: str, width: int = 320) -> str:
        text = self.chunks[i]["text"]
        qtoks = set(lexical.tokens(query))
        idents = [w for w in lexical.IDENT_IN_QUERY.findall(query) if lexical.looks_like_identifier(w)]
        passages = []
        for para in re.split(r"\n\s*\n", text):
            para = para.strip()
            if not para:
                continue
            if len(para) <= width * 1.5:
                passages.append(para)
                continue
            lines = para.splitlines()
            if len(lines) > 1:
                passages += _pack(lines, "\n", width)
            else:
                passages += _pack(re.split(r"(?<=[.!?])\s+", para), " ", width)
        best, best_score = passages[0] if passages else text[:width], -1.0
        for p in passages:
            if p.startswith("# ") and len(passages) > 1:
                continue  # the card title line
            ptoks = set(lexical.tokens(p))
            score = sum(self.idf.get(t, 1.0) for t in qtoks & ptoks)
            score += sum(5.0 for w in idents if w in p)
            if score > best_score + 1e-9:
                best, best_score = p, score
        best = re.sub(r"[ \t]+", " ", best).strip()
        if len(best) > width:
            # centre on the first query word found
            low = best.lower()
            pos = min([low.find(t) for t in list(qtoks) + [w.lower() for w in idents] if low.find(t) >= 0] or [0])
            start = max(0, min(pos - width // 3, len(best) - width))
            best = ("…" if start > 0 else "") + best[start:start + width].strip() + "…"
        return best

    def get(self, doc_id: str) -> dict:
        i = self.by_id.get(doc_id)
        if i is None:
            raise NotFound(f"no documentation chunk with id {doc_id!r}; ids come from search_cuda_docs results")
        return self.chunks[i]


def _clear_chroma_cache() -> None:
    try:
        from chromadb.api.client import SharedSystemClient  # noqa: PLC0415

        SharedSystemClient.clear_system_cache()
    except Exception:  # an older or newer chromadb without it
        pass


def _pack(pieces: list[str], sep: str, width: int) -> list[str]:
    """Join consecutive pieces (lines or sentences) into passages of about `width` characters."""
    out, cur = [], ""
    for piece in pieces:
        if len(cur) + len(piece) > width and cur:
            out.append(cur)
            cur = ""
        cur = (cur + sep + piece).strip()
    if cur:
        out.append(cur)
    return out
