"""Shared test setup: an isolated data/cache directory per run, GPU tests skipped without CUDA."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from timeout_report import (  # noqa: F401  (the timeout report's hooks: --timeout-report)
    pytest_addoption,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_protocol,
    pytest_sessionfinish,
    pytest_sessionstart,
    pytest_terminal_summary,
)

# Isolate the workspace and build cache before anything reads settings; subprocesses (stdio
# servers, workers) inherit these. STITCH_TEST_CACHE lets a developer keep builds between runs.
_RUN_DIR = Path(tempfile.mkdtemp(prefix="stitch-tests-"))
os.environ["STITCH_DATA_DIR"] = str(_RUN_DIR / "data")
# Each pytest-xdist worker (CI runs two) has a cache of its own: tests that snapshot the build cache
# (test_adversarial's Storage) would see the other worker's builds come and go.
os.environ["STITCH_CACHE_DIR"] = os.environ.get("STITCH_TEST_CACHE") or str(_RUN_DIR / "cache")
# Servers started by tests skip the background docs-index build (one test builds it on purpose).
os.environ.setdefault("STITCH_DOCS_INDEX_WARMUP", "0")
os.environ.setdefault("STITCH_ALLOWED_ROOTS", os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                                                 tempfile.gettempdir()]))

TESTS = Path(__file__).resolve().parent
# pytest-timeout for a slow or GPU test without a timeout of its own (the ini's 60 s was measured on
# the CPU suite only: --timeout-report); --timeout on the command line still wins.
SLOW_TIMEOUT_S = 900


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if config.getoption("timeout", None) is None:
        for item in items:
            if ("slow" in item.keywords or "gpu" in item.keywords) and item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session")
def run_dir() -> Path:
    return _RUN_DIR
