"""A 'device' for unit tests of the OpInfo checks: the sample's device copy is a CPU copy marked as the
device's, and `answer(fn, sample)` is what the device computes for it (a refusal, a kernel summing
in another order); CPU's reference runs as usual."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from torchcts.cases.opinfo import run as opinfo_run


def marked_device(mp: pytest.MonkeyPatch, answer: Callable[[Any, Any], Any]) -> None:
    plain_copy, plain_call = opinfo_run.copy_sample, opinfo_run.call

    def copy(s: Any, device: Any) -> Any:
        out = plain_copy(s, device)
        if isinstance(device, torch.device):
            out.input.on_device = True
        return out

    def call(fn: Any, sample: Any, **extra: Any) -> Any:
        if getattr(sample.input, "on_device", False):
            return answer(fn, sample)
        return plain_call(fn, sample, **extra)

    mp.setattr(opinfo_run, "copy_sample", copy)
    mp.setattr(opinfo_run, "call", call)
