"""One special value confined to one element: the special_values kind's second comparison.

The kind writes NaN, +Inf and -Inf every 7 elements of every floating tensor (samples.py:
inject_special_values). Through a reduction, a contraction or a normalisation that NaN reaches
every output, and an all-NaN reference is matched by a backend returning NaN everywhere (a weak
comparison, oracle/weak.py). A copy of the sample with one special value at the first element of
one floating tensor reaches one slice of the result (a row of a product, one reduced slice), so the
rest stays finite and the reference tells a right result from NaN, zeros or a constant. The runner
keeps the all-NaN comparison (it checks NaN propagation) and adds the first such copy whose CPU
reference discriminates (cases/opinfo/run.py: run_special).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils import _pytree as pytree

from torchcts.cases.opinfo.samples import holds_special, rewrite_floating

# The values tried, in order: an infinity keeps a full reduction's single result finite-or-infinite
# (not NaN) more often than NaN does; their names are what records carry.
VALUES = (("inf", float("inf")), ("-inf", float("-inf")), ("nan", float("nan")))
MAX_TENSORS = 4  # floating tensors tried per sample (the input first, then the arguments)


def floating_count(sample: Any) -> int:
    """How many tensors of the sample's input and positional arguments can hold a special value."""
    return sum(holds_special(x) for x in pytree.tree_leaves((sample.input, tuple(sample.args))))


def confine(sample: Any, tensor: int, value: str) -> Any | None:
    """A copy of a CPU sample with `value` (a VALUES name) at the first element of its `tensor`-th
    floating tensor (input first, then the positional arguments); None when there is no such tensor
    (or no such value: the description may come from a record)."""
    special = dict(VALUES).get(value)
    if special is None:
        return None
    new, changed = rewrite_floating(sample, lambda flat: flat.__setitem__(0, special), lambda i: i == tensor)
    return new if changed else None


def unconfined(op_name: str) -> bool:
    """The special polynomials get no confined copy: CPU loops n times for degree n, and with one
    infinity in x or n two CPU runs of the same copy differed (1.9e26 vs 1.4e-45; 0 vs 2.4e8), so
    there is no reference. Their all-NaN comparison stays."""
    return "polynomial" in op_name


def candidates(sample: Any, op_name: str = "") -> Iterator[tuple[dict[str, Any], Any]]:
    """Each confined copy worth trying, with its description ({"tensor": i, "value": name}), in order."""
    tensors = 0 if unconfined(op_name) else MAX_TENSORS
    for tensor in range(min(floating_count(sample), tensors)):
        for value, _ in VALUES:
            new = confine(sample, tensor, value)
            if new is not None:
                yield {"tensor": tensor, "value": value}, new
