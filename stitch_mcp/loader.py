"""Loading KernelBench programs inside a worker process: import a reference or candidate from its
source, build the models, make inputs. Only worker processes call this: it executes user code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any


def import_program(source: str, module_name: str, directory: Path) -> ModuleType:
    """Write `source` to directory/module_name.py and import it under that name.

    Writing a real file (rather than exec of a string) gives tracebacks and compiler messages
    real line numbers, and lets `inspect.getsource` work inside the candidate.
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{module_name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def build_model(cls: type, init_args: list[Any], device: Any, seed: int = 0) -> Any:
    """`cls(*init_args)` on `device` under a fixed seed, its parameters initialised there.

    Built inside `torch.device(device)`, a model's parameters are made and initialised on the GPU:
    a Linear(8192, 8192) takes milliseconds instead of about half a second of CPU initialisation and
    a copy. A model whose constructor fails that way is built on the CPU and moved, as KernelBench
    does; the CPU attempt's error is the one raised.
    """
    import torch

    if str(device) != "cpu":
        torch.manual_seed(seed)
        try:
            with torch.device(device):
                return cls(*init_args).to(device)
        except Exception:
            pass
    torch.manual_seed(seed)
    return cls(*init_args).to(device)


def to_device(value: Any, device: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: to_device(v, device) for k, v in value.items()}
    return value


def make_inputs(reference: ModuleType, device: Any, seed: int) -> list[Any]:
    """`get_inputs()` under a fixed seed, created directly on `device` where the program allows.

    Running `get_inputs` inside `torch.device(device)` makes factory calls (randn, rand, ...)
    allocate on the GPU, which avoids building multi-GB inputs on the CPU and copying them over.
    Tensors it still makes on the CPU are moved afterwards.
    """
    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    with torch.device(device):
        inputs = reference.get_inputs()
    return list(to_device(list(inputs), device))


def init_inputs(reference: ModuleType) -> list[Any]:
    return list(reference.get_init_inputs())


def built_tensors(torch, model) -> dict[str, Any]:
    """A model's state_dict tensors that exist as built: a lazy module's (nn.LazyLinear) take their
    shape on the first call, and have no shape or values before it."""
    lazy = torch.nn.parameter.UninitializedTensorMixin
    return {k: v for k, v in model.state_dict().items()
            if isinstance(v, torch.Tensor) and not isinstance(v, lazy) and v.layout == torch.strided}


def value_digest(t: Any) -> str:
    """Shape and a few elements at fixed places, hashed: equal values have equal digests, in any dtype
    that holds them exactly (a float64 copy of float32 weights is no change). The candidate's room
    reports one for each tensor of ModelNew as built (door.Loaded), so that the judge can tell which
    of them hold another of Model's values than their name's (judge.prepare)."""
    flat = t.detach().reshape(-1)
    places = list(range(0, flat.numel(), max(1, flat.numel() // 64)))
    key = (tuple(t.shape), tuple(float(v) if isinstance(v, (bool, int)) else v for v in flat[places].tolist()))
    return hashlib.sha1(repr(key).encode()).hexdigest()
