"""issue 30 item 6, the newcomer's rough edges: merge, install and the counts a user reads side by side."""

from __future__ import annotations

import json

from test_foundation_devices import _one_error_line
from test_hostile_inputs import fake_run


def _shards(workdir, n: int = 2) -> None:
    for i in range(1, n + 1):
        d = fake_run(workdir, f"s{i}", [{"id": f"a/{i}", "status": "passed"}])
        spec = json.loads((d / "run.json").read_text())
        spec["selection"] = {"shard": [i, n]}
        (d / "run.json").write_text(json.dumps(spec))


def test_merge_says_the_same_run_was_given_twice(workdir, cli, capsys):
    _shards(workdir)
    assert cli(["merge", "s1", "s1"]) == 2
    line = _one_error_line(capsys)
    assert "the same run given twice: s1 (as 's1' and 's1')" in line and "at least two" not in line
    assert cli(["merge", "s1", "results/s1", "s2"]) == 2
    assert "the same run given twice: s1 (as 's1' and 'results/s1')" in _one_error_line(capsys)
    # `results/*` also names `results/latest` (here s2): counted once, as before
    assert cli(["merge", "results/s1", "results/s2", "results/latest"]) == 0
    assert cli(["merge", "s1"]) == 2
    assert "merge needs at least two shard runs" in _one_error_line(capsys)
