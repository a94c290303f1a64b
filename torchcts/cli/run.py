"""`torchcts run`: run the suite on a device; exit 0 pass, 1 backend failure, 2 usage, 3 internal."""

from __future__ import annotations

import argparse

from torchcts.cli.common import add_selection_args, folder_arg, run_spec
from torchcts.results.reports.repeat_rate import MAX_REPEAT
from torchcts.workers.crash_budget import DEFAULT_LIMIT

HELP = "run the conformance suite on a device (anything after -- goes to pytest)"


DEFAULT_TIMEOUT_S = 300.0


def configure(p: argparse.ArgumentParser) -> None:
    add_selection_args(p)
    p.add_argument("--strict-expectations", action="store_true",
                   help="also fail on expired or unmatched ledger entries, xpassed and flaky cases")
    p.add_argument("--rerun-failures", type=int, default=0, metavar="N",
                   help="rerun failing cases up to N times in fresh processes; a pass on rerun is flaky")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help=f"run each case N times (1 to {MAX_REPEAT}) with the same inputs, seeds and caches reset "
                        "between runs; a case failing some runs is flaky with its pass rate, a failure of the run")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"per-case time limit (under --repeat N, N times it for the case's N runs); a case past it "
                        f"is recorded timeout (default {DEFAULT_TIMEOUT_S:g}, 0: none)")
    p.add_argument("--crash-budget", type=int, default=None, metavar="N",
                   help=f"after N crashes with the same signature in one op family (op and dtype), record the "
                        f"family's other cases not_run instead of crashing on them; a signature that crashes N cases "
                        f"of one kind across op families (and half of that kind's cases so far: a storm, such as "
                        f"every op's out=) stops that kind's other cases the same way (default {DEFAULT_LIMIT})")
    p.add_argument("--no-crash-budget", action="store_true",
                   help="run every case, however often the same crash repeats")
    p.add_argument("--explore", type=int, metavar="N",
                   help="explored samples per op and dtype: its arguments at their switch points x unusual values, "
                        "a failure shrunk (default: by level, 2 at level 2 up to 4 at 5 and above; 0: off; docs/exploration.md)")
    p.add_argument("--corpus", metavar="DIR", type=folder_arg,
                   help="counterexample corpus beside the manifest: replayed first, every find merged into it")
    p.add_argument("--no-isolation", action="store_true",
                   help="run cases in this process instead of replaceable workers (a crash ends the run)")
    p.add_argument("--warm", action=argparse.BooleanOptionalAction, default=None,
                   help="fork workers from a background server that has already imported torch (seconds "
                        "faster per run; default: on in a terminal, off when CI is set; TORCHCTS_WARM=1/0; "
                        "it exits after 15 idle minutes or on 'torchcts warm --stop')")


def main(args: argparse.Namespace) -> int:
    from torchcts.engine.execute import execute
    from torchcts.engine.setup import prepare

    return execute(prepare(run_spec(args)))
