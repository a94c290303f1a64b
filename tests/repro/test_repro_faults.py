"""Every planted sim fault: the repro TorchCTS prints for its failing case fails under the fault and
passes without it, run exactly as printed (the standalone script when the case has a builder,
else the `torchcts run` line with its --manifest, --level and --sample): the line and the script set
the fault variable themselves, as the run had it; "without" sets it empty (the script) or drops the
line's `TORCHCTS_SIM_FAULT=...` prefix.

A faulted run prints the lines (one run for a batch of faults that touch disjoint ops, each case
failing by its own fault); then each case's line or script runs with the faults planted, and with
none. The runs and scripts are subprocesses (the sim renames PrivateUse1 for a process); `torchcts
repro`, which writes the script without importing the backend, runs in-process.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers.runs import run_cli, run_typed
from helpers.shared_runs import run_once, session_root
from helpers.sim_fault_groups import FAULTS, GROUPS, UNLISTED

from torchcts.engine.selftest import ENV, SIM_MANIFEST

REPRO_GROUPS: dict[str, dict[str, str]] = {
    **{name: dict(g["caught"]) for name, g in GROUPS.items()},  # type: ignore[call-overload]
    "opinfo": {"max_ignores_nan": "opinfo/max.reduction_no_dim/float32/special_values",
               "mul_noncontig_storage_order": "opinfo/mul/float32/noncontiguous",
               # inside the tolerance: the script judges by the float64 truth as the run did
               "sin_fast_math": "opinfo/sin/float32/forward"},
    # 1-ulp errors in exact results (docs/oracles.md): the script compares with the record's atol 0, rtol 0
    # (bfloat16's forward case calls a lambda, which no standalone script can name: its method case)
    "exact": {"bfloat16_cast_truncates": "opinfo/bfloat16/float32/method", "sort_key_ulp": "opinfo/sort/float32/forward",
              "max_dim_tail_ulp": "opinfo/max.reduction_with_dim/float32/forward"},
    # what a call does besides returning (cases/opinfo/effects.py): an argument after the call (the
    # script compares them), a result a later call overwrote (the whole case: no one-sample script)
    # one form 1 ulp off its twin (cases/opinfo/agree.py): no script compares forms, the repro line reruns the sample
    "agree": {"tanh_inplace_ulp": "opinfo/tanh/float32/agree", "mean_out_reciprocal": "opinfo/mean/float32/agree"},
    "effects": {"softmax_input_scratch": "opinfo/softmax/float32/forward",
                "batch_norm_stats_unchanged": "opinfo/nn.functional.batch_norm/float32/forward",
                "exp_reuses_buffer": "opinfo/exp/float32/forward",
                # an out= destination that is transposed (the out kind's other destinations)
                "neg_out_memory_order": "opinfo/neg/float32/out",
                # the same call twice in deterministic mode, bit for bit (the sim claims deterministic)
                "cumsum_order_alternates": "opinfo/cumsum/float32/forward",
                # a first sample repeated after a call of its shape in another dtype (the whole case)
                "tanh_graph_cached_by_shape": "opinfo/tanh/float32/forward",
                # the subnormals claim (manifest `subnormals`, the sim claims preserve)
                "subnormals_flushed": "subnormals/produce/mul/float32",
                # an index past 2^16 (the magnitude suite)
                "index_select_16bit": "magnitude/index/index_select/float32",
                # a non_blocking upload of a view (the transfers suite)
                "non_blocking_drops_offset": "transfers/to_device/offset/non_blocking/int64"},
    # one fault per input axis (sim/faults_axes.py): the explored sample's repro line and script, the
    # transfers cases' copies of views (each group's faults touch disjoint cases)
    "axes": {"add_host_float64_as_float32": "opinfo/add/float64/explore",
             "remainder_host_divisor_sign_lost": "opinfo/remainder/float64/explore",
             "xlogy_host_operand_as_int": "opinfo/xlogy/float64/explore",
             "mul_host_view_reads_storage_start": "opinfo/mul/float32/explore",
             "argmax_dense_memory_order": "opinfo/argmax/float32/explore"},
    "axes_transfers": {"d2h_non_blocking_drops_offset": "transfers/to_host/offset/float32",
                       "h2d_non_blocking_strided_as_contiguous": "transfers/to_device/step/non_blocking/float32",
                       "copy_to_host_drops_offset": "transfers/copy_into_host/offset/blocking/float32"},
    "process": {"mul_complex128_segv": "operators/elementwise/mul/complex128",
                "sub_int16_hang": "operators/elementwise/sub/int16",
                "reduce_float32_segv": "operators/reduction/sum/n1024/float32",
                "out_resize_segv": "out_variants/abs/out/float32",
                "abs_illegal_address_sticky": "operators/elementwise/abs/float32"},
}
LINE = re.compile(r"^ {2}[A-Z]+ +(\S+): ")
ACTION = re.compile(r"^ {11}(repro|script): (.*)$")


# Wrong only once in many launches (sim/faults_flaky.py): no single run of one case fails, so there is
# no faulted run of one case to print a line; its flaky cases' lines carry --repeat N
# (tests/engine/test_repeat_flaky.py), and the run that counts launches for it is the whole --op run.
REPEAT_ONLY = {n for n, f in FAULTS.items() if f["repeat"]}


def test_every_fault_has_a_repro_check():
    # an unlisted fault has no failing case until the input-exploration suite lands (sim/faults_unlisted.py);
    # then its exploring case joins here
    assert {f for g in REPRO_GROUPS.values() for f in g} == set(FAULTS) - UNLISTED - REPEAT_ONLY


def printed_lines(stdout: str) -> dict[str, dict[str, str]]:
    """case id -> {"repro": line, "script": line} from the scorecard's first failures."""
    out: dict[str, dict[str, str]] = {}
    current = None
    for line in stdout.splitlines():
        m = LINE.match(line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        m = ACTION.match(line)
        if m and current is not None:
            current[m.group(1)] = m.group(2)
    return out


def as_printed(line: str, cwd: Path, clean: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a printed line as a shell would, with no fault planted from outside; `clean`: the
    environment sets the fault variable empty (no fault)."""
    return run_typed(shlex.split(line), cwd, {ENV: ""} if clean else None, unset=(ENV,), timeout=timeout)


FAULT_CASES = {fault: (group, case) for group, faults in REPRO_GROUPS.items() for fault, case in faults.items()}
# Faults planted together in one faulted run print their lines at once (a run costs seconds: torch and
# OpInfo's database imported): a group's faults touch disjoint ops and dtypes (test_sim_faults.py:
# GROUPS proves its own), so each case fails by its own fault. A fault that touches every op
# (subnormals_flushed), and the crashes and hangs (which need isolation), run alone.
ALONE = {"subnormals_flushed", *REPRO_GROUPS["process"]}
BATCH = {fault: fault if fault in ALONE else group for fault, (group, _) in FAULT_CASES.items()}


# The version matrix (scripts/version-matrix) runs two of these on the older PyTorch releases; the
# rest prove the same repro writer, whose logic does not depend on the PyTorch version (main_only).
MATRIX_SAMPLE = {"index_add_ignores_offset", "neg_vector_tail"}


def faulted_run(batch: str, root: Path) -> tuple[Path, str, str]:
    """The batch's faulted run (once per session, whichever worker asks first: helpers/shared_runs.py):
    its folder, stdout, and the fault variable's value."""
    faults = sorted(f for f, b in BATCH.items() if b == batch)
    planted = ",".join(faults)

    def make(cwd: Path) -> str:
        group = FAULT_CASES[faults[0]][0]
        # The faulted run only prints the lines: in-process is enough, except for a crash or a hang.
        how = ["--timeout", "10"] if group == "process" else ["--no-isolation"]
        level = ["--level", "5"] if group in ("opinfo", "effects") else []
        cases = [a for f in faults for a in ("--case", FAULT_CASES[f][1])]
        r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), *level, *how, *cases,
                    cwd=cwd, env={ENV: planted})
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        return r.stdout

    return (*run_once(root, batch, make), planted)


@pytest.fixture(scope="session")
def batches_root(tmp_path_factory) -> Path:
    return session_root(tmp_path_factory, "repro-batches")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("fault", [pytest.param(f, marks=() if f in MATRIX_SAMPLE else pytest.mark.main_only)
                                   for f in sorted(FAULT_CASES)])
def test_the_printed_repro_fails_under_the_fault_and_passes_without(fault, batches_root, cli, capsys, monkeypatch):
    _, case = FAULT_CASES[fault]
    cwd, stdout, planted = faulted_run(BATCH[fault], batches_root)
    printed = printed_lines(stdout).get(case)
    assert printed and "repro" in printed, (case, stdout[-3000:])
    # The line plants the faults the run had and names the sim's manifest the way any machine can run it
    assert printed["repro"].startswith(f"{ENV}={planted} torchcts run --device sim --manifest torchcts:sim/manifest.py ")
    assert fault in planted.split(",")
    if "script" in printed:  # the case has a builder: the standalone script is the repro
        # `torchcts repro` writes the script without importing the backend: in-process, as printed
        monkeypatch.chdir(cwd)
        argv = shlex.split(printed["script"])
        assert argv[:2] == ["torchcts", "repro"], printed["script"]
        capsys.readouterr()
        assert cli(argv[1:]) == 0, capsys.readouterr()
        written = capsys.readouterr().out
        command = "python " + written.rsplit("run it with: python ", 1)[1].strip()
    else:
        command = printed["repro"]
    broken = as_printed(command, cwd)  # as printed: the line or the script sets the fault itself
    assert broken.returncode != 0, (command, broken.stdout[-2000:], broken.stderr[-2000:])
    clean = as_printed(command.removeprefix(f"{ENV}={planted} "), cwd, clean=True)
    assert clean.returncode == 0, (command, clean.stdout[-2000:], clean.stderr[-2000:])
