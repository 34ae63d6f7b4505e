"""The door's framing over a real socket pair: what a room's door reuses, and what it never does."""

from __future__ import annotations

import os
import socket
import struct

import pytest

from stitch_mcp.door import COMMANDS, PARSED_CALLS, Arg, Batch, Call, Door, DoorClosed, SharedTensor


def _pair(reuse: bool) -> tuple[Door, Door]:
    judge_end, room_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return Door(judge_end, COMMANDS), Door(room_end, COMMANDS, reuse_calls=reuse)


def _call(offset: int = 0) -> Call:
    spec = SharedTensor(region=0, offset=offset, shape=[4], dtype="float32")
    return Call(args=[Arg(tensor=spec)], outputs=[spec], timed=True)


def test_a_rooms_door_hands_back_a_call_it_has_parsed_before():
    judge, room = _pair(reuse=True)
    judge.send(_call())
    judge.send(_call())
    judge.send(_call(256))
    first, second, other = (room.receive(5)[0] for _ in range(3))
    assert first is second and first == _call()
    assert other is not first and other == _call(256)


def test_frames_with_descriptors_and_other_messages_are_parsed_afresh():
    judge, room = _pair(reuse=True)
    r, w = os.pipe()
    try:
        for fds in ([r], [r], None, None):
            judge.send(_call() if fds else Batch(calls=[_call()]), fds)
        got = [room.receive(5) for _ in range(4)]
        assert got[0][0] is not got[1][0] and len(got[0][1]) == 1  # each came with a descriptor
        assert got[2][0] is not got[3][0] and got[2][0] == Batch(calls=[_call()])
        for _, fds in got:
            for fd in fds:
                os.close(fd)
    finally:
        os.close(r)
        os.close(w)


def test_a_door_keeps_a_bounded_number_of_calls_and_only_where_asked():
    judge, room = _pair(reuse=True)
    for k in range(PARSED_CALLS + 5):
        judge.send(_call(256 * k))
        room.receive(5)
    assert len(room.parsed) == PARSED_CALLS
    judge, plain = _pair(reuse=False)
    judge.send(_call())
    judge.send(_call())
    assert plain.receive(5)[0] is not plain.receive(5)[0]


def test_a_malformed_frame_closes_the_door():
    judge, room = _pair(reuse=True)
    body = b'{"kind":"call","args":"nonsense"}'
    judge.sock.sendall(struct.pack("!I", len(body)) + body)
    with pytest.raises(DoorClosed):
        room.receive(5)


def test_the_constructors_arguments_cross_the_door_as_they_were():
    """get_init_inputs() crosses to the room as JSON (judge.prepare.plain_values, door.Load.args):
    tuples, nested ones, torch.Size and dtypes come out as they went in; what JSON cannot carry is
    the reference's error, named."""
    import torch

    from stitch_mcp.correctness import StageError
    from stitch_mcp.door import Load
    from stitch_mcp.judge.prepare import plain_values

    sent = [4, (3, (1, 2)), torch.Size([4, 1, 1]), torch.float16, torch.bfloat16, [0.5, "x"], None]
    wire = Load.model_validate_json(Load(program="p.py", init_args=plain_values(sent)).model_dump_json())
    got = wire.args()
    assert got == sent and [type(v) for v in got] == [type(v) for v in sent], got
    assert type(got[1][1]) is tuple and type(got[2]) is torch.Size
    with pytest.raises(ValueError, match="not a torch dtype"):
        Load(program="p.py", init_args=[{"dtype": "Tensor"}]).args()
    with pytest.raises(StageError, match="returns a dict"):
        plain_values([{"a": 1}])
