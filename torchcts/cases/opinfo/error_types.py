"""OpInfo's expected exception for an error input on a device that is not CPU, where it differs.

PyTorch's error inputs (`error_inputs_func(op, device)`) choose some expectations by device type
(`torch.device(device).type == 'cpu'`): narrow_copy's out-of-range dim is a RuntimeError from
CPU's kernel and an IndexError elsewhere. The OpInfo suite compares a device's exception with
CPU's; where OpInfo itself expects another type off the CPU, that type (with OpInfo's message
regex) is an allowed answer too (oracle/allowed.py: `opinfo_error_type_per_device`).

The non-CPU expectations are generated for the `meta` device, which stands for "any device that
is not CPU" and runs no device code. They are paired with the CPU error inputs by position, and only
where both lists have the same length and the paired inputs have the same shapes and arguments: a
pairing that is not certain gives no alternative.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.cases.opinfo.samples import SAMPLE_SEED, describe_sample

# (OpInfo name, variant) -> {error input index: (CPU's expected type, the non-CPU type, its regex)}
_CACHE: dict[tuple[str, str], dict[int, tuple[type, type, str]]] = {}


def _errors(op: Any, device: str) -> list[Any]:
    torch.random.default_generator.manual_seed(SAMPLE_SEED)
    return list(op.error_inputs(device, set_seed=False))


def _shape_text(error_input: Any) -> str:
    """The error input's sample without devices (describe_sample names shapes, dtypes, arguments)."""
    return describe_sample(error_input.sample_input)


def device_class_errors(op: Any) -> dict[int, tuple[type, type, str]]:
    """Error input index -> (OpInfo's type on CPU, its type off the CPU, its message regex off the
    CPU), for the error inputs whose expected type differs between the two; {} when none or when
    the two lists cannot be paired with certainty."""
    key = (op.name, op.variant_test_name)
    if key in _CACHE:
        return _CACHE[key]
    found: dict[int, tuple[type, type, str]] = {}
    state = torch.random.get_rng_state()
    try:
        cpu, other = _errors(op, "cpu"), _errors(op, "meta")
    except Exception:  # noqa: BLE001 - an error_inputs_func that cannot run on meta gives no alternative
        cpu, other = [], []
    finally:
        torch.random.set_rng_state(state)
    if len(cpu) == len(other):
        for i, (c, o) in enumerate(zip(cpu, other, strict=True)):
            if c.error_type is not o.error_type and _shape_text(c) == _shape_text(o):
                found[i] = (c.error_type, o.error_type, str(getattr(o, "error_regex", "") or ""))
    _CACHE[key] = found
    return found
