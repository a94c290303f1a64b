"""junit.xml generated from case records, for CI dashboards (no host name, no paths)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

from torchcts.results.outcome import RunOutcome
from torchcts.results.quoting import one_line, strip_controls
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import CRASH_LIKE, FAILURES, STATUSES, Status

# Characters XML 1.0 does not allow (besides the controls the quoting layer removes): surrogates and
# the noncharacters U+FFFE/U+FFFF. One of them in a message makes the whole file unreadable to a CI
# dashboard, which then drops every result: they are removed from the rendered document.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

# How each status shows in JUnit: the backend raised or its worker died -> <error>; other
# failures -> <failure>; not executed -> <skipped>; everything else passes.
# A planned case with no result (not_run) is an error, never a skip: the run did not finish it.
_ERROR = {Status.ERROR.value, Status.NOT_RUN.value, *CRASH_LIKE}
_FAILURE = set(FAILURES) - _ERROR


def _detail(r: CaseRecord) -> str:
    parts = [(r.message or "")]
    for key in ("mismatch", "signal", "exit_code", "output_tail", "traceback", "repro"):
        value = getattr(r, key)
        if value not in (None, "", {}):
            parts.append(f"{key}: {value}")
    return strip_controls("\n".join(p if isinstance(p, str) else str(p) for p in parts if p))


def render_junit(run: RunOutcome, records: list[CaseRecord]) -> str:
    suites: dict[str, list[CaseRecord]] = defaultdict(list)
    for r in records:
        suites[str(r.suite)].append(r)
    root = ET.Element("testsuites", name=one_line(f"torchcts {run.name or ''}"))
    for name, recs in sorted(suites.items()):
        el = ET.SubElement(root, "testsuite", name=one_line(name), tests=str(len(recs)),
                           timestamp=run.started or "")
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        total_time = 0.0
        for r in recs:
            status = (r.status or "error")
            t = float(r.duration_s or 0.0)
            total_time += t
            case = ET.SubElement(el, "testcase", classname=one_line(f"torchcts.{name}"), name=one_line(r.id),
                                 time=f"{t:.6f}")
            message = one_line(str(r.message or status)[:500])
            if status in _FAILURE:
                counts["failures"] += 1
                ET.SubElement(case, "failure", type=status, message=message).text = _detail(r)
            elif status in _ERROR:
                counts["errors"] += 1
                ET.SubElement(case, "error", type=status, message=message).text = _detail(r)
            elif status in STATUSES and not STATUSES[status].executed:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", type=status, message=message)
            elif status != "passed":
                ET.SubElement(case, "properties").append(ET.Element("property", name="status", value=one_line(status)))
        el.set("time", f"{total_time:.6f}")
        for k, v in counts.items():
            el.set(k, str(v))
    _record_problems(root, run)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + _NOT_XML.sub("", ET.tostring(root, encoding="unicode")) + "\n"


def _record_problems(root: ET.Element, run: RunOutcome) -> None:
    """Unreadable records and a missing plan as errors of their own suite: a dashboard that reads only
    junit.xml must not see a clean run."""
    problems = [one_line(p)[:500] for p in (run.record_problems or [])]
    count = run.unreadable_records if run.unreadable_records is not None else len(problems)
    problems += [f"... {count - len(problems)} more unreadable records"] if count > len(problems) else []
    if run.plan_missing:
        problems.append("plan.jsonl is missing: the run cannot be shown complete")
    if not problems:
        return
    el = ET.SubElement(root, "testsuite", name="torchcts.records", tests=str(len(problems)), failures="0",
                       errors=str(len(problems)), skipped="0", time="0")
    for n, problem in enumerate(problems, 1):
        case = ET.SubElement(el, "testcase", classname="torchcts.records", name=f"cases.jsonl problem {n}", time="0")
        ET.SubElement(case, "error", type="unreadable_record", message=problem).text = problem
