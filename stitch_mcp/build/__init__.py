"""Building candidates' extensions: a content-addressed cache around `torch.utils.cpp_extension`.

KernelBench candidates call `load_inline(name, cpp_sources, cuda_sources, functions, ...)` when
they are imported. Inside a candidate room (stitch_mcp.room), `BuildCache.install` replaces
`load_inline` and `load` with wrappers that import what was built before, else build it, each
translation unit against as little of torch as it needs. One concern a module:

- `build_cache`: `BuildCache`, the wrappers (prebuilt and cached extensions, stable build
  directories, locks, climbing header rungs, publishing the built `.so`);
- `cache`: the cache on disk and its keys (content hashes, the environment fingerprint, manifests
  of a candidate's extension keys, locks, importing a built `.so`); the manifest helpers run on
  the parent side and need no torch;
- `headers`: the ladders of headers each unit climbs (ATen per-operator, torch/types.h,
  torch/extension.h) and when a failure climbs (`lacks_torch_declaration`);
- `host_headers`: the CUDA headers a CPU host lacks, from its toolkit or NVIDIA's wheels, else
  stand-ins, and what only a GPU machine can check (`beyond_this_host`);
- `compile`: load_inline's generated files compiled to objects without cpp_extension (the CPU
  path's compile-only check, and the wrapper corpus);
- `diagnostics`: compiler output parsed into diagnostics on the candidate's own lines;
- `errors`: `BuildError`, `NeedsGPU`.

The names other code uses are re-exported here; code inside stitch_mcp imports them from the
module that owns them.
"""

from stitch_mcp.build.build_cache import BuildCache
from stitch_mcp.build.cache import cached_manifest, manifest_path, write_manifest
from stitch_mcp.build.compile import UnitCompile, compile_on_rungs
from stitch_mcp.build.errors import BuildError, NeedsGPU
from stitch_mcp.build.headers import (
    binding_header_rungs,
    kernel_header_rungs,
    lacks_torch_declaration,
    per_operator_headers,
    uses_torch_namespace,
)
from stitch_mcp.build.host_headers import beyond_this_host, host_cuda_headers

__all__ = [
    "BuildCache", "BuildError", "NeedsGPU", "UnitCompile", "beyond_this_host", "binding_header_rungs",
    "cached_manifest", "compile_on_rungs", "host_cuda_headers", "kernel_header_rungs", "lacks_torch_declaration",
    "manifest_path", "per_operator_headers", "uses_torch_namespace", "write_manifest",
]
