"""Worker threads (issue 21, engine/threads.py): cores divided among workers, the user's choice kept."""

from __future__ import annotations

import pytest
import torch

from torchcts.engine import threads


@pytest.mark.parametrize(("cores", "workers", "expected"), [(2, 2, 1), (2, 1, 2), (16, 2, 8), (16, 3, 5), (2, 4, 1), (1, 0, 1)])
def test_cores_are_divided_among_workers_at_least_one_each(cores, workers, expected):
    assert threads.per_worker(cores, workers) == expected


def test_a_worker_sets_its_share_unless_the_user_chose_or_one_process_runs_all():
    assert threads.worker_threads(2, env={}, cores=8) == 4
    for name, value in (("OMP_NUM_THREADS", "3"), ("MKL_NUM_THREADS", "1"), ("OMP_WAIT_POLICY", "active")):
        assert threads.worker_threads(2, env={name: value}, cores=8) is None, name
    assert threads.worker_threads(2, env={"OMP_NUM_THREADS": " "}, cores=8) == 4  # blank: not a choice
    assert threads.worker_threads(None, env={}, cores=8) is None  # no xdist: torch's default


def test_export_sets_count_and_passive_wait_before_torch_starts_and_none_leaves_env_alone():
    env: dict[str, str] = {"PATH": "/bin"}
    threads.export(None, env)
    assert env == {"PATH": "/bin"}
    threads.export(3, env)
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3", "OMP_WAIT_POLICY": "PASSIVE"}


def test_apply_sets_torchs_intra_op_threads_and_none_leaves_them():
    before = torch.get_num_threads()
    try:
        threads.apply(None)
        assert torch.get_num_threads() == before
        target = 1 if before != 1 else 2
        threads.apply(target)  # inter-op work has started in this process: that pool stays, no error
        assert torch.get_num_threads() == target == threads.intra_op_threads()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("args", "expected"), [
    ([], None), (["-n", "3"], 3), (["-n3"], 3), (["--numprocesses=4"], 4), (["--numprocesses", "2"], 2),
    (["-n", "2", "-q", "-n", "0"], 0), (["-p", "no:xdist"], 0), (["-n", "many"], None), (["--no-header"], None),
])
def test_worker_count_read_from_pytest_args(args, expected):
    assert threads.workers_in_args(args) == expected


def test_auto_worker_count_means_one_per_core():
    assert threads.workers_in_args(["-n", "auto"]) == threads.available_cores() >= 1


def test_run_json_says_where_the_count_came_from():
    cores = threads.available_cores()
    assert threads.describe(["-n", "2"], env={}) == {
        "per_worker": max(1, cores // 2), "cores": cores, "workers": 2, "source": f"{cores} cores // 2 workers",
        "wait_policy": "PASSIVE"}
    user = threads.describe(["-n", "2"], env={"OMP_NUM_THREADS": "4"})
    assert user["per_worker"] is None and user["source"] == "OMP_NUM_THREADS=4 (set by the user; left as is)"
    assert threads.describe([], env={})["source"].startswith("torch's default")


def test_the_controller_exports_the_workers_threads_for_the_run_and_restores_its_environment():
    """Exported before workers (or the warm-worker server, workers/warm.py) start: OpenMP reads the
    wait policy when torch loads, so a forked worker could not set it itself."""
    env: dict[str, str] = {"KEEP": "1"}
    with threads.exported(["-n", "2"], env):
        assert env["OMP_WAIT_POLICY"] == threads.WAIT_POLICY and env[threads.MARK_VAR] == env["OMP_NUM_THREADS"]
        # the workers see TorchCTS's choice, not the user's, and take its count
        assert threads.user_setting(env) is None
        assert threads.worker_threads(2, env=env, cores=64) == int(env[threads.MARK_VAR])
    assert env == {"KEEP": "1"}
    user = {"OMP_NUM_THREADS": "3"}
    with threads.exported(["-n", "2"], user):
        assert user == {"OMP_NUM_THREADS": "3"}  # the user's choice is left alone
    for args in (["-n", "0"], []):
        with threads.exported(args, env):
            assert env == {"KEEP": "1"}  # one process runs everything: torch's default
