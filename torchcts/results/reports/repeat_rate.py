"""A record's pass rate under `run --repeat N`, read from its two typed fields (`repeats`,
`repeat_passes`), checked: records are files anyone can edit. Apart from results/reports/repeats.py so that
records.py (its repro line carries `--repeat N`) reads it without importing what reads records."""

from __future__ import annotations

from typing import Any

from torchcts.model.status import Status

# The most repeats one run may ask for (cli/common.py checks --repeat against it): a case repeated
# more than this is a soak test, not a conformance run.
MAX_REPEAT = 1000


def repeated(record: Any) -> tuple[int, int] | None:
    """(passes, repeats) of a record made under --repeat (results/reports/repeats.py: combine); None for any
    other record, or one whose fields do not describe 2 to MAX_REPEAT runs."""
    n, passes = record.repeats, record.repeat_passes
    if type(n) is not int or type(passes) is not int or not 1 < n <= MAX_REPEAT or not 0 <= passes <= n:
        return None
    return passes, n


def flaky_in_repeats(record: Any) -> bool:
    """The case failed some of its repeats and passed others (a rerun's flaky record in a --repeat
    run passed every repeat of its rerun: not this)."""
    found = repeated(record)
    return bool(found) and record.status == Status.FLAKY and 0 < found[0] < found[1]


def pass_rate(record: Any) -> str:
    """`8/10` (passes/repeats) of a record made under --repeat; '' for any other."""
    found = repeated(record)
    return f"{found[0]}/{found[1]}" if found else ""


def repro_repeat(record: Any) -> int | None:
    """The `--repeat N` a flaky record's repro line needs (one run would most likely pass), else None."""
    return record.repeats if flaky_in_repeats(record) else None
