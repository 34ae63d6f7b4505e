"""Where verifications run: here (the default), or as Ray tasks on a cluster.

With `--executor ray`, each verification is a Ray task that asks for one GPU; Ray places it on a
node with a free GPU and pins it there (CUDA_VISIBLE_DEVICES). The task runs the same stage
function on that node and sends back the report; the server stores it in its own workspace.
Ids are content hashes, so the remote and local workspaces agree on task and candidate ids.
"""

from __future__ import annotations

import importlib
import logging
import threading
from typing import Any

from stitch_mcp.config import get_settings
from stitch_mcp.errors import UserError

log = logging.getLogger(__name__)

# Settings that decide a verdict travel with the task; paths stay node-local.
_FORWARDED = ("build_timeout_s", "run_timeout_s", "trials", "atol", "rtol", "atol_half", "rtol_half",
              "timing_iters", "compare_compile", "max_source_bytes")
_init_lock = threading.Lock()
_remote = None


def _ray():
    global _remote
    try:
        import ray
    except ImportError:
        raise UserError("executor 'ray' needs Ray: pip install 'stitch-mcp[ray]'") from None
    with _init_lock:
        if not ray.is_initialized():
            import stitch_mcp

            address = get_settings().ray_address or None
            log.info("connecting to Ray at %s", address or "a new local cluster")
            # log_to_driver=False: workers' output must never reach this process's stdout (the protocol)
            ray.init(address=address, log_to_driver=False, include_dashboard=False, ignore_reinit_error=True,
                     runtime_env={"py_modules": [stitch_mcp]}, configure_logging=False)
        if _remote is None:
            _remote = ray.remote(num_gpus=1, max_retries=0)(_run_on_node)
    return ray, _remote


def _run_on_node(fn: str, kwargs: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Body of the Ray task, on the node Ray picked."""
    import os

    import ray

    from stitch_mcp.config import configure

    # pinned to the GPU Ray gave this task; never hand the work on to Ray again
    configure(**overrides, executor="local", gpus=",".join(str(g) for g in ray.get_gpu_ids()))
    module, name = fn.split(":")
    result = getattr(importlib.import_module(module), name)(**kwargs)
    return {"result": result.model_dump(mode="json"), "node_id": ray.get_runtime_context().get_node_id(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()], "cuda_visible_devices":
            os.environ.get("CUDA_VISIBLE_DEVICES", "")}


def run_remote(fn: str, kwargs: dict[str, Any], progress=None) -> dict[str, Any]:
    """Run `module:function(**kwargs)` as a one-GPU Ray task; returns its model dump and placement."""
    ray, remote = _ray()
    settings = get_settings()
    overrides = {k: getattr(settings, k) for k in _FORWARDED}
    ref = remote.remote(fn, kwargs, overrides)
    unregister = progress.on_cancel(lambda: ray.cancel(ref, force=True)) if progress else None
    if progress:
        progress.update(0, None, "queued on Ray for a GPU")
    try:
        return ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        from stitch_mcp.jobs import Cancelled

        raise Cancelled("cancelled by the caller") from None
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if getattr(exc, "cause", None) else exc
        if isinstance(cause, UserError):
            raise UserError(str(cause)) from None
        raise
    finally:
        if unregister:
            unregister()
