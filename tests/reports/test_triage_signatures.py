"""Triage: normalised signatures and root-cause clusters ranked by the cases they explain."""

from __future__ import annotations

from torchcts.model.record import CaseRecord
from torchcts.results.triage.clusters import clusters, render_markdown, render_text
from torchcts.results.triage.shared_args import sample_features, shared
from torchcts.results.triage.signatures import normalise_message, signature_of

R = CaseRecord.from_json


def err(case_id: str, message: str, op: str, dtype: str = "float32", status: str = "error") -> CaseRecord:
    return R({"id": case_id, "suite": case_id.split("/")[0], "ops": [op], "dtype": dtype, "status": status,
              "message": message, "exception": message.partition(":")[0]})


def missing(op: str, backend: str = "npu") -> str:
    return (f"NotImplementedError: Could not run '{op}' with arguments from the '{backend}' backend. "
            "This could be because the operator doesn't exist for this backend")


def test_normalise_strips_numbers_shapes_addresses_and_quoted_names():
    a = normalise_message("expected size [2, 3] but got torch.Size([4, 5]) at 0x7ffe12 for 'weight' (dim 1)")
    b = normalise_message("expected size [7, 1] but got torch.Size([8]) at 0xabc for 'bias' (dim 0)")
    assert a == b == "expected size <shape> but got <shape> at <addr> for <name> (dim <n>)"
    assert normalise_message("value 1.5e-3 vs -2") == "value <n> vs <n>"


def test_missing_kernel_messages_become_one_cluster_per_operator():
    records = [
        err("opinfo/sub/float32/forward", missing("aten::sub.Tensor"), "aten::sub"),
        err("opinfo/sub/float16/forward", missing("aten::sub.Tensor", "XLA"), "aten::sub", "float16"),
        err("opinfo/rsub/float32/forward", missing("aten::sub.Tensor"), "aten::rsub"),
        err("opinfo/cumsum/float32/forward", missing("aten::cumsum.out"), "aten::cumsum"),
    ]
    found = clusters(records)
    assert [(c.title, c.count) for c in found] == [
        ("missing kernel: aten::sub.Tensor", 3), ("missing kernel: aten::cumsum.out", 1)]
    assert found[0].ops == {"aten::sub": 2, "aten::rsub": 1}
    assert found[0].dtypes == {"float32": 2, "float16": 1}
    assert signature_of(records[0]) == "missing_kernel: aten::sub.Tensor"


def test_same_error_on_different_ops_and_shapes_is_one_cluster_ranked_first():
    records = [
        err(f"opinfo/{op}/float32/forward", f"RuntimeError: Expected all tensors on device npu:{i}, found cpu "
            f"for argument #{i + 1} 'other' of shape [{i}, 3]", f"aten::{op}")
        for i, op in enumerate(["add", "mul", "div"])
    ]
    records.append(err("opinfo/exp/float32/forward", "RuntimeError: kernel timed out after 12 ms", "aten::exp"))
    records.append(R({"id": "x/passed", "status": "passed", "ops": ["aten::neg"]}))
    records.append(R({"id": "x/xfailed", "status": "xfailed", "ops": ["aten::neg"], "message": "RuntimeError: z"}))
    found = clusters(records)
    assert [c.count for c in found] == [3, 1]
    assert found[0].title == ("RuntimeError: Expected all tensors on device npu:<n>, found cpu for argument "
                              "#<n> <name> of shape <shape>")
    assert set(found[0].ops) == {"aten::add", "aten::mul", "aten::div"}


def test_mismatches_split_by_op_and_flaky_kept_apart():
    mism = {"what": "values differ"}
    records = [R(r) for r in [
        {"id": "a/1", "status": "failed", "ops": ["aten::add"], "message": "values differ: 1/4", "mismatch": mism},
        {"id": "a/2", "status": "failed", "ops": ["aten::add"], "message": "values differ: 3/9", "mismatch": mism},
        {"id": "m/1", "status": "failed", "ops": ["aten::mul"], "message": "values differ: 1/4", "mismatch": mism},
        {"id": "n/1", "status": "flaky", "ops": ["aten::neg"], "message": "passed on attempt 2",
         "first_failure": {"status": "error", "signature": "RuntimeError: transient"}},
    ]]
    titles = [(c.title, c.count) for c in clusters(records)]
    assert titles[0] == ("mismatch in aten::add: values differ", 2)
    assert ("mismatch in aten::mul: values differ", 1) in titles
    assert ("flaky (passed on rerun): RuntimeError: transient", 1) in titles


def test_renderings_rank_and_name_the_clusters():
    records = [err(f"opinfo/sub/{d}/forward", missing("aten::sub.Tensor"), "aten::sub", d) for d in ("float32", "int64")]
    text = render_text(records)
    assert "2 failing cases in 1 cluster" in text and "[2 cases] missing kernel: aten::sub.Tensor" in text
    md = "\n".join(render_markdown(records))
    assert "## Triage" in md and "| 2 | missing kernel: aten::sub.Tensor |" in md
    assert render_text([]) == "triage: no failures" and render_markdown([]) == []


def _mism(case_id: str, dtype: str, sample: str, **info) -> CaseRecord:
    return R({"id": case_id, "status": "failed", "ops": ["aten::sum"], "op": "sum", "dtype": dtype, "kind": "forward",
            "message": "values differ: 1/4", "mismatch": {"what": "values differ"},
            "info": {"sample": sample, "sample_index": 0, "op": "sum", **info}})


def test_sample_features_read_kwargs_layouts_and_shapes():
    feats = sample_features("(Tensor[4, 5] float32 strides=(1, 4) offset=2, 1, dim=(0, 1), keepdim=True, "
                            "out=Tensor[0] float32)")
    assert feats["kw keepdim"] == "keepdim=True" and feats["kw dim"] == "dim=(0, 1)"
    assert feats["arg 1"] == "arg 1=1" and feats["input shape"] == "input shape [4, 5]"
    assert {"non-contiguous", "storage offset"} <= set(feats) and "empty" not in feats
    assert "input 0-dim" in sample_features("(Tensor[] float16, Tensor[] float16)")
    assert sample_features("(Tensor[0, 3] int64)")["empty"] == "empty tensor"


def test_each_cluster_names_what_all_its_failures_share():
    records = [_mism("opinfo/sum/bfloat16/forward", "bfloat16", "(Tensor[4, 5] bfloat16 strides=(1, 4), dim=1, keepdim=True)"),
               _mism("opinfo/sum/bfloat16/method", "bfloat16", "(Tensor[3] bfloat16 strides=(2,), keepdim=True, dim=0)"),
               _mism("opinfo/sum/bfloat16/out", "bfloat16", "(Tensor[2, 2] bfloat16 strides=(1, 2), keepdim=True)")]
    (c,) = clusters(records)
    assert set(c.shared) == {"dtype bfloat16", "kind forward", "non-contiguous", "keepdim=True"}
    assert c.to_json()["shared"] == c.shared
    assert "shared by all 3: " in render_text(records) and "keepdim=True" in render_text(records)
    assert "non-contiguous" in "\n".join(render_markdown(records))
    # a hand-written case's details count too; what differs (dim, shape) is left out
    hand = [R({"id": f"operators/elementwise/neg/{d}", "status": "failed", "ops": ["aten::neg"], "dtype": d,
             "kind": "elementwise", "mismatch": {"what": "values differ"}, "info": {"sample": 2, "shape": [33]}})
            for d in ("int8", "float32")]
    assert shared(hand) == ["kind elementwise", "shape=[33]"]
    assert shared(hand[:1]) == []
