"""The one process layer's messages and channel (torchcts/process/channel.py, issue 42 item 3).

A message kind is a frozen dataclass; a Protocol refuses anything that is not one of its kinds
with every field of the type its hint says; a Channel gives up after its wait, says when the peer
is gone, and refuses a message of the wrong kind or size. The three kinds of child (forked cases,
distributed ranks, the warm server) define their messages with it; the warm server, run as a
script, loads the module by its path and never imports torchcts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Pipe
from pathlib import Path
from typing import Any, ClassVar

import pytest

from torchcts.cases.rank_messages import RANK_PROTOCOL, RankAnswer, RankCall
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.process import Channel, ChannelTimeout, Message, PeerGone, Protocol, ProtocolError, ready
from torchcts.workers.case_messages import CASE_PROTOCOL, CaseDone, CaseRaised, Ready, RunCase, Stop
from torchcts.workers.outcome import FAILED, CaseOutcome
from torchcts.workers.zygote import keys, protocol


@dataclass(frozen=True)
class Note(Message):
    kind: ClassVar[str] = "note"
    text: str
    count: int
    ratio: float
    tags: list[str]
    extra: dict[str, Any]
    why: str | None = None


@dataclass(frozen=True)
class Other(Message):
    kind: ClassVar[str] = "other"


NOTES = Protocol(Note, Other)
NOTE = Note("hi", 3, 0.5, ["a"], {"nested": [1, {"x": None}]})


def test_a_message_round_trips_and_each_malformed_one_is_refused() -> None:
    assert NOTES.decode(NOTES.encode(NOTE)) == NOTE
    assert NOTES.decode(NOTES.encode(Other())) == Other()
    good = json.loads(NOTES.encode(NOTE))
    assert NOTES.decode(json.dumps({**good, "ratio": 2}).encode()).ratio == 2  # a peer may write 2 for 2.0
    for bad in ({**good, "kind": "nope"}, {**good, "count": "3"}, {**good, "count": True}, {**good, "tags": ["a", 1]},
                {**good, "extra": []}, {**good, "why": 3}, {**good, "more": 1}, {k: v for k, v in good.items() if k != "text"},
                [good], "note"):
        with pytest.raises(ProtocolError):
            NOTES.decode(json.dumps(bad).encode())
    with pytest.raises(ProtocolError):
        NOTES.decode(b"{not json")
    with pytest.raises(ProtocolError, match="not a message of this protocol"):
        Protocol(Other).encode(NOTE)


def test_a_protocol_refuses_kinds_it_cannot_carry() -> None:
    @dataclass(frozen=True)
    class Again(Message):
        kind: ClassVar[str] = "other"

    @dataclass(frozen=True)
    class Opaque(Message):
        kind: ClassVar[str] = "opaque"
        value: bytes

    with pytest.raises(TypeError, match="name of its own"):
        Protocol(Other, Again)
    with pytest.raises(TypeError, match="JSON values only"):
        Protocol(Opaque)


def test_a_channel_bounds_its_wait_and_names_a_gone_peer_or_a_bad_message() -> None:
    a, b = Pipe()
    left, right = Channel(a, NOTES), Channel(b, NOTES, max_bytes=200)
    left.send(NOTE)
    assert ready([left, right], 1.0) == [right]
    assert right.recv(Note, timeout=1.0) == NOTE
    start = time.monotonic()
    with pytest.raises(ChannelTimeout):
        right.recv(Note, timeout=0.2)
    assert time.monotonic() - start >= 0.15  # it waited (a lower bound only: load makes waits longer, never shorter)
    left.send(Other())
    with pytest.raises(ProtocolError, match="unexpected other"):
        right.recv(Note, timeout=1.0)
    left.send(Note("x" * 500, 1, 1.0, [], {}))  # over the receiver's max_bytes: refused, never read further
    with pytest.raises(ProtocolError):
        right.recv(Note, timeout=1.0)
    a, b = Pipe()
    left, right = Channel(a, NOTES), Channel(b, NOTES)
    left.close()
    with pytest.raises(PeerGone) as gone:
        right.recv(Note, timeout=1.0)
    assert isinstance(gone.value, EOFError) and isinstance(gone.value, OSError)  # what callers caught before
    with pytest.raises(PeerGone):
        right.send(Other())


def test_a_child_that_dies_is_a_gone_peer_not_a_hang() -> None:
    a, b = Pipe()
    pid = os.fork()
    if pid == 0:  # the child: dies without a word
        a.close()
        os._exit(9)
    b.close()
    channel = Channel(a, NOTES)
    with pytest.raises(PeerGone):
        channel.recv(Note, timeout=30)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 9


def test_the_case_and_rank_conversations_carry_their_records() -> None:
    record = CaseRecord(id="s/x/float32", suite="s", status=Status.FAILED, message="max abs error 0.5")
    done = CaseDone(CaseOutcome(record, FAILED, "max abs error 0.5").to_json(), ["numpy"])
    back = CASE_PROTOCOL.decode(CASE_PROTOCOL.encode(done))
    assert back == done and CaseOutcome.from_json(back.outcome).record == record
    for message in (Ready(), RunCase("s/x/float32"), Stop(), CaseRaised("KeyError: 'x'", "tb", [])):
        assert CASE_PROTOCOL.decode(CASE_PROTOCOL.encode(message)) == message
    with pytest.raises(ProtocolError):
        CASE_PROTOCOL.decode(b'{"kind": "done", "outcome": "passed", "imported": []}')
    call = RankCall(3, "m:f", {"seed": 1})
    assert RANK_PROTOCOL.decode(RANK_PROTOCOL.encode(call)) == call
    assert RankAnswer(3).has_value and not RankAnswer(3, error="RuntimeError: x").has_value
    assert not RANK_PROTOCOL.decode(RANK_PROTOCOL.encode(RankAnswer(3, not_applicable="gloo"))).has_value
    with pytest.raises(ProtocolError):
        RANK_PROTOCOL.decode(b'{"kind": "answer", "seq": 3, "error": 1, "not_applicable": null}')


LOAD_AS_SCRIPT = """
import importlib, importlib.util, os, sys
here = sys.argv[1]
spec = importlib.util.spec_from_file_location("_torchcts_zygote", os.path.join(here, "__init__.py"),
                                              submodule_search_locations=[here])
package = importlib.util.module_from_spec(spec)
sys.modules["_torchcts_zygote"] = package
spec.loader.exec_module(package)
protocol = importlib.import_module("_torchcts_zygote.protocol")
message = protocol.Accepted(12)
assert protocol.from_json(protocol.to_json(message)) == message
print(sorted(m for m in sys.modules if m.split(".")[0] == "torchcts"), protocol.Message.__module__)
"""


def test_the_warm_server_run_as_a_script_loads_the_channel_without_torchcts(tmp_path: Path) -> None:
    """__main__.py's way: the package under a private name; the shared module by its path."""
    here = str(Path(protocol.__file__).parent)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-S", "-c", LOAD_AS_SCRIPT, here], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[]", "_torchcts_zygote.channel"], r.stdout
    # an edited channel.py is another server, as an edited file of the package is
    assert ["../../process/channel.py"] == [s[0] for s in keys.package_stamp() if "/" in str(s[0])]
    assert isinstance(protocol.Accepted(1), Message)  # imported inside torchcts: the one definition


def test_the_rank_pool_waits_on_its_channels_and_reads_each_value_beside(tmp_path: Path) -> None:
    """cases/ranks.py without torch's ranks: two sleeping processes stand for them, this test
    speaks for them. A stale answer is skipped, values come from the payload files, the ranks'
    errors are the case's, and a malformed answer ends the pool (processes killed)."""
    import torch

    from torchcts.cases.rank_messages import payload_name
    from torchcts.cases.ranks import RankError, RankPool

    pool = RankPool("cpu", None, None, folder=tmp_path / "pool")
    pool.folder.mkdir()
    pool.procs = [subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(2)]
    ends = [Pipe() for _ in range(2)]
    pool.channels = [Channel(a, RANK_PROTOCOL) for a, _ in ends]
    ranks = [Channel(b, RANK_PROTOCOL) for _, b in ends]
    try:
        for rank, channel in enumerate(ranks):
            torch.save(torch.full((2,), float(rank)), pool.folder / payload_name(5, rank))
            channel.send(RankAnswer(4))  # an earlier call's: not this one's
            channel.send(RankAnswer(5))
        assert [v.tolist() for v in pool._await(5, "check", 5.0)] == [[0.0, 0.0], [1.0, 1.0]]
        for rank, channel in enumerate(ranks):
            channel.send(RankAnswer(6, error=f"RuntimeError: planted on rank {rank}"))
        with pytest.raises(RankError, match="rank 0: RuntimeError: planted on rank 0; rank 1: RuntimeError: planted"):
            pool._await(6, "check", 5.0)
        assert pool.alive()  # every rank raised: the group is in step, the ranks are kept
        ends[1][1].send_bytes(b'{"kind": "answer", "seq": 7}')
        with pytest.raises(RankError, match="rank 1 answered check with a malformed answer"):
            pool._await(7, "check", 5.0)
        assert pool.procs == [] and not pool.folder.exists()
    finally:
        pool.kill()
