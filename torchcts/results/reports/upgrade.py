"""The upgrade question (issue 49): two runs of one backend across a torch upgrade, what follows the
torch and what is the backend's.

`torchcts compare OLD NEW` on runs whose torch releases differ adds this view. Cases only in the new
run are new with the torch (a new OpInfo, a new dtype, a new overload); cases only in the old run
are gone with it, and the ops none of whose cases remain are removed ops; a case in both whose
sample count changed (`info.samples_run`: the OpInfo's samples of the same case changed) ran other
inputs. A new failure is the backend's regression only where the case and its samples are the same
in both runs: then the inputs did not change and the result did. A failure of a new case, or of one
whose samples changed, follows the upgrade (still a failure; the upgrade brought the inputs that show it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run


def torch_release(run: Run) -> str | None:
    value = (run.torch or {}).get("torch")
    return value if isinstance(value, str) else None


def _samples(record: CaseRecord) -> Any:
    return (record.info or {}).get("samples_run")


def _op(record: CaseRecord) -> str:
    """The op a case is about: the OpInfo name, else its first declared op, else its id's middle."""
    return record.op or (record.ops[0] if record.ops else record.id.rsplit("/", 1)[0])


@dataclass
class Upgrade:
    old_torch: str
    new_torch: str
    new_cases: list[str] = field(default_factory=list)
    gone_cases: list[str] = field(default_factory=list)
    removed_ops: list[str] = field(default_factory=list)
    new_ops: list[str] = field(default_factory=list)
    changed_samples: list[tuple[str, Any, Any]] = field(default_factory=list)  # (id, old count, new count)
    follows_upgrade: list[str] = field(default_factory=list)  # new failures on new or changed cases
    regressions: list[str] = field(default_factory=list)  # new failures on the same case and samples


def upgrade_view(old_run: Run, new_run: Run, old: list[CaseRecord],
                 new: list[CaseRecord], new_failures: Iterable[str]) -> Upgrade | None:
    """None unless the two runs ran different torch releases.

    `new_failures`: the ids `compare` found failing now and not before (`Comparison.new_failures`),
    which this view only divides into the backend's regressions and what follows the upgrade.
    """
    a, b = torch_release(old_run), torch_release(new_run)
    if a is None or b is None or a == b:
        return None
    before = {r.id: r for r in old}
    after = {r.id: r for r in new}
    up = Upgrade(a, b, sorted(after.keys() - before.keys()), sorted(before.keys() - after.keys()))
    old_ops = {_op(r) for r in before.values()}
    new_ops = {_op(r) for r in after.values()}
    up.removed_ops = sorted(old_ops - new_ops)
    up.new_ops = sorted(new_ops - old_ops)
    changed: set[str] = set()
    for cid in sorted(before.keys() & after.keys()):
        was, now = _samples(before[cid]), _samples(after[cid])
        if was is not None and now is not None and was != now:
            up.changed_samples.append((cid, was, now))
            changed.add(cid)
    for cid in sorted(new_failures):
        (up.follows_upgrade if cid not in before or cid in changed else up.regressions).append(cid)
    return up


def render_lines(up: Upgrade, limit: int = 20) -> list[str]:
    """The upgrade section of `compare`'s text: one page a backend engineer reads an upgrade in."""
    def listed(title: str, items: list[Any], fmt=str) -> list[str]:
        lines = [f"  {title}: {len(items)}"] + [f"    {fmt(x)}" for x in items[:limit]]
        return lines + ([f"    ... and {len(items) - limit} more"] if len(items) > limit else [])

    return [
        f"torch upgrade {up.old_torch} -> {up.new_torch}: what follows the torch, what is the backend's",
        *listed("the backend's regressions (same case, same samples, now failing)", up.regressions),
        *listed("new failures that follow the upgrade (a new case, or its samples changed)", up.follows_upgrade),
        *listed("ops new with the torch", up.new_ops),
        *listed("ops removed with the torch", up.removed_ops),
        *listed("cases new with the torch", up.new_cases),
        *listed("cases gone with the torch", up.gone_cases),
        *listed("cases whose samples changed (samples run old -> new)", up.changed_samples,
                lambda x: f"{x[0]}: {x[1]} -> {x[2]}"),
    ]
