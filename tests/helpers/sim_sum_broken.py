"""Test-only planted sim fault (not in sim/faults.py's registry): the sim has no sum kernel.

Used as a manifest's backend_import with device_name "sim" (tests/suites/test_failed_op.py): another op's
backward case must not fail for it, since its gradient's weights go in as the output's gradient
instead of through a loss summed on the device (issue 30 item 3).
"""

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import faults


@faults.on_op("sum")
def _no_sum(func, args, kwargs, call):
    raise NotImplementedError(f"sim (test fault): {func} has no kernel on this device")


_no_sum()
