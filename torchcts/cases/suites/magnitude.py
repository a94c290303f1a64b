"""Level 5 magnitudes past 2^16: index-taking ops on tables of MAGNITUDE rows (issue 39 item 3).

OpInfo's samples index tables of a few rows, and exploration's `index_ends` value class reaches
their ends only; a kernel that narrows an index (16-bit indices for a table it thinks small, a
32-bit offset times a row stride) is right on all of them. Each case indexes a table of MAGNITUDE
rows (past 2^16) at the indices that cross that boundary (0, 2^16 - 1, 2^16, 2^16 + 1, the last row,
and -1 where the op takes negative indices, else the last row), and a one_hot of that many classes, against CPU, bit
for bit (gathering copies values; nothing is rounded).

Past 2^31 elements (the issue's second magnitude) a table needs gigabytes: not built here; the
manifest's `resource_limits.max_tensor_mb` will gate it when it is (docs/oracles.md).
"""

from __future__ import annotations

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
