"""One rank of the distributed suite: join the group, then run the checks the parent sends.

    python -m torchcts.cases.rank_worker FOLDER RANK

FOLDER holds `config.json` (world size, device, c10d backend, backend module) written by
`cases/ranks.py`; a FileStore there lets the ranks meet without a TCP port. The rank imports the
manifest's backend module (a PrivateUse1 backend registers its device and c10d backend there),
joins the default process group and answers `ready-RANK.pt`; then each stdin line names a check
(`module:function` and its parameters) whose result it saves as `result-SEQ-RANK.pt`. End of stdin
ends the rank, and so do two minutes without a command (the worker has moved on to other suites:
idle ranks would hold their memory for the rest of the run) and its parent's death (a watchdog
thread), so a killed run leaves no rank behind.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import select
import signal
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torchcts.process import watch_parent


def _write(folder: Path, stem: str, answer: dict[str, Any]) -> None:
    """Save then rename: the parent never reads half a file."""
    import torch

    tmp = folder / f".{stem}.tmp"
    torch.save(answer, tmp)
    os.replace(tmp, folder / f"{stem}.pt")


def _answer(call: Any) -> dict[str, Any]:
    """A check's outcome as data: its value, not_applicable, or the exception's last line."""
    from torchcts.cases.model import NotApplicable

    try:
        return {"value": call()}
    except NotApplicable as exc:
        return {"not_applicable": str(exc)}
    except Exception as exc:  # noqa: BLE001 - the backend's exception is the rank's answer
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return {"error": f"{type(exc).__name__}: {str(exc).strip()[:500]} (at {Path(where.filename).name}:{where.lineno})"}


def _commands(idle_s: float) -> Iterator[dict[str, Any]]:
    """The parent's commands, one JSON line each, until end of input or `idle_s` without one."""
    pending = b""
    while True:
        while b"\n" not in pending:
            if not select.select([0], [], [], idle_s)[0]:
                return  # idle: the parent has moved on to other suites (ranks.py never reuses us now)
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        yield json.loads(line)


def _check(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str]) -> int:
    folder, rank = Path(argv[0]), int(argv[1])
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

    ready = _answer(join)
    _write(folder, f"ready-{rank}", ready)
    if "value" not in ready:
        return 1
    for command in _commands(config["idle_exit_s"]):
        answer = _answer(lambda c=command: _check(c["check"])(env, **c["params"]))
        _write(folder, f"result-{command['seq']}-{rank}", answer)
        if not dist.is_initialized():  # a check left no default group (a failed re-join): these ranks are done
            return 1
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
