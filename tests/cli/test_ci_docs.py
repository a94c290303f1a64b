"""docs/ci.md's examples cannot rot: their YAML is parsed and checked, and every `torchcts` command
line in them runs in a small form (cpu, `--level 1 --op add --dtype float32`) with the engine's
shard variables set; the GitLab one end to end (two shards for real, then the fan-in merge)."""

from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

import pytest
from helpers.paths import REPO
from helpers.runs import records, run_cli

from torchcts.cli.common import selection_from_args
from torchcts.cli.main import build_parser
from torchcts.engine.shard import COUNT_VAR
from torchcts.results.records import rundir

DOC = REPO / "docs" / "ci.md"
SMALL = ["--op", "add", "--dtype", "float32"]


def blocks() -> dict[str, str]:
    """The YAML examples by engine."""
    out = {}
    for text in re.findall(r"```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        engine = "github" if "jobs:" in text else "gitlab" if "parallel:" in text else "kubernetes"
        assert engine not in out, f"two {engine} examples"
        out[engine] = text
    assert set(out) == {"github", "gitlab", "kubernetes"}
    return out


def commands(text: str) -> dict[str, str]:
    """The `torchcts run` and `torchcts merge` lines of an example, as written."""
    found = {m.group(2): m.group(1) for m in re.finditer(r"(torchcts (run|merge)\b[^\n\"']*)", text)}
    assert set(found) == {"run", "merge"}, found
    return found


def shards(engine: str, text: str) -> tuple[int, list[dict[str, str]]]:
    """The shard count and, per shard, the variables its engine sets (GitHub: the matrix value)."""
    if engine == "github":
        values = [int(v) for v in re.search(r"shard: \[([\d, ]+)\]", text).group(1).split(",")]
        return len(values), [{"matrix.shard": str(v)} for v in values]
    if engine == "gitlab":
        n = int(re.search(r"parallel: (\d+)", text).group(1))
        return n, [{"CI_NODE_INDEX": str(i), "CI_NODE_TOTAL": str(n)} for i in range(1, n + 1)]
    n = int(re.search(r"completions: (\d+)", text).group(1))
    count = re.search(rf"name: {COUNT_VAR}\n\s+value: \"(\d+)\"", text).group(1)
    assert int(count) == n, f"{COUNT_VAR} must equal completions"
    return n, [{"JOB_COMPLETION_INDEX": str(i), COUNT_VAR: count} for i in range(n)]


def expand(line: str, env: dict[str, str]) -> str:
    """The engine's substitution: ${{ matrix.shard }} (GitHub) and $VAR (GitLab's shell, bash -c)."""
    line = re.sub(r"\$\{\{\s*matrix\.shard\s*\}\}", lambda m: env["matrix.shard"], line)
    return re.sub(r"\$(\w+)", lambda m: env[m.group(1)], line)


def small_run(line: str, root: Path) -> list[str]:
    """A run line on cpu at level 1 for add/float32, its results folder under `root`."""
    args = shlex.split(line)[1:]
    args[args.index("--device") + 1] = "cpu"
    args[args.index("--level") + 1] = "1"
    where = args.index("--results-dir") + 1
    args[where] = str(root / args[where].lstrip("/"))
    return [*args, *SMALL]


def test_examples_are_valid_yaml_with_upload_on_failure_and_a_fan_in() -> None:
    import yaml  # pyyaml is in the [test] extra: a missing one fails here, never skips
    ex = {k: list(yaml.safe_load_all(v)) for k, v in blocks().items()}
    (gh,) = ex["github"]
    steps = gh["jobs"]["shard"]["steps"]
    assert gh["jobs"]["shard"]["strategy"]["fail-fast"] is False
    assert any(s.get("uses", "").startswith("actions/upload-artifact") and s.get("if") == "always()" for s in steps)
    assert gh["jobs"]["merge"]["needs"] == "shard" and gh["jobs"]["merge"]["if"] == "always()"
    (gl,) = ex["gitlab"]
    assert gl["torchcts"]["artifacts"]["when"] == "always" and gl["torchcts"]["parallel"] >= 2
    assert gl["torchcts-merge"]["when"] == "always" and gl["torchcts-merge"]["needs"] == ["torchcts"]
    shard_job, merge_job = ex["kubernetes"]
    assert shard_job["spec"]["completionMode"] == "Indexed" and shard_job["kind"] == merge_job["kind"] == "Job"
    mounts = [c["volumeMounts"][0]["mountPath"] for j in (shard_job, merge_job)
              for c in j["spec"]["template"]["spec"]["containers"]]
    assert mounts == ["/results", "/results"]  # the shards' results outlive their pods


@pytest.mark.parametrize("engine", ["github", "gitlab", "kubernetes"])
def test_each_shard_line_resolves_its_shard_and_together_they_cover_the_selection(engine, tmp_path, monkeypatch):
    from torchcts.cases.registry import iter_cases
    from torchcts.engine.selection import select
    from torchcts.manifest.templates import cpu_manifest

    text = blocks()[engine]
    lines = commands(text)
    n, envs = shards(engine, text)
    cases = list(iter_cases())
    parser = build_parser()
    kept: list[str] = []
    folders = []
    for i, env in enumerate(envs, start=1):
        for var in ("CI_NODE_INDEX", "CI_NODE_TOTAL", "JOB_COMPLETION_INDEX", COUNT_VAR):
            monkeypatch.delenv(var, raising=False)
        for var, value in env.items():
            if var != "matrix.shard":
                monkeypatch.setenv(var, value)
        args = parser.parse_args(small_run(expand(lines["run"], env), tmp_path))
        selection = selection_from_args(args)
        assert selection.shard == (i, n)
        kept += [c.id for c in select(cases, cpu_manifest(), selection).to_run]
        folders.append(Path(args.results_dir))
    whole = parser.parse_args(["run", "--device", "cpu", "--level", "1", *SMALL])
    assert sorted(kept) == sorted(c.id for c in select(cases, cpu_manifest(), selection_from_args(whole)).to_run)
    # the fan-in line merges exactly the shards' folders, and writes elsewhere
    merge = parser.parse_args(shlex.split(lines["merge"])[1:])
    (pattern,) = merge.runs
    assert all(fnmatch.fnmatch(f.name, Path(pattern).name) for f in folders) and len(set(folders)) == n
    assert not fnmatch.fnmatch(Path(merge.results_dir).name, Path(pattern).name)


def test_gitlab_example_end_to_end(tmp_path, cli, monkeypatch):
    """Two shards of the GitLab job for real (fewer than the example's four, to stay fast), then its
    fan-in line: one merged run holding every case of the selection."""
    text = blocks()["gitlab"]
    lines = commands(text)
    page = tmp_path / "step-summary.md"  # GitHub's GITHUB_STEP_SUMMARY, checked here on the same runs
    for i in (1, 2):
        env = {"CI_NODE_INDEX": str(i), "CI_NODE_TOTAL": "2", "GITHUB_STEP_SUMMARY": str(page)}
        args = small_run(expand(lines["run"], env), Path("."))
        r = run_cli(*args, "--no-isolation", "--", "-q", "-p", "no:warnings", cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"torchcts: shard {i}/2 (GitLab" in r.stderr
    assert page.read_text().count("# TorchCTS run ") == 2  # each run appended its summary.md
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(page))
    merge = [str(p) for p in sorted(tmp_path.glob("results/shard-*"))]
    pattern = shlex.split(lines["merge"])
    assert pattern[2] == "results/shard-*" and len(merge) == 2
    assert cli([*pattern[1:2], *merge, *pattern[3:]]) == 0
    merged = rundir.latest_run(tmp_path / "merged")
    assert merged is not None
    ran = sorted(r["id"] for r in records(merged) if r["status"] == "passed")
    whole = run_request_ids(["run", "--device", "cpu", "--level", "1", *SMALL])
    assert ran == whole and ran, ran
    assert page.read_text().count("# TorchCTS run ") == 3 and merged.name in page.read_text()


def run_request_ids(argv: list[str]) -> list[str]:
    from torchcts.cli.common import run_spec
    from torchcts.engine.setup import prepare

    return sorted(c.id for c in prepare(run_spec(build_parser().parse_args(argv))).result.to_run)


def test_step_summary_is_capped_and_never_fails_the_run(tmp_path, capsys):
    from torchcts.results.reports.step_summary import LIMIT_BYTES, append_step_summary

    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.md").write_text("# TorchCTS run r\n" + "| row |\n" * (LIMIT_BYTES // 4))
    page = tmp_path / "page.md"
    assert not append_step_summary(run, {})  # not on GitHub: nothing written
    assert append_step_summary(run, {"GITHUB_STEP_SUMMARY": str(page)})
    text = page.read_text()
    assert len(text.encode()) <= LIMIT_BYTES + 200 and "cut at 512 KiB" in text and text.startswith("# TorchCTS run r")
    assert not append_step_summary(run, {"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "such" / "dir.md")})
    assert "warning: cannot append the summary" in capsys.readouterr().err


@pytest.mark.parametrize(("env", "count", "want"), [
    ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4"}, None, (1, 4)),  # GitLab counts from 1
    ({"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "4"}, None, (4, 4)),
    ({"JOB_COMPLETION_INDEX": "0"}, 3, (1, 3)),  # Kubernetes counts from 0
    ({"JOB_COMPLETION_INDEX": "2", COUNT_VAR: "3"}, None, (3, 3)),
    ({"JOB_COMPLETION_INDEX": "1", COUNT_VAR: "9"}, 2, (2, 2)),  # the flag wins over the variable
])
def test_shard_auto_reads_the_engines_variables(env, count, want):
    from torchcts.engine.shard import shard_from_env

    assert shard_from_env(env, count)[:2] == want


@pytest.mark.parametrize(("env", "count", "message"), [
    ({}, None, "--shard auto found no shard variables"),
    ({"CI_NODE_INDEX": "2"}, None, "CI_NODE_TOTAL is not"),
    ({"CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"}, None, "is not one of 4 shards"),
    ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, None, "(counted from 1)"),
    ({"JOB_COMPLETION_INDEX": "3"}, 3, "is not one of 3 shards (--shard-count)"),
    ({"JOB_COMPLETION_INDEX": "0"}, None, "pass --shard-count N"),
    ({"JOB_COMPLETION_INDEX": "x", COUNT_VAR: "2"}, None, "is not a whole number"),
])
def test_shard_auto_errors_name_the_fix(env, count, message):
    from torchcts.engine.shard import shard_from_env
    from torchcts.errors import UsageError

    with pytest.raises(UsageError, match=re.escape(message)):
        shard_from_env(env, count)


def test_shard_count_only_with_auto(workdir, cli, capsys, monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert cli(["show-skips", "--device", "cpu", "--shard", "1/2", "--shard-count", "2"]) == 2
    assert "--shard-count only counts shards for --shard auto" in capsys.readouterr().err
    monkeypatch.delenv("CI_NODE_INDEX", raising=False)
    monkeypatch.delenv("JOB_COMPLETION_INDEX", raising=False)
    assert cli(["show-skips", "--device", "cpu", "--shard", "auto"]) == 2
    assert "found no shard variables" in capsys.readouterr().err
