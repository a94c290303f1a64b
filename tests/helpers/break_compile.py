"""Planted fault: compiled functions return slightly wrong values (as a miscompiling backend would)."""

import functools

import torch

_compile = torch.compile


def _miscompile(fn=None, **kwargs):
    compiled = _compile(fn, **kwargs)

    @functools.wraps(fn)
    def run(*args, **kw):
        out = compiled(*args, **kw)
        return out + 0.5 if isinstance(out, torch.Tensor) else out

    return run


torch.compile = _miscompile
