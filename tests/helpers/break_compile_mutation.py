"""Planted fault: compiled functions lose their mutations of graph inputs (a compiler that forgets to
copy a functionalised in-place update back into the caller's tensor); results stay right."""

import functools

import torch

_compile = torch.compile


def _drops_input_mutations(fn=None, **kwargs):  # noqa: ANN001,ANN003,ANN202
    compiled = _compile(fn, **kwargs)

    @functools.wraps(fn)
    def run(*args, **kw):  # noqa: ANN002,ANN003,ANN202
        inputs = [a for a in args if isinstance(a, torch.Tensor)]
        before = [a.detach().clone() for a in inputs]
        out = compiled(*args, **kw)
        out = out.detach().clone() if isinstance(out, torch.Tensor) else out
        with torch.no_grad():
            for a, b in zip(inputs, before, strict=True):
                a.copy_(b)
        return out

    return run


torch.compile = _drops_input_mutations
