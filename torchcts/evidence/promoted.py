"""Promoted oracles: the oracle ids considered stable enough to count as evidence by default.

An oracle is every case of one family (a case id without its dtype), e.g.
`operators/elementwise/add`. Until its id is listed here it is a pending candidate: collection
records its surfaces `skipped` unless `--run-pending-candidates` is given. Promote an oracle by
adding its id once it has run clean on CPU and on at least one accelerator.
"""

from __future__ import annotations

PROMOTED: frozenset[str] = frozenset({
    "operators/core/registration",
    "operators/core/zeros",
    "operators/core/ones",
    "operators/core/full",
    "operators/core/copy_roundtrip",
    "operators/elementwise/add",
    "operators/elementwise/sub",
    "operators/elementwise/mul",
    "operators/elementwise/neg",
    "operators/elementwise/abs",
})


def is_promoted(oracle_id: str) -> bool:
    return oracle_id in PROMOTED
