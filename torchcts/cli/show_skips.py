"""`torchcts show-skips`: what would not run and why, without running anything."""

from __future__ import annotations

import argparse

from torchcts.errors import ExitCode

HELP = "summarise what would not run (not claimed, not applicable) and why, without running"


def configure(p: argparse.ArgumentParser) -> None:
    from torchcts.cli.common import add_selection_args

    add_selection_args(p)
    p.add_argument("--details", "--all", dest="details", action="store_true",
                   help="also list every case that would not run, with its reason")
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows in the reason and op tables (default 10)")


def main(args: argparse.Namespace) -> int:
    from torchcts.cli.common import run_spec
    from torchcts.engine.setup import prepare
    from torchcts.errors import UsageError
    from torchcts.model.record import skip_record
    from torchcts.results.reports.quoting import terminal
    from torchcts.results.reports.skips import headline, render_text, summarize

    if args.top < 1:
        raise UsageError("--top must be a positive number of rows")
    setup = prepare(run_spec(args), resolve=False)  # the manifest alone: the backend need not be installed
    skipped = setup.result.skipped
    summary = summarize(skip_record(d.case, d.status, d.reason) for d in skipped)
    lo, hi = setup.spec.selection.levels(setup.spec.manifest.semantic_level if setup.spec.manifest else 1)
    levels = f"level {lo}" if lo == hi else f"levels {lo}-{hi}"
    lines = [f"at {levels}: {len(setup.result.to_run)} cases would run; {headline(summary, 'would not')}; "
             f"{setup.result.filtered} outside the selection (filtered: other levels, suites, ops, dtypes)",
             *render_text(summary, args.top)]
    backend = setup.spec.manifest.backend_import if setup.spec.manifest else None
    if backend and not args.validation:
        lines.insert(0, f"from the manifest alone: the backend '{backend}' was not imported (cases its "
                        "kernels turn out not to support are counted only when a run reaches them)")
    if args.details:
        lines += [f"{d.status:15} {d.case.id}  ({d.reason})" for d in skipped]
    elif skipped:
        lines.append("(--details lists every case)")
    print(terminal("\n".join(lines)))
    return ExitCode.OK
