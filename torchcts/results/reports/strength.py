"""How strong a run's passes are: the weak ones (a reference that proved nothing, oracle/weak.py) and
the exact ones (compared bit for bit, oracle/exactness.py), per suite, for the scorecard, summary.md
and report.html. A weak pass still counts as passed; these counts say how much of it is evidence.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.results.reports.quoting import html_text as _e
from torchcts.results.reports.quoting import md_text


@dataclass
class Strength:
    """One suite's (or the run's) passes: how many, how many weak (and why), how many compared exactly."""

    passed: int = 0
    weak: int = 0
    exact: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, record: CaseRecord) -> None:
        self.passed += 1
        self.exact += record.exactness == "exact"
        if record.weak:
            self.weak += 1
            self.reasons[record.weak] += 1

    @property
    def weak_share(self) -> float:
        """Weak passes as a fraction of passes (0.0 when nothing passed)."""
        return self.weak / self.passed if self.passed else 0.0

    def describe(self) -> str:
        why = ", ".join(f"{reason} {n}" for reason, n in self.reasons.most_common())
        return f"{self.weak} of {self.passed} ({100 * self.weak_share:.1f}%)" + (f": {why}" if why else "")


def strength(records: list[CaseRecord]) -> tuple[Strength, dict[str, Strength]]:
    """The run's passes, and each suite's (sorted by name)."""
    total, suites = Strength(), {}
    for r in records:
        if r.status != Status.PASSED:
            continue
        total.add(r)
        suites.setdefault(str(r.suite), Strength()).add(r)
    return total, dict(sorted(suites.items()))


def weak_lines(records: list[CaseRecord]) -> list[str]:
    """The scorecard's lines: the run's weak passes, then each suite that has some."""
    total, suites = strength(records)
    if not total.passed:
        return []
    lines = [f"weak passes (the reference could not tell a right result from a wrong one): {total.describe()}"]
    lines += [f"  {name}: {s.describe()}" for name, s in suites.items() if s.weak]
    return lines


def _rows(records: list[CaseRecord]) -> list[tuple[str, Strength]]:
    total, suites = strength(records)
    return [*suites.items(), ("all", total)] if total.passed else []


def render_markdown(records: list[CaseRecord]) -> list[str]:
    """summary.md's section: passes, weak passes (share, reasons) and exact comparisons per suite."""
    rows = _rows(records)
    if not rows:
        return []
    lines = ["## Strength of the passes", "",
             "Weak: the reference could not tell a right result from zeros, a constant or noise (docs/oracles.md).", "",
             "| suite | passed | weak | weak share | compared exactly | weak because |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {md_text(name)} | {s.passed} | {s.weak} | {100 * s.weak_share:.1f}% | {s.exact} | "
              f"{md_text(', '.join(f'{r} {n}' for r, n in s.reasons.most_common()))} |" for name, s in rows]
    return [*lines, ""]


def render_html(records: list[CaseRecord]) -> str:
    """report.html's section: the same table, and the weak cases (up to 200) by id."""
    rows = _rows(records)
    if not rows:
        return ""
    out = ["<p>Weak: the reference could not tell a right result from zeros, a constant or noise; such a pass "
           "proves nothing (docs/oracles.md).</p><table id='strength'><thead><tr><th>suite</th><th>passed</th>"
           "<th>weak</th><th>weak share</th><th>compared exactly</th><th>weak because</th></tr></thead><tbody>"]
    for name, s in rows:
        why = ", ".join(f"{r} {n}" for r, n in s.reasons.most_common())
        out.append(f"<tr><th>{_e(name)}</th><td class='num'>{s.passed}</td><td class='num'>{s.weak}</td>"
                   f"<td class='num'>{100 * s.weak_share:.1f}%</td><td class='num'>{s.exact}</td>"
                   f"<td>{_e(why)}</td></tr>")
    out.append("</tbody></table>")
    weak = [r for r in records if r.status == Status.PASSED and r.weak]
    if weak:
        out.append("<details><summary>weak passes</summary><ul id='weak-cases'>")
        out += [f"<li><code>{_e(r.id)}</code>: {_e(str(r.weak))}</li>" for r in weak[:200]]
        out.append(f"<li>... and {len(weak) - 200} more</li>" if len(weak) > 200 else "")
        out.append("</ul></details>")
    return "".join(out)
