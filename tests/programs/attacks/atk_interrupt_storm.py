"""Attack (red-team, session 21): an interrupt storm. A lean door and lean batches (as
atk_pad_small_batches, without padding; relu in AVX2 machine code where the CPU has it) and, at the
end of its own smaller batches, a few hundred io_uring timeouts armed in one syscall (DEFER_TASKRUN:
nothing wakes it) to expire @spacing_us@ us apart while the reference's larger batches run on the
shared core. Where the kernel does not account interrupt time apart (CONFIG_IRQ_TIME_ACCOUNTING off)
each expiry is billed to the task it interrupts: the reference's room. It prefaults its own batch
buffers when they are attached, so its smaller batches are not the ones slowed by first touches.
1.17-1.70x with eager's own relu and no finding (2-core host, 2026-11-27), until the judge counted
the interrupts on its core in each room's windows (judge.timing.interrupt_rates).
@own_ms@ > 0 masks it (a third red-team round): it sleeps that long in each of its smaller batches
while timers of its own expire on the idle core, billed to nobody, so that its own windows' rate
hides the storm: 1.2-1.5x in about half its checks, until a candidate's batch that idles most of
its window no longer counted (judge.timing.STORM_IDLE). Only in a CPU room."""
import ctypes, gc, json, mmap, os, struct, sys, time, types

import numpy as np
import torch
import torch.nn as nn

SPACING_NS = int(float("@spacing_us@") * 1000)
OWN_SPACING_NS = int(float("15") * 1000)  # own timers, expiring on the idle core while we sleep in our window
OWN_MS = float("@own_ms@")  # how long we sleep in each of our smaller batches' windows
COVER = float("2.5")  # fraction of the predicted (stretched) reference lane to cover
LEAD = float("8")  # fraction of the lane to start early
STRETCH = float("1.5")  # predicted stretch of the lane by the storm
LOG = "no" == "yes"
PREFAULT = "yes" != "no"
ATTACH_MS = 400.0
SINGLE = "no" == "yes"
LEAD_SINGLE = float("0.15")  # ms after our last call of a block before the storm of the reference's block
COVER_SINGLE = 0.95
MODE = "k"  # "k": storm the waits before our larger batches from round 2 on; "all": every wait
FWD = "relu"  # "relu" or "tanh3" (three chained tanh(x*1.1+0.05), eager's own ops)
USE_C = FWD == "relu" and " avx2" in open("/proc/cpuinfo").read()
_views = {}


def _fview(ptr, ne):
    v = _views.get((ptr, ne))
    if v is None:
        arr = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(ne,))
        v = _views[(ptr, ne)] = torch.from_numpy(arr)
    return v


_tmp = {}


def tanh3_into(x, out):
    t = _tmp.get(x.numel())
    if t is None:
        t = _tmp[x.numel()] = torch.empty(x.numel())
    torch.mul(x.reshape(-1), 1.1, out=t); t.add_(0.05); torch.tanh(t, out=t)
    t.mul_(1.1); t.add_(0.05); torch.tanh(t, out=t)
    t.mul_(1.1); t.add_(0.05); torch.tanh(t, out=out.reshape(-1))


def fwd_ptr(xp, op, ne):
    if USE_C:
        relu_nt(xp, op, ne)
    elif FWD == "relu":
        torch.clamp_min(_fview(xp, ne), 0.0, out=_fview(op, ne))
    else:
        tanh3_into(_fview(xp, ne), _fview(op, ne))

_NT = bytes.fromhex("4889f94989f14989d04885d27e4b40f6c61f0f840b010000c5e057db4889f231f6c5f828d3eb15660f1f8400000000004883c204f6c21f74274889c6c5fa1004b1488d4601c5e2c2c801c4e3694ac010c5fa11024939c075d70faef8c30f1f004883c6204939f07e7d498d34814889c2c5f857c00f1f4000c5fc105c9120c5fc105491404889d74883ee80c5fc104c9160c5fc5f24914883c73f4883c220c5fc5fdbc5fc5fd2c5fc5fc9c5fc2b6680c5fc2b5ea0c5fc2b56c0c5fc2b4ee04c39c77cb5498d50e0488d701f4829c24883e2e04939f0be00000000480f4ed6488d441020c5f8774939c00f8e6affffffc5e057dbc5f828d3660f1f840000000000c5fa100481c5e2c2c801c4e3694ac010c4c17a1104814883c0014939c075e10faef8c331c04883fa1f0f8f3affffffebbe")
_ST = bytes.fromhex("4989f04883fa1f0f8ea30000004889f1488d72e0c5f857c04889f848c1ee054989f149c1e1074e8d8c0f800000006690c5fc105820c5fc5f204883e8804883e980c5fc1050c0c5fc1048e0c5fc5fdbc5fc5fd2c5fc5fc9c5fc116180c5fc1159a0c5fc1151c0c5fc1149e04c39c875c0488d460148c1e005c5f8774839c27e2fc5e057dbc5f828d30f1f840000000000c5fa100487c5e2c2c801c4e3694ac010c4c17a1104804883c0014839c275e1c331c0ebc7")
_mem = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
_mem.write(_NT)
_mem.seek(1024)
_mem.write(_ST)
_base = ctypes.addressof(ctypes.c_char.from_buffer(_mem))
_F = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long)
relu_nt = _F(_base)
relu_st = _F(_base + 1024)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class Storm:
    def __init__(self, entries=2048):
        p = (ctypes.c_uint32 * 30)()
        p[1] = entries * 8
        p[2] = (1 << 3) | (1 << 12) | (1 << 13)  # CQSIZE | SINGLE_ISSUER | DEFER_TASKRUN
        fd = libc.syscall(425, ctypes.c_uint32(entries), p)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "io_uring_setup")
        self.fd = fd
        b = bytes(p)
        n_sq, n_cq = p[0], p[1]
        so = struct.unpack_from("7I", b, 40)
        co = struct.unpack_from("6I", b, 80)
        self.entries = n_sq
        self.ring = mmap.mmap(fd, max(so[6] + n_sq * 4, co[5] + n_cq * 16), mmap.MAP_SHARED,
                              mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        self.sqes = mmap.mmap(fd, n_sq * 64, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=0x10000000)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.ring))
        self.sq_tail = ctypes.c_uint32.from_address(base + so[1])
        self.cq_head = ctypes.c_uint32.from_address(base + co[0])
        self.cq_tail = ctypes.c_uint32.from_address(base + co[1])
        np.frombuffer(self.ring, dtype=np.uint32, count=n_sq, offset=so[6])[:] = np.arange(n_sq, dtype=np.uint32)
        self.ts = np.zeros((n_sq, 2), dtype=np.int64)
        dt = np.dtype([("op", "u1"), ("flags", "u1"), ("ioprio", "u2"), ("fd", "i4"), ("off", "u8"), ("addr", "u8"),
                       ("len", "u4"), ("tflags", "u4"), ("ud", "u8"), ("pad", "u8", 3)])
        self.sqe = np.frombuffer(self.sqes, dtype=dt, count=n_sq)
        self.sqe["op"] = 11
        self.sqe["fd"] = -1
        self.sqe["len"] = 1
        self.sqe["tflags"] = 1  # IORING_TIMEOUT_ABS (CLOCK_MONOTONIC)
        self.sqe["addr"] = self.ts.ctypes.data + 16 * np.arange(n_sq, dtype=np.uint64)

    def arm(self, t0_ns, spacing_ns, n):
        n = max(0, min(n, self.entries))
        if not n:
            return 0
        tail = self.sq_tail.value
        idx = (tail + np.arange(n)) % self.entries
        when = t0_ns + spacing_ns * np.arange(n, dtype=np.int64)
        self.ts[idx, 0] = when // 1_000_000_000
        self.ts[idx, 1] = when % 1_000_000_000
        self.sq_tail.value = tail + n
        return libc.syscall(426, self.fd, n, 0, 0, None, 0)

    def cancel_all(self):
        tail = self.sq_tail.value
        i = tail % self.entries
        e = self.sqe[i]
        self.sqe["op"][i], self.sqe["tflags"][i], self.sqe["addr"][i] = 14, 1 | 4, 0
        self.sq_tail.value = tail + 1
        libc.syscall(426, self.fd, 1, 0, 0, None, 0)
        self.sqe["op"][i], self.sqe["tflags"][i] = 11, 1
        self.sqe["addr"][i] = self.ts.ctypes.data + 16 * i

    def reap(self):
        libc.syscall(426, self.fd, 0, 0, 1, None, 0)
        self.cq_head.value = self.cq_tail.value


def _find_room():
    f = sys._getframe()
    while f is not None:
        s = f.f_locals.get("self")
        if s is not None and type(s).__name__ == "_Room":
            return s
        f = f.f_back
    return None


S = {"r": None, "h": None, "gaps": [], "last_sent": None, "attach": None, "q": None, "k": None,
     "runs": [], "log": [], "storm": None, "D": {}, "Dk": [], "Dq": []}


def now():
    return time.monotonic_ns()


def _arm_gap(E, length, reap=True, lead=None):
    lead = LEAD if lead is None else lead
    """Storm the wait until our next batch (the judge writing inputs, the reference's batch, its harness
    batch), from LEAD ms on; cancelled when our batch comes."""
    n = min(int(length * 1e6 / SPACING_NS), 30000)
    st = S["storm"]
    if reap or S.get("n_armed", 0) > 20000:
        st.reap()
        S["n_armed"] = 0
    S["n_armed"] = S.get("n_armed", 0) + n
    armed = 0
    t0 = E + int(lead * 1e6) + 700 * n  # after the arming itself (about half a microsecond each)
    while n > 0:
        m = min(n, st.entries)
        armed += st.arm(t0, SPACING_NS, m)
        t0 += m * SPACING_NS
        n -= m
    S["armed"] = True
    if LOG:
        S["log"].append(f"arm len={length:.2f}ms n={armed} took={(now() - E) / 1e6:.2f}ms")


_bases = {}


def _base_of(mapped, region):
    b = _bases.get(region)
    if b is None:
        b = _bases[region] = mapped[region].base.data_ptr()
    return b


def _install():
    room = _find_room()
    if room is None or room.device != "cpu":
        return
    door = room.door
    read = door._read
    sock = door.sock
    D = sys.modules["stitch_mcp.door"]
    cache, bcache = {}, {}
    done_body = D.Done().model_dump_json().encode()
    done = struct.pack("!I", len(done_body)) + done_body
    try:
        if SPACING_NS > 0:
            S["storm"] = Storm(8192)
        if OWN_MS > 0:
            S["own"] = Storm(8192)
    except Exception as e:
        S["log"].append(f"no storm {e}")
    state = {"batch": None}
    shared = room.shared
    attach = shared.attach

    def attach_populated(regions, fds):  # the batches' buffers faulted in now, before the judge counts
        before = len(shared.mapped)
        attach(regions, fds)
        for m in shared.mapped[before:]:
            mm = getattr(m, "mm", None)
            if mm is not None:
                try:
                    mm.madvise(23)  # MADV_POPULATE_WRITE
                except Exception as e:
                    S["log"].append(f"populate {e!r}")

    if PREFAULT:
        shared.attach = attach_populated

    def receive(deadline_s=None):
        while True:
            head, fds = read(4, None, want_fds=True)
            t_in = now()
            (n,) = struct.unpack("!I", head)
            body, _ = read(n, None)
            if not fds and body.startswith(b'{"kind":"call"'):
                hit = cache.get(body)
                if hit is None:
                    msg = door.adapter.validate_python(json.loads(body))
                    if msg.poison or not msg.timed or room.model is None:
                        return msg, fds
                    x = room.shared.view(msg.args[0].tensor)
                    t = room.shared.view(msg.outputs[0])
                    meta = D.OutputMeta(kind="tensor", shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""),
                                        device="cpu", copied=True)
                    reply = D.Called(outputs=[meta], room_ms=0.05, room_cpu_ms=0.04, copy_cpu_ms=0.01).model_dump_json().encode()
                    hit = cache[body] = (x, t, x.data_ptr(), t.data_ptr(), x.numel(), struct.pack("!I", len(reply)) + reply)
                x, t, xp, tp, ne, frame = hit
                if S["last_sent"] is not None:
                    S["gaps"].append((t_in - S["last_sent"]) / 1e6)
                S["ncalls"] = S.get("ncalls", -1) + 1
                if S.get("armed"):
                    S["storm"].cancel_all()
                    S["armed"] = False
                if USE_C:
                    relu_st(xp, tp, ne)
                elif FWD == "relu":
                    torch.clamp_min(x, 0.0, out=t)
                else:
                    tanh3_into(x, t)
                if SINGLE and S["storm"] is not None and S["ncalls"] % 5 == 0 and len(S["gaps"]) > 5:
                    # the reference's block of five calls comes next: storm it (its door's share is what
                    # the judge subtracts from ours); one call in five pays the arming, the median not
                    blocks = [g for i, g in enumerate(S["gaps"]) if i % 5 == 0]
                    _arm_gap(now(), COVER_SINGLE * sorted(blocks)[len(blocks) // 2] - LEAD_SINGLE, reap=False, lead=LEAD_SINGLE)
                sock.sendall(frame)
                S["last_sent"] = now()
                continue
            if not fds and body.startswith(b'{"kind":"batch"') and room.model is not None:
                hit = bcache.get(body)
                if hit is None:
                    raw = json.loads(body)  # no pydantic: a new batch costs its first round nothing more
                    if raw.get("forward", True) is False:
                        return door.adapter.validate_python(raw), fds
                    mapped = room.shared.mapped
                    hit = []
                    for c in raw["calls"]:
                        a, o = c["args"][0]["tensor"], c["outputs"][0]
                        ne = 1
                        for d in a["shape"]:
                            ne *= d
                        hit.append((None, None, _base_of(mapped, a["region"]) + a["offset"],
                                    _base_of(mapped, o["region"]) + o["offset"], ne))
                    bcache[body] = hit
                m = len(hit)
                if S["q"] is None:
                    S["q"] = m
                    S["x1"] = (t_in - S["attach"]) / 1e6 if S["attach"] else 10.0
                elif m != S["q"]:
                    S["k"] = m
                if S["storm"] is not None:
                    if S["runs"]:
                        (S["Dk"] if m != S["q"] else S["Dq"]).append((t_in - S["runs"][-1][1]) / 1e6)
                    if S.get("armed"):
                        S["storm"].cancel_all()
                        S["armed"] = False
                S["cur"] = (m, t_in)
                state["batch"] = hit
                sock.sendall(done)
                continue
            if not fds and body.startswith(b'{"kind":"run"') and state["batch"] is not None:
                calls = state["batch"]
                for x, o, xp, op, ne in calls:
                    fwd_ptr(xp, op, ne)
                m = len(calls)
                E = now()
                if OWN_MS > 0 and m == S["q"] and S.get("own") is not None:
                    # our own window, padded with sleep on an idle core while our timers expire: a high
                    # interrupt rate per wall ms for us, billed to nobody (the core idles)
                    n_own = min(int(OWN_MS * 1e6 / OWN_SPACING_NS), S["own"].entries)
                    S["own"].arm(E + 150_000 + 900 * n_own, OWN_SPACING_NS, n_own)
                    time.sleep(OWN_MS / 1e3 + 0.00015 + 0.0000009 * n_own)
                    E = now()
                if S["storm"] is not None:
                    try:
                        small = m == S["q"]
                        seen = S["Dk"] if small else S["Dq"]
                        if seen and (small or MODE == "all"):
                            _arm_gap(E, COVER * sorted(seen)[len(seen) // 2] * (STRETCH if len(seen) == 1 and MODE == "k" else 1.0) - LEAD)
                        elif MODE == "all":  # round 1: from the wait before our first batch
                            _arm_gap(E, COVER * STRETCH * S["x1"] * (4 if small else 1) - LEAD)
                    except Exception as e:
                        S["log"].append(f"err {e!r}")
                S["runs"].append((m, E))
                if LOG:
                    S["log"].append(f"run m={m} at {E / 1e6:.3f} Dk={[round(d, 1) for d in S['Dk']]}")
                    if len(S["runs"]) >= 10:
                        print("\n".join(S["log"]), flush=True)
                        S["log"].clear()
                state["batch"] = None
                sock.sendall(done)
                continue
            if body.startswith(b'{"kind":"attach"'):
                S["attach"] = t_in
                if MODE == "all" and S["storm"] is not None and S["gaps"] and S["q"] is None:
                    # the batches' buffers: the judge is about to time the reference's first smaller batch
                    _arm_gap(t_in, ATTACH_MS)
            return door.adapter.validate_python(json.loads(body)), fds

    door.receive = receive
    gc.disable()


try:
    _install()
except Exception as e:
    S["log"].append(f"install {e!r}")


def _calibrate(x):
    """Untimed (a trial call): the reference's per-call work in a batch (a module call, relu, the copy) and its
    harness (an Identity call and the copy), wall ms."""
    out = torch.empty_like(x)
    ident = nn.Identity()
    m = torch.nn.ReLU()
    best_r = best_h = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            out.copy_(m(x))
        t1 = time.perf_counter()
        for _ in range(20):
            out.copy_(ident([x])[0])
        t2 = time.perf_counter()
        best_r, best_h = min(best_r, (t1 - t0) * 50), min(best_h, (t2 - t1) * 50)
    S["r"], S["h"] = best_r, best_h
    if LOG:
        S["log"].append(f"calib r={best_r:.4f} h={best_h:.4f}")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if FWD != "relu":
            out = torch.empty_like(x)
            tanh3_into(x.contiguous(), out)
            return out
        if S["r"] is None:
            _calibrate(x)
        return torch.relu(x)
