"""Crash signatures: what makes two dead workers "the same crash" (triage, the crash budget).

A crashed or timed-out record keeps the dead worker's log tail (`output_tail`, workers/isolation.py).
For a crash that is faulthandler's traceback of the crashing thread, most recent call first:

    Fatal Python error: Segmentation fault
    Stack (most recent call first):            (or "Current thread 0x... (most recent call first):")
      File "<torchcts>/torchcts/sim/faults.py", line 359 in _mul_complex128_segv

faulthandler prints Python frames only. When the tail also holds a native stack (a backend's own
signal handler, glibc `backtrace_symbols_fd`, gdb or a sanitizer; Python 3.14's faulthandler C
stack), its frames are used instead: the top native frame names the bug better than the Python
line that called into the backend. For a timeout the tail is the stack where the case hung
(`traceback.format_stack`, innermost call last).

The signature is `<signal or exit code> at <frame> < <frame> < <frame>` (the TOP_FRAMES innermost
frames, innermost first), each frame `file:function` with the file's base name: addresses, offsets
and line numbers are dropped, so one bug reads the same on every case, worker and build. Frames of
the signal machinery itself (libc's raise/abort, faulthandler, libSegFault) and pass-through
wrappers (torch._dynamo.disable's, torch.no_grad's decorator) are skipped. Without a
stack the signature is the signal (or exit code) alone.
"""

from __future__ import annotations

import re

from torchcts.model.record import CaseRecord

TOP_FRAMES = 3

# faulthandler: `  File "path", line 12 in func`; traceback.format_stack: `  File "path", line 12, in func`
_PY_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line \d+,? in (?P<func>\S+)')
_PY_HEADER = re.compile(r"(most recent call first)|^Stack \(most recent call first\)")
_CURRENT = re.compile(r"^\s*Current thread 0x[0-9a-fA-F]+ \(most recent call first\)")
# Native frames, innermost first in every format below:
#   gdb / sanitizers / LLVM:  `#0  0x00007f... in kernel_foo (a=1) at foo.cc:12` / `#1 0x... in bar /src/bar.cc:3:1`
#   glibc backtrace_symbols:  `/usr/lib/libfoo.so(kernel_foo+0x1a)[0x7f...]` / `libfoo.so(+0x1234)[0x...]`
#   Python 3.14 faulthandler: `  Binary file "/usr/lib/libfoo.so", at kernel_foo+0x1a [0x7f...]`
_GDB = re.compile(r"^\s*#\d+\s+(?:0x[0-9a-fA-F]+\s+in\s+)?(?P<func>[^\s(]+)(?:\s*\([^)]*\))*"
                  r"(?:\s+(?:at|from)\s+(?P<file>[^\s:]+))?(?:\s+(?P<file2>/[^\s:]+))?")
_GLIBC = re.compile(r"^\s*(?P<file>[^\s(\[]+)\((?P<func>[^)+]*)(?:\+0x[0-9a-fA-F]+)?\)\s*\[0x[0-9a-fA-F]+\]")
_BINARY = re.compile(r'^\s*Binary file "(?P<file>[^"]*)"(?:, at (?P<func>[^\s+\[]+))?')
# Frames every crash shares: the signal's delivery and the handlers that print the stack.
_MACHINERY = frozenset({
    "raise", "abort", "gsignal", "__GI_raise", "__GI_abort", "__pthread_kill_implementation",
    "__pthread_kill_internal", "pthread_kill", "__pthread_kill", "killpg", "kill", "__restore_rt",
    "<signal handler called>", "_sigtramp", "faulthandler_fatal_error", "faulthandler_dump_traceback",
    "_Py_DumpTraceback", "_Py_DumpStack", "backtrace", "__libc_start_main", "__libc_start_call_main", "_start",
})
_MACHINERY_FILES = ("libSegFault", "faulthandler")
# Pass-through wrappers a call may or may not go through (torch._dynamo.disable, torch.no_grad as a
# decorator): the same bug read two signatures with and without them.
_WRAPPERS = frozenset({"eval_frame.py:_fn", "_contextlib.py:decorate_context", "external_utils.py:inner"})
_LIBC = ("libc.so", "libc-", "libpthread", "ld-linux")  # an unnamed frame there is the signal's trampoline


def _base(path: str) -> str:
    return re.split(r"[/\\]", path.strip())[-1] if path else "?"


def _frame(file: str | None, func: str | None) -> str | None:
    func = (func or "").strip() or "?"
    if func in _MACHINERY or func.startswith("__GI_") or any(m in (file or "") for m in _MACHINERY_FILES):
        return None
    if func == "?" and (not file or any(m in file for m in _LIBC)):
        return None
    frame = f"{_base(file or '')}:{func}" if file else func
    return None if frame in _WRAPPERS else frame


def native_frames(text: str) -> list[str]:
    """The native stack's frames in `text`, innermost first (empty when there is none)."""
    frames: list[str] = []
    for line in text.splitlines():
        for pattern in (_BINARY, _GLIBC, _GDB):
            m = pattern.match(line)
            if m:
                file = m.groupdict().get("file") or m.groupdict().get("file2")
                if pattern is _GDB and not (file or re.match(r"^\s*#\d+\s+0x", line)):
                    break  # `#3 something` that is no frame (a Markdown heading, a comment)
                frame = _frame(file, m.group("func"))
                if frame is not None:
                    frames.append(frame)
                break
    return frames


def python_frames(text: str) -> list[str]:
    """The Python frames of the first stack in `text`, innermost first: faulthandler's (most recent
    first, after its header) as given, a `format_stack` one (innermost last) reversed."""
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if _PY_HEADER.search(line)), None)
    if header is not None:
        block = []
        for line in lines[header + 1:]:
            m = _PY_FRAME.match(line)
            if not m:
                if block:
                    break
                continue
            block.append(_frame(m.group("file"), m.group("func")))
        return [f for f in block if f]
    frames = [_frame(m.group("file"), m.group("func")) for m in map(_PY_FRAME.match, lines) if m]
    return [f for f in reversed(frames) if f]


def top_frames(text: str, count: int = TOP_FRAMES) -> list[str]:
    """The `count` innermost frames: native when the text holds a native stack, else Python."""
    return (native_frames(text) or python_frames(text))[:count]


def crash_signature(record: CaseRecord, count: int = TOP_FRAMES) -> str:
    """`SIGSEGV at faults.py:_mul_complex128_segv < tensor.py:dispatch < ...` for a crashed or
    timed-out record: the same for every case one native bug kills."""
    if record.status == "timeout":
        how = "timeout"
    elif record.signal:
        how = str(record.signal)
    elif record.exit_code is not None:
        how = f"exit code {record.exit_code}"
    else:
        how = "died"
    frames = top_frames(str(record.output_tail or ""), count)
    return f"{how} at {' < '.join(frames)}" if frames else how


BUDGET_REASON = "not run: the crash budget stopped"


def budget_reason(family: str, signature: str, crashes: int) -> str:
    """The message of a case the crash budget did not run (workers/crash_budget.py)."""
    return (f"{BUDGET_REASON} op family '{family}' after {crashes} crashes with signature '{signature}' "
            "(the same bug, not re-run; --no-crash-budget runs every case)")


def cluster_reason(scope: str, signature: str, crashes: int, done: int, families: list[str]) -> str:
    """The message of a case the crash budget did not run because one crash cluster killed most
    cases of its kind across op families (workers/crash_budget.py: a crash storm)."""
    ops = ", ".join(families[:6]) + (f" and {len(families) - 6} more" if len(families) > 6 else "")
    return (f"{BUDGET_REASON} {scope!r}: crash cluster '{signature}' crashed {crashes} of its {done} cases "
            f"so far, across op families {ops} (one bug, not re-run per op; --no-crash-budget runs every case)")


def stopped_by_budget(record: CaseRecord) -> bool:
    """A `not_run` record the crash budget wrote (reports count these apart from a killed run's)."""
    return record.status == "not_run" and str(record.message or "").startswith(BUDGET_REASON)


# TorchCTS's own CPU work on a sample: the reference and its rechecks (cases/opinfo/run.py,
# recheck.py, truth.py, cases/explore/host_rule.py, oracle/composite.py). The device is never called
# beneath these frames, so a fatal signal on the crashing thread while one is on its stack is CPU's
# death (SIGFPE in _scaled_dot_product_flash_attention_for_cpu on a zero-size dimension), never the
# device's crash. A backend's asynchronous abort lands on its own thread, which has none of them.
REFERENCE_FRAMES = frozenset({
    ("cases/opinfo/run.py", "reference_call"), ("cases/opinfo/run.py", "cpu_call"),
    ("cases/opinfo/recheck.py", "computed_dtypes"), ("cases/opinfo/truth.py", "truth_of"),
    ("cases/explore/host_rule.py", "refusal"), ("oracle/composite.py", "composite_answer"),
})


def reference_death(log: str) -> str | None:
    """The TorchCTS reference frame (`run.py:reference_call`) on the Python stack of the thread
    faulthandler reported dying in `log` (a worker's log from the case's start), None when none is.
    A worker dumps the dying thread only (`Stack (most recent call first):`, isolation.py), and a
    death on a thread Python does not know (an OpenMP worker's) shows no Python frame there: None,
    the device's crash, since a backend's own thread may as well have died then. Where every
    thread is dumped, faulthandler lists them newest first and marks the dying one `Current thread
    0x...`: that block is read, not the first (a watchdog's). Python 3.14's `Current thread's C
    stack trace` block after the Python stack is not a thread's."""
    lines = log.splitlines()
    headers = [i for i, line in enumerate(lines) if _PY_HEADER.search(line) and "C stack" not in line]
    if not headers:
        return None
    start = next((i for i in headers if _CURRENT.match(lines[i])), headers[0])
    for line in lines[start + 1:]:
        m = _PY_FRAME.match(line)
        if m is None:
            if line.strip():
                break  # the end of the crashing thread's stack
            continue
        path = m["file"].replace("\\", "/")
        for suffix, func in REFERENCE_FRAMES:
            if m["func"] == func and path.endswith(f"torchcts/{suffix}"):
                return f"{_base(path)}:{func}"
    return None


def died_in_reference(record: CaseRecord) -> str | None:
    """The reference frame a `crashed` record's process died in (workers/isolation.py writes it to
    `attribution.reference`), None for any other record: CPU's death or the device's, until the case's
    run alone settles it (workers/attribution.py); the crash budget does not count it meanwhile."""
    found = record.attribution.get("reference") if isinstance(record.attribution, dict) else None
    return found if isinstance(found, str) and found else None
