"""Planted faults for the suites' own tests, used as a manifest's `backend_import` on device cpu.

Importing this module applies the faults named (comma-separated) by the environment variable
TORCHCTS_FAULT, each by monkeypatching one torch function, so that a run proves the suite catches a backend that breaks
that property. Each fault breaks a property a real backend must have; the cases are not tuned to it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch


def _transpose_copies() -> None:
    """Views are copies: transpose returns a contiguous copy instead of a view."""
    orig = torch.Tensor.transpose
    torch.Tensor.transpose = lambda self, *a, **k: orig(self, *a, **k).contiguous()


def _linspace_drops_end() -> None:
    """linspace forgets its endpoint (steps evenly spaced over [start, end) instead of [start, end])."""
    orig = torch.linspace

    def linspace(start, end, steps, **kw):
        if steps < 2:
            return orig(start, end, steps, **kw)
        return orig(start, start + (end - start) * (steps - 1) / steps, steps, **kw)

    torch.linspace = linspace


def _clone_drops_format() -> None:
    """clone ignores memory_format and always returns a contiguous tensor."""
    orig = torch.Tensor.clone
    torch.Tensor.clone = lambda self, *a, **k: orig(self, memory_format=torch.contiguous_format)


def _cast_rounds() -> None:
    """Float-to-integer casts round to nearest instead of truncating toward zero."""
    orig = torch.Tensor.to

    def to(self, *args, **kwargs):
        target = kwargs.get("dtype") or next((a for a in args if isinstance(a, torch.dtype)), None)
        integral = target is not None and not (target.is_floating_point or target.is_complex) and target != torch.bool
        if integral and self.is_floating_point():
            self = self.round()
        return orig(self, *args, **kwargs)

    torch.Tensor.to = to


def _index_select_clamps() -> None:
    """index_select clamps out-of-range indices instead of raising."""
    orig = torch.Tensor.index_select

    def index_select(self, dim, index):
        return orig(self, dim, index.clamp(-self.shape[dim], self.shape[dim] - 1))

    torch.Tensor.index_select = index_select


def _seed_ignored() -> None:
    """torch.manual_seed does not reseed the generator."""
    torch.manual_seed = lambda seed: torch.default_generator


def _rand_biased() -> None:
    """rand draws from a skewed distribution (u ** 1.05) that stays inside [0, 1)."""
    orig = torch.rand
    torch.rand = lambda *a, **k: orig(*a, **k) ** 1.05


def _load_drops_strides() -> None:
    """torch.load returns every tensor as a fresh contiguous copy."""
    orig = torch.load

    def fix(obj):
        if isinstance(obj, torch.Tensor):
            return obj.contiguous().clone()
        if isinstance(obj, dict):
            return type(obj)((k, fix(v)) for k, v in obj.items())
        if isinstance(obj, (list, tuple)):
            return type(obj)(fix(v) for v in obj)
        return obj

    torch.load = lambda *a, **k: fix(orig(*a, **k))


def _sin_wrong_backward() -> None:
    """sin's backward kernel has a sign error (returns -cos)."""

    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return orig(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return -grad * torch.cos(x)

    orig = torch.sin
    torch.sin = Sin.apply


FAULTS: dict[str, Callable[[], None]] = {
    "transpose_copies": _transpose_copies,
    "linspace_drops_end": _linspace_drops_end,
    "clone_drops_format": _clone_drops_format,
    "cast_rounds": _cast_rounds,
    "index_select_clamps": _index_select_clamps,
    "seed_ignored": _seed_ignored,
    "rand_biased": _rand_biased,
    "load_drops_strides": _load_drops_strides,
    "sin_wrong_backward": _sin_wrong_backward,
}

for _name in os.environ["TORCHCTS_FAULT"].split(","):
    FAULTS[_name]()
