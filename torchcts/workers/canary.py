"""The device canary: a process whose device a case left poisoned is replaced (issue 48 item 5).

Why: some device failures are sticky for the process: after an illegal memory access every later
CUDA call fails with the same error, a driver's queue stays broken after an abort it survived.
Then every later case of that worker failed for the state one case left behind: hundreds of false
failures after one real one.

How: after a case that failed (failed or error) in the process that runs cases (a worker, or its
forked child, workers/case_process.py), a tiny known-good device op runs (`probe`: arange + 1, to
the device and back). Only where it worked before the process's first case (the baseline): a
backend that cannot run it at all is never judged by it. When it fails, the device is poisoned:
the failed case's record says so (message and `attribution.canary`), and the process leaves before
its next case (a worker exits before that case starts, so xdist gives it to a fresh worker; a forked
child exits after sending its outcome, and the worker forks the next). Nothing is forgiven: the
failure that came with the poisoning stays a failure.
"""

from __future__ import annotations

import os
from typing import Any

from torchcts.errors import first_line
from torchcts.model.record import CaseRecord

WHAT = "arange(4) + 1 on the device"
RETIRED_EXIT = 87  # a worker that left because its device was poisoned (the log's RETIRED mark says so)


def probe(device: Any) -> str | None:
    """None when the canary op gives the right answer on `device`, else what went wrong."""
    import torch

    try:
        x = torch.arange(4, dtype=torch.float32)
        got = (x.to(device) + 1).cpu()
    except Exception as exc:  # noqa: BLE001 - any failure of the device is the answer
        return f"{type(exc).__name__}: {first_line(exc, 200)}"
    if not torch.equal(got, x + 1):
        return f"wrong result {got.tolist()}, expected {(x + 1).tolist()}"
    return None


class Canary:
    """Per process that runs cases: its baseline, and whether the device was found poisoned."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.works = False  # the canary passed before this process's first case
        self.poisoned: str | None = None  # what the canary saw after a failure: the process must go

    def before(self, device: Any) -> None:
        """Before a case: the baseline, once per process (a forked child is a new one)."""
        if self.pid != os.getpid():
            self.pid, self.poisoned = os.getpid(), None
            self.works = probe(device) is None

    def after(self, record: CaseRecord, failed: bool, device: Any) -> None:
        """After a case: a failure makes the canary run; a poisoned device is noted on `record`."""
        if not failed or not self.works or self.poisoned is not None:
            return
        why = probe(device)
        if why is None:
            return
        self.poisoned = why
        note = (f"after this case the device failed a canary ({WHAT}: {why}): it was left poisoned by this case "
                "or an earlier one of its process, which was replaced so later cases run on a fresh one "
                "(workers/canary.py)")
        record.message = f"{record.message}; {note}" if record.message else note
        record.attribution = {**(record.attribution or {}), "canary": why, "process_replaced": True}
