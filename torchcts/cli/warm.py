"""`torchcts warm`: the warm worker servers of `torchcts run --warm` (workers/warm.py): list them,
show their state and why they refused launchers (--status), or stop them."""

from __future__ import annotations

import argparse
import time
from typing import Any

from torchcts.errors import ExitCode

HELP = "list, show (--status) or stop (--stop) the background servers that warm `torchcts run`'s workers"


def configure(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--stop", action="store_true", help="stop them now (each ends once its workers have)")
    what.add_argument("--status", action="store_true",
                      help="each server's pid, key, age, idle time, and the last reasons it refused a "
                           "launcher (which then started a fresh worker)")
    p.add_argument("--all", action="store_true",
                   help="also the servers of other checkouts or environments (another sys.path), which "
                        "this one's runs never use")


def main(args: argparse.Namespace) -> int:
    from torchcts.workers import warm

    if args.stop:
        stopped = warm.stop_all(everywhere=args.all)
        print(f"torchcts: stopped {len(stopped)} warm worker server(s)")
        return ExitCode.OK
    found = warm.statuses()
    servers = [s for s in found if args.all or s["here"]]
    for server in servers:
        print(describe(server) if args.status else f"warm worker server pid {server['pid']} ({server['socket']})"
              + ("" if server["here"] else " [another checkout or environment]"))
    if not servers:
        print("torchcts: no warm worker server is running" if args.all
              else "torchcts: no warm worker server of this checkout is running")
    if len(found) > len(servers):
        print(f"torchcts: {len(found) - len(servers)} more of other checkouts or environments (another sys.path; "
              "`torchcts warm --all` lists them)")
    return ExitCode.OK


def describe(server: dict[str, Any]) -> str:
    """A server's status as a few lines: what it is, then its latest refusals, newest last."""
    state = ("importing, not listening yet" if server["preparing"] else "stopping" if server["stopping"]
             else f"{server['workers']} worker(s)")
    other = "" if server["here"] else " [another checkout or environment]"
    lines = [f"warm worker server pid {server['pid']} key {server['key']} ({server['profile'] or '?'} "
             f"profile){other}: up {_duration(server['age_s'])}, idle {_duration(server['idle_s'])}, {state}"]
    refusals = server["refusals"]
    if not refusals:
        lines.append("  refused no launcher")
    for refusal in refusals:
        when = refusal.get("time")
        stamp = time.strftime("%H:%M:%S", time.localtime(when)) if isinstance(when, (int, float)) else "?"
        lines.append(f"  refused at {stamp}: {refusal.get('why', '?')}")
    return "\n".join(lines)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
