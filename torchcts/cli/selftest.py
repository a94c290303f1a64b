"""`torchcts selftest`: prove the suite catches bugs, on the simulated device with planted faults.

Runs the suite on the `sim` device once clean and once per fault (a focused selection: the
fault's catching suite at its level; `--full` runs the whole selection instead) and prints, per
fault, whether it was detected, the first case that caught it and the time to detection. A fault
whose suite is not in the build is `n/a`; an unlisted one (meant for input exploration) `awaiting`.
Exit 1 if the clean run fails or a measured fault goes undetected.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from torchcts.cli.common import add_results_dir_arg
from torchcts.cli.run import DEFAULT_TIMEOUT_S
from torchcts.errors import ExitCode

HELP = "run the suite on the simulated device clean and with each planted fault; table of detections"
FAULT_RUN_TIMEOUT = 900.0
FAULT_CASE_TIMEOUT = 20.0
# An unlisted fault (no existing case targets its class) while its suite, input exploration, is not in
# the build: listed, not measured, never a miss (torchcts/sim/faults_unlisted.py)
AWAITING = "awaiting exploration"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fault", action="append", default=[], metavar="NAME", help="only this fault (repeatable)")
    p.add_argument("--level", type=int, metavar="N",
                   help="clean run at levels 1..N and only faults meant to be caught at level <= N "
                        "(default: the sim manifest's level)")
    p.add_argument("--full", action="store_true",
                   help="run each fault against the whole selection (levels 1..N), not its focused one")
    p.add_argument("--no-clean", action="store_true", help="skip the clean run")
    p.add_argument("--list", action="store_true", help="list the planted faults and exit")
    p.add_argument("--jobs", type=int, default=2, metavar="J", help="runs in parallel (default 2)")
    p.add_argument("--timeout", "--case-timeout", dest="case_timeout", type=float, default=None, metavar="S",
                   help="per-case time limit, passed to `torchcts run --timeout`: a hung case is recorded "
                        f"timeout (default: {FAULT_CASE_TIMEOUT:g} in fault runs; `torchcts run`'s own "
                        f"{DEFAULT_TIMEOUT_S:g} in the clean run, whose slowest OpInfo cases take tens of seconds)")
    p.add_argument("--run-timeout", type=float, default=None, metavar="S",
                   help=f"limit of one run (default: {FAULT_RUN_TIMEOUT:g} for a fault run; none for the clean "
                        "run, which covers every claimed level and whose cases each have --timeout)")
    add_results_dir_arg(p, "run folders go under DIR/selftest/<fault> (default: results)")
    p.add_argument("--json", action="store_true", help="print the outcomes as JSON lines instead of a table")


def select_faults(catalog: list[dict[str, Any]], names: list[str], level: int | None) -> list[dict[str, Any]]:
    from torchcts.errors import UsageError, did_you_mean

    by_name = {f["name"]: f for f in catalog}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"--fault '{unknown[0]}' names no planted fault"
                         + did_you_mean(unknown[0], by_name, "`torchcts selftest --list` lists them"))
    if names:
        return [by_name[n] for n in names]
    return [f for f in catalog if level is None or f["level"] <= level]


def main(args: argparse.Namespace) -> int:
    from torchcts.engine import selftest as st
    from torchcts.levels import check_level

    check_level("--level", args.level)
    catalog = st.fault_catalog()
    if args.list:
        for f in catalog:
            print(f"{f['name']:28} L{f['level']} {f['suite']:14} {f['description']}")
        return ExitCode.OK
    faults = select_faults(catalog, args.fault, args.level)
    root = Path(args.results_dir) / "selftest"
    full = ["--level", str(args.level)] if args.level else []
    # The clean run is every claimed level, all of OpInfo included (tens of minutes on 2 cores, single
    # cases up to ~100 s under load): limits sized for a focused fault run, where a hang must be
    # seen quickly, would end it and report the clean sim failed.
    opts = {"case_timeout": args.case_timeout or FAULT_CASE_TIMEOUT,
            "run_timeout": args.run_timeout or FAULT_RUN_TIMEOUT}
    clean_opts = {"case_timeout": args.case_timeout or DEFAULT_TIMEOUT_S, "run_timeout": args.run_timeout}

    jobs = []
    if not args.no_clean:
        jobs.append(lambda: st.run_one("clean", full, root / "clean", fault=None, stop_first=False, **clean_opts))
    skipped = []
    for f in faults:
        # an unlisted fault waits for its suite (input exploration) even in --full: every other case misses it
        why = None if args.full and not f.get("unlisted") else st.missing_cases(f["suite"], f["level"])
        if why:
            why = f"{AWAITING} ({why})" if f.get("unlisted") else why
            skipped.append(st.Outcome(f["name"], False, note=f"{why}: not measured", measured=False))
            continue
        sel = full if args.full else f["selection"]
        # A --full fault run covers the clean run's cases, so it gets the clean run's limits: a slow
        # correct case, or a whole run outlasting a focused run's limit, must not count as a catch.
        fopts = clean_opts if args.full else {
            **opts, "case_timeout": args.case_timeout or max(FAULT_CASE_TIMEOUT, f.get("case_timeout") or 0)}
        jobs.append(lambda f=f, sel=sel, fopts=fopts: st.run_one(
            f["name"], sel, root / f["name"], fault=f["name"], catches=tuple(f["catches"]), stop_first=True, **fopts))
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda job: job(), jobs)) + skipped

    if args.json:
        for o in outcomes:
            print(json.dumps(o.to_json(), sort_keys=True))
    else:
        print_table(outcomes, sys.stdout)
    clean_bad = any(o.name == "clean" and (o.detected or o.note) for o in outcomes)
    missed = [o for o in outcomes if o.name != "clean" and o.measured and not o.detected]
    return ExitCode.FAILURES if clean_bad or missed else ExitCode.OK


def print_table(outcomes: list, out) -> None:
    rows = [("fault", "detected", "first case", "status", "as meant", "time")]
    for o in outcomes:
        if o.name == "clean":
            verdict = "FAILED" if o.detected or o.note else f"passed ({o.planned} cases)"
            rows.append(("(clean)", verdict, o.first_case or "-", o.status or "-", "-", f"{o.seconds:.1f}s"))
            continue
        detected = "yes" if o.detected else "NO" if o.measured else "awaiting" if o.note.startswith(AWAITING) else "n/a"
        rows.append((o.name, detected, o.first_case or "-", o.status or "-",
                     ("yes" if o.meant else "no") if o.detected else "-", f"{o.seconds:.1f}s"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)
    for o in outcomes:
        if o.note:
            print(f"note: {o.name}: {o.note}", file=out)
    found = sum(1 for o in outcomes if o.name != "clean" and o.detected)
    measured = sum(1 for o in outcomes if o.name != "clean" and o.measured)
    print(f"detected {found}/{measured} measured faults", file=out)
