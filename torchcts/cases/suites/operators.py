"""Level-1 core primitives: registration, creation, copy round trips, elementwise basics.

The suite also holds the level-1 core cases (module `core`), the level-2 reductions (`reductions`)
and the level-3 aliasing and mutation cases (`operators/aliasing/...`, module `aliasing`): they have
no suite of their own; cases/registry.py lists them as the suite's `parts`, after this module.
"""

from __future__ import annotations

import torch

from torchcts.cases.api import ALL_DTYPES, FLOATING, INTEGRAL, CaseContext, CaseSet, exactness_of, expect, sample

SUITE = CaseSet("operators")
cases = SUITE.cases
COPY = exactness_of("copy_")  # a copy between devices or dtypes is exact (oracle/exactness.py)


@SUITE.case("core/registration", level=1, ops=("aten::empty.memory_format",), oracle="property:registration")
def registration(ctx: CaseContext) -> None:
    t = torch.empty(3, device=ctx.device)
    expect(t.device.type == ctx.device_type, "tensor created on the wrong device type", got=str(t.device))
    expect(t.is_cpu == (ctx.device_type == "cpu"), "is_cpu disagrees with the device type")
    expect(torch.device(ctx.device_type).type == ctx.device_type, "torch.device does not round-trip the name")


@SUITE.case("core/zeros", level=1, dtypes=ALL_DTYPES, ops=("aten::zeros",))
def zeros(ctx: CaseContext, dtype: torch.dtype) -> None:
    t = torch.zeros(2, 3, dtype=dtype, device=ctx.device)
    expect(t.device.type == ctx.device_type and t.dtype == dtype, "wrong device or dtype", got=f"{t.device} {t.dtype}")
    ctx.assert_close(t.cpu(), torch.zeros(2, 3, dtype=dtype), constant=True)


@SUITE.case("core/ones", level=1, dtypes=ALL_DTYPES, ops=("aten::ones",))
def ones(ctx: CaseContext, dtype: torch.dtype) -> None:
    ctx.assert_close(torch.ones(4, 5, dtype=dtype, device=ctx.device).cpu(), torch.ones(4, 5, dtype=dtype), constant=True)


@SUITE.case("core/full", level=1, dtypes=ALL_DTYPES, ops=("aten::full",))
def full(ctx: CaseContext, dtype: torch.dtype) -> None:
    value = True if dtype == torch.bool else 3
    ctx.assert_close(torch.full((3, 7), value, dtype=dtype, device=ctx.device).cpu(), torch.full((3, 7), value, dtype=dtype),
                     constant=True)


@SUITE.case("core/copy_roundtrip", level=1, dtypes=ALL_DTYPES, ops=("aten::_to_copy", "aten::copy_"))
def copy_roundtrip(ctx: CaseContext, dtype: torch.dtype) -> None:
    for shape in ((), (0,), (1,), (17,), (5, 7), (2, 3, 4, 5)):
        src = sample(shape, dtype, seed=ctx.seed)
        dev = src.to(ctx.device)
        expect(dev.device.type == ctx.device_type, "to(device) left the tensor elsewhere", shape=list(shape))
        back = dev.cpu()
        ctx.describe(shape=list(shape))
        ctx.assert_close(back, src, exact=COPY)
        # copy_ into an existing device tensor
        dst = torch.empty(shape, dtype=dtype, device=ctx.device)
        dst.copy_(src)
        ctx.assert_close(dst.cpu(), src, exact=COPY)


_BINARY = {
    "add": (torch.add, ALL_DTYPES),
    "sub": (torch.sub, INTEGRAL + FLOATING + ("complex64", "complex128")),
    "mul": (torch.mul, ALL_DTYPES),
}
_UNARY = {
    "neg": (torch.neg, INTEGRAL[1:] + FLOATING + ("complex64", "complex128")),
    "abs": (torch.abs, INTEGRAL + FLOATING + ("complex64", "complex128")),
}


ELEMENTWISE_SHAPES = ((), (1,), (33,), (4, 9), (2, 3, 5))


def elementwise_samples(name: str, dtype: torch.dtype, seed: int):  # an iterator
    """(index, shape, CPU args) of each sample of elementwise/<name>; the repro builder uses it too."""
    arity = 2 if name in _BINARY else 1
    for i, shape in enumerate(ELEMENTWISE_SHAPES):
        yield i, shape, [sample(shape, dtype, seed=seed + i * 7 + k) for k in range(arity)]


def _elementwise(name: str, fn, dtypes):
    @SUITE.family(f"elementwise/{name}", qualname=f"elementwise_{name}",
                  level=1, dtypes=dtypes, ops=(f"aten::{name}",), params=None)
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        for i, shape, args in elementwise_samples(name, dtype, ctx.seed):
            if getattr(ctx, "sample", None) is not None and i != ctx.sample:
                continue  # `--sample N` from a failure's repro line
            ctx.describe(sample=i, shape=list(shape))
            expected = fn(*args)
            actual = fn(*[a.to(ctx.device) for a in args])
            ctx.assert_close(actual, expected)

    return run


for _name, (_fn, _dtypes) in {**_BINARY, **_UNARY}.items():
    _elementwise(_name, _fn, _dtypes)
