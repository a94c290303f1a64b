"""Fuzzing the user's inputs (issue 17): manifests, cases.jsonl / run.json lines and flag values.

Whatever the input, TorchCTS answers with exit 0, 1 or 2, never a traceback (exit 3 is for our own
bugs), and `report` loses no record: every non-blank line of cases.jsonl is either a record in
the totals or counted as unreadable. Bounded: a few dozen examples per property, seconds in all.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from pathlib import Path

from helpers.crafted import fake_run
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchcts.cli.main import main as cli
from torchcts.levels import MAX_LEVEL, MIN_LEVEL
from torchcts.manifest.schema import KEYS
from torchcts.model.status import STATUSES

FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**12), st.floats(allow_nan=True), text)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                           max_leaves=12)


@contextlib.contextmanager
def chdir(path: str):  # contextlib.chdir is Python 3.11+
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def call(argv: list[str]) -> tuple[int, str]:
    """Run the CLI in-process; (exit code, stderr)."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli(argv)
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def assert_user_outcome(code: int, err: str) -> None:
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert code != 2 or "error:" in err, err  # a usage error says what is wrong (ours or argparse's line)


@FUZZ
@given(manifest=st.dictionaries(st.sampled_from(sorted(KEYS)) | text, json_values, max_size=6),
       as_python=st.booleans())
def test_fuzzed_manifests_get_a_verdict_or_a_usage_error(manifest, as_python):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("manifest.py" if as_python else "torchcts.toml")
        if as_python:
            path.write_text(f"manifest = {manifest!r}\n", encoding="utf-8")
        else:  # TOML has no null; a value TOML cannot hold is written as text
            path.write_text("".join(f"{json.dumps(k)} = {json.dumps(v if isinstance(v, (int, str, bool)) else str(v))}\n"
                                    for k, v in manifest.items()), encoding="utf-8")
        assert_user_outcome(*call(["check-manifest", str(path)]))


record = st.fixed_dictionaries(
    {"id": st.one_of(text, st.integers(), st.none())},
    optional={"status": st.sampled_from(sorted(STATUSES)) | text | st.integers(), "message": json_values,
              "duration_s": json_values, "suite": json_values, "dtype": json_values, "mismatch": json_values,
              "requires": json_values, "repro": json_values, "expectation": json_values, "traceback": json_values},
)
line = st.one_of(record.map(lambda r: json.dumps(r).encode()), json_values.map(lambda v: json.dumps(v).encode()),
                 st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b))


def _readable(raw: bytes) -> str | None:
    """The case id of a line `report` must count as a record, else None (it must count as unreadable)."""
    try:
        rec = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    return rec["id"] if isinstance(rec, dict) and isinstance(rec.get("id"), str) and rec["id"] else None


@FUZZ
@given(lines=st.lists(line, max_size=8))
@example(lines=[b'{"id": "0", "status": "xpassed", "expectation": null}'])  # once exit 3 (a note without entry)
def test_fuzzed_records_are_reported_and_none_is_lost(lines):
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = fake_run(Path(tmp), "r", [])
        (run_dir / "cases.jsonl").write_bytes(b"".join(raw + b"\n" for raw in lines))
        code, err = call(["report", "--triage", "--results-dir", str(Path(tmp) / "results")])
        assert_user_outcome(code, err)
        run = json.loads((run_dir / "run.json").read_text())
        nonblank = [raw for raw in lines if raw.strip()]
        ids = {_readable(raw) for raw in nonblank} - {None}
        unreadable = sum(_readable(raw) is None for raw in nonblank)
        assert sum(run["totals"].values()) == len(ids)  # one final record per case id, none dropped
        assert run["unreadable_records"] == unreadable
        assert (code == 2) == bool(unreadable)


@FUZZ
@given(content=json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=60), cut=st.integers(0, 400))
def test_fuzzed_or_truncated_run_json_is_a_usage_error(content, cut):
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = fake_run(Path(tmp), "r", [{"id": "a/b", "status": "passed"}])
        whole = (run_dir / "run.json").read_bytes()
        written = content if cut % 2 else whole[:cut]
        (run_dir / "run.json").write_bytes(written)
        code, err = call(["report", "--results-dir", str(Path(tmp) / "results")])
        assert_user_outcome(code, err)
        try:
            damaged = not isinstance(json.loads(written), dict)
        except ValueError:
            damaged = True
        if damaged:  # torn or not a JSON object: never reported as if it were a run
            assert code == 2 and "run.json" in err, (code, err)


flag_value = st.one_of(text, st.integers(-5, 10**6).map(str), st.floats(allow_nan=True).map(str),
                       st.sampled_from(["nan", "inf", "-inf", "1e999", "0", "-0", "1/0", "3/2", "2:1", "1:9", "float33"]))
SELECTION_FLAGS = ["--level", "--level-exact", "--level-range", "--max-samples", "--sample", "--shard", "--dtype",
                   "--suite", "--op", "--case"]


@FUZZ
@given(flags=st.lists(st.tuples(st.sampled_from(SELECTION_FLAGS), flag_value), min_size=1, max_size=3))
@example(flags=[("--level", "9")])
@example(flags=[("--level-exact", "0")])
@example(flags=[("--max-samples", "0")])
@example(flags=[("--sample", "-1")])
def test_fuzzed_selection_flags(flags):
    argv = ["show-skips", "--device", "cpu", "--suite", "operators"]
    for flag, value in flags:
        argv.append(f"{flag}={value}")
    with tempfile.TemporaryDirectory() as tmp, chdir(tmp):
        code, err = call(argv)
    assert_user_outcome(code, err)
    if any(not _in_range(value, *BOUNDS[flag]) for flag, value in flags if flag in BOUNDS):
        assert code == 2, (flags, err)


# Integer flags and their accepted range (levels from torchcts/levels.py).
BOUNDS = {"--level": (MIN_LEVEL, MAX_LEVEL), "--level-exact": (MIN_LEVEL, MAX_LEVEL),
          "--max-samples": (1, math.inf), "--sample": (0, math.inf)}


def _in_range(value: str, low: float, high: float) -> bool:
    try:
        return low <= int(value) <= high
    except ValueError:
        return False


@FUZZ
@given(timeout=flag_value, reruns=flag_value)
@example(timeout="1", reruns="-1")  # each flag's boundary, whatever the random draw covers
@example(timeout="-1", reruns="1")
@example(timeout="nan", reruns="0")
@example(timeout="0", reruns="0")
def test_fuzzed_run_flags(timeout, reruns):
    with tempfile.TemporaryDirectory() as tmp, chdir(tmp):
        Path("afile").write_text("")  # a results-dir that is a file: a valid value stops there, before running
        code, err = call(["run", "--device", "cpu", f"--timeout={timeout}", f"--rerun-failures={reruns}",
                          "--results-dir", "afile"])
        assert_user_outcome(code, err)
        assert code == 2
        bad = [flag for flag, ok in (("--timeout", _valid(timeout, float)), ("--rerun-failures", _valid(reruns, int)))
               if not ok]
        if len(bad) == 1:
            assert bad[0] in err, err
        elif bad:  # both wrong: whichever is checked first is named
            assert "--timeout" in err or "--rerun-failures" in err, err
        else:  # valid values pass their checks and reach the results folder's
            assert "--results-dir afile cannot be created" in err, err


def _valid(value: str, kind: type) -> bool:
    """Whether `run` must accept a flag value: a finite number >= 0 of that type (argparse parses it)."""
    try:
        number = kind(value)
    except ValueError:
        return False
    return math.isfinite(number) and number >= 0
