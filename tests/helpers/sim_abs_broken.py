"""Test-only planted sim fault (not in sim/faults.py's registry): the sim has no abs kernel.

Used as a manifest's backend_import with device_name "sim" (tests/suites/test_failed_op.py): it registers
the sim, then every abs on a sim tensor raises, the way a backend missing one kernel does. Cases
that only used abs to prepare their inputs must not fail for it (issue 30 item 3).
"""

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import faults


@faults.on_op("abs", "abs_")
def _no_abs(func, args, kwargs, call):
    raise NotImplementedError("sim (test fault): aten::abs has no kernel on this device")


_no_abs()
