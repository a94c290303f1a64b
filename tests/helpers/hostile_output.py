"""A test-only suite whose failure text is hostile: an absolute path under the home folder, the host
name, a terminal escape sequence (title change) and a bidi override. pytest itself prints it (the
FAILED line, the traceback), so the run's terminal output shows whether it is scrubbed and quoted.

    TORCHCTS_EXTRA_SUITES=hostile_output=helpers.hostile_output  (with tests/ on PYTHONPATH)
"""

from __future__ import annotations

import os
import socket

import torch

from torchcts.cases.api import CaseSet
from torchcts.cases.context import CaseContext

SUITE = CaseSet("hostile_output")
cases = SUITE.cases
SECRET = os.path.join(os.path.expanduser("~"), "secret-checkout", "kernel.py")


@SUITE.case("raises", level=1, dtypes=("float32",), ops=("aten::planted_raise",))
def raises(ctx: CaseContext, dtype: torch.dtype) -> None:
    raise RuntimeError(f"kernel failed in {SECRET} on {socket.gethostname()} \x1b]0;pwned\x07\u202eevil")
