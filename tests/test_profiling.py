"""profile_reference / profile_kernel: parsers over real ncu outputs (H100), the Nsight Systems
SQLite schema fixture, the torch.profiler back end end-to-end on this machine, and bad input."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import textwrap
import time
from pathlib import Path

import pytest
from timeout_report import record_wait

from stitch_mcp.errors import UserError
from stitch_mcp.profiling import ncu as N
from stitch_mcp.profiling.names import op_key, short_kernel_name
from stitch_mcp.ceilings import ceilings_for

FIX = Path(__file__).resolve().parent / "fixtures"
NCU_FIX = FIX / "ncu"
NSYS_FIX = FIX / "nsys" / "small.sqlite"

SMALL_REF = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, padding=1)
            self.bn = nn.BatchNorm2d(cout)
            self.fc = nn.Linear(cout * 8 * 8, 10)

        def forward(self, x):
            x = torch.relu(self.bn(self.conv(x)))
            x = x * 2.0 + 1.0
            return torch.sigmoid(self.fc(torch.flatten(x, 1)))

    def get_inputs():
        return [torch.randn(4, 3, 8, 8)]

    def get_init_inputs():
        return [3, 16]
''')


@pytest.fixture(scope="module")
def quick():
    return N.parse_raw_csv((NCU_FIX / "quick_raw.csv").read_text())


@pytest.fixture(scope="module")
def h100():
    return ceilings_for("NVIDIA H100 80GB HBM3")


# ------------------------------------------------------------------ names


def test_kernel_names_are_shortened_sensibly(quick):
    names = [short_kernel_name(l.name) for l in quick]
    assert names[2] == "add_kernel" and names[6] == "naive_mm"
    assert "vectorized_elementwise_kernel<CUDAFunctor_add>" in names
    assert "reduce_kernel<MaxNanFunctor>" in names
    assert "distribution_elementwise_grid_stride_kernel" in names
    assert all(len(n) <= 60 for n in names)
    assert short_kernel_name("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, false, true, "
                             "(cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, "
                             "float const*, float*)") == "nchwToNhwcKernel"
    assert op_key("aten::relu_") == "relu" and op_key("__iadd__") == "add" and op_key("aten::conv2d, seq = 3") == "conv2d"


def test_ceilings_use_measured_numbers():
    assert ceilings_for("NVIDIA H100 80GB HBM3").dram_gbps == 3000
    assert ceilings_for("NVIDIA H200").dram_gbps == 4300
    unknown = ceilings_for("Some Future GPU", sm_count=100, clock_khz=2_000_000, cc_major=10)
    assert unknown.bandwidth.source == "estimate" and unknown.notes and unknown.fp32_tflops == pytest.approx(51.2)
    assert ceilings_for("NVIDIA H100 80GB HBM3").floor_ms(None, 3e9) == pytest.approx(1.0)


# ------------------------------------------------------------------ ncu parsers (real H100 outputs)


def test_raw_csv_parses_every_launch_with_units(quick):
    assert len(quick) == 13
    mm = quick[6]
    assert mm.name.startswith("naive_mm(") and mm.grid == "(64,64,1)" and mm.block == "(16,16,1)"
    assert mm.num("gpu__time_duration.sum") == pytest.approx(415.296e-6)  # us -> s
    assert mm.num("dram__bytes.sum.per_second") == pytest.approx(0.020214e12)  # Tbyte/s -> byte/s
    assert mm.num("launch__grid_size") == 4096  # "4,096"
    assert mm.raw("device__attribute_display_name") == "NVIDIA H100 80GB HBM3"
    assert mm.num("derived__local_spilling_requests_pct") is None  # "no data"


def test_naive_matmul_digest_is_memory_bound_in_the_cache_hierarchy(quick, h100):
    digests, others = N.digest_launches(quick, h100, custom={"add_kernel", "naive_mm"})
    assert [d.name for d in digests] == ["naive_mm", "add_kernel"]
    mm = digests[0]
    assert mm.bound == "memory-bound" and "not DRAM" in mm.bound_evidence
    assert mm.duration_us == pytest.approx(415.3, abs=0.1)
    assert mm.registers_per_thread == 32 and mm.spill_bytes == 0 and mm.shared_mem_bytes == 0
    assert mm.theoretical_occupancy_pct == 100 and mm.achieved_occupancy_pct == pytest.approx(91.8, abs=0.1)
    assert mm.l1_hit_pct == pytest.approx(87.65, abs=0.01)
    assert [s.reason for s in mm.stalls[:2]] == ["lg_throttle", "long_scoreboard"]
    assert 0.99 >= sum(s.share for s in mm.stalls) > 0.5
    assert 1 <= len(mm.suggestions) <= 5
    assert mm.suggestions[0].doc_query and "shared memory" in mm.suggestions[0].text
    assert all(s.metric and s.doc_query and s.rank == i + 1 for i, s in enumerate(mm.suggestions))
    add = digests[1]
    assert add.launches == 2 and add.bound == "memory-bound"
    assert add.dram_gbps == pytest.approx(2648, rel=0.01) and "88%" in add.bound_evidence
    assert "near" in add.suggestions[0].text or "floor" in add.suggestions[0].text
    # the library kernels are listed, not digested
    assert any(o.startswith("sm80_xmma_gemm") for o in others) and len(others) == 6


def test_every_launch_gets_a_verdict(quick, h100):
    digests, _ = N.digest_launches(quick, h100, custom=None, max_kernels=20)
    assert all(d.bound in ("memory-bound", "compute-bound", "latency-bound", "launch-bound") for d in digests)
    dist = N.kernel_digest(quick[0], h100)
    assert dist.bound == "compute-bound"  # SM 72.6% vs memory 36.7%
    assert "registers" in dist.occupancy_limiter  # 5 blocks/SM by 44 registers -> 62.5% theoretical
    merged = next(d for d in digests if d.name.startswith("distribution"))
    assert merged.launches == 4  # same kernel and shape: one row, metrics averaged
    tiny = [d for d in digests if d.duration_us and d.duration_us < 5]
    assert tiny and all(d.bound == "launch-bound" for d in tiny)


def test_source_counters_csv_and_hot_lines(h100):
    launches = N.parse_raw_csv((NCU_FIX / "source_raw.csv").read_text())
    assert len(launches) == 1 and launches[0].num("smsp__pcsamp_sample_count") == 50948
    assert launches[0].num("smsp__pcsamp_warps_issue_stalled_long_scoreboard") == 18258
    # per-line rows as ncu_dump writes them
    src = [{"file": "/b/cuda.cu", "line": 11, "text": "s += A[r*N+k]*B[k*N+c];",
            "counts": {"samples": 900, "long_scoreboard": 500, "lg_throttle": 300}},
           {"file": "/b/cuda.cu", "line": 12, "text": "C[r*N+c] = s;", "counts": {"samples": 100, "wait": 60}}]
    hot = N.hot_lines(src)
    assert hot[0].line == 11 and hot[0].share == pytest.approx(0.9) and hot[0].top_stall == "long_scoreboard"


def test_ncu_command_presets_filters_and_failures(tmp_path):
    cmd = N.ncu_command("ncu", "quick", tmp_path / "r", ["python", "d.py"], kernel_filter=N.kernel_filter_arg("mm"),
                        launch_skip=2, launch_count=3, clock_control="none")
    assert cmd[:3] == ["ncu", "--clock-control", "none"] and "--profile-from-start" in cmd
    assert cmd.count("--section") == 6 and "regex:mm" in cmd and cmd[-2:] == ["python", "d.py"]
    assert cmd[cmd.index("--launch-skip") + 1] == "2" and cmd[cmd.index("--launch-count") + 1] == "3"
    src = N.ncu_command("ncu", "source", tmp_path / "r", [], kernel_filter=None, launch_skip=0, launch_count=1,
                        clock_control="none")
    assert "SourceCounters" in src
    assert "--set" in N.ncu_command("ncu", "full", tmp_path / "r", [], kernel_filter=None, launch_skip=0,
                                    launch_count=1, clock_control="base")
    with pytest.raises(UserError, match="unknown preset"):
        N.ncu_command("ncu", "fast", tmp_path / "r", [], kernel_filter=None, launch_skip=0, launch_count=1,
                      clock_control="none")
    assert N.kernel_filter_arg("my.kernel") == r"regex:my\.kernel"
    assert N.kernel_filter_arg("regex:^gemm") == "regex:^gemm"
    with pytest.raises(UserError, match="bad regular expression"):
        N.kernel_filter_arg("regex:(")
    assert N.classify_failure("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission") == N.PERM_HELP
    assert "NVreg_RestrictProfilingToAdminUsers" in N.PERM_HELP
    assert N.classify_failure("==WARNING== No kernels were profiled.") == "no kernels matched"
    log = (NCU_FIX / "ncu_quick.log").read_text()
    assert N.classify_failure(log) is None


def test_custom_kernel_names_from_candidate_source():
    from stitch_mcp.profiling.kernel import custom_kernel_names

    src = textwrap.dedent('''
        cuda_src = r"""
        __global__ void add_kernel(const float* a, float* c, int n) {}
        template <int BS> __global__ void __launch_bounds__(256) tiled_mm(const float* A) {}
        __global__ static void relu_k(float* x) {}
        """
    ''')
    assert custom_kernel_names(src) == ["add_kernel", "tiled_mm", "relu_k"]


@pytest.mark.parametrize("decl, name", [
    ("__global__ void __cluster_dims__(8,1,1) softmax_cluster_kernel(const float* x, float* y, int n) {}",
     "softmax_cluster_kernel"),
    ("__global__ void __launch_bounds__(256, 2) relu_vec4(const float4* __restrict__ x) {}", "relu_vec4"),
    ('extern "C" __global__ void __launch_bounds__(128) ext_c_kernel(float* p) {}', "ext_c_kernel"),
    ("template <typename T, int N>\n__global__ void\n__launch_bounds__(N) gemm_tile(const T* a) {}", "gemm_tile"),
    ("__global__ __launch_bounds__(512) void attr_first(float* x) {}", "attr_first"),
    ("__global__ void __attribute__((noinline)) attr_gnu(float* x) {}", "attr_gnu"),
    ("__global__ void __maxnreg__(64) capped(float* x) {}", "capped"),
    ("static __global__ __forceinline__ void forced(int n);", "forced"),
    ("__global__ typename Traits<float, 4>::type templated_ret(float* x) {}", "templated_ret"),
    ("__global__ void specialised<float>(float* x) {}", "specialised"),
    ("__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256) both(const __grid_constant__ Params p) {}",
     "both"),
])
def test_kernel_names_past_attributes(decl, name):
    """`__cluster_dims__(8,1,1)` was read as the kernel's name (issue 16): the candidate's own kernel
    was then 'never run'."""
    from stitch_mcp.profiling.kernel import custom_kernel_names

    src = f'cuda_src = r"""\n{decl}\n"""\n'
    assert custom_kernel_names(src) == [name]


def test_kernel_names_ignore_non_kernels():
    from stitch_mcp.profiling.kernel import custom_kernel_names

    src = 'x = "__global__"; y = 1\n__device__ float helper(float v) { return v; }\n'
    assert custom_kernel_names(src) == []


def test_kernel_summary_and_roofline_image(quick, h100, tmp_path):
    from stitch_mcp.models import KernelProfile
    from stitch_mcp.profiling import plots
    from stitch_mcp.profiling.kernel import summary_text

    digests, others = N.digest_launches(quick, h100, custom={"add_kernel", "naive_mm"})
    prof = KernelProfile(device="NVIDIA H100 80GB HBM3", kernels=digests, other_kernels=others)
    text = summary_text(prof)
    assert "MEMORY-BOUND" in text and "search_cuda_docs(" in text and "lg_throttle" in text
    assert len(text) < 8000  # ~2000 tokens
    png = plots.roofline_png(digests, h100, tmp_path / "roof.png")
    assert png and png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"
    # with FLOP counters the real roofline is drawn
    digests[0].arithmetic_intensity, digests[0].roofline_pct = 16.0, 5.0
    assert plots.roofline_png(digests, h100, tmp_path / "roof2.png").stat().st_size > 5000


# ------------------------------------------------------------------ nsys SQLite parser


def test_nsys_fixture_follows_the_export_schema():
    db = sqlite3.connect(NSYS_FIX)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"StringIds", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} <= tables
    db.close()


def test_nsys_sqlite_parses_into_ops_kernels_and_copies():
    from stitch_mcp.profiling.nsys import parse_sqlite

    t = parse_sqlite(NSYS_FIX)
    assert t.backend == "nsys" and t.device == "NVIDIA H100 80GB HBM3"
    assert len(t.iterations) == 2  # stitch_iter_0 via textId, stitch_iter_1 via text
    assert [o.name.split(",")[0] for o in t.ops if o.iteration == 0] == [
        "aten::conv2d", "aten::batch_norm", "aten::hardtanh", "aten::add", "aten::to"]
    assert len(t.kernels) == 8  # the warm-up kernel before the first iteration is left out
    conv = [k for k in t.kernels if "convolve" in k.name]
    assert len(conv) == 2 and all(k.op.startswith("aten::conv2d") for k in conv)  # launched from a nested range
    assert conv[0].grid == "(64,2,1)" and conv[0].block == "(128,1,1)"
    assert t.launches == 8
    assert sorted(c.kind for c in t.copies) == ["DtoH", "DtoH", "memset", "memset"]


def test_nsys_digest_has_shares_floors_and_planner_findings():
    from stitch_mcp.profiling.nsys import parse_sqlite
    from stitch_mcp.profiling.trace import digest

    t = parse_sqlite(NSYS_FIX)
    costs = {"conv2d": {"flops": 2e9, "bytes": 8e6, "calls": 1, "dtype": "torch.float32"},
             "add": {"flops": 0.0, "bytes": 12e6, "calls": 1, "dtype": "torch.float32"}}
    p = digest(t, ceilings_for(t.device), costs)
    assert p.iterations == 2 and p.wall_ms_per_iter == pytest.approx(0.9)
    assert p.gpu_ms_per_iter == pytest.approx(0.492) and p.gpu_idle_fraction == pytest.approx(1 - 0.492 / 0.9)
    assert p.launches_per_iter == 4 and p.memcpy_bytes_per_iter == 4 << 20
    assert p.memcpy_ms_per_iter == pytest.approx(0.030) and p.memset_ms_per_iter == pytest.approx(0.002)
    top = p.ops[0]
    assert top.name == "aten::conv2d" and top.kernel_count == 1 and top.calls == 1
    assert top.share == pytest.approx(0.302 / 0.492, rel=1e-3)
    assert top.intensity == pytest.approx(250) and top.floor_ms == pytest.approx(2e9 / 67e12 * 1e3)
    assert p.kernels[0].name == "implicit_convolve_sgemm" and p.kernels[0].op == "aten::conv2d"
    codes = [f.code for f in p.findings]
    assert "fusion_candidate" in codes and "avoidable_copy" in codes and "host_gaps" in codes
    fusion = next(f for f in p.findings if f.code == "fusion_candidate")
    assert "batch_norm -> hardtanh -> add" in fusion.message and "conv2d" in fusion.message
    assert "far_from_floor" in codes
    assert "implicit_convolve_sgemm" in p.summary and len(p.summary) < 8000


def test_timeline_image_from_nsys_trace(tmp_path):
    from stitch_mcp.profiling import plots
    from stitch_mcp.profiling.nsys import parse_sqlite

    png = plots.timeline_png(parse_sqlite(NSYS_FIX), tmp_path / "t.png")
    assert png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------ end to end (torch backend, this machine)


@pytest.fixture
def ref_file(tmp_path):
    p = tmp_path / "small_ref.py"
    p.write_text(SMALL_REF)
    return p


def test_profile_reference_torch_backend_end_to_end(ref_file):
    import torch

    from stitch_mcp.config import get_settings
    from stitch_mcp.profiling.reference import profile_reference
    from stitch_mcp.store import get_workspace

    p = profile_reference(reference=str(ref_file), backend="torch", iterations=3)
    assert p.backend == "torch" and p.task_id and p.iterations == 3
    names = [o.name for o in p.ops]
    assert "aten::conv2d" in names and "aten::linear" in names
    conv = next(o for o in p.ops if o.name == "aten::conv2d")
    assert conv.flops == pytest.approx(2 * 4 * 16 * 8 * 8 * 3 * 9) and conv.bytes > 0 and conv.intensity > 1
    assert p.wall_ms_per_iter and p.wall_ms_per_iter > 0
    if not torch.cuda.is_available():
        assert "CPU" in p.summary and any("no GPU" in n for n in p.notes)
        assert p.gpu_ms_per_iter is None and p.kernels == []
    assert any(f.code == "fusion_candidate" for f in p.findings)
    assert p.image_uri and (get_settings().artifacts_dir / p.image_uri.split("/")[-1]).stat().st_size > 3000
    assert get_workspace().latest_report("profile_reference", task_id=p.task_id)["backend"] == "torch"
    # the same task again by id, with auto (no working nsys here -> torch, said so)
    again = profile_reference(task_id=p.task_id, backend="auto", iterations=1)
    assert again.backend in ("torch", "nsys") and again.task_id == p.task_id
    if again.backend == "torch":
        assert any("torch.profiler" in n for n in again.notes)


def test_profile_reference_bad_input(tmp_path):
    from stitch_mcp.profiling.reference import profile_reference

    with pytest.raises(UserError, match="unknown backend"):
        profile_reference(reference=SMALL_REF, backend="perf")
    broken = SMALL_REF.replace("return [torch.randn(4, 3, 8, 8)]", "raise RuntimeError('no inputs today')")
    with pytest.raises(UserError, match=r"get_inputs\(\).*no inputs today"):
        profile_reference(reference=broken, backend="torch", iterations=1)
    crash = SMALL_REF.replace("x = x * 2.0 + 1.0", "x = x.view(-1, 7, 7, 7, 7)")
    with pytest.raises(UserError, match="forward"):
        profile_reference(reference=crash, backend="torch", iterations=1)
    with pytest.raises(UserError, match="not a KernelBench program"):
        profile_reference(reference="import torch\nx = 1\n")


def test_profile_kernel_bad_input(ref_file):
    from stitch_mcp.profiling.kernel import profile_kernel

    cand = SMALL_REF.replace("class Model(", "class ModelNew(")
    with pytest.raises(UserError, match="unknown preset"):
        profile_kernel(candidate=cand, reference=str(ref_file), sections="everything")
    with pytest.raises(UserError, match="bad regular expression"):
        profile_kernel(candidate=cand, reference=str(ref_file), kernel_filter="regex:[")
    with pytest.raises(UserError, match="candidate"):
        profile_kernel(reference=str(ref_file))
    if N.find_ncu() is None:
        with pytest.raises(UserError, match="ncu .*not found"):
            profile_kernel(candidate=cand, reference=str(ref_file))


def test_timeout_kills_the_whole_process_group(tmp_path):
    from stitch_mcp.profiling.runner import run_group

    pidfile = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    t0 = time.monotonic()
    res = run_group(["sh", "-c", script], timeout_s=1.0, cwd=tmp_path)
    record_wait("a timed-out group ends", 10, time.monotonic() - t0)
    assert res.timed_out and time.monotonic() - t0 < 10
    child = int(pidfile.read_text())
    time.sleep(0.2)
    alive = True
    try:
        os.kill(child, 0)
        stat = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
        alive = stat not in ("Z", "X")
    except ProcessLookupError:
        alive = False
    assert not alive, "the grandchild survived the timeout"


def test_cancel_kills_the_run(tmp_path):
    import threading

    from stitch_mcp.jobs import Progress
    from stitch_mcp.profiling.runner import run_group

    progress = Progress()
    threading.Timer(0.5, progress.cancel).start()
    t0 = time.monotonic()
    res = run_group(["sleep", "30"], timeout_s=60, cwd=tmp_path, progress=progress)
    record_wait("a cancelled group ends", 10, time.monotonic() - t0)
    assert res.cancelled and time.monotonic() - t0 < 10


def _fake_install(root: Path, files: list[str]) -> None:
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_bytes(b"\x7fELF")


def test_an_nsys_older_than_the_runtime_is_given_the_runtime_cupti(tmp_path, monkeypatch):
    """Debian's nsys 2022.4 bundles CUPTI 11.8; under a CUDA 13 runtime it records no kernel unless
    NSYS_CUPTI_LIBRARY_PATH offers the runtime's CUPTI by the names nsys asks for (seen on an H100)."""
    from stitch_mcp.profiling import nsys_cupti_env

    _fake_install(tmp_path / "nsys", ["bin/nsys", "target-linux-x64/libcupti.so.11.8"])
    _fake_install(tmp_path / "site", ["nvidia/cu13/lib/libcupti.so.13", "nvidia/cuda_cupti/lib/libcupti.so.12"])
    monkeypatch.setattr(sys, "path", [str(tmp_path / "site"), *sys.path])
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-toolkit"))
    monkeypatch.delenv("NSYS_CUPTI_LIBRARY_PATH", raising=False)
    env = nsys_cupti_env(str(tmp_path / "nsys" / "bin" / "nsys"), tmp_path / "work" / "cupti")
    folder = Path(env["NSYS_CUPTI_LIBRARY_PATH"])
    for name in ("libcupti.so", "libcupti.so.11.8", "libcupti.so.13.0", "libcupti.so.12.8"):
        assert (folder / name).resolve() == tmp_path / "site" / "nvidia" / "cu13" / "lib" / "libcupti.so.13"
    # an nsys that knows the runtime, or a user's own choice, is left alone
    _fake_install(tmp_path / "nsys", ["target-linux-x64/libcupti.so.13.0"])
    assert nsys_cupti_env(str(tmp_path / "nsys" / "bin" / "nsys"), tmp_path / "w2") == {}
    monkeypatch.setenv("NSYS_CUPTI_LIBRARY_PATH", "/mine")
    assert nsys_cupti_env(str(tmp_path / "nsys" / "bin" / "nsys"), tmp_path / "w3") == {}


def test_a_sandboxed_profile_gets_the_build_settings_a_room_gets(tmp_path):
    """The build cache keys an extension on CXX and the arch list: a profile of the candidate must see
    them as its check's room did, or it builds the extension again under ncu (10 s on an H100)."""
    from stitch_mcp.profiling.runner import run_group

    settings = {"CXX": "/opt/gcc/bin/g++", "CC": "/opt/gcc/bin/gcc", "TORCH_CUDA_ARCH_LIST": "9.0"}
    show = "import os; print(*(os.environ.get(k) for k in ('CXX', 'CC', 'TORCH_CUDA_ARCH_LIST', 'MY_TOKEN')))"
    res = run_group([sys.executable, "-c", show], timeout_s=60, cwd=tmp_path, sandboxed=True,
                    env={**os.environ, **settings, "MY_TOKEN": "not for candidates"})
    assert res.returncode == 0, res.output
    assert res.output.split() == ["/opt/gcc/bin/g++", "/opt/gcc/bin/gcc", "9.0", "None"]


@pytest.mark.skipif(shutil.which("nsys") is not None, reason="a real nsys is present")
def test_nsys_status_without_nsys():
    from stitch_mcp.profiling import nsys_status

    ok, detail = nsys_status()
    assert not ok and "nsys" in detail


# ------------------------------------------------------------------ issue 16: readability and overlap


def test_profiles_take_the_device_in_turn(tmp_path, monkeypatch):
    """Two profile_reference calls ran on one GPU at once (timings 1.4-1.8x): a profile now waits for
    the device lease that compile_and_check's run stage holds, and says it waited."""
    import contextlib
    import threading
    import time

    from stitch_mcp import devices
    from stitch_mcp.devices import CPU, acquire_device, discover

    monkeypatch.setattr(devices, "lock_dir", lambda: tmp_path)  # this host's other runs keep their locks
    from stitch_mcp.jobs import Progress
    from stitch_mcp.profiling.reference import device_lease

    release = threading.Event()
    holding = threading.Event()

    def hold_every_device():
        with contextlib.ExitStack() as stack:
            for g in discover() or [CPU]:
                stack.enter_context(acquire_device(gpus=[g]))
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold_every_device)
    holder.start()
    assert holding.wait(10)
    threading.Timer(1.2, release.set).start()
    notes: list[str] = []
    progress = Progress()
    started = time.monotonic()
    with device_lease(progress, notes, 1, 4) as env:
        waited = time.monotonic() - started
        assert progress.message == "waiting for a free device"
    holder.join()
    assert waited >= 1.0 and isinstance(env, dict)
    assert any(n.startswith("waited 1 s for") and "in turn" in n for n in notes), notes


def test_timeline_legend_follows_the_bars():
    from stitch_mcp.profiling.plots import legend_order
    from stitch_mcp.profiling.trace import Kernel, Op

    ops = [Op("aten::linear", 0, 10, 0), Op("aten::relu", 10, 12, 0), Op("aten::sum", 12, 13, 0)]
    kernels = [Kernel("gemm", 100, 400, op="aten::linear", iteration=0),
               Kernel("relu_k", 400, 450, op="aten::relu", iteration=0),
               Kernel("reduce", 450, 460, op="aten::sum", iteration=0)]
    order = legend_order(["aten::linear", "aten::relu", "aten::sum"], ops, kernels, 0, 100, limit=2)
    assert [n for n, _ in order] == ["aten::linear", "aten::relu"]  # the longest two, left to right
    assert order[0][1] == pytest.approx(300 / 1e6)  # GPU time on a GPU run
    cpu_only = legend_order(["aten::sum", "aten::linear"], [ops[2], ops[0]], [], 0, 0)
    assert [n for n, _ in cpu_only] == ["aten::linear", "aten::sum"]


def test_timeline_says_host_time_on_a_cpu_run(tmp_path, monkeypatch):
    import matplotlib.figure

    from stitch_mcp.profiling import plots
    from stitch_mcp.profiling.trace import Op, Trace

    t = Trace(backend="torch", device="cpu", on_gpu=False, iterations=[(0, 2e6)],
              ops=[Op("aten::linear", 0, 1e6, 0), Op("aten::relu", 1e6, 2e6, 0)])
    saved = []
    real_save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **kw: (saved.append(fig), real_save(fig, *a, **kw))[1])
    assert plots.timeline_png(t, tmp_path / "t.png") is not None
    ax = saved[0].axes[0]
    assert "GPU lanes" not in ax.get_xlabel() and "host time" in ax.get_xlabel()
    assert [x.get_text() for x in ax.get_legend().get_texts()] == ["linear 1.00 ms", "relu 1.00 ms"]


def test_op_times_above_the_wall_are_explained(h100):
    from stitch_mcp.profiling.trace import Kernel, Op, Trace, digest

    # two ops whose kernels run at once on two streams: 2 x 8 ms of kernels in a 9 ms iteration
    t = Trace(backend="torch", device="NVIDIA H100 80GB HBM3", iterations=[(0, 9e6)],
              ops=[Op("aten::mm", 0, 1e5, 0), Op("aten::add", 1e5, 2e5, 0)],
              kernels=[Kernel("gemm", 5e5, 8.5e6, op="aten::mm", iteration=0, stream=7),
                       Kernel("add_k", 5e5, 8.5e6, op="aten::add", iteration=0, stream=8)])
    p = digest(t, h100, {}, wall_ms=[9.0])
    note = next(n for n in p.notes if n.startswith("the ops' times add to"))
    assert "16.00 ms/iter" in note and "several streams" in note and "busy 8.00 ms" in note
    # under the profiler on a CPU: overhead, said so
    cpu = Trace(backend="torch", device="cpu", on_gpu=False, iterations=[(0, 20e6)],
                ops=[Op("aten::mm", 0, 12e6, 0), Op("aten::add", 12e6, 20e6, 0)])
    p = digest(cpu, h100, {}, wall_ms=[10.0])
    note = next(n for n in p.notes if n.startswith("the ops' times add to"))
    assert "under the profiler" in note and "20.00 ms" in note
    assert not any(n.startswith("the ops' times") for n in digest(cpu, h100, {}, wall_ms=[20.0]).notes)


def test_fp32_compute_bound_advice_keeps_fp32_accuracy():
    """An fp32 task's rules call TF32 a precision downgrade: the advice is 3xTF32, not 'TF32 where
    the tolerance allows'."""
    from stitch_mcp.models import KernelDigest

    d = KernelDigest(name="sgemm", duration_us=2700.0, compute_pct=85.0, memory_pct=20.0, bound="compute-bound",
                     tensor_pipe_pct=0.0)
    launch = N.Launch(id=0, name="sgemm", metrics={"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active":
                                                   (88.0, "%")})
    texts = [s.text for s in N.suggestions(d, launch, 15.0, ceilings_for("NVIDIA H100 80GB HBM3"))]
    tc = next(t for t in texts if "tensor cores" in t)
    assert "3xTF32" in tc and "precision downgrade" in tc and "where the tolerance allows" not in tc


CPP_CANDIDATE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    src = """
    #include <torch/extension.h>
    torch::Tensor twice(torch::Tensor x) { return x.mul(2.0).add(1.0); }
    """
    ext = load_inline(name="profile_cache_probe", cpp_sources=src, functions=["twice"], verbose=False)

    class ModelNew(nn.Module):
        def __init__(self, *args):
            super().__init__()

        def forward(self, x):
            return ext.twice(x)
''')


@pytest.mark.slow  # one C++ extension build (~30-60 s on 2 cores)
def test_profile_driver_imports_the_checks_build(tmp_path):
    """profile_kernel's driver used a plain load_inline: a cold build of every candidate under ncu
    (23 s+ on an H100). With --build-root it goes through compile_and_check's build cache: built
    once, imported from the cache on every later run."""
    import json
    import subprocess
    import sys

    from stitch_mcp.profiling.runner import python_env

    ref, cand, build = tmp_path / "reference.py", tmp_path / "candidate.py", tmp_path / "builds"
    ref.write_text(SMALL_REF)
    cand.write_text(CPP_CANDIDATE)
    env = {**python_env(), "TORCH_EXTENSIONS_DIR": str(tmp_path / "plain")}
    metas = []
    for n in range(2):
        out = tmp_path / f"out{n}"
        run = subprocess.run([sys.executable, "-m", "stitch_mcp.profiling.driver", "ncu", "--ref", str(ref),
                              "--cand", str(cand), "--out", str(out), "--iters", "1", "--warmup", "1",
                              "--build-root", str(build)], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        metas.append(json.loads((out / "meta.json").read_text()))
    assert metas[0]["extensions_cached"] == [False] and metas[1]["extensions_cached"] == [True]
    assert metas[1]["import_s"] < 5 and list(build.glob("objects/*/done"))
    assert not (tmp_path / "plain").exists()  # nothing built the plain way


def test_profile_kernel_quotes_the_checks_floor():
    from stitch_mcp.profiling.kernel import check_floor_note

    note = check_floor_note({"timing": {"floor_ms": 2.05, "floor_fraction": 0.76, "floor_note":
                                        "compute-bound: 137 GFLOP at 67 TFLOP/s FP32 (CUDA cores) (datasheet)"}})
    assert note.startswith("compile_and_check: the whole forward runs at 76% of its floor (2.05 ms; compute-bound")
    assert check_floor_note({"timing": {}}) is None and check_floor_note(None) is None


# ------------------------------------------------------------------ word for word (ncu suggestions)

# Each scenario: KernelDigest fields, the launch's metrics, DRAM %, and whether the H100's ceilings
# are known; between them they reach every suggestion. The expected lists are in
# fixtures/ncu/suggestions.json (text, metric, value, doc query and rank of each, in order).
SUGGESTION_SCENARIOS = {
    "launch_bound": ({"bound": "launch-bound", "duration_us": 3.2, "grid": "(1,1,1)"},
                     {"launch__waves_per_multiprocessor": 0.01}, None, True),
    "memory_near_the_copy_bandwidth": ({"bound": "memory-bound", "memory_pct": 90.0, "dram_gbps": 2900.0}, {}, 85.0,
                                       True),
    "memory_at_the_copy_floor_stalled_on_loads": (
        {"bound": "memory-bound", "memory_pct": 92.0, "dram_gbps": 2830.0,
         "stalls": [{"reason": "long_scoreboard", "share": 0.5}, {"reason": "lg_throttle", "share": 0.45},
                    {"reason": "barrier", "share": 0.05}]}, {}, 88.0, True),
    "memory_below_the_copy_floor_stalled_on_loads": (
        {"bound": "memory-bound", "memory_pct": 80.0, "dram_gbps": 2400.0,
         "stalls": [{"reason": "long_scoreboard", "share": 0.88}]}, {}, 78.0, True),
    "memory_at_dram": ({"bound": "memory-bound", "memory_pct": 80.0, "dram_gbps": 1000.0}, {}, 70.0, True),
    "memory_at_dram_no_ceilings": ({"bound": "memory-bound", "memory_pct": 80.0, "dram_gbps": 3000.0}, {}, 70.0,
                                   False),
    "memory_in_the_caches_register_limit": (
        {"bound": "memory-bound", "memory_pct": 80.0, "theoretical_occupancy_pct": 37.5,
         "occupancy_limiter": "registers (3 blocks/SM)", "registers_per_thread": 96}, {}, None, True),
    "stalls": ({"bound": "latency-bound", "compute_pct": 20.0, "memory_pct": 30.0,
                "stalls": [{"reason": "long_scoreboard", "share": 0.3}, {"reason": "lg_throttle", "share": 0.25},
                           {"reason": "mio_throttle", "share": 0.15}, {"reason": "short_scoreboard", "share": 0.1},
                           {"reason": "barrier", "share": 0.2}]}, {}, 10.0, True),
    "stalls_at_their_thresholds": ({"bound": "latency-bound", "stalls": [
        {"reason": "long_scoreboard", "share": 0.25}, {"reason": "lg_throttle", "share": 0.2},
        {"reason": "barrier", "share": 0.2}, {"reason": "short_scoreboard", "share": 0.25}]}, {}, None, True),
    "stalls_below_their_thresholds": ({"bound": "latency-bound", "stalls": [
        {"reason": "long_scoreboard", "share": 0.24}, {"reason": "lg_throttle", "share": 0.19},
        {"reason": "barrier", "share": 0.19}, {"reason": "mio_throttle", "share": 0.24}]}, {}, None, True),
    "compute_bound_fp32": ({"bound": "compute-bound", "compute_pct": 85.0, "tensor_pipe_pct": 0.0},
                           {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": (88.0, "%")}, 15.0, True),
    "busy_fma_pipe": ({"bound": "latency-bound"},
                      {"sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": (40.0, "%")}, None, True),
    "math_pipe_throttle": ({"bound": "latency-bound", "stalls": [{"reason": "math_pipe_throttle", "share": 0.2}]},
                           {}, None, True),
    "compute_bound_on_tensor_cores": ({"bound": "compute-bound", "compute_pct": 85.0, "tensor_pipe_pct": 5.0}, {},
                                      None, True),
    "shared_memory_limit": ({"bound": "latency-bound", "theoretical_occupancy_pct": 25.0,
                             "occupancy_limiter": "shared memory (2 blocks/SM)", "shared_mem_bytes": 98304},
                            {}, None, True),
    "block_size_limit": ({"bound": "latency-bound", "theoretical_occupancy_pct": 12.5, "block": "(32,1,1)",
                          "occupancy_limiter": "blocks per SM (32)"}, {}, None, True),
    "other_limit_or_compute_bound": ({"bound": "compute-bound", "compute_pct": 70.0, "tensor_pipe_pct": 50.0,
                                      "theoretical_occupancy_pct": 25.0, "occupancy_limiter": "registers"},
                                     {}, None, True),
    "few_waves": ({"bound": "latency-bound", "grid": "(40,1,1)", "achieved_occupancy_pct": 10.0,
                   "theoretical_occupancy_pct": 100.0}, {"launch__waves_per_multiprocessor": 0.3}, None, True),
    "tail_wave": ({"bound": "latency-bound", "achieved_occupancy_pct": 40.0, "theoretical_occupancy_pct": 100.0},
                  {"launch__waves_per_multiprocessor": 1.0}, None, True),
    "tail_wave_memory_bound": ({"bound": "memory-bound", "memory_pct": 70.0, "achieved_occupancy_pct": 40.0,
                                "theoretical_occupancy_pct": 100.0}, {}, 65.0, True),
    "spills": ({"bound": "latency-bound"}, {"sass__inst_executed_register_spilling": (1234.0, "")}, None, True),
    "low_l2_hit_rate": ({"bound": "latency-bound", "l2_hit_pct": 30.0, "arithmetic_intensity": 4.0}, {}, 45.0, True),
    "low_l2_hit_rate_low_intensity": ({"bound": "latency-bound", "l2_hit_pct": 30.0, "arithmetic_intensity": 1.0},
                                      {}, 45.0, True),
    "everything_at_once": (
        {"bound": "memory-bound", "memory_pct": 90.0, "compute_pct": 10.0, "dram_gbps": 500.0, "grid": "(8,1,1)",
         "theoretical_occupancy_pct": 25.0, "occupancy_limiter": "registers", "registers_per_thread": 128,
         "l2_hit_pct": 10.0, "arithmetic_intensity": 2.0, "tensor_pipe_pct": None,
         "stalls": [{"reason": "long_scoreboard", "share": 0.5}, {"reason": "barrier", "share": 0.3}]},
        {"launch__waves_per_multiprocessor": 0.1, "sass__inst_executed_register_spilling": 7.0,
         "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 60.0}, 40.0, True),
    "nothing_stands_out": ({"bound": "latency-bound", "compute_pct": 30.4, "memory_pct": 20.6}, {}, None, True),
    "nothing_known": ({}, {}, None, False),
}


def _suggestions_for(scenario: str) -> list[dict]:
    from stitch_mcp.models import KernelDigest

    fields, metrics, dram_pct, with_ceilings = SUGGESTION_SCENARIOS[scenario]
    d = KernelDigest(name="k", **fields)
    launch = N.Launch(id=0, name="k", metrics={k: v if isinstance(v, tuple) else (v, "") for k, v in metrics.items()})
    ceil = ceilings_for("NVIDIA H100 80GB HBM3") if with_ceilings else None
    return [s.model_dump() for s in N.suggestions(d, launch, dram_pct, ceil)]


def test_suggestions_word_for_word():
    import json

    expected = json.loads((NCU_FIX / "suggestions.json").read_text())
    assert set(expected) == set(SUGGESTION_SCENARIOS)
    for scenario in SUGGESTION_SCENARIOS:
        assert _suggestions_for(scenario) == expected[scenario], scenario


# ------------------------------------------------------------------ nsys exports with columns or tables missing


def _export(path: Path, tables: dict[str, tuple[str, list[tuple]]]) -> Path:
    """A small SQLite export: table -> (its columns, its rows)."""
    db = sqlite3.connect(path)
    for table, (columns, rows) in tables.items():
        db.execute(f"CREATE TABLE {table} ({columns})")
        if rows:
            db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    db.commit()
    db.close()
    return path


def test_nsys_export_without_optional_columns(tmp_path):
    """No thread, event type, text id or launch name columns; kernels by short name with no grid, block or
    stream; copies without a kind or a correlation. What falls outside the iteration is left out."""
    from stitch_mcp.profiling.nsys import parse_sqlite
    from stitch_mcp.profiling.trace import Copy, Kernel, Op, Trace

    path = _export(tmp_path / "sparse.sqlite", {
        "StringIds": ("id, value", [(1, "cudaLaunchKernel_v7000"), (2, "my_kernel")]),
        "NVTX_EVENTS": ("start, end, text", [(100, 1000, "stitch_iter_0"), (200, 400, "aten::mul"),
                                             (250, 300, "aten::mul_inner"), (10, 50, "aten::early"),
                                             (500, 400, "aten::backwards"), (600, None, "aten::open")]),
        "CUPTI_ACTIVITY_KIND_RUNTIME": ("start, correlationId", [(210, 7), (20, 8)]),
        "CUPTI_ACTIVITY_KIND_KERNEL": ("start, end, shortName, correlationId",
                                       [(300, 350, 2, 7), (600, 650, "named_by_text", None), (5000, 5100, 2, None),
                                        (700, 720, None, 8)]),
        "CUPTI_ACTIVITY_KIND_MEMCPY": ("start, end, bytes", [(800, 900, 4096), (9000, 9100, 1)]),
    })
    assert parse_sqlite(path) == Trace(
        backend="nsys", device="", on_gpu=True, iterations=[(100.0, 1000.0)],
        ops=[Op("aten::mul", 200.0, 400.0, 0)],
        kernels=[Kernel("my_kernel", 300.0, 350.0, op="aten::mul", iteration=0, grid="(1,1,1)", block="(1,1,1)"),
                 Kernel("named_by_text", 600.0, 650.0, op="", iteration=0, grid="(1,1,1)", block="(1,1,1)")],
        copies=[Copy("memcpy", 800.0, 900.0, nbytes=4096, op="", iteration=0)],
        launches=0, notes=[])


def test_nsys_export_without_ranges_is_one_iteration(tmp_path):
    """No NVTX table: the whole capture is one iteration; copy kinds named by ENUM_CUDA_MEMCPY_OPER's `name`
    when it has no `label`; a memset is a memset whatever its copyKind says."""
    from stitch_mcp.profiling.nsys import parse_sqlite
    from stitch_mcp.profiling.trace import Copy, Kernel, Trace

    path = _export(tmp_path / "bare.sqlite", {
        "TARGET_INFO_GPU": ("id, name", []),
        "ENUM_CUDA_MEMCPY_OPER": ("id, name", [(1, "Host-to-Device"), (2, "Something else entirely")]),
        "CUPTI_ACTIVITY_KIND_KERNEL": ("start, end, demangledName, gridX, blockX, streamId",
                                       [(1000, 3000, "void k(int)", 4, 256, 3)]),
        "CUPTI_ACTIVITY_KIND_MEMCPY": ("start, end, bytes, copyKind, correlationId",
                                       [(500, 700, 64, 1, 99), (3500, 3600, 8, 2, None), (3600, 3700, 8, 10, None)]),
        "CUPTI_ACTIVITY_KIND_MEMSET": ("start, end, bytes, copyKind", [(3700, 4000, None, 1)]),
    })
    assert parse_sqlite(path) == Trace(
        backend="nsys", device="", on_gpu=True, iterations=[(500.0, 4000.0)],
        kernels=[Kernel("void k(int)", 1000.0, 3000.0, op="", iteration=0, grid="(4,1,1)", block="(256,1,1)",
                        stream=3)],
        copies=[Copy("HtoD", 500.0, 700.0, nbytes=64, op="", iteration=0),
                Copy("memcpy", 3500.0, 3600.0, nbytes=8, op="", iteration=0),
                Copy("PtoP", 3600.0, 3700.0, nbytes=8, op="", iteration=0),
                Copy("memset", 3700.0, 4000.0, nbytes=0, op="", iteration=0)],
        notes=["no stitch_iter NVTX ranges in the report; using the whole capture as one iteration"])


# ------------------------------------------------------------------ torch.profiler Chrome traces


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid, "args": args}


def test_chrome_trace_ties_gpu_work_to_its_top_level_op():
    """Kernels and copies go to the top-level op that launched them: by External id, by the launch
    call's External id, or by the op open on the launching thread; work outside an iteration is left out."""
    from stitch_mcp.profiling.torchprof import parse_chrome_trace
    from stitch_mcp.profiling.trace import Copy, Kernel, Op, Trace

    events = [
        {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 150},  # not a complete event
        _x("user_annotation", "stitch_iter_0", 100, 100), _x("user_annotation", "stitch_iter_1", 300, 100),
        _x("user_annotation", "other_range", 0, 1000),
        _x("cpu_op", "aten::early", 10, 20),  # before the first iteration
        _x("cpu_op", "aten::linear", 110, 50, **{"External id": 1}),
        _x("cpu_op", "aten::addmm", 115, 30, **{"External id": 2}),  # nested: belongs to aten::linear
        _x("cpu_op", "aten::relu", 170, 20, **{"External id": 3}),
        _x("cpu_op", "aten::add", 120, 40, tid=2),  # another thread
        _x("cpu_op", "aten::mul", 310, 40, **{"External id": 4}),
        _x("cuda_runtime", "cudaLaunchKernel", 116, 2, correlation=10, **{"External id": 2}),
        _x("cuda_runtime", "cudaLaunchKernel", 175, 2, correlation=11),
        _x("cuda_driver", "cuLaunchKernel", 125, 2, tid=2, correlation=12),
        _x("cuda_runtime", "cudaMemcpyAsync", 320, 2, correlation=13),
        _x("cuda_runtime", "cudaLaunchKernel", 50, 2, correlation=14),  # outside: not counted
        _x("cuda_runtime", "cudaStreamSynchronize", 330, 2),
        _x("kernel", "gemm", 130, 10, correlation=10, grid=[4, 2, 1], block=[128, 1, 1], stream=7),
        _x("kernel", "relu_kernel", 180, 5, correlation=11, grid=[1, 1, 1], block=[256, 1, 1], stream=7),
        _x("kernel", "add_kernel", 140, 5, correlation=12, grid="(2,1,1)"),
        _x("kernel", "mul_kernel", 340, 5, **{"External id": 4}),
        _x("kernel", "orphan", 900, 5, correlation=99),
        _x("kernel", "warmup", 60, 5, correlation=14),
        _x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 335, 3, correlation=13, bytes=4096),
        _x("gpu_memcpy", "Memcpy weird", 336, 1, correlation=13),
        _x("gpu_memset", "Memset (Device)", 345, 1, bytes=64, **{"External id": 4}),
        _x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 950, 1, correlation=98),
    ]
    t = parse_chrome_trace({"traceEvents": events}, device="NVIDIA H100 80GB HBM3")
    us = 1e3  # the trace's µs in ns
    linear, relu, mul = Op("aten::linear", 110 * us, 160 * us, 0), Op("aten::relu", 170 * us, 190 * us, 0), \
        Op("aten::mul", 310 * us, 350 * us, 1)
    assert t == Trace(
        backend="torch", device="NVIDIA H100 80GB HBM3", on_gpu=True, iterations=[(100 * us, 200 * us),
                                                                                  (300 * us, 400 * us)],
        ops=[linear, relu, mul, Op("aten::add", 120 * us, 160 * us, 0)],
        kernels=[Kernel("gemm", 130 * us, 140 * us, "aten::linear", 0, "(4,2,1)", "(128,1,1)", 7),
                 Kernel("relu_kernel", 180 * us, 185 * us, "aten::relu", 0, "(1,1,1)", "(256,1,1)", 7),
                 Kernel("add_kernel", 140 * us, 145 * us, "aten::add", 0, "(2,1,1)", "", 0),
                 Kernel("mul_kernel", 340 * us, 345 * us, "aten::mul", 1, "", "", 0)],
        copies=[Copy("DtoH", 335 * us, 338 * us, 4096, "aten::mul", 1),
                Copy("memcpy", 336 * us, 337 * us, 0, "aten::mul", 1),
                Copy("memset", 345 * us, 346 * us, 64, "aten::mul", 1)],
        launches=3)


def test_chrome_trace_without_iterations_or_gpu_work(tmp_path):
    """No iteration ranges: the whole trace is one iteration; no kernels or launch calls: a CPU run."""
    import json

    from stitch_mcp.profiling.torchprof import parse_chrome_trace
    from stitch_mcp.profiling.trace import Op, Trace

    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": [_x("cpu_op", "aten::mm", 5, 10), _x("cpu_op", "aten::add", 20, 5)]}))
    assert parse_chrome_trace(path) == Trace(
        backend="torch", on_gpu=False, iterations=[(5000.0, 25000.0)],
        ops=[Op("aten::mm", 5000.0, 15000.0, 0), Op("aten::add", 20000.0, 25000.0, 0)],
        notes=["no iteration ranges found in the trace; treating the whole trace as one iteration"])
    assert parse_chrome_trace({"traceEvents": []}, on_gpu=True) == Trace(
        backend="torch", on_gpu=True, notes=["no iteration ranges found in the trace; treating the whole trace as "
                                             "one iteration"])


def test_reference_digest_findings_and_notes_word_for_word():
    from stitch_mcp.profiling.nsys import parse_sqlite
    from stitch_mcp.profiling.trace import Kernel, Trace, digest

    t = parse_sqlite(NSYS_FIX)
    costs = {"conv2d": {"flops": 2e9, "bytes": 8e6, "calls": 1, "dtype": "torch.float32"},
             "add": {"flops": 0.0, "bytes": 12e6, "calls": 1, "dtype": "torch.float32"}}
    p = digest(t, ceilings_for(t.device), costs, max_ops=2, max_kernels=3)
    assert len(p.ops) == 2 and len(p.kernels) == 3
    assert p.notes[-2:] == ["3 more ops not shown", "1 more kernel kinds not shown"]
    assert [(f.code, f.severity, f.confidence, f.message) for f in p.findings] == [
        ("fusion_candidate", "info", "probable", "fuse batch_norm -> hardtanh -> add after conv2d into one kernel "
         "(epilogue of conv2d): ~160.0 us of GPU time now, each op re-reads and re-writes the tensor"),
        ("host_gaps", "warning", "probable", "GPU idle 45% of each iteration (4 launches, 123.0 us GPU work per "
         "launch): the GPU waits on the host (host work, synchronizations, copies): keep the forward on the GPU and "
         "avoid syncs"),
        ("avoidable_copy", "warning", "possible", "4.2 MB copied per iteration (DtoH, 30.0 us): keep data on the GPU "
         "/ compute in place"),
        ("avoidable_copy", "info", "possible", "aten::to takes 6% (30.0 us): a layout copy a fused kernel could avoid "
         "by reading the strided input directly"),
        ("far_from_floor", "info", "probable", "aten::conv2d: 302.0 us vs floor 29.9 us (10x; intensity 250.0 "
         "FLOP/B): room for a better kernel"),
        ("far_from_floor", "info", "probable", "aten::add: 40.0 us vs floor 4.0 us (10x; intensity 0.0 FLOP/B): room "
         "for a better kernel")]
    assert [e.text for e in p.findings[0].evidence] == ["batch_norm -> hardtanh -> add"]
    assert [e.text for e in p.findings[1].evidence] == ["wall 900.0 us, GPU busy 492.0 us"]
    # ten 1 us kernels in a 1 ms iteration: launch overhead
    tiny = Trace(backend="torch", iterations=[(0, 1e6)], kernels=[Kernel("k", i * 1e5, i * 1e5 + 1e3, iteration=0)
                                                                  for i in range(10)])
    launch = [f for f in digest(tiny, ceilings_for(t.device), {}).findings if f.code == "launch_bound"]
    assert [f.message for f in launch] == [
        "GPU idle 99% of each iteration (10 launches, 1.0 us GPU work per launch): launch overhead dominates: fuse ops "
        "to cut launches or capture the forward in a CUDA graph"]


NSYS_H100 = FIX / "nsys" / "h100_cuda13.sqlite"


def test_nsys_export_of_a_real_h100_run_parses():
    """A real `nsys export --type sqlite` (Nsight Systems 2022.4.2 on an H100, CUDA 13 driver, torch
    2.11; tests/fixtures/nsys/README.md): kernels with their names and owning NVTX ranges, launches,
    copies; without stitch's iteration ranges the whole capture is one iteration, and says so."""
    from stitch_mcp.profiling.nsys import parse_sqlite
    from stitch_mcp.profiling.trace import digest

    t = parse_sqlite(NSYS_H100)
    assert t.backend == "nsys" and t.device == "NVIDIA H100 80GB HBM3"
    assert len(t.iterations) == 1 and any("no stitch_iter NVTX ranges" in n for n in t.notes)
    assert len(t.kernels) == 28 and t.launches == 28
    assert any("cutlass" in k.name for k in t.kernels) and {"setup", "compute"} <= {k.op for k in t.kernels}
    assert sorted({c.kind for c in t.copies}) == ["DtoH", "memset"]
    p = digest(t, ceilings_for(t.device), {})
    assert p.gpu_ms_per_iter and p.gpu_ms_per_iter > 0
