"""How a dead child is described: the same signal and exit fields for every kind of child."""

from __future__ import annotations

import signal
from typing import Any


def signal_name(number: int) -> str:
    """SIGSEGV, or "signal 34" for one Python cannot name (real-time signals)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_fields(code: int) -> dict[str, Any]:
    """A dead process's return code (negative: the signal that killed it) as CaseRecord fields."""
    if code < 0:
        return {"signal": signal_name(-code), "exit_code": code}
    return {"exit_code": code}
