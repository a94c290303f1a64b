"""junit.xml generated from case records, for CI dashboards (no host name, no paths)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import CRASH_LIKE, FAILURES, STATUSES, Status
from torchcts.results.reports.quoting import one_line, strip_controls

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


def render_junit(run: Run, records: list[CaseRecord]) -> str:
    return "".join(iter_junit(run, records))


def iter_junit(run: Run, records: list[CaseRecord]) -> Iterator[str]:
    """junit.xml in pieces, one test case at a time (safe_io.write_atomic writes them as they come):
    a run of 10^6 records never holds its whole XML tree or text."""
    suites: dict[str, list[CaseRecord]] = defaultdict(list)
    for r in records:
        suites[str(r.suite)].append(r)
    yield '<?xml version="1.0" encoding="utf-8"?>\n'
    yield _start(ET.Element("testsuites", name=one_line(f"torchcts {run.name or ''}"))) + "\n"
    for name, recs in sorted(suites.items()):
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        total_time = 0.0
        for r in recs:
            status = r.status or "error"
            total_time += float(r.duration_s or 0.0)
            kind = "failures" if status in _FAILURE else "errors" if status in _ERROR else \
                "skipped" if status in STATUSES and not STATUSES[status].executed else None
            if kind:
                counts[kind] += 1
        suite = ET.Element("testsuite", name=one_line(name), tests=str(len(recs)), timestamp=run.started or "",
                           time=f"{total_time:.6f}", **{k: str(v) for k, v in counts.items()})
        yield "  " + _start(suite) + "\n"
        for r in recs:
            yield _xml(_testcase(name, r), 2)
        yield "  </testsuite>\n"
    problems = _record_problems(run)
    if problems is not None:
        yield _xml(problems, 1)
    yield "</testsuites>\n"


def _testcase(suite: str, r: CaseRecord) -> ET.Element:
    status = r.status or "error"
    t = float(r.duration_s or 0.0)
    case = ET.Element("testcase", classname=one_line(f"torchcts.{suite}"), name=one_line(r.id), time=f"{t:.6f}")
    message = one_line(str(r.message or status)[:500])
    if status in _FAILURE:
        ET.SubElement(case, "failure", type=status, message=message).text = _detail(r)
    elif status in _ERROR:
        ET.SubElement(case, "error", type=status, message=message).text = _detail(r)
    elif status in STATUSES and not STATUSES[status].executed:
        ET.SubElement(case, "skipped", type=status, message=message)
    elif status != "passed":
        ET.SubElement(case, "properties").append(ET.Element("property", name="status", value=one_line(status)))
    return case


def _start(element: ET.Element) -> str:
    """An element's start tag (attributes escaped by ElementTree), for a parent written piece by piece."""
    text = ET.tostring(element, encoding="unicode")
    return _NOT_XML.sub("", text[:-3] + ">" if text.endswith(" />") else text.split(">", 1)[0] + ">")


def _xml(element: ET.Element, level: int) -> str:
    """One element, indented at `level` as ET.indent would, with only characters XML allows."""
    ET.indent(element, level=level)
    return "  " * level + _NOT_XML.sub("", ET.tostring(element, encoding="unicode").rstrip()) + "\n"


def _record_problems(run: Run) -> ET.Element | None:
    """Unreadable records and a missing plan as errors of their own suite: a dashboard that reads only
    junit.xml must not see a clean run."""
    problems = [one_line(p)[:500] for p in (run.record_problems or [])]
    count = run.unreadable_records if run.unreadable_records is not None else len(problems)
    problems += [f"... {count - len(problems)} more unreadable records"] if count > len(problems) else []
    if run.plan_missing:
        problems.append("plan.jsonl is missing: the run cannot be shown complete")
    if not problems:
        return None
    el = ET.Element("testsuite", name="torchcts.records", tests=str(len(problems)), failures="0",
                    errors=str(len(problems)), skipped="0", time="0")
    for n, problem in enumerate(problems, 1):
        case = ET.SubElement(el, "testcase", classname="torchcts.records", name=f"cases.jsonl problem {n}", time="0")
        ET.SubElement(case, "error", type="unreadable_record", message=problem).text = problem
    return el
