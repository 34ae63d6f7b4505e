"""How much GPU memory one check needs, and holding that much of the card while it runs.

Checks import, build and warm up outside the device lease so that they overlap (issue 15), but
their tensors stay on the card: KernelBench's level-1 inputs alone are 6 GB, and twelve checks at
once ran an 80 GB H100 out of memory (docs/gpu-runs/2026-11-25-session7). A trusted process (the
judge, the baseline worker) therefore estimates what the check will hold at most, from the
reference's inputs, outputs and weights made on the meta device (nothing allocated), and holds that
many shares of the card's memory (stitch_mcp.devices.reserve_memory) from before its first
allocation to its end. A reference that cannot run on the meta device takes the whole card, and
so does a check that ran out of memory beside others: it is judged again with the card to itself
(stitch_mcp.check), so "out of memory" is never a verdict that other checks caused.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

from stitch_mcp.stage_results import RunStageResult

# What a check keeps on the card besides tensors: three CUDA contexts (the judge and two rooms,
# 0.6 GB each on an H100), cuBLAS/cuDNN workspaces and the caching allocators' slack.
OVERHEAD_BYTES = 3 << 30
# Copies of each kind a check holds at once at most, the caching allocators' high-water marks
# included: inputs (the room's shared buffers, the judge's private copy, the next trial's or timed
# call's fresh ones), outputs (the shared buffers, the judge's clone of them, the reference's, the
# candidate's own in its room, the reference room's). The reference reads the judge's inputs
# directly where it leaves them alone (judge.prepare.reference_output) and a room frees its last
# outputs before it makes the next (stitch_mcp.room): at 4 inputs and 6 outputs an 8 GB-input task
# did not fit an 80 GB H100 (docs/gpu-runs/2026-11-26-session11). Weights: the judge's reference
# model, the candidate's, the reference room's.
# Intermediates: the most the reference's forward holds beside its inputs, weights and output at
# once (a loss's elementwise differences and squares, 2x its inputs); kept by the caching allocators
# of the judge and of the reference's room after their first call. Uncounted, a loss task over 8 GB
# inputs ran other checks out of memory (docs/gpu-runs/2026-11-26-session13).
COPIES = {"inputs": 3, "outputs": 5, "weights": 3, "intermediates": 2}
BATCH_BYTES = 512 << 20  # what timing's batches of back-to-back calls add, in shared buffers (judge.timing)


def estimate_need(torch, ref_mod: Any, init_args: list[Any], extra_bytes: int = 0) -> int | None:
    """Bytes a check holds on the GPU at most; None when the reference does not run on the meta
    device (then nothing is known and the check takes the whole card)."""
    return _need(torch, ref_mod, init_args, COPIES, OVERHEAD_BYTES + extra_bytes)


# What the baseline worker (correctness.baseline_stage) holds at most: the timing inputs (one set and
# the buffer it is copied into before each call), an output and the next one (eager's and
# torch.compile's take turns in one caching allocator), the weights (the compiled model shares them),
# one CUDA context, the forward's intermediates once. A reference that holds more than this runs out
# of memory and is timed again with the card to itself (check.py). At this size the baseline of a KernelBench level-1 task (6 GiB
# of inputs) fits beside another such task's check on an 80 GB card, instead of waiting for it.
BASELINE_COPIES = {"inputs": 2, "outputs": 2, "weights": 1, "intermediates": 1}
BASELINE_OVERHEAD_BYTES = 3 << 29


def baseline_need(torch, ref_mod: Any, init_args: list[Any]) -> int | None:
    """Bytes the baseline worker holds on the GPU at most; None as for estimate_need."""
    return _need(torch, ref_mod, init_args, BASELINE_COPIES, BASELINE_OVERHEAD_BYTES)


# What compiling torch.compile's baseline holds (correctness.compile_beside, in a judge before its
# check's share or in the baseline worker): one set of inputs, the first call's output and the
# forward's intermediates (twice each: inductor's code is not the eager forward the meta device
# measured), the weights, one CUDA context. A level-1 task's compile fits beside another level-1
# task's check on an 80 GB card.
COMPILE_COPIES = {"inputs": 1, "outputs": 2, "weights": 1, "intermediates": 2}


def compile_need(torch, ref_mod: Any, init_args: list[Any]) -> int | None:
    """Bytes compiling torch.compile's baseline holds on the GPU at most; None as for estimate_need."""
    return _need(torch, ref_mod, init_args, COMPILE_COPIES, BASELINE_OVERHEAD_BYTES)


def _need(torch, ref_mod: Any, init_args: list[Any], copies: dict[str, int], overhead: int) -> int | None:
    sizes = _meta_sizes(torch, ref_mod, init_args)
    return None if sizes is None else sum(copies[kind] * n for kind, n in sizes.items()) + overhead


def _meta_sizes(torch, ref_mod: Any, init_args: list[Any]) -> dict[str, int] | None:
    """Bytes of one set of the reference's inputs, outputs, weights and forward's intermediates
    (at their peak), made on the meta device."""
    from stitch_mcp import integrity as integ

    try:
        with torch.device("meta"):
            inputs = list(ref_mod.get_inputs())
    except Exception:
        return None
    in_bytes = integ.tensor_bytes(inputs)
    # where the model does not run on meta: outputs like inputs, intermediates guessed
    out_bytes, weight_bytes, peak = in_bytes, 0, None
    try:
        with torch.device("meta"), torch.no_grad():
            model = ref_mod.Model(*init_args)
            weight_bytes = integ.tensor_bytes(list(model.state_dict().values()))
            out, peak = _forward_tracked(model, inputs)
            out_bytes = integ.tensor_bytes(integ.flatten(out))
    except Exception:
        pass
    intermediates = max(in_bytes, out_bytes) if peak is None else max(0, peak - out_bytes)  # not known: a guess
    return {"inputs": in_bytes, "outputs": out_bytes, "weights": weight_bytes, "intermediates": intermediates}


def _forward_tracked(model, inputs: list[Any]) -> tuple[Any, int | None]:
    """The model's output and its forward's peak of new bytes; a forward the counting mode breaks
    runs again without it (None: the peak is not known)."""
    try:
        with _peak_bytes_mode() as tracked:
            out = model(*inputs)
        return out, tracked.peak
    except Exception:
        return model(*inputs), None


def _peak_bytes_mode():
    """A dispatch mode counting the bytes of the storages the ops under it make, while any tensor
    using them is alive (a view, a detached or in-place result shares its argument's storage; the
    inputs' and weights' are counted apart): `peak` is the most alive at once."""
    import weakref

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    def _storage(t) -> int:
        return t.untyped_storage()._cdata

    class PeakBytes(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.live = self.peak = 0
            self.made: dict[int, list[int]] = {}  # storage -> [bytes, tensors alive that use it]

        def _gone(self, storage: int) -> None:
            entry = self.made[storage]
            entry[1] -= 1
            if entry[1] == 0:
                self.live -= entry[0]
                del self.made[storage]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            given = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            given_storages, given_ids = {_storage(a) for a in given}, {id(a) for a in given}
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor) or id(t) in given_ids:
                    continue  # an in-place result: the tensor it was given
                storage = _storage(t)
                if storage not in self.made:
                    if storage in given_storages:
                        continue  # a view of an input or a weight
                    self.made[storage] = [t.untyped_storage().nbytes(), 0]
                    self.live += self.made[storage][0]
                self.made[storage][1] += 1
                weakref.finalize(t, self._gone, storage)
            self.peak = max(self.peak, self.live)
            return out

    return PeakBytes()


def share_bytes(gpu) -> float:
    """The size of one of the card's MEMORY_SHARES shares: what the spare rooms hold outside any
    share where they make their CUDA context ahead (`reserved_bytes`, as the server chose the GPU:
    devices.choose_device) is left out."""
    from stitch_mcp.devices import MEMORY_SHARES

    return (gpu.memory_total - gpu.reserved_bytes) / MEMORY_SHARES


@contextlib.contextmanager
def held(gpu_fields: dict[str, Any] | None, need: int | None, stage, on_wait=None) -> Iterator[dict[str, Any]]:
    """Hold the shares of the check's GPU that `need` bytes take (all of them for None); yields
    what was held, for the report. Nothing to hold without a GPU or its size. `on_wait()` is
    called once where the shares are not free at once, before waiting for them."""
    from stitch_mcp.devices import MEMORY_SHARES, Gpu, discover, reserve_memory

    gpu = Gpu(**gpu_fields) if gpu_fields else next(iter(discover()), None)
    if gpu is None or not gpu.memory_total:
        yield {}
        return
    shares = MEMORY_SHARES if need is None else math.ceil(need / share_bytes(gpu))
    shares = min(shares, MEMORY_SHARES)
    stage("waiting for GPU memory")
    with reserve_memory(gpu, shares, on_wait=on_wait) as waited:
        yield {"need_bytes": need, "shares": shares, "of_shares": MEMORY_SHARES, "waited_s": round(waited, 3)}


_OOM = ("out of memory", "cumemcreate failed", "cuda_oom", "outofmemoryerror")


def out_of_memory_beside_others(result: RunStageResult | None, message: str = "") -> bool:
    """A run stage that ran out of GPU memory while it held only part of the card."""
    held_shares = result.memory if result is not None else None
    if held_shares is None or held_shares.shares >= held_shares.of_shares:
        return False
    error = result.error
    return out_of_memory(f"{message} {error.kind if error else ''} {error.message if error else ''}")


def out_of_memory(text: str) -> bool:
    """Whether an error's kind or message says the GPU ran out of memory."""
    return any(word in text.lower() for word in _OOM)
