"""Flags shared by several commands, and the run-intent recorded without paths."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchcts import settings
from torchcts.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from torchcts.engine.spec import RunSpec
    from torchcts.model.selection import Selection


def folder_arg(value: str) -> str:
    """A folder flag's value: an empty one would silently mean the working folder (run folders and a
    `latest` written among the user's files), so it is a usage error."""
    if not value.strip() or "\0" in value:
        raise argparse.ArgumentTypeError("an empty folder name: pass a folder, e.g. results")
    return value


def add_manifest_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", metavar="PATH",
                   help="manifest file (default: manifest.py, torchcts.toml or pyproject.toml here)")


def add_selection_args(p: argparse.ArgumentParser) -> None:
    """Selection flags of `run` and `show-skips` (README.md, "Commands")."""
    p.add_argument("--device", help="runtime device: cpu, cuda, mps, xpu or a PrivateUse1 name")
    add_manifest_arg(p)
    p.add_argument("--suite", action="append", default=[], metavar="S", help="suite to run (repeatable)")
    p.add_argument("--op", action="append", default=[], metavar="NAME", help="OpInfo name, aten name or glob (repeatable)")
    p.add_argument("--dtype", action="append", default=[], metavar="DT", help="dtype such as float32 (repeatable)")
    lv = p.add_mutually_exclusive_group()
    lv.add_argument("--level", type=int, metavar="N", help="run levels 1..N (default: the manifest's semantic_level)")
    lv.add_argument("--level-exact", type=int, metavar="N", help="run level N only")
    lv.add_argument("--level-range", metavar="A:B", help="run levels A..B")
    p.add_argument("--case", action="append", default=[], metavar="ID", help="case id or glob (repeatable)")
    p.add_argument("--max-samples", type=int, metavar="N", help="cap on OpInfo samples per case")
    p.add_argument("--sample", type=int, metavar="N", help="run only OpInfo sample index N (from a failure's repro)")
    p.add_argument("--shard", metavar="I/N", help="run shard I of N; auto: from GitLab's CI_NODE_INDEX/CI_NODE_TOTAL "
                   "or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (docs/ci.md)")
    p.add_argument("--shard-count", type=int, metavar="N",
                   help="with --shard auto on a Kubernetes Indexed Job: the number of shards (or TORCHCTS_SHARD_COUNT)")
    p.add_argument("--shard-durations", metavar="RUN", help="balance shards by the case durations of an earlier run")
    p.add_argument("--validation", action="store_true", help="check the harness: forces cpu and a broad fixed claim set")
    add_results_dir_arg(p, "where run folders go (default: results)")


def add_results_dir_arg(p: argparse.ArgumentParser, text: str | None = None) -> None:
    """`--results-dir DIR`, every command's; its default is settings.py's, the one place it is named."""
    p.add_argument("--results-dir", default=settings.RESULTS_DIR, metavar="DIR", type=folder_arg, help=text)


def run_spec(args: argparse.Namespace) -> RunSpec:
    """The checked spec of `run` and `show-skips`: every flag error is raised here, as UsageError, once.
    Flags only `run` has (--timeout, --rerun-failures, --no-isolation, --warm) default for `show-skips`."""
    import math

    from torchcts.engine.spec import RunSpec

    timeout = getattr(args, "timeout", None)  # `run` only
    if timeout is not None and (not math.isfinite(timeout) or timeout < 0):
        raise UsageError(f"--timeout must be 0 (no limit) or a positive, finite number of seconds, not {timeout}")
    require_device(args)
    rerun_failures = getattr(args, "rerun_failures", 0)  # `run` only
    if rerun_failures < 0:
        raise UsageError("--rerun-failures must be 0 or a positive number of reruns")
    repeat = getattr(args, "repeat", 1)  # `run` only
    from torchcts.results.reports.repeat_rate import MAX_REPEAT

    if not 1 <= repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat must be a whole number of runs per case from 1 to {MAX_REPEAT}, not {repeat}")
    crash_budget = crash_budget_from_args(args)
    selection = selection_from_args(args)
    explore, corpus = explore_from_args(args)
    results_dir = Path(args.results_dir)
    if args.command == "run":  # the folder it will write to, before the run builds anything
        from torchcts.results.records.rundir import check_results_root

        check_results_root(results_dir)
    return RunSpec(
        device_arg=args.device,
        manifest_arg=args.manifest,
        selection=selection,
        validation=bool(args.validation),
        strict_expectations=bool(getattr(args, "strict_expectations", False)),
        rerun_failures=rerun_failures,
        repeat=repeat,
        timeout_s=timeout or None,
        crash_budget=crash_budget,
        isolation=not getattr(args, "no_isolation", False),
        warm=getattr(args, "warm", None),
        results_dir=results_dir,
        pytest_args=list(getattr(args, "pytest_args", None) or []),
        command=command_intent(args.command, list(getattr(args, "argv", None) or [])),
        explore=explore,
        corpus=corpus,
    )


def crash_budget_from_args(args: argparse.Namespace) -> int | None:
    """`--crash-budget N` (N >= 1), None with `--no-crash-budget`, else the default (`run` only)."""
    from torchcts.workers.crash_budget import DEFAULT_LIMIT

    limit, off = getattr(args, "crash_budget", None), getattr(args, "no_crash_budget", False)
    if off and limit is not None:
        raise UsageError("--crash-budget and --no-crash-budget contradict each other: pass one")
    if limit is not None and limit < 1:
        raise UsageError(f"--crash-budget must be a positive number of crashes, not {limit} "
                         "(--no-crash-budget runs every case)")
    return None if off else DEFAULT_LIMIT if limit is None else limit


def explore_from_args(args: argparse.Namespace) -> tuple[int | None, str | None]:
    """`run`'s --explore N (None: the level's default) and --corpus DIR, checked."""
    from torchcts.cases.explore.budget import MAX_DEPTH

    explore = getattr(args, "explore", None)
    if explore is not None and not 0 <= explore <= MAX_DEPTH:
        raise UsageError(f"--explore must be 0 (off) to {MAX_DEPTH} explored samples per case, not {explore}")
    corpus = getattr(args, "corpus", None)
    if corpus is not None and Path(corpus).exists() and not Path(corpus).is_dir():
        raise UsageError(f"--corpus {Path(corpus).name}: not a folder (the corpus is a folder of JSON files)")
    return explore, corpus


def selection_from_args(args: argparse.Namespace) -> Selection:
    from torchcts.engine.selection import parse_level_range
    from torchcts.levels import check_level
    from torchcts.manifest.schema import dtype_name
    from torchcts.model.selection import Selection

    check_level("--level", args.level)
    check_level("--level-exact", args.level_exact)
    dtypes = []
    for d in args.dtype:
        name = dtype_name(d)
        if name is None:
            from torchcts.manifest.schema import DTYPES
            from torchcts.manifest.validate import suggest

            raise UsageError(f"unknown dtype '{d}' for --dtype" + suggest(d.removeprefix("torch."), DTYPES))
        dtypes.append(name)
    if args.max_samples is not None and args.max_samples < 1:
        raise UsageError("--max-samples must be a positive integer")
    if getattr(args, "sample", None) is not None and args.sample < 0:
        raise UsageError("--sample must be a sample index >= 0")
    check_suite_names(args.suite)
    return Selection(
        suites=list(args.suite),
        ops=list(args.op),
        dtypes=dtypes,
        cases=list(args.case),
        level=args.level,
        level_exact=args.level_exact,
        level_range=parse_level_range(args.level_range) if args.level_range else None,
        max_samples=args.max_samples,
        sample=getattr(args, "sample", None),
        shard=shard_from_args(args),
        shard_durations=_durations(args),
    )


def shard_from_args(args: argparse.Namespace) -> tuple[int, int] | None:
    """`--shard I/N`, or `--shard auto` read from the CI engine's variables (engine/shard.py)."""
    from torchcts.engine.selection import parse_shard

    count = getattr(args, "shard_count", None)
    if count is not None and args.shard != "auto":
        raise UsageError("--shard-count only counts shards for --shard auto: pass --shard auto with it, or --shard I/N")
    if count is not None and count < 1:
        raise UsageError("--shard-count must be a positive number of shards")
    if args.shard != "auto":
        return parse_shard(args.shard) if args.shard else None
    from torchcts.engine.shard import shard_from_env

    index, total, source = shard_from_env(os.environ, count)
    print(f"torchcts: shard {index}/{total} ({source})", file=sys.stderr)
    return index, total


def _durations(args: argparse.Namespace) -> dict[str, float] | None:
    if not getattr(args, "shard_durations", None):
        return None
    if not args.shard:
        raise UsageError("--shard-durations only balances shards: pass --shard I/N with it")
    from torchcts.engine.shard import durations_of
    from torchcts.results.records.rundir import resolve_run

    return durations_of(resolve_run(args.shard_durations, Path(args.results_dir)))


def non_interactive() -> bool:
    return not settings.interactive()


def require_device(args: argparse.Namespace) -> None:
    from torchcts.backends.devices import reject_rocm_name, split_device_index

    if args.device:
        args.device = split_device_index(args.device)  # `ocl:0` is the manifest's `ocl`
    reject_rocm_name(args.device)  # before the manifest's device is compared with it
    if args.validation:
        return
    if not args.device:
        named = manifest_device(args.manifest)
        if args.command == "show-skips":  # it only reads the claims: the manifest's device is the one meant
            if named:
                args.device = named
                return
            raise UsageError("no --device given and no manifest here names one: pass --device D (e.g. "
                             "--device cuda), --manifest PATH or --validation")
        fix = f"the manifest names '{named}': add --device {named}" if named else "pass e.g. --device cuda"
        if non_interactive():
            raise UsageError(f"--device is required in a non-interactive run (CI set or no TTY); {fix}")
        raise UsageError(f"no --device given: {fix} (or --validation)")


def manifest_device(path: str | None) -> str | None:
    """The device_name of the manifest a run would load (None when there is none or it does not load),
    for the missing --device error."""
    from torchcts.errors import ManifestError
    from torchcts.manifest.load import find_manifest, load_manifest

    if path is None and find_manifest() is None:
        return None
    try:
        return load_manifest(path).device_name
    except (ManifestError, UsageError, OSError):
        return None


_PATH_FLAGS = {"--manifest", "--results-dir", "--store", "--output", "-o", "--run", "--shard-durations"}


def command_intent(command: str, argv: list[str]) -> list[str]:
    """The command's arguments with every path reduced to its base name (no absolute paths)."""
    out = [command]
    for i, arg in enumerate(argv):
        if arg == command and i == 0:
            continue
        flag, eq, value = arg.partition("=")
        if i > 0 and argv[i - 1] in _PATH_FLAGS or os.path.isabs(arg):
            out.append(Path(arg).name)
        elif eq and flag in _PATH_FLAGS:
            out.append(f"{flag}={Path(value).name}")
        else:
            out.append(arg)
    return out


def check_suite_names(names: list[str]) -> None:
    """UsageError naming the first --suite value that is no suite, with the closest one."""
    from torchcts.cases.registry import KNOWN_SUITE_NAMES

    for s in names:
        if s not in KNOWN_SUITE_NAMES:
            raise UsageError(f"unknown suite '{s}' for --suite"
                             + did_you_mean(s, KNOWN_SUITE_NAMES, f"known: {', '.join(KNOWN_SUITE_NAMES)}"))
