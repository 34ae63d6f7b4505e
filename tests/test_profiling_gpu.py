"""profile_reference and profile_kernel on a real GPU (skipped without CUDA; profile_kernel also
needs ncu). Small programs, so each case runs in seconds once the extension is built."""

from __future__ import annotations

import textwrap

import pytest

from stitch_mcp.errors import UserError

pytestmark = pytest.mark.gpu

REF = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)

        def forward(self, x):
            y = self.fc(x)
            y = torch.relu(y) * 2.0 + 1.0
            return torch.tanh(y)

    def get_inputs():
        return [torch.randn(512, 1024)]

    def get_init_inputs():
        return [1024]
''')

CAND = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    src = r"""
    #include <torch/extension.h>
    __global__ void epilogue_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
        if (i < n) { float v = fmaxf(x[i], 0.f) * 2.f + 1.f; y[i] = tanhf(v); }
    }
    torch::Tensor epilogue(torch::Tensor x) {
        auto y = torch::empty_like(x);
        long n = x.numel();
        epilogue_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
        return y;
    }
    """
    ext = load_inline("stitch_test_epilogue", cpp_sources="torch::Tensor epilogue(torch::Tensor x);",
                      cuda_sources=src, functions=["epilogue"], verbose=False)

    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc = nn.Linear(n, n)

        def forward(self, x):
            return ext.epilogue(self.fc(x).contiguous())
''')


def _ncu():
    from stitch_mcp.profiling.ncu import find_ncu

    if find_ncu() is None:
        pytest.skip("ncu not installed")


def test_reference_profile_on_gpu_sees_kernels_and_ops():
    from stitch_mcp.profiling.reference import profile_reference

    p = profile_reference(reference=REF, backend="torch", iterations=3)
    assert p.gpu_ms_per_iter and p.gpu_ms_per_iter > 0 and p.kernels
    assert p.launches_per_iter and p.launches_per_iter >= 3
    assert 0.0 <= p.gpu_idle_fraction <= 1.0
    linear = next(o for o in p.ops if o.name == "aten::linear")
    assert linear.kernel_count >= 1 and linear.flops == pytest.approx(2 * 512 * 1024 * 1024, rel=0.01)
    assert linear.floor_ms and linear.floor_ms > 0
    assert any(f.code == "fusion_candidate" for f in p.findings)
    assert p.image_uri and "GPU busy" in p.summary


def test_kernel_profile_on_gpu_digests_the_custom_kernel():
    _ncu()
    from stitch_mcp.profiling.kernel import profile_kernel

    p = profile_kernel(candidate=CAND, reference=REF, sections="quick")
    names = [k.name for k in p.kernels]
    assert names == ["epilogue_kernel"], (names, p.notes)
    k = p.kernels[0]
    assert k.bound in ("memory-bound", "latency-bound", "launch-bound", "compute-bound") and k.bound_evidence
    assert k.duration_us and k.registers_per_thread and k.stalls and 1 <= len(k.suggestions) <= 5
    assert k.arithmetic_intensity is not None  # FLOP counters collected
    assert p.image_uri and len(p.summary) < 8000


def test_kernel_profile_source_preset_gives_hot_lines():
    _ncu()
    from stitch_mcp.profiling.kernel import profile_kernel

    p = profile_kernel(candidate=CAND, reference=REF, sections="source", launch_count=1)
    k = p.kernels[0]
    assert k.hot_lines, p.notes
    assert any("tanhf" in h.source or "fmaxf" in h.source or h.source.startswith("SASS") for h in k.hot_lines)


def test_kernel_profile_bad_input_on_gpu():
    _ncu()
    from stitch_mcp.profiling.kernel import profile_kernel

    with pytest.raises(UserError, match="matched no kernel"):
        profile_kernel(candidate=CAND, reference=REF, kernel_filter="no_such_kernel")
    crash = CAND.replace("return ext.epilogue(self.fc(x).contiguous())", "raise ValueError('boom')")
    with pytest.raises(UserError, match="boom"):
        profile_kernel(candidate=crash, reference=REF)
