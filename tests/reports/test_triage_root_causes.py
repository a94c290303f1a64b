"""One root cause, one cluster (issue 48 item 4): triage groups failures across ops by what they
share, each cluster with the count of cases it blocks, largest first. The messages are pytorch_ocl's
(level 2, float32): its device-index bug read as 12+ clusters and a 0-dim result returned as [1] as
one per op."""

from __future__ import annotations

from torchcts.model.record import CaseRecord
from torchcts.results.triage.clusters import clusters, render_text
from torchcts.results.triage.root_causes import device_index_type, message_shape
from torchcts.results.triage.signatures import signature_of


def _err(i: str, message: str) -> CaseRecord:
    return CaseRecord.from_json({"id": f"opinfo/{i}/float32/explore", "suite": "opinfo", "status": "error",
                                 "op": i, "dtype": "float32", "exception": "RuntimeError", "message": message})


def _shape(i: str, got: list[int], expected: list[int]) -> CaseRecord:
    return CaseRecord.from_json({"id": f"opinfo/{i}/float32/forward", "suite": "opinfo", "status": "failed", "op": i,
                                 "dtype": "float32", "message": "shape mismatch",
                                 "mismatch": {"what": "shape mismatch", "extra": {"actual": got, "expected": expected}}})


def _values(i: str) -> CaseRecord:
    return CaseRecord.from_json({"id": f"opinfo/{i}/float32/forward", "suite": "opinfo", "status": "failed", "op": i,
                                 "dtype": "float32", "message": "values differ", "mismatch": {"what": "values differ"}})


DEVICE_INDEX = [
    _err("permute_copy", "RuntimeError: Expected out tensor to have device ocl:0, but got ocl instead"),
    _err("hann", "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, ocl:0 and ocl!"),
    _err("nanmean", "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
                    "ocl and ocl:0!"),
    _err("cummax", "RuntimeError: expected device ocl:0 but found ocl"),
    _err("dot", "RuntimeError: dot: Expected the output and input tensors to be on the same device, but got the output "
                "tensor on ocl, the 'input' tensor on ocl:0, and the 'other' tensor on ocl:0"),
    _err("take_along_dim", "RuntimeError: Expected tensor to have ocl:0 Device, but got tensor with ocl Device"),
]


def test_the_device_index_bug_is_one_cluster_whatever_the_message():
    found = clusters(DEVICE_INDEX + [_err("cosine_similarity", "RuntimeError: Expected all tensors to be on the same "
                                                               "device, but found at least two devices, ocl:0 and cpu!")])
    assert [c.count for c in found] == [6, 1]  # a CPU operand is another cause
    assert found[0].title.startswith("device index: one device named both 'ocl' and 'ocl:N'")
    assert device_index_type("Failed ref == ys[i].shape() at /src/pointwise.cpp:60") is None
    assert device_index_type("found at least two devices, cuda:0 and cpu!") is None
    assert signature_of(DEVICE_INDEX[0]) != signature_of(DEVICE_INDEX[3])  # the ledger's signatures stay precise


def test_structural_mismatches_cluster_across_ops_values_stay_per_op():
    records = [_shape("abs", [1], []), _shape("sigmoid", [1], []), _shape("relu", [1], []),
               _shape("kthvalue", [0], [5, 5]), _shape("median", [0], []), _values("tril"), _values("logit")]
    found = clusters(records)
    titles = {c.title: c.count for c in found}
    assert titles["mismatch: shape mismatch: got [1], expected []"] == 3
    assert titles["mismatch: shape mismatch: got an empty [0] result where another shape was expected"] == 2
    assert titles["mismatch in tril: values differ"] == 1 and titles["mismatch in logit: values differ"] == 1
    assert [c.count for c in found] == sorted((c.count for c in found), reverse=True)  # largest first
    assert "[3 cases] mismatch: shape mismatch: got [1], expected []" in render_text(records)


def test_a_check_raised_from_many_ops_or_dtypes_is_one_message_shape():
    assert message_shape("RuntimeError: all.dims: output must be on the same device as input") == \
        message_shape("RuntimeError: any.dims: output must be on the same device as input")
    assert message_shape("RuntimeError: quantile() out tensor must be on the same device") == \
        "RuntimeError: <op>: out tensor must be on the same device"
    assert message_shape("RuntimeError: Unsupported data type:ComplexFloat") == \
        message_shape("RuntimeError: Unsupported data type:UInt64") == "RuntimeError: Unsupported data type:<dtype>"
    assert message_shape("RuntimeError: Invalid matrix size") == "RuntimeError: Invalid matrix size"


def _out(i: str, what: str, got: list[int]) -> CaseRecord:
    return CaseRecord.from_json({"id": f"opinfo/{i}/float32/out", "suite": "opinfo", "status": "failed", "op": i,
                                 "dtype": "float32", "message": what,
                                 "mismatch": {"what": what, "extra": {"actual": got, "expected": [20, 20]}}})


def test_out_not_resized_is_one_cluster_on_every_op():
    resized = "out= into a resized destination (shape [{}], strides [1], offset 0): shape mismatch"
    records = [_out("sin", resized.format(1), [1]), _out("add", resized.format(3), [3]),
               _out("where", resized.format(1), [1]), _out("cumsum", resized.format(1), [2, 2]),
               _out("abs", "out= into a offset destination (shape [20, 20], strides [20, 1], offset 3): values differ",
                    [20, 20])]
    titles = {c.title: c.count for c in clusters(records)}
    assert titles["mismatch: out= into a resized destination: it kept its shape (the backend does not resize out=)"] == 3
    assert titles["mismatch: out= into a resized destination: shape mismatch"] == 1  # resized, to the wrong shape
    assert titles["mismatch: out= into a offset destination: values differ"] == 1


def test_a_mismatch_naming_the_device_both_ways_joins_the_device_index_cluster():
    """The root cause comes before the mismatch's own cluster: a result on `ocl` where CPU's answer is
    moved to `ocl:0` is the same device-index bug as the errors, not one structural cluster per op."""
    mismatch = CaseRecord.from_json({
        "id": "opinfo/new_zeros/float32/forward", "suite": "opinfo", "status": "failed", "op": "new_zeros",
        "dtype": "float32", "message": "device mismatch: got ocl, expected ocl:0",
        "mismatch": {"what": "device mismatch: got ocl, expected ocl:0"}})
    found = clusters(DEVICE_INDEX + [mismatch, _values("tril")])
    assert [c.count for c in found] == [7, 1]
    assert found[0].title.startswith("device index:") and found[0].ops["new_zeros"] == 1
