"""Totals and the Markdown summary, rebuilt from records alone (also for a killed run)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from torchcts.results.statuses import FAILURES, ORDER


def totals(records: Iterable[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(r.get("status", "error") for r in records)
    return {s: counts[s] for s in ORDER if counts.get(s)}


def by(records: list[dict[str, Any]], key: str) -> dict[str, dict[str, int]]:
    """Status counts grouped by a record field (suite, level, dtype, ...)."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        groups[str(r.get(key))][r.get("status", "error")] += 1
    return {k: dict(v) for k, v in sorted(groups.items())}


def failures(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("status") in FAILURES]


def render_markdown(run: dict[str, Any], records: list[dict[str, Any]], first_failures: int = 20) -> str:
    t = totals(records)
    dev = run.get("device", {})
    lines = [
        f"# TorchCTS run {run.get('name', '')}",
        "",
        f"- device: `{dev.get('type')}` (gate `{dev.get('gate')}`){' — validation, not backend evidence' if run.get('validation') else ''}",
        f"- torch {run.get('torch', {}).get('torch')}, torchcts {run.get('torchcts')}",
        f"- status: {run.get('status')}; filtered: {run.get('filtered', 0)}",
        *([f"- compatibility fallbacks (see run.json): {', '.join(run['compat_fallbacks'])}"]
          if run.get("compat_fallbacks") else []),
        "",
        "| status | cases |",
        "| --- | ---: |",
        *[f"| {k} | {v} |" for k, v in t.items()],
        "",
    ]
    for key in ("level", "suite", "dtype"):
        groups = by(records, key)
        statuses = [s for s in ORDER if any(s in g for g in groups.values())]
        lines += [f"## By {key}", "", f"| {key} | " + " | ".join(statuses) + " |",
                  "| --- |" + " ---: |" * len(statuses)]
        lines += [f"| {k} | " + " | ".join(str(g.get(s, 0)) for s in statuses) + " |" for k, g in groups.items()]
        lines.append("")
    fails = failures(records)
    if fails:
        lines += ["## First failures", ""]
        for r in fails[:first_failures]:
            lines.append(f"- **{r['status']}** `{r['id']}`: {r.get('message', '')[:300]}")
            if r.get("repro"):
                lines.append(f"  - repro: `{r['repro']}`")
            if r.get("repro_script"):
                lines.append(f"  - standalone script: `{r['repro_script']}`")
        lines.append("")
    from torchcts.results.ledger import ledger_lines
    from torchcts.results.triage import render_markdown as triage_markdown

    lines += triage_markdown(records)
    ledger = ledger_lines(run)
    if ledger:
        lines += ["## Expectations ledger", "", "```", *ledger, "```", ""]
    return "\n".join(lines)
