"""Level 5 magnitudes past 2^16: index-taking ops on tables of MAGNITUDE rows (issue 39 item 3).

OpInfo's samples index tables of a few rows, and exploration's `index_ends` value class reaches
their ends only; a kernel that narrows an index (16-bit indices for a table it thinks small, a
32-bit offset times a row stride) is right on all of them. Each case indexes a table of MAGNITUDE
rows (past 2^16) at the indices that cross that boundary (0, 2^16 - 1, 2^16, 2^16 + 1, the last row,
and -1 where the op takes negative indices, else the last row), and a one_hot of that many classes, against CPU, bit
for bit (gathering copies values; nothing is rounded).

Past 2^31 elements (the issue's second magnitude) a tensor needs gigabytes: the `huge/*` cases build
one uint8 tensor of HUGE elements (2 GB) on the device itself, only where the manifest's
`resource_limits` allow it (max_tensor_mb and max_device_memory_mb of at least HUGE_MB; else
not_applicable, saying so), and judge it against its exact values (element i holds i mod PERIOD,
so the count, the sum and every element are known without a CPU copy): count_nonzero and a uint8
sum over all of it (a 32-bit loop counter wraps), `take` at indices around 2^31 and the last ones
(32-bit offsets), and the copy of its last elements to the host (a transfer from past 2^31).
Measured on CPU: both cases 14 s of wall, peak 2.5 GB (one process, --no-isolation).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, to_device

SUITE = CaseSet("magnitude")
cases = SUITE.cases
LEVEL = 5
MAGNITUDE = (1 << 16) + 4464  # 70,000 rows: past 2^16, not a power of two
WIDTH = 3
CROSSING = (0, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, MAGNITUDE - 1)


def table(dtype: torch.dtype) -> torch.Tensor:
    """MAGNITUDE x WIDTH values, each row distinct (its index, exactly representable in float32)."""
    rows = torch.arange(MAGNITUDE, dtype=torch.float64).unsqueeze(1)
    return (rows * WIDTH + torch.arange(WIDTH, dtype=torch.float64)).remainder(1 << 20).to(dtype)


def indices() -> torch.Tensor:
    """The crossing indices and -1 (the last row, where an op takes negative indices; else wrapped)."""
    return torch.tensor([*CROSSING, -1], dtype=torch.int64)


def _rows(i: torch.Tensor) -> torch.Tensor:
    return i.remainder(MAGNITUDE)


# op -> (the aten op it declares, the indices it takes (made on CPU from the crossing ones), the call)
OPS: dict[str, tuple[str, Callable[[torch.Tensor], torch.Tensor], Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]] = {
    "index_select": ("aten::index_select", _rows, lambda t, i: torch.index_select(t, 0, i)),
    "gather": ("aten::gather", lambda i: _rows(i).unsqueeze(1).expand(-1, WIDTH).contiguous(),
               lambda t, i: torch.gather(t, 0, i)),
    "embedding": ("aten::embedding", _rows, lambda t, i: torch.nn.functional.embedding(i, t)),
    "take": ("aten::take", lambda i: i * WIDTH + 1, lambda t, i: torch.take(t, i)),
    "index": ("aten::index.Tensor", lambda i: i, lambda t, i: t[i]),
    "index_add": ("aten::index_add", _rows, lambda t, i: torch.index_add(t, 0, i, t.narrow(0, 0, len(i)))),
}


def _family(name: str) -> None:
    aten, prepare, fn = OPS[name]

    @SUITE.family(f"index/{name}", qualname=f"magnitude_{name}", level=LEVEL, dtypes=("float32",), ops=(aten,))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        src, idx = on_cpu(table, dtype), on_cpu(prepare, on_cpu(indices))
        expected = on_cpu(fn, src, idx)
        dsrc, didx = to_device(ctx, src, idx)
        actual = fn(dsrc, didx).cpu()
        ctx.describe(rows=MAGNITUDE, indices=idx.reshape(-1).tolist()[:12])
        expect(torch.equal(actual, expected), f"{name} over a table of {MAGNITUDE} rows (past 2^16) at indices "
               f"{idx.reshape(-1).tolist()[:12]} differs from CPU's", got=actual.reshape(-1).tolist()[:8],
               expected=expected.reshape(-1).tolist()[:8])


for _name in OPS:
    _family(_name)


@SUITE.case("one_hot", level=LEVEL, ops=("aten::one_hot",))
def one_hot(ctx: CaseContext) -> None:
    """one_hot with MAGNITUDE classes: the hot column past 2^16 in each row."""
    idx = on_cpu(lambda: _rows(indices()))
    expected = on_cpu(torch.nn.functional.one_hot, idx, MAGNITUDE)
    (didx,) = to_device(ctx, idx)
    actual = torch.nn.functional.one_hot(didx, MAGNITUDE).cpu()
    hot = actual.argmax(1).tolist()
    expect(torch.equal(actual, expected), f"one_hot with {MAGNITUDE} classes differs from CPU's",
           hot_columns=hot, expected=idx.tolist())


HUGE = (1 << 31) + 4464  # uint8 elements: past 2^31, 2.0 GB
HUGE_MB = math.ceil(HUGE / (1 << 20)) + 1
PERIOD = 251  # element i holds i mod PERIOD (a prime: no power-of-two stride repeats it)
HUGE_INDICES = (0, (1 << 31) - 1, 1 << 31, (1 << 31) + 1, HUGE - 1)


def huge_tensor(ctx: CaseContext, n: int = HUGE) -> torch.Tensor:
    """n uint8 elements made on the device, element i = i mod PERIOD; not_applicable where the
    manifest's resource limits do not allow a tensor of that size."""
    need = math.ceil(n / (1 << 20)) + 1
    limits = ctx.manifest.resource_limits
    for key in ("max_tensor_mb", "max_device_memory_mb"):
        if (limits.get(key) or 0) < need:
            ctx.not_applicable(f"a tensor of {n:,} uint8 elements (past 2^31) needs resource_limits.{key} >= "
                               f"{need} MB; the manifest's: {limits.get(key)}")
    return pattern(n, ctx.device)


def pattern(n: int, device: torch.device | str) -> torch.Tensor:
    """n uint8 elements on `device`, element i = i mod PERIOD, made there (no host copy of n bytes)."""
    return torch.arange(PERIOD, dtype=torch.uint8, device=device).repeat(-(-n // PERIOD))[:n]


def huge_sum(n: int) -> int:
    """The exact sum of huge_tensor(n)'s elements."""
    whole, rest = divmod(n, PERIOD)
    return whole * PERIOD * (PERIOD - 1) // 2 + rest * (rest - 1) // 2


def huge_nonzero(n: int) -> int:
    """How many of huge_tensor(n)'s elements are not 0 (every PERIOD-th one is)."""
    return n - -(-n // PERIOD)


@SUITE.case("huge/sum", level=LEVEL, ops=("aten::sum", "aten::count_nonzero", "aten::repeat"))
def huge_sum_case(ctx: CaseContext) -> None:
    """A count and a sum over HUGE uint8 elements, in place: count_nonzero (an int64 count) and the sum
    in uint8 (mod 256; PyTorch's default int64 sum may widen the whole input first, 16 GB on CPU)."""
    x = huge_tensor(ctx)
    count, total = int(torch.count_nonzero(x).item()), int(x.sum(dtype=torch.uint8).item())
    expect(count == huge_nonzero(HUGE), f"count_nonzero of {HUGE:,} uint8 elements (past 2^31) is wrong",
           got=count, expected=huge_nonzero(HUGE))
    expect(total == huge_sum(HUGE) % 256, f"the uint8 sum of {HUGE:,} elements (past 2^31) is wrong",
           got=total, expected=huge_sum(HUGE) % 256)


@SUITE.case("huge/take", level=LEVEL, ops=("aten::take", "aten::repeat"))
def huge_take(ctx: CaseContext) -> None:
    """take at indices around 2^31 and the last one, and the copy of the last elements to the host."""
    x = huge_tensor(ctx)
    idx = torch.tensor(HUGE_INDICES, dtype=torch.int64)
    (didx,) = to_device(ctx, idx)
    got, expected = torch.take(x, didx).cpu(), (idx % PERIOD).to(torch.uint8)
    ctx.describe(elements=HUGE, indices=list(HUGE_INDICES))
    expect(torch.equal(got, expected), f"take from {HUGE:,} elements at indices past 2^31 differs",
           got=got.tolist(), expected=expected.tolist())
    tail, want = x[-8:].cpu(), (torch.arange(HUGE - 8, HUGE) % PERIOD).to(torch.uint8)
    expect(torch.equal(tail, want), "the last 8 of the elements past 2^31, copied to the host, differ",
           got=tail.tolist(), expected=want.tolist())
