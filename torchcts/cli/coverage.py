"""`torchcts coverage inventory|report|release-diff|collect-backend-evidence|verify-evidence` (docs/coverage.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchcts.cli.common import add_results_dir_arg, folder_arg
from torchcts.errors import MAX_PROBLEMS, ExitCode, UsageError

if TYPE_CHECKING:
    from torchcts.evidence.collect import CollectRequest

HELP = "dispatcher surfaces of this PyTorch build vs the suite, and backend evidence"


def _suite_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--suite", action="append", default=[], metavar="S", help=f"{what} (repeatable)")


def _backend_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", metavar="PATH",
                   help="import this manifest's backend_import first (PrivateUse1 kernels register on import)")


def configure(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="coverage_command", metavar="SUBCOMMAND", parser_class=type(p))

    inv = sub.add_parser("inventory", help="every aten overload: kind, kernels, covering cases")
    inv.add_argument("--device", default="cpu", help="device whose dispatch key the kernel column is for (default cpu)")
    _suite_arg(inv, "count only cases of this suite (default: all; opinfo is slow to load)")
    inv.add_argument("--kind", action="append", default=[], metavar="K", help="only this surface kind (repeatable)")
    inv.add_argument("--op", metavar="GLOB", help="only overloads matching, e.g. 'aten::add*'")
    inv.add_argument("--uncovered", action="store_true", help="only overloads no case covers")
    inv.add_argument("--json", action="store_true", help="print JSON")
    _backend_arg(inv)

    rep = sub.add_parser("report", help="coverage by surface kind and the largest uncovered families; with RUN, "
                         "what the run's cases really dispatched")
    rep.add_argument("run", nargs="?", metavar="RUN",
                     help="a run folder, run name, results folder or results/latest: observed coverage of that run "
                          "(default: the static plan from the cases' declared ops)")
    add_results_dir_arg(rep, "where RUN names are looked up")
    rep.add_argument("--device", default=None, help="device whose dispatch key the kernel counts are for (default cpu; "
                     "with RUN, the run's device)")
    _suite_arg(rep, "count only cases of this suite (default: all)")
    rep.add_argument("--top", type=int, default=25, metavar="N", help="families listed (default 25)")
    rep.add_argument("--json", action="store_true", help="JSON instead of Markdown (with RUN: lists every unobserved surface)")
    rep.add_argument("--list-unobserved", action="store_true",
                     help="with RUN: list every unobserved implementable surface, its kind, kernel and pending case")
    rep.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of stdout")
    _backend_arg(rep)

    col = sub.add_parser("collect-backend-evidence", help="run the oracles of selected surfaces; append records to the store")
    col.add_argument("--store", required=True, metavar="DIR", type=folder_arg, help="the evidence store, e.g. evidence/backends")
    col.add_argument("--device", help="runtime device: cpu, cuda, mps, xpu or a PrivateUse1 name")
    col.add_argument("--backend-gate", required=True, metavar="G",
                     help="gate(s): cpu, cuda, rocm, mps, xpu, a PrivateUse1 name; join with +")
    col.add_argument("--surface", action="append", default=[], metavar="S",
                     help="aten overload, op or glob (repeatable; default: the surfaces the hand-written suites cover)")
    _suite_arg(col, "suites whose cases are the oracles")
    col.add_argument("--level", type=int, metavar="N", help="oracles from levels 1..N (default: the manifest's semantic_level)")
    col.add_argument("--manifest", metavar="PATH",
                     help="manifest file (default: one found here; in-tree devices have built-in claims)")
    col.add_argument("--run-pending-candidates", action="store_true", help="also run oracles not yet promoted")
    col.add_argument("--require-oracle-results", action="store_true",
                     help="exit 1 unless every selected surface has an oracle result")
    col.add_argument("--fail-on-oracle-failure", action="store_true", help="exit 1 if any oracle failed")
    col.add_argument("--validation", action="store_true", help=argparse.SUPPRESS)

    rel = sub.add_parser("release-diff", help="aten overloads, OpInfos and dtypes the installed torch added or removed "
                         "against the newest validated release, and which of them TorchCTS covers")
    rel.add_argument("--snapshot", metavar="PATH", type=Path,
                     help="compare with this snapshot (scripts/release-snapshot) instead of the stored one")
    _suite_arg(rel, "count only cases of this suite (default: all)")
    rel.add_argument("--json", action="store_true", help="print JSON")
    rel.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of stdout")

    ver = sub.add_parser("verify-evidence", help="check a store: canonical, append-only, anonymous")
    ver.add_argument("store", metavar="DIR")
    ver.add_argument("--base", metavar="DIR", help="an older copy of the store that DIR must extend")


def collect_request(args: argparse.Namespace) -> CollectRequest:
    """The checked request of `coverage collect-backend-evidence`."""
    from torchcts.cli.common import command_intent, require_device
    from torchcts.evidence.collect import CollectRequest
    from torchcts.levels import check_level

    if args.validation:
        raise UsageError("--validation runs are never backend evidence (they force cpu and fixed claims): "
                         "collect evidence with --device D on the backend under test")
    require_device(args)
    check_level("--level", args.level)
    return CollectRequest(
        device=args.device, store=args.store, backend_gate=args.backend_gate, manifest=args.manifest,
        level=args.level, suites=list(args.suite), surfaces=list(args.surface),
        run_pending=args.run_pending_candidates, require_oracle_results=args.require_oracle_results,
        fail_on_oracle_failure=args.fail_on_oracle_failure,
        intent=command_intent("coverage", list(getattr(args, "argv", []))),
    )


def main(args: argparse.Namespace) -> int:
    command = getattr(args, "coverage_command", None)
    if command is None:
        raise UsageError("coverage needs a subcommand: inventory, report, release-diff, collect-backend-evidence "
                         "or verify-evidence")
    if command == "collect-backend-evidence":
        from torchcts.evidence.collect import collect

        return collect(collect_request(args))
    if command == "verify-evidence":
        return _verify(args)
    if command == "release-diff":
        return _release_diff(args)
    if command == "report" and args.run:
        return _observed_report(args)
    if command == "report" and args.list_unobserved:
        raise UsageError("--list-unobserved lists what a run did not dispatch: give RUN (a run folder or results/latest)")
    from torchcts.coverage.inventory import build_inventory

    args.device = args.device or "cpu"
    _import_manifest_backend(args)
    inv = build_inventory(args.device, args.suite or None)
    if command == "inventory":
        return _inventory(args, inv)
    return _report(args, inv)


def _inventory(args: argparse.Namespace, inv) -> int:
    from torchcts.coverage.inventory import filter_rows, render_text
    from torchcts.coverage.surfaces import KINDS

    for k in args.kind:
        if k not in KINDS:
            raise UsageError(f"unknown --kind '{k}'; kinds: {', '.join(KINDS)}")
    rows = filter_rows(inv.rows, kinds=args.kind, pattern=args.op, uncovered=args.uncovered)
    if args.json:
        data = inv.to_json()
        data["surfaces"] = [r.to_json() for r in rows]
        json.dump(data, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_text(inv, rows))
    return ExitCode.OK


def _report(args: argparse.Namespace, inv) -> int:
    from torchcts.compat import build_info
    from torchcts.coverage.report import render_markdown, summarize

    summary = summarize(inv, top=args.top)
    if args.json:
        text = json.dumps({"build": build_info(), **summary}, indent=1, sort_keys=True) + "\n"
    else:
        text = render_markdown(summary, build_info())
    _emit(args, text)
    return ExitCode.OK


def _observed_report(args: argparse.Namespace) -> int:
    from torchcts.coverage.observed import render_markdown, report_run

    if args.suite or args.device:
        raise UsageError("coverage report RUN counts what the run's cases dispatched on the run's device: "
                         "drop --suite/--device, or drop RUN for the static plan")
    _import_run_backend(args)
    run_dir, summary = report_run(args.run, top=args.top, results_root=Path(args.results_dir))
    _emit(args, json.dumps(summary, indent=1, sort_keys=True) + "\n" if args.json
          else render_markdown(summary, run_dir.name, args.list_unobserved))
    return ExitCode.OK


def _release_diff(args: argparse.Namespace) -> int:
    from torchcts.cli.common import check_suite_names
    from torchcts.coverage.inventory import load_cases
    from torchcts.coverage.release import diff, installed_snapshot, render_markdown, summarize
    from torchcts.releases import load_snapshot

    check_suite_names(args.suite)
    if args.snapshot is not None and not args.snapshot.is_file():
        raise UsageError(f"--snapshot {args.snapshot} is not a file: give a snapshot written by scripts/release-snapshot")
    old = load_snapshot(args.snapshot)
    new = installed_snapshot()
    summary = summarize(old, new, diff(old, new, load_cases(tuple(args.suite) if args.suite else None)))
    _emit(args, json.dumps(summary, indent=1, sort_keys=True) + "\n" if args.json else render_markdown(summary))
    return ExitCode.OK


def _import_manifest_backend(args: argparse.Namespace) -> None:
    """--manifest: its backend_import first, so PrivateUse1 kernels are registered when counted."""
    if args.manifest:
        from torchcts.backends.devices import import_backend
        from torchcts.manifest.load import load_manifest

        import_backend(load_manifest(args.manifest).backend_import)


def _import_run_backend(args: argparse.Namespace) -> None:
    """The run's backend first, chosen as `repro` chooses it (cli/repro.py: run_backend): without it a
    PrivateUse1 device's kernels are unregistered and the implementable overloads are miscounted."""
    from torchcts.backends.devices import import_backend
    from torchcts.cli.repro import run_backend
    from torchcts.results.records import rundir

    run = rundir.read_run(rundir.resolve_run(args.run, Path(args.results_dir)))
    device = "cpu" if run.validation else str(run.device_type or "cpu")
    recorded = run.manifest.backend_import if run.manifest is not None else None
    import_backend(run_backend(recorded if isinstance(recorded, str) else None, device, args.manifest))


def _emit(args: argparse.Namespace, text: str) -> None:
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _verify(args: argparse.Namespace) -> int:
    from torchcts.evidence.verify import verify_store

    path = Path(args.store)
    if not path.is_dir():
        print(f"torchcts: error: {args.store} is not an evidence store folder", file=sys.stderr)
        return ExitCode.USAGE
    notes: list[str] = []
    problems = verify_store(path, base=Path(args.base) if args.base else None, notes=notes)
    for note in notes:
        print(f"torchcts: note: {note}", file=sys.stderr)
    for p in problems[:MAX_PROBLEMS]:
        print(f"{path.name}/{p}")
    if len(problems) > MAX_PROBLEMS:
        print(f"{path.name}: ... and {len(problems) - MAX_PROBLEMS} more problems (fix these first)")
    if problems:
        print(f"torchcts: evidence store {path.name}: {len(problems)} problems", file=sys.stderr)
        return ExitCode.FAILURES
    print(f"evidence store {path.name}: valid")
    return ExitCode.OK
