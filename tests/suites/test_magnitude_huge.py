"""The magnitude suite past 2^31 elements (cases/suites/magnitude.py: huge/*): gated by the manifest's
resource limits, judged against exact values known without a CPU copy."""

from __future__ import annotations

import json

import torch

from torchcts.cases.suites import magnitude


def test_the_exact_values_match_a_small_tensor_built_the_same_way():
    for n in (1, 250, 251, 252, 1000, 7 * 251 + 3):
        x = magnitude.pattern(n, "cpu")
        assert x.shape == (n,) and torch.equal(x, (torch.arange(n) % magnitude.PERIOD).to(torch.uint8))
        assert int(x.to(torch.int64).sum()) == magnitude.huge_sum(n)
        assert int(torch.count_nonzero(x)) == magnitude.huge_nonzero(n)
    assert magnitude.HUGE > 1 << 31 and all(i < magnitude.HUGE for i in magnitude.HUGE_INDICES)


def test_without_room_in_the_resource_limits_the_cases_say_so(workdir, cli, monkeypatch):
    monkeypatch.setenv("CI", "true")
    assert cli(["run", "--validation", "--device", "cpu", "--case", "magnitude/huge/*", "--no-isolation"]) == 0
    run = next((workdir / "results").glob("2*"))
    records = [json.loads(line) for line in (run / "cases.jsonl").read_text().splitlines()]
    assert {r["id"] for r in records} == {"magnitude/huge/sum", "magnitude/huge/take"}
    for r in records:  # visible, with the fix, never silently dropped
        assert r["status"] == "not_applicable" and "resource_limits.max_tensor_mb >= " in r["message"], r
