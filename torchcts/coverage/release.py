"""What a PyTorch release changed: the installed torch against the stored snapshot of the newest
release TorchCTS was validated on (issue 49; `torchcts coverage release-diff`, docs/versions.md).

A snapshot (releases.py: `ReleaseSnapshot`) names a release's aten overloads, OpInfos and dtypes;
the one of releases.MAX_VALIDATED_TORCH is stored in torchcts/release_data (scripts/release-snapshot
writes it). The diff lists what was added and removed, and for each addition whether TorchCTS covers it:
an aten overload by the cases that name it, an OpInfo by the opinfo suite's cases (runnable ones,
not every one not_applicable), a dtype by being claimable in a manifest and by the cases that use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchcts.releases import ReleaseSnapshot


def installed_snapshot() -> ReleaseSnapshot:
    """The installed torch's names (imports torch and its OpInfo database)."""
    import torch

    from torchcts.cases.opinfo.build import op_key
    from torchcts.compat import op_db
    from torchcts.coverage.surfaces import all_surfaces

    dtypes = {str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype)}
    return ReleaseSnapshot(torch.__version__.split("+")[0], tuple(s.name for s in all_surfaces()),
                           tuple(sorted({op_key(op) for op in op_db()})), tuple(sorted(dtypes)))


@dataclass(frozen=True)
class Change:
    """One name added or removed, and (for an addition) what covers it, or why nothing does."""

    kind: str  # aten | opinfo | dtype
    name: str
    change: str  # added | removed
    covered: bool
    how: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "change": self.change, "covered": self.covered, "how": self.how}


def diff(old: ReleaseSnapshot, new: ReleaseSnapshot, cases: Any) -> list[Change]:
    """Every name added or removed between two snapshots; additions with their coverage by `cases`."""
    from torchcts.coverage.mapping import build_coverage
    from torchcts.manifest.schema import dtype_name

    cov = build_coverage(cases)
    by_opinfo: dict[str, list[Any]] = {}
    by_dtype: dict[str, int] = {}
    for case in cases:
        if case.suite == "opinfo":
            by_opinfo.setdefault(case.id.split("/")[1], []).append(case)
        if case.dtype:
            by_dtype[case.dtype] = by_dtype.get(case.dtype, 0) + 1
    out: list[Change] = []
    for kind, before, after in (("aten", old.aten, new.aten), ("opinfo", old.opinfos, new.opinfos),
                                ("dtype", old.dtypes, new.dtypes)):
        for name in sorted(set(after) - set(before)):
            if kind == "aten":
                ids = cov.cases_by_surface.get(name, [])
                how = f"{len(ids)} cases, e.g. {ids[0]}" if ids else "no case names it"
                out.append(Change(kind, name, "added", bool(ids), how))
            elif kind == "opinfo":
                runs = [c for c in by_opinfo.get(name, []) if not c.not_applicable]
                if runs:
                    out.append(Change(kind, name, "added", True, f"{len(runs)} opinfo cases run it, e.g. {runs[0].id}"))
                else:
                    why = next((c.not_applicable for c in by_opinfo.get(name, [])), None)
                    out.append(Change(kind, name, "added", False, f"every case not_applicable: {why}" if why
                                      else "no opinfo case (the suite's op list leaves it out)"))
            else:
                claimable = dtype_name(name) is not None
                n = by_dtype.get(name, 0)
                how = (f"claimable in a manifest; {n} cases use it" if claimable
                       else "not claimable in a manifest")
                out.append(Change(kind, name, "added", claimable and n > 0, how))
        out.extend(Change(kind, name, "removed", True, "gone from this torch: its cases are no longer generated")
                   for name in sorted(set(before) - set(after)))
    return out


def summarize(old: ReleaseSnapshot, new: ReleaseSnapshot, changes: list[Change]) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {}
    for c in changes:
        row = counts.setdefault(c.kind, {"added": 0, "added_covered": 0, "removed": 0})
        row[c.change] += 1
        row["added_covered"] += c.change == "added" and c.covered
    return {"validated": old.torch, "installed": new.torch, "counts": counts,
            "changes": [c.to_json() for c in changes]}


def render_markdown(summary: dict[str, Any]) -> str:
    """One page: the counts, then every uncovered addition (listed, never silently absent), then
    the covered additions and the removals."""
    lines = [f"# What PyTorch {summary['installed']} changed against {summary['validated']} "
             "(the newest release TorchCTS was validated on)", "",
             "| kind | added | added, covered by TorchCTS | removed |", "| --- | ---: | ---: | ---: |"]
    for kind in ("aten", "opinfo", "dtype"):
        row = summary["counts"].get(kind, {"added": 0, "added_covered": 0, "removed": 0})
        lines.append(f"| {kind} | {row['added']} | {row['added_covered']} | {row['removed']} |")
    changes = summary["changes"]
    if not changes:
        lines += ["", "No aten overload, OpInfo or dtype was added or removed."]
    for title, pick in (("Added, not covered", lambda c: c["change"] == "added" and not c["covered"]),
                        ("Added and covered", lambda c: c["change"] == "added" and c["covered"]),
                        ("Removed", lambda c: c["change"] == "removed")):
        chosen = [c for c in changes if pick(c)]
        if chosen:
            lines += ["", f"## {title} ({len(chosen)})", ""]
            lines += [f"- {c['kind']} `{c['name']}`: {c['how']}" for c in chosen]
    return "\n".join(lines) + "\n"
