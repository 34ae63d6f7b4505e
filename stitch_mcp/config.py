"""Settings, read from STITCH_* environment variables and overridden by command-line flags."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _xdg(var: str, fallback: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / fallback) / "stitch-mcp"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STITCH_", extra="ignore")

    data_dir: Path = Field(default_factory=lambda: _xdg("XDG_DATA_HOME", ".local/share"),
                           description="workspace database, reports and images")
    cache_dir: Path = Field(default_factory=lambda: _xdg("XDG_CACHE_HOME", ".cache"),
                            description="extension builds and the documentation index")
    gpus: str = Field("", description="comma-separated CUDA device indices to use; empty: all visible")
    build_timeout_s: float = Field(300.0, gt=0, description="limit for building a candidate")
    run_timeout_s: float = Field(120.0, gt=0, description="limit for running correctness and timing")
    profile_timeout_s: float = Field(300.0, gt=0, description="limit for one profiler run")
    trials: int = Field(5, ge=1, le=100, description="correctness trials with fresh seeds")
    tolerance: Literal["strict", "kernelbench"] = Field(
        "strict", description="tolerance preset: strict (float32 atol=rtol=1e-4, float16/bfloat16 1e-2) or "
        "kernelbench (atol=rtol=1e-2, as KernelBench's published results); the four values below replace its own")
    atol: float | None = Field(None, gt=0, description="absolute tolerance for float32 outputs (default: the preset's)")
    rtol: float | None = Field(None, gt=0, description="relative tolerance for float32 outputs (default: the preset's)")
    atol_half: float | None = Field(None, gt=0, description="absolute tolerance for float16/bfloat16 outputs "
                                                           "(default: the preset's)")
    rtol_half: float | None = Field(None, gt=0, description="relative tolerance for float16/bfloat16 outputs "
                                                           "(default: the preset's)")
    timing_iters: int = Field(100, ge=5, le=10_000, description="most timed calls per measurement")
    spare_workers: int = Field(2, ge=0, le=16, description="worker processes kept started ahead of need, per GPU "
                               "in use (Python and torch imported, 4-6 s on a GPU machine); 0: start each when needed")
    fork_workers: bool = Field(True, description="start workers as forks of one process that has imported torch "
                               "and the judge (milliseconds each); off: each worker starts Python and imports afresh")
    cuda_ahead: bool = Field(True, description="on a host with one GPU, spare rooms make their CUDA context before "
                             "their check comes (0.3-0.5 s of every check on an H100); each holds ~0.6 GB of the GPU, "
                             "kept out of the checks' memory shares")
    max_source_bytes: int = Field(1_000_000, gt=0, description="largest reference or candidate accepted")
    room_memory_gb: float | None = Field(None, gt=0, description="most memory one room's processes may use (a "
                                         "cgroup's memory.max, else RLIMIT_AS for CPU work); default: half the "
                                         "host's memory")
    ncu_clock_control: Literal["none", "base"] = Field("none", description="ncu --clock-control")
    compare_compile: bool = Field(True, description="also time the reference under torch.compile")
    allowed_roots: str = Field("", description="os.pathsep-separated folders that paths may point into; "
                                                "empty: the client's roots, else the working directory and the data "
                                                "directory (never / or a home directory; see sources.allowed_roots)")
    auth_token: str = Field("", description="bearer token required over HTTP")
    executor: Literal["local", "ray"] = Field("local", description="where verifications run")
    ray_address: str = Field("", description="Ray cluster address for --executor ray")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    sandbox: Literal["auto", "bubblewrap", "namespaces", "uid", "none"] = Field(
        "auto", description="strongest isolation to try for candidate processes: auto (the best this host "
                            "allows), or a weaker ceiling; none disables the sandbox")
    sandbox_uid_base: int = Field(61000, ge=1000, description="as root, sandbox slot N runs as this uid + N")
    bwrap: str = Field("", description="path of the bubblewrap binary; empty: bwrap on PATH")
    docs_index_warmup: bool = Field(True, description="serve: build the documentation index in the background "
                                    "at start, so the first search_cuda_docs does not wait for it")
    session: str = Field("", description="the history this run belongs to (each candidate's parent, feedback and "
                                         "routing decisions are kept per session); empty: the MCP server gives each "
                                         "client connection its own, the CLI uses 'local'")

    @property
    def db_path(self) -> Path:
        return self.data_dir / "workspace.sqlite3"

    @property
    def build_dir(self) -> Path:
        return self.cache_dir / "builds"

    @property
    def inductor_dir(self) -> Path:
        return self.cache_dir / "inductor"

    @property
    def index_dir(self) -> Path:
        return self.cache_dir / "docs-index"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def gpu_indices(self) -> set[int]:
        """The device indices `gpus` names; empty: all visible."""
        return {int(x) for x in self.gpus.split(",") if x.strip()}


_overrides: dict = {}


def configure(**overrides) -> Settings:
    """Set command-line overrides (applied over the environment) and return fresh settings."""
    _overrides.clear()
    _overrides.update({k: v for k, v in overrides.items() if v is not None})
    get_settings.cache_clear()
    return get_settings()


def overrides_env() -> dict[str, str]:
    """What configure() set (command-line flags), as the STITCH_* variables a child process reads:
    workers and the rooms they start read their settings from the environment."""
    return {f"STITCH_{name.upper()}": str(value) for name, value in _overrides.items()}


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings(**_overrides)
