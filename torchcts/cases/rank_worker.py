"""One rank of the distributed suite: join the group, then run the checks the parent sends.

    python -m torchcts.cases.rank_worker FOLDER RANK FD

FOLDER holds `config.json` (world size, device, c10d backend, backend module) written by
`cases/ranks.py`; a FileStore there lets the ranks meet without a TCP port. FD is the rank's end of
a socket pair with the pool: typed messages (cases/rank_messages.py). The rank imports the
manifest's backend module (a PrivateUse1 backend registers its device and c10d backend there),
joins the default process group and answers; then each `RankCall` names a check (`module:function`
and its parameters), answered with its value saved beside (`payload_name`). The pool closing the
channel ends the rank, and so do two minutes without a command (the worker has moved on to other suites:
idle ranks would hold their memory for the rest of the run) and its parent's death (a watchdog
thread), so a killed run leaves no rank behind.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from torchcts.cases.rank_messages import JOINED, RANK_PROTOCOL, RankAnswer, RankCall, payload_name
from torchcts.process import Channel, ChannelTimeout, PeerGone, ProtocolError, watch_parent


def _answer(folder: Path, rank: int, seq: int, call: Callable[[], Any]) -> RankAnswer:
    """A check's outcome: its value saved for the pool (torch.save), not_applicable, or the
    exception's last line."""
    import torch

    from torchcts.model.case import NotApplicable

    try:
        torch.save(call(), folder / payload_name(seq, rank))
        return RankAnswer(seq)
    except NotApplicable as exc:
        return RankAnswer(seq, not_applicable=str(exc))
    except Exception as exc:  # noqa: BLE001 - the backend's exception is the rank's answer
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return RankAnswer(seq, error=f"{type(exc).__name__}: {str(exc).strip()[:500]} "
                                     f"(at {Path(where.filename).name}:{where.lineno})")


def _calls(channel: Channel, idle_s: float) -> Iterator[RankCall]:
    """The pool's calls until it closes the channel or `idle_s` passes without one."""
    while True:
        try:
            yield channel.recv(RankCall, timeout=idle_s)
        except ChannelTimeout:
            return  # idle: the parent has moved on to other suites (ranks.py never reuses us now)
        except (PeerGone, ProtocolError):
            return


def _check(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str]) -> int:
    folder, rank, channel = Path(argv[0]), int(argv[1]), Channel(Connection(int(argv[2])), RANK_PROTOCOL)
    faulthandler.enable()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the parent asks where a hung rank waits
    watch_parent()
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    import torch
    import torch.distributed as dist

    from torchcts.backends.devices import import_backend
    from torchcts.cases.ranks import RankEnv, default_backend

    torch.set_num_threads(1)
    env: RankEnv | None = None

    def join() -> str:
        nonlocal env
        import_backend(config["backend_import"])
        device = torch.device(config["device"])
        store = dist.FileStore(str(folder / "store"), config["world_size"])
        env = RankEnv(rank, config["world_size"], device, default_backend(device.type, config["backend"]), store,
                      config["pg_timeout_s"])
        env.init()
        return str(dist.get_backend())

    ready = _answer(folder, rank, JOINED, join)
    try:
        channel.send(ready)
        if not ready.has_value:
            return 1
        for call in _calls(channel, config["idle_exit_s"]):
            channel.send(_answer(folder, rank, call.seq, lambda c=call: _check(c.check)(env, **c.params)))
            if not dist.is_initialized():  # a check left no default group (a failed re-join): these ranks are done
                return 1
    except PeerGone:  # the pool is gone (its case's timeout killed it): so are we
        return 1
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
