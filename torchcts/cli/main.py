"""The `torchcts` entry point. Command modules are light at import: heavy imports live in main()."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

from torchcts import __version__, settings
from torchcts.errors import MAX_PROBLEMS, ExitCode, ManifestError, UsageError

# Command name -> module. Each module defines HELP, configure(parser) and main(args) -> int.
COMMANDS: dict[str, str] = {
    "run": "torchcts.cli.run",
    "init": "torchcts.cli.init",
    "check-manifest": "torchcts.cli.check_manifest",
    "show-skips": "torchcts.cli.show_skips",
    "report": "torchcts.cli.report",
    "merge": "torchcts.cli.merge",
    "coverage": "torchcts.cli.coverage",
    "expectations": "torchcts.cli.expectations",
    "repro": "torchcts.cli.repro",
    "install": "torchcts.cli.install",
    "backends": "torchcts.cli.backends",
    "compare": "torchcts.cli.compare",
    "selftest": "torchcts.cli.selftest",
    "warm": "torchcts.cli.warm",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, the fix, exit 2
        self.exit(ExitCode.USAGE, f"torchcts: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="torchcts", description="Conformance test suite for PyTorch device backends.")
    parser.add_argument("--version", action="version", version=f"torchcts {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.set_defaults(_module=module)
    return parser


def unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: list[str]) -> str:
    """Arguments no parser took: the closest option of the command they were given to, and that
    command's help (its options are there, not in the top-level help)."""
    from torchcts.errors import did_you_mean

    sub = parser
    while True:  # down to the innermost (sub)command given: `coverage report`'s options are its own
        inner = next((a.choices[chosen] for a in sub._actions  # noqa: SLF001 - argparse keeps no public map
                      if isinstance(a, argparse._SubParsersAction)
                      and (chosen := getattr(args, a.dest, None)) in a.choices), None)
        if inner is None:
            break
        sub = inner
    helped = f"see '{sub.prog} --help'"
    first = unknown[0]
    if first.startswith("-"):
        word = first.split("=", 1)[0]
        options = [o for a in sub._actions for o in a.option_strings if o.startswith("--")]  # noqa: SLF001
        close = did_you_mean(word, options, helped)
        return f"unrecognized argument {word}{close}" + (f" ({helped})" if close.startswith(":") else "")
    return f"unrecognized arguments: {' '.join(unknown)} ({helped})"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        os.getcwd()
    except OSError as exc:  # removed or unreadable working folder: every relative path would fail later
        print(f"torchcts: error: the working folder cannot be reached ({exc.strerror or exc}): cd into an existing "
              "folder and run again", file=sys.stderr)
        return ExitCode.USAGE
    pytest_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, pytest_args = argv[:i], argv[i + 1 :]
    try:
        settings.current()  # a bad TORCHCTS_* value: one line and exit 2, before any command reads it
    except UsageError as exc:
        _error_line(str(exc))
        return ExitCode.USAGE
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.exit(ExitCode.USAGE, f"torchcts: error: {unrecognized(parser, args, unknown)}\n")
    if not getattr(args, "command", None):
        parser.print_help()
        return ExitCode.USAGE
    args.pytest_args = pytest_args
    args.argv = argv
    typed = _typed_paths(argv)
    try:
        return int(args._module.main(args) or ExitCode.OK)
    except ManifestError as exc:
        for problem in exc.problems[:MAX_PROBLEMS]:
            _error_line(f"{exc.source}: {problem}", typed)
        if len(exc.problems) > MAX_PROBLEMS:
            _error_line(f"{exc.source}: ... and {len(exc.problems) - MAX_PROBLEMS} more problems (fix these first)", typed)
        return ExitCode.USAGE
    except UsageError as exc:
        _error_line(str(exc), typed)
        return ExitCode.USAGE
    except BrokenPipeError:  # output piped into `head`: not an error of ours (before OSError, its base)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        return ExitCode.OK
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            return _internal(exc)
        where = f" {exc.filename}" if exc.filename else ""
        _error_line(f"cannot write or read{where}: {exc.strerror or exc}: free space, fix the permissions, "
                    "or pass another --results-dir / --store", typed)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("torchcts: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - an internal error of TorchCTS itself
        return _internal(exc)


# Errors of the user's file system, not of TorchCTS: read-only, full, no permission, a file where a
# folder belongs (and the reverse). They get one line and exit 2.
ENVIRONMENT_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM,
                                errno.ENOTDIR, errno.EISDIR, errno.EFBIG, errno.EEXIST, errno.ENAMETOOLONG})


def _typed_paths(argv: list[str]) -> dict[str, str]:
    """The paths typed on this command line, scrubbed -> as typed (`--results-dir /proc/nope`, also in
    `--flag=PATH` form): an error line names the user's own argument as given (docs/security.md)."""
    from torchcts.results.records.scrub import scrub

    values = [v for a in argv for v in (a, a.partition("=")[2]) if v]
    return {scrub(v): v for v in values if scrub(v) != v}


def _error_line(message: str, typed: dict[str, str] | None = None) -> None:
    """One line, scrubbed (a message may quote a file's content), with the user's typed paths put back."""
    from torchcts.results.records.scrub import scrub
    from torchcts.results.reports.quoting import one_line

    text = scrub(message)
    for scrubbed, raw in (typed or {}).items():
        text = text.replace(scrubbed, raw)
    print(f"torchcts: error: {one_line(text)}", file=sys.stderr)


def _internal(exc: BaseException) -> int:
    import traceback

    traceback.print_exc()
    print(f"torchcts: internal error: {type(exc).__name__}: {exc} (please report it)", file=sys.stderr)
    return ExitCode.INTERNAL


def entry() -> None:
    from torchcts.engine.lean import exit_now

    exit_now(int(main()))  # every exit handler runs; the module teardown is skipped
