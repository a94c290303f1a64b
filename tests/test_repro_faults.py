"""Every planted sim fault: the repro TorchCTS prints for its failing case fails under the fault and
passes without it, run exactly as printed (the standalone script when the case has a builder,
else the `torchcts run` line with its --manifest, --level and --sample): the line and the script set
the fault variable themselves, as the run had it; "without" sets it empty (the script) or drops the
line's `TORCHCTS_SIM_FAULT=...` prefix.

Per fault, a run of its failing case with the fault planted prints the lines; then they run with
the fault planted, and with none. Subprocesses throughout (the sim renames PrivateUse1 for a process).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from test_sim_faults import FAULTS, GROUPS, UNLISTED

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
    "effects": {"softmax_input_scratch": "opinfo/softmax/float32/forward",
                "batch_norm_stats_unchanged": "opinfo/nn.functional.batch_norm/float32/forward",
                "exp_reuses_buffer": "opinfo/exp/float32/forward",
                # an out= destination that is transposed (the out kind's other destinations)
                "neg_out_memory_order": "opinfo/neg/float32/out",
                # a first sample repeated after a call of its shape in another dtype (the whole case)
                "tanh_graph_cached_by_shape": "opinfo/tanh/float32/forward",
                # the subnormals claim (manifest `subnormals`, the sim claims preserve)
                "subnormals_flushed": "subnormals/produce/mul/float32",
                # an index past 2^16 (the magnitude suite)
                "index_select_16bit": "magnitude/index/index_select/float32",
                # a non_blocking upload of a view (the transfers suite)
                "non_blocking_drops_offset": "transfers/to_device/offset/non_blocking/int64"},
    "process": {"mul_complex128_segv": "operators/elementwise/mul/complex128",
                "sub_int16_hang": "operators/elementwise/sub/int16",
                "reduce_float32_segv": "operators/reduction/sum/n1024/float32",
                "out_resize_segv": "out_variants/abs/out/float32"},
}
LINE = re.compile(r"^ {2}[A-Z]+ +(\S+): ")
ACTION = re.compile(r"^ {11}(repro|script): (.*)$")


def test_every_fault_has_a_repro_check():
    # an unlisted fault has no failing case until the input-exploration suite lands (sim/faults_unlisted.py);
    # then its exploring case joins here
    assert {f for g in REPRO_GROUPS.values() for f in g} == set(FAULTS) - UNLISTED


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
    """Run a printed line as a shell would (leading NAME=value words set the environment), with no
    fault planted from outside; `clean`: the environment sets the fault variable empty (no fault)."""
    argv = shlex.split(line)
    env = {k: v for k, v in __import__("os").environ.items() if k != ENV}
    while argv and re.fullmatch(r"[A-Z_]+=.*", argv[0]):
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    assert argv[0] in ("torchcts", "python"), line
    argv = [sys.executable, "-m", "torchcts", *argv[1:]] if argv[0] == "torchcts" else [sys.executable, *argv[1:]]
    env.update({"CI": "true", **({ENV: ""} if clean else {})})
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


FAULT_CASES = {fault: (group, case) for group, faults in REPRO_GROUPS.items() for fault, case in faults.items()}


# The version matrix (scripts/version-matrix) runs two of these on the older PyTorch releases; the
# rest prove the same repro writer, whose logic does not depend on the PyTorch version (main_only).
MATRIX_SAMPLE = {"index_add_ignores_offset", "neg_vector_tail"}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("fault", [pytest.param(f, marks=() if f in MATRIX_SAMPLE else pytest.mark.main_only)
                                   for f in sorted(FAULT_CASES)])
def test_the_printed_repro_fails_under_the_fault_and_passes_without(fault, tmp_path):
    group, case = FAULT_CASES[fault]
    # The faulted run only prints the lines: in-process is enough, except for a crash or a hang.
    how = ["--timeout", "10"] if group == "process" else ["--no-isolation"]
    level = ["--level", "5"] if group in ("opinfo", "effects") else []
    r = run_cli("run", "--device", "sim", "--manifest", str(SIM_MANIFEST), *level, *how, "--case", case,
                cwd=tmp_path, env={ENV: fault})
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    printed = printed_lines(r.stdout).get(case)
    assert printed and "repro" in printed, (case, r.stdout[-3000:])
    # The line plants the fault the run had and names the sim's manifest the way any machine can run it
    assert printed["repro"].startswith(f"{ENV}={fault} torchcts run --device sim --manifest torchcts:sim/manifest.py ")
    if "script" in printed:  # the case has a builder: the standalone script is the repro
        made = as_printed(printed["script"], tmp_path)
        assert made.returncode == 0, made.stdout + made.stderr
        command = "python " + made.stdout.rsplit("run it with: python ", 1)[1].strip()
    else:
        command = printed["repro"]
    broken = as_printed(command, tmp_path)  # as printed: the line or the script sets the fault itself
    assert broken.returncode != 0, (command, broken.stdout[-2000:], broken.stderr[-2000:])
    clean = as_printed(command.removeprefix(f"{ENV}={fault} "), tmp_path, clean=True)
    assert clean.returncode == 0, (command, clean.stdout[-2000:], clean.stderr[-2000:])
