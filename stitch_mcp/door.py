"""The one door between the judge and the candidate room: typed messages over a Unix socket.

The judge (trusted: stitch_mcp.judge) and the candidate room (untrusted: stitch_mcp.room) are two
processes. Everything that crosses between them is one of the pydantic models below, framed as a
4-byte length and JSON, with file descriptors (shared-memory regions, see shared_tensors.py)
attached to a frame as SCM_RIGHTS. Tensors never travel in a message: the judge hands the room
shared buffers and names slices of them (`SharedTensor`).

What the room sends back is data the judge validates (shapes, dtypes, its own event times), never
a verdict: the judge reads the output values from its shared buffers, compares them itself, and
checks every time the room reports against its own clock. A reply that does not parse, is too
large, or does not come within the judge's deadline ends the room (`DoorClosed`).
"""

from __future__ import annotations

import array
import json
import socket
import struct
import time
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

MAX_FRAME = 1 << 20  # a reply larger than this is not a reply
MAX_FDS = 16
JsonScalar = Union[bool, int, float, str, None]


class DoorClosed(Exception):
    """The other side went away, broke the protocol, or missed its deadline."""


# ------------------------------------------------------------------ shared tensors


class Region(BaseModel):
    """One shared-memory region: its fd travels with the `Attach` frame, in this order."""

    size: int = Field(ge=0)
    device: Literal["cpu", "cuda"]


class SharedTensor(BaseModel):
    """A tensor view on a shared region: `region` indexes the regions attached so far."""

    region: int = Field(ge=0)
    offset: int = Field(ge=0)
    shape: list[Annotated[int, Field(ge=0)]]
    dtype: str


class Arg(BaseModel):
    """One positional argument of forward: a shared tensor or a plain value."""

    tensor: SharedTensor | None = None
    value: JsonScalar = None


class OutputMeta(BaseModel):
    """What the room saw in one flattened output of forward (validated by the judge)."""

    kind: str = Field(description="'tensor', or the Python type name of a non-tensor")
    value: JsonScalar = None
    shape: list[int] = Field(default_factory=list)
    dtype: str = ""
    device: str = ""
    plain: bool = Field(True, description="a plain, dense, strided torch.Tensor with storage")
    detail: str = ""
    copied: bool = Field(False, description="its values were copied into the judge's buffer")
    aliases_input: bool = False


# ------------------------------------------------------------------ judge -> room


class Attach(BaseModel):
    kind: Literal["attach"] = "attach"
    regions: list[Region]


class Load(BaseModel):
    """Import the candidate file in the room's folder and build ModelNew(*init_args) on `device`."""

    # an infinite or NaN bound among get_init_inputs() crosses as such, not as null (red team, 2026-11-27)
    model_config = ConfigDict(ser_json_inf_nan="constants")

    kind: Literal["load"] = "load"
    program: str = Field(description="file name inside the room's working folder")
    model_class: Literal["ModelNew", "Model"] = "ModelNew"
    build_model: bool = Field(True, description="build the model too (False: import only, which builds "
                                              "the candidate's extensions)")
    init_args: list[Any] = Field(default_factory=list, description="get_init_inputs() as JSON, a tuple as "
                                 '{"tuple": [...]}, a torch.Size as {"size": [...]}, a dtype as {"dtype": NAME} '
                                 "(judge.prepare.plain_values): `args` rebuilds them")
    n_inputs: int | None = Field(None, description="how many inputs forward will get (for a clear interface error)")
    device: str = "cpu"
    visible_devices: str | None = Field(None, description="CUDA_VISIBLE_DEVICES to set before CUDA starts")
    device_order: str | None = Field(None, description="CUDA_DEVICE_ORDER that visible_devices counts in (the "
                                     "judge's: PCI_BUS_ID, as NVML numbers GPUs)")
    prebuilt: dict[str, int] = Field(default_factory=dict, description="extension key -> index of the .so's "
                                     "file descriptor among those attached to this message")

    def args(self) -> list[Any]:
        """init_args with their tuples, sizes and dtypes as they were: a candidate that concatenated
        a tuple to a tuple raised where the room built it from a list (red team, 2026-11-27)."""
        def one(v: Any) -> Any:
            if isinstance(v, dict) and "tuple" in v:
                return tuple(one(x) for x in v["tuple"])
            if isinstance(v, dict):
                import torch

                if "size" in v:
                    return torch.Size(v["size"])
                dtype = getattr(torch, v["dtype"], None)
                if not isinstance(dtype, torch.dtype):
                    raise ValueError(f"not a torch dtype: {v['dtype']!r}")
                return dtype
            return [one(x) for x in v] if isinstance(v, list) else v

        return [one(v) for v in self.init_args]


class Rehearse(BaseModel):
    """After an import-only Load: build ModelNew(*get_init_inputs()) and call it once on get_inputs(),
    all on the meta device, its errors ignored. What the candidate builds on first use (load_inline
    in __init__ or in forward) is then built in the build stage, where no GPU memory is held for it;
    the replying Loaded lists every extension the room has built."""

    kind: Literal["rehearse"] = "rehearse"
    reference_source: str = Field(description="the reference program (its get_inputs and get_init_inputs); in "
                                  "the message, since the room's folder is the candidate's to write")


class LoadState(BaseModel):
    """Copy these shared tensors into the model's parameters/buffers of the same name."""

    kind: Literal["state"] = "state"
    tensors: dict[str, SharedTensor]


class ReadState(BaseModel):
    """Copy the model's parameters/buffers of these names into the shared tensors, for the judge to
    read: which of ModelNew's tensors hold which of Model's values, where their names differ."""

    kind: Literal["read_state"] = "read_state"
    tensors: dict[str, SharedTensor]


class Call(BaseModel):
    """Run forward(*args); copy each output i into `outputs[i]` when shape and dtype match.

    `timed`: bracket the call with the room's own clock (CUDA events on a GPU) and report it.
    `poison`: fill the allocator's free memory first, so elements the candidate never writes show.
    """

    kind: Literal["call"] = "call"
    args: list[Arg]
    outputs: list[SharedTensor | None] = Field(default_factory=list)
    timed: bool = False
    poison: bool = False
    release: bool = Field(False, description="on a GPU, afterwards, free the call's outputs and give the room's "
                          "cached memory back to the driver (an untimed call after which the judge allocates)")


class Batch(BaseModel):
    """Get `calls` ready (their buffers resolved) for the next `Run`; nothing runs yet.
    `forward=False`: the run skips forward and copies the last call's outputs again (the judge's
    measure of what everything but forward costs); with `passes` too, each call also passes the last
    outputs through a module call and what wraps forward (the CPU clock's measure of its harness)."""

    kind: Literal["batch"] = "batch"
    calls: list[Call]
    forward: bool = True
    passes: bool = False


class Run(BaseModel):
    """Run the batch made ready: the calls back to back with nothing between them but copying each
    call's outputs, and one synchronize at the end. The judge brackets the whole run with its own
    clock, so the door's jitter is spread over many calls."""

    kind: Literal["run"] = "run"


class Ping(BaseModel):
    kind: Literal["ping"] = "ping"


class Bye(BaseModel):
    kind: Literal["bye"] = "bye"


Command = Annotated[Union[Attach, Load, Rehearse, LoadState, ReadState, Call, Batch, Run, Ping, Bye],
                    Field(discriminator="kind")]


# ------------------------------------------------------------------ room -> judge


class Ready(BaseModel):
    kind: Literal["ready"] = "ready"
    pid: int = 0
    torch_version: str = ""


class Loaded(BaseModel):
    kind: Literal["loaded"] = "loaded"
    state: dict[str, list[int]] = Field(default_factory=dict, description="ModelNew's state_dict shapes")
    digests: dict[str, str] = Field(default_factory=dict, description="each of those tensors' loader.value_digest as "
                                    "built (untrusted: it only says which to read back, door.ReadState)")
    import_s: float = 0.0
    build_s: float = 0.0
    cuda_s: float = Field(0.0, description="starting CUDA in the room, before the import")
    extensions: list[dict[str, Any]] = Field(default_factory=list)


class Called(BaseModel):
    kind: Literal["called"] = "called"
    outputs: list[OutputMeta] = Field(default_factory=list)
    room_ms: float | None = Field(None, description="the room's own time of the call (untrusted)")
    room_cpu_ms: float | None = Field(None, description="on a CPU, its calling thread's CPU time over the call "
                                      "(untrusted; the reference's tells the judge what its door costs)")
    copy_cpu_ms: float | None = Field(None, description="on a CPU, that thread's CPU copying the outputs to the "
                                      "judge's buffers (untrusted; the reference's is the cost of writing them)")
    unwritten: int = 0


class Done(BaseModel):
    kind: Literal["done"] = "done"


class Failed(BaseModel):
    """The candidate raised (or the room could not do what was asked)."""

    kind: Literal["failed"] = "failed"
    error_kind: str
    message: str
    line: int | None = None
    traceback: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)


Reply = Annotated[Union[Ready, Loaded, Called, Done, Failed], Field(discriminator="kind")]
COMMANDS: TypeAdapter = TypeAdapter(Command)
REPLIES: TypeAdapter = TypeAdapter(Reply)


# ------------------------------------------------------------------ framing


# The room parses the same timed Call (the same slots every call) a hundred times a check: parsed
# once, it costs no more than a lookup. On a 2-core host (2026-11-27) the door cost a 64K relu's room
# 0.17-0.20 ms of CPU per call against 0.05 ms of forward, and 0.09 ms with its Calls reused and
# their views kept (room._Room._resolved); a room answering it more cheaply gains what the honest
# door costs beyond its own.
PARSED_CALLS = 64


class Door:
    """One end of the socket. `send` a model (with fds); `receive` the next model of `adapter`.
    `reuse_calls`: a Call frame seen before (byte for byte, no fds) is the same message object."""

    def __init__(self, sock: socket.socket, adapter: TypeAdapter, reuse_calls: bool = False):
        self.sock, self.adapter = sock, adapter
        self.sock.setblocking(True)
        self.parsed: dict[bytes, Any] | None = {} if reuse_calls else None

    @classmethod
    def from_fd(cls, fd: int, adapter: TypeAdapter, reuse_calls: bool = False) -> "Door":
        return cls(socket.socket(fileno=fd), adapter, reuse_calls)

    def send(self, message: BaseModel, fds: list[int] | None = None) -> None:
        body = message.model_dump_json().encode()
        frame = struct.pack("!I", len(body)) + body
        try:
            if fds:
                self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
            else:
                self.sock.sendall(frame)
        except OSError as exc:
            raise DoorClosed(f"the other side is gone ({exc})") from None

    def receive(self, deadline_s: float | None = None) -> tuple[Any, list[int]]:
        """The next message and any fds that came with it. Raises DoorClosed on EOF, a bad frame,
        or when `deadline_s` seconds pass first."""
        end = None if deadline_s is None else time.monotonic() + deadline_s
        head, fds = self._read(4, end, want_fds=True)
        (n,) = struct.unpack("!I", head)
        if n > MAX_FRAME:
            raise DoorClosed(f"a message of {n} bytes (over {MAX_FRAME})")
        body, _ = self._read(n, end)
        known = self.parsed.get(body) if self.parsed is not None and not fds else None
        if known is not None:
            return known, fds
        try:
            message = self.adapter.validate_python(json.loads(body))
        except ValueError as exc:  # JSON or pydantic
            raise DoorClosed(f"a malformed message: {str(exc)[:300]}") from None
        if self.parsed is not None and not fds and isinstance(message, Call) and len(self.parsed) < PARSED_CALLS:
            self.parsed[body] = message
        return message, fds

    def _read(self, n: int, end: float | None, want_fds: bool = False) -> tuple[bytes, list[int]]:
        buf, fds = b"", []
        while len(buf) < n:
            if end is not None:
                left = end - time.monotonic()
                if left <= 0:
                    raise DoorClosed("no answer before the deadline")
                self.sock.settimeout(left)
            try:
                if want_fds and not buf:
                    data, anc, _, _ = self.sock.recvmsg(n, socket.CMSG_SPACE(MAX_FDS * 4))
                    for level, kind, payload in anc:
                        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                            got = array.array("i")
                            got.frombytes(payload[: len(payload) - len(payload) % 4])
                            fds.extend(got)
                else:
                    data = self.sock.recv(n - len(buf))
            except (socket.timeout, TimeoutError):
                raise DoorClosed("no answer before the deadline") from None
            except OSError as exc:
                raise DoorClosed(f"the other side is gone ({exc})") from None
            finally:
                if end is not None:
                    self.sock.settimeout(None)
            if not data:
                raise DoorClosed("the other side closed the door")
            buf += data
        return buf, fds

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
