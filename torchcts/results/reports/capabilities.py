"""Capabilities three ways (issue 32 item 5): claimed, reported, observed, and where they disagree.

Torch-free: reads the manifest from run.json (claimed) and the `capabilities/probe` record's
`info` (cases/suites/capabilities.py: `reported` by the backend, `observed` per dtype). Each
disagreement is a `Finding`: `failure` where a claimed dtype fails its probe (the probe case
failed too: claims decide status), `disagreement` where the backend's own answer contradicts a
claim, `info` where something works or is reported that the manifest does not claim. Shown in
report.html (a section) and summary.md; never a status of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.reports.quoting import html_text as _e
from torchcts.results.reports.quoting import md_code, md_text

PROBE_CASE = "capabilities/probe"
SEVERITIES = ("failure", "disagreement", "info")


@dataclass(frozen=True)
class Finding:
    severity: str  # one of SEVERITIES
    subject: str  # a dtype or capability name
    text: str


@dataclass(frozen=True)
class Comparison:
    rows: list[tuple[str, str, str, str]]  # (subject, claimed, reported, observed)
    findings: list[Finding]


def compare(run: Run, records: list[CaseRecord]) -> Comparison | None:
    """The three-way comparison of a run, None when its probe case did not record (not selected)."""
    probe = next((r for r in reversed(records) if r.id == PROBE_CASE and isinstance(r.info, dict)
                  and isinstance(r.info.get("observed"), dict)), None)
    if probe is None:
        return None
    manifest = run.manifest
    claimed = {str(k): bool(v) for k, v in (manifest.supported_dtypes if manifest else {}).items()}
    caps = {str(k): bool(v) for k, v in (manifest.capabilities if manifest else {}).items()}
    reported: dict[str, Any] = probe.info.get("reported") if isinstance(probe.info.get("reported"), dict) else {}
    observed = {str(k): str(v) for k, v in probe.info["observed"].items()}
    rows: list[tuple[str, str, str, str]] = []
    findings: list[Finding] = []
    amp = reported.get("module.get_amp_supported_dtype")
    for dtype in sorted(set(observed) | {d for d, c in claimed.items() if c}):
        said = observed.get(dtype, "not probed (not in this PyTorch)")
        works = said == "works"
        notes = []
        if dtype == "bfloat16" and "module.is_bf16_supported" in reported:
            notes.append(f"is_bf16_supported: {reported['module.is_bf16_supported']}")
        if isinstance(amp, list):
            notes.append("amp dtype" if dtype in amp else "")
        rows.append((dtype, "yes" if claimed.get(dtype) else "no", "; ".join(n for n in notes if n), said))
        if claimed.get(dtype) and not works:
            findings.append(Finding("failure", dtype, f"claimed, but the basic probe {said}"))
        elif not claimed.get(dtype) and works:
            findings.append(Finding("info", dtype, "not claimed, but works (empty, zeros, copy, add)"))
        if dtype == "bfloat16" and reported.get("module.is_bf16_supported") is False and claimed.get(dtype):
            findings.append(Finding("disagreement", dtype, "claimed, but the backend reports is_bf16_supported() False"))
        if dtype == "bfloat16" and reported.get("module.is_bf16_supported") is True and not claimed.get(dtype):
            findings.append(Finding("info", dtype, "not claimed, but the backend reports is_bf16_supported() True"))
    count = manifest.device_count if manifest and "device_count" in run.source_of("manifest") else None
    findings += _capability_findings(count, caps, reported, rows)
    return Comparison(rows, findings)


def _capability_findings(claimed_count: Any, caps: dict[str, bool], reported: dict[str, Any],
                         rows: list[tuple[str, str, str, str]]) -> list[Finding]:
    """Device count, availability, multi_device and autocast: manifest vs the backend's answers."""
    out: list[Finding] = []
    count = reported.get("accelerator.device_count", reported.get("module.device_count"))
    rows.append(("device_count", str(claimed_count), str(count), ""))
    if isinstance(count, int) and isinstance(claimed_count, int) and count != claimed_count:
        out.append(Finding("disagreement", "device_count", f"the manifest says {claimed_count}, the backend reports {count}"))
    if isinstance(count, int):
        if caps.get("multi_device") and count < 2:
            out.append(Finding("disagreement", "multi_device", f"claimed, but the backend reports {count} device(s)"))
        elif not caps.get("multi_device") and count >= 2:
            out.append(Finding("info", "multi_device", f"not claimed, but the backend reports {count} devices"))
    for key in ("accelerator.is_available", "module.is_available"):
        if reported.get(key) is False:
            out.append(Finding("disagreement", "device_api", f"the run used the device, but {key}() is False"))
    amp = reported.get("module.get_amp_supported_dtype")
    rows.append(("autocast", "yes" if caps.get("autocast") else "no",
                 f"amp dtypes: {', '.join(map(str, amp))}" if isinstance(amp, list) else "", ""))
    if caps.get("autocast") and isinstance(amp, list) and not amp:
        out.append(Finding("disagreement", "autocast", "claimed, but get_amp_supported_dtype() is empty"))
    return out


def markdown_lines(run: Run, records: list[CaseRecord]) -> list[str]:
    """summary.md's section: the findings (the table is in report.html)."""
    comp = compare(run, records)
    if comp is None:
        return []
    lines = ["## Capabilities: claimed, reported, observed", ""]
    if not comp.findings:
        return [*lines, "Claims, the backend's reports and the probes agree.", ""]
    lines += [f"- **{f.severity}** {md_code(f.subject)}: {md_text(f.text)}" for f in _ordered(comp.findings)]
    return [*lines, ""]


def render_html(run: Run, records: list[CaseRecord]) -> str:
    """report.html's section: the findings, then the table; '' when the probe did not run."""
    comp = compare(run, records)
    if comp is None:
        return ""
    items = "".join(f"<li><b>{_e(f.severity)}</b> <code>{_e(f.subject)}</code>: {_e(f.text)}</li>"
                    for f in _ordered(comp.findings))
    head = f"<ul class='findings'>{items}</ul>" if items else "<p>Claims, the backend's reports and the probes agree.</p>"
    body = "".join(f"<tr><td>{_e(s)}</td><td>{_e(c)}</td><td>{_e(r)}</td><td>{_e(o)}</td></tr>" for s, c, r, o in comp.rows)
    return (f"{head}<table><tr><th>dtype / capability</th><th>claimed</th><th>reported by the backend</th>"
            f"<th>observed</th></tr>{body}</table>")


def _ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.subject))
