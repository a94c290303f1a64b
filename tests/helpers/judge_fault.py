"""A pytest plugin (`-p helpers.judge_fault`) that makes TorchCTS's own judge raise for the case
named by TORCHCTS_TEST_JUDGE_FAULT: a planted harness error, in every process that judges."""

from __future__ import annotations

import os

from torchcts.engine import judge

_CASE = os.environ.get("TORCHCTS_TEST_JUDGE_FAULT", "")
_judge = judge.RecordJudge.__call__


def _faulty(self, record):  # noqa: ANN001, ANN202
    if record.id == _CASE:
        raise RuntimeError("planted judge fault")
    return _judge(self, record)


judge.RecordJudge.__call__ = _faulty  # type: ignore[method-assign]
