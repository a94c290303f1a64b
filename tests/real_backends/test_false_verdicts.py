"""Issue 48 item 3: no verdict TorchCTS should not give, each found on a real backend, closed as a class.

1. Exploration within PyTorch's own rules: a placed host operand only where PyTorch's device rule
   takes one (host_rule.py: index_add's source, cosine_similarity's x2 and bce_with_logits' target
   are refused, mul's other is not); no in-place call on a self-overlapping input.
2. A CPU reference that is not one (differs from itself, or from a contiguous copy) drops the sample
   instead of failing the device (recheck.py).
3. PyTorch's composite answer, accepted on the functional path, is accepted on out= and in-place too.
4. Claims honoured: a case whose samples hold an unclaimed dtype (polar of float32: complex64) is
   not_claimed; OpInfo's memory-format check follows the channels_last claim.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from helpers.marked_device import marked_device
from torch.testing._internal.opinfo.core import SampleInput

from torchcts.cases.context import CaseContext
from torchcts.cases.explore import host_rule
from torchcts.cases.explore.run import _refused
from torchcts.cases.opinfo import recheck
from torchcts.cases.opinfo import run as opinfo_run
from torchcts.cases.opinfo.run import CallCheck, SkipSample, check_call, check_inplace, check_out, or_composite
from torchcts.cases.opinfo.samples import HostArg, lookup
from torchcts.manifest.templates import validation_manifest
from torchcts.model.case import Case, NotClaimed
from torchcts.oracle.compare import Mismatch, OracleMismatch, assert_matches
from torchcts.oracle.tolerances import Tolerance


def _case(op: str, kind: str = "forward") -> Case:
    return Case(id=f"opinfo/{op}/float32/{kind}", suite="opinfo", level=2, runner="torchcts.cases.opinfo.run:run",
                params={"op": op, "kind": kind, "dtype": "float32"}, dtype="float32", kind=kind)


def _ctx(op: str, kind: str = "forward", **claims: object) -> CaseContext:
    manifest = validation_manifest()
    if claims:
        manifest = dataclasses.replace(manifest, **claims)
    return CaseContext(device=torch.device("cpu"), manifest=manifest, case=_case(op, kind))


# --- 1. exploration within PyTorch's rules ------------------------------------------------------

HOST = HostArg(torch.tensor(2.5))
X, Z, IDX = torch.randn(3), torch.randn(()), torch.zeros((), dtype=torch.long)


@pytest.mark.parametrize(("fn", "sample"), [
    (torch.index_add, SampleInput(Z, args=(0, IDX, HOST))),  # a same-device check (no device_check: NoCheck)
    (torch.index_reduce, SampleInput(Z, args=(0, IDX, HOST, "prod"))),
    (torch.nn.functional.cosine_similarity, SampleInput(Z, args=(HOST,), kwargs={"dim": 0})),  # its clamp_min_.Tensor
    (torch.nn.functional.binary_cross_entropy_with_logits, SampleInput(Z, args=(HOST,))),  # mul_ writes the host tensor
])
def test_a_host_operand_pytorch_refuses_is_refused(fn, sample) -> None:
    if fn is torch.nn.functional.cosine_similarity and "aten::clamp_min_.Tensor" not in _cpu_calls(fn, sample):
        pytest.skip(f"torch {torch.__version__}'s cosine_similarity calls no clamp_min_.Tensor: a host x2 is taken")
    assert host_rule.refusal(fn, sample) is not None


def _cpu_calls(fn, sample: SampleInput) -> set[str]:
    """The aten overloads `fn` dispatches on CPU: which composite path this torch takes (2.7's
    cosine_similarity has another than 2.13's)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: set[str] = set()

    class _Seen(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            overload = "" if func._overloadname == "default" else f".{func._overloadname}"
            seen.add(f"aten::{func._schema.name.split('::')[-1]}{overload}")
            return func(*args, **(kwargs or {}))

    plain = [a.value if isinstance(a, HostArg) else a for a in sample.args]
    with _Seen():
        fn(sample.input, *plain, **sample.kwargs)
    return seen


@pytest.mark.parametrize(("fn", "sample"), [
    (torch.mul, SampleInput(X, args=(HOST,))),  # TensorIterator: a CPU scalar beside device tensors
    (torch.where, SampleInput(X > 0, args=(X, HOST))),
    (torch.lerp, SampleInput(X, args=(X, HOST))),
    (torch.dist, SampleInput(Z, args=(HOST,))),  # a composite whose calls all take it
    (torch.index_add, SampleInput(Z, args=(0, IDX, torch.tensor(1.0)))),  # nothing on the host
])
def test_a_host_operand_pytorch_takes_is_kept(fn, sample) -> None:
    assert host_rule.refusal(fn, sample) is None


def test_exploration_drops_the_placed_samples_pytorch_refuses() -> None:
    """index_add's explored samples with the source on the host were index_add's own refusals on the
    device (pytorch_ocl), recorded as the backend's errors; they are dropped and counted."""
    from torchcts.cases.explore.run import run

    ctx = _ctx("index_add", "explore")
    ctx.case = dataclasses.replace(ctx.case, id="opinfo/index_add/float32/explore")
    ctx.explore = 40
    run(ctx, op="index_add", dtype=torch.float32)
    assert ctx.info["explored"].get("host_refused", 0) > 0, ctx.info["explored"]


def test_no_in_place_call_on_a_self_overlapping_input() -> None:
    """tril_ on a stride-0 self: which write lands last is undefined, CPU's answer is no law."""
    op = lookup("tril")
    expanded = torch.randn(1, 4).expand(4, 4)
    with pytest.raises(SkipSample, match="overlaps itself"):
        check_inplace(_ctx("tril", "inplace"), op, SampleInput(expanded), "elementwise")
    check_inplace(_ctx("tril", "inplace"), op, SampleInput(torch.randn(4, 4)), "elementwise")  # a plain one runs


# --- 2. a reference that is not one -------------------------------------------------------------

def test_median_of_a_stride_0_input_on_cpu_is_no_reference() -> None:
    """CPU's median(dim) of an expanded input differs from its own answer on a contiguous copy (2.13)."""
    x = torch.randn(5, 1, 4).expand(5, 3, 4)
    sample = SampleInput(x, args=(1,))

    def again(contiguous: bool):
        return opinfo_run.reference_call(torch.median, sample, recheck.contiguous if contiguous else None)

    first = opinfo_run.reference(torch.median, sample)
    # garbage: it differs from the contiguous copy's answer, and often from itself too
    assert recheck.unstable(first, again, Tolerance(0.0, 0.0), recheck.strided(sample)) is not None
    plain = SampleInput(torch.randn(5, 3, 4), args=(1,))
    assert recheck.unstable(opinfo_run.reference(torch.median, plain),
                            lambda c: opinfo_run.reference_call(torch.median, plain), Tolerance(0.0, 0.0),
                            recheck.strided(plain)) is None


def test_a_reference_that_differs_from_itself_drops_the_sample_instead_of_failing() -> None:
    """An op whose CPU answer is uninitialised memory (native_group_norm of a mismatched zero batch,
    2.14): every call differs. Before the recheck this was the device's failure."""
    op = lookup("abs")
    garbage = lambda x: x + torch.rand(())  # noqa: E731 - differs on every call, on CPU too
    with pytest.raises(SkipSample, match="no reference: the CPU reference differs from itself"):
        check_call(_ctx("abs"), CallCheck(op, garbage, "elementwise"), SampleInput(torch.randn(8)))


def test_a_stable_reference_keeps_the_devices_failure() -> None:
    def cpu() -> None:
        raise OracleMismatch(Mismatch("differs from CPU"))

    with pytest.raises(OracleMismatch, match="differs from CPU"):
        or_composite(object(), cpu, lambda other: None, None, lambda: None)
    with pytest.raises(SkipSample, match="no reference: unstable"):
        or_composite(object(), cpu, lambda other: None, None, lambda: "unstable")


# --- 3. the composite answer on every path ------------------------------------------------------

ADDR = SampleInput(torch.tensor(0.0), args=(torch.tensor([2.938736e-39]), torch.tensor([-5.877472e-39])),
                   kwargs={"alpha": float("inf")})


def _composite_device(monkeypatch) -> None:
    """CPU playing a device without addr kernels of its own: its calls run addr's composite (NaN
    here, where CPU's fused kernel gives -inf), as pytorch_ocl does."""
    import torchcts.oracle.composite as composite

    monkeypatch.setattr(composite, "routed_to_composite", lambda device: ROUTED)
    plain = opinfo_run.copy_sample

    def copy(sample, device):  # the device's copy (a torch.device; CPU's reference passes "cpu")
        out = plain(sample, device)
        if isinstance(device, torch.device):
            out.input.on_device = True
        return out

    monkeypatch.setattr(opinfo_run, "copy_sample", copy)


ROUTED = frozenset({"addr.default", "addr.out", "addr_.default"})  # pytorch_ocl has no addr kernel of its own


def _on_device(fn):
    def call(x, *args, **kwargs):
        if getattr(x, "on_device", False):
            from torchcts.oracle.composite import _Composed

            with _Composed(ROUTED):
                return fn(x, *args, **kwargs)
        return fn(x, *args, **kwargs)
    return call


_addr = _on_device(torch.addr)


class _Op:
    def __init__(self, fn) -> None:
        self._real, self.op, self.inplace_variant = lookup("addr"), fn, _on_device(torch.Tensor.addr_)

    def __getattr__(self, name: str):
        return getattr(self._real, name)


def test_the_composite_answer_passes_the_out_path_as_it_passes_the_functional_one(monkeypatch) -> None:
    _composite_device(monkeypatch)
    ctx = _ctx("addr")
    check_call(ctx, CallCheck(_Op(_addr), _addr, "elementwise"), ADDR)
    assert ctx.info.get("allowed_answer") == "addr_composite"
    ctx = _ctx("addr", "out")
    check_out(ctx, _Op(_addr), ADDR, "elementwise")  # raised "got nan, expected -inf" before
    assert ctx.info.get("allowed_answer") == "addr_composite"
    ctx = _ctx("addr", "inplace")
    inplace = SampleInput(torch.zeros(1, 1), args=ADDR.args, kwargs=ADDR.kwargs)
    check_inplace(ctx, _Op(_addr), inplace, "elementwise")  # addr_: the rule covers the in-place overload too
    assert ctx.info.get("allowed_answer") == "addr_composite"


def test_a_composite_rule_covers_the_ops_in_place_and_out_overloads() -> None:
    from torchcts.oracle.allowed import composite_rules

    rules = composite_rules()
    assert rules["addr_.default"] == rules["addr.out"] == rules["addr.default"] == "addr_composite"


def test_nested_composites_are_routed_like_the_device_routes_them() -> None:
    """addr.out's composite calls addr: a device without either runs both composites."""
    from torchcts.oracle.composite import _Composed

    out = torch.zeros(1, 1)
    with _Composed(frozenset({"addr.default", "addr.out"})):
        torch.addr(*[ADDR.input, *ADDR.args], out=out, **ADDR.kwargs)
    assert torch.isnan(out).all()


# --- 4. claims ----------------------------------------------------------------------------------

def test_a_case_whose_results_are_of_an_unclaimed_dtype_is_not_claimed() -> None:
    """polar of float32 returns complex64: on a float32-only backend it was an error, not a claim."""
    from torchcts.cases.opinfo.run import run

    floats = {"float32": True}
    with pytest.raises(NotClaimed, match="complex64"):
        run(_ctx("polar", supported_dtypes=floats), op="polar", kind="forward", dtype=torch.float32)
    run(_ctx("polar"), op="polar", kind="forward", dtype=torch.float32)  # claimed: it runs


def test_memory_format_checks_follow_the_channels_last_claim() -> None:
    """A device that ignores memory_format=channels_last fails only where channels_last is claimed."""
    op = lookup("clone")
    sample = SampleInput(torch.randn(2, 3, 4, 5), kwargs={"memory_format": torch.channels_last})
    ignores = lambda x, memory_format: x.clone()  # noqa: E731 - a contiguous result
    expected = x_cl = sample.input.clone(memory_format=torch.channels_last)
    assert not ignores(sample.input, torch.channels_last).is_contiguous(memory_format=torch.channels_last)
    capabilities = dict(validation_manifest().capabilities)
    unclaimed = _ctx("clone", capabilities={**capabilities, "channels_last": False})
    check_call(unclaimed, CallCheck(op, ignores, "elementwise"), sample, expected)
    with pytest.raises(OracleMismatch, match="layout"):
        check_call(_ctx("clone", capabilities={**capabilities, "channels_last": True}),
                   CallCheck(op, ignores, "elementwise"), sample, x_cl)


def test_a_failure_where_cpu_computes_in_an_unclaimed_dtype_is_no_claims_failure() -> None:
    """stft of float32 with return_complex=False gives float32 pairs but computes in complex64: a
    float32-only backend's refusal (pytorch_ocl: 'Unsupported data type:ComplexFloat') is not_claimed."""
    op = lookup("stft")
    sample = SampleInput(torch.randn(100), kwargs={"n_fft": 10, "return_complex": False})

    def refuses(x, **kwargs):
        if getattr(x, "on_device", False):
            raise RuntimeError("Unsupported data type:ComplexFloat")
        return torch.stft(x, **kwargs)

    plain = opinfo_run.copy_sample

    def copy(s, device):
        out = plain(s, device)
        if isinstance(device, torch.device):
            out.input.on_device = True
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(opinfo_run, "copy_sample", copy)
        with pytest.raises(opinfo_run.UnclaimedSample, match="complex64"):
            check_call(_ctx("stft", supported_dtypes={"float32": True}), CallCheck(op, refuses, "elementwise"), sample)
        with pytest.raises(RuntimeError, match="ComplexFloat"):  # claimed: the device's error stands
            check_call(_ctx("stft"), CallCheck(op, refuses, "elementwise"), sample)



def test_a_wrong_answer_computed_through_an_unclaimed_dtype_still_fails() -> None:
    """OpenReg's float32 fft.hfft2 answered float32, off by up to 364, and passed: its wrong samples
    were dropped because CPU computes through complex64. A device that answers in claimed dtypes
    answers for them: only a refusal is excused by an unclaimed intermediate (claimed_if_failing)."""
    op = lookup("fft.hfft2")
    sample = SampleInput(torch.randn(3, 6), kwargs={"s": (3, 10)})
    floats = _ctx("fft.hfft2", supported_dtypes={"float32": True})
    with pytest.MonkeyPatch.context() as mp:
        marked_device(mp, lambda fn, s: fn(s.input, *s.args, **s.kwargs) + 1)
        with pytest.raises(OracleMismatch, match="elements differ"):
            check_call(floats, CallCheck(op, torch.fft.hfft2, "elementwise"), sample)
    check_call(floats, CallCheck(op, torch.fft.hfft2, "elementwise"), sample)



def test_a_backward_whose_forward_is_of_an_unclaimed_dtype_is_not_claimed() -> None:
    """linalg.eig of float32 computes complex64 eigenpairs: its backward (and the explored backward,
    which runs the same check) was pytorch_ocl's error 'Unsupported data type:ComplexFloat', not a claim."""
    from torchcts.cases.opinfo.run import check_backward

    op = lookup("linalg.eig")
    sample = next(iter(op.sample_inputs("cpu", torch.float32, requires_grad=True)))  # its sign-fixing output_process_fn_grad
    with pytest.raises(opinfo_run.UnclaimedSample, match="complex64"):
        check_backward(_ctx("linalg.eig", "backward", supported_dtypes={"float32": True}), op, sample)
    check_backward(_ctx("linalg.eig", "backward"), op, sample)  # claimed: it runs, and agrees with CPU


def _refusing_complex(mp: pytest.MonkeyPatch) -> None:
    """The device refuses what computes in complex64, as pytorch_ocl does ('Unsupported data
    type:ComplexFloat'); CPU copies run as usual."""
    def refuse(fn, sample):
        raise RuntimeError("Unsupported data type:ComplexFloat")

    marked_device(mp, refuse)


def test_every_kind_takes_a_failure_computed_in_an_unclaimed_dtype_as_unclaimed() -> None:
    """irfft of float32 returns float32 but computes in complex64: pytorch_ocl's refusal was not_claimed
    on the forward path but an error on out= (and the explored out=), and hfft's error input (0-dim)
    a 'different exception type' (CPU reaches its IndexError after converting to complex64)."""
    irfft, hfft = lookup("fft.irfft"), lookup("fft.hfft")
    sample = SampleInput(torch.randn(5, 6), kwargs={"n": 10, "dim": 1})
    error_input = next(e for e in hfft.error_inputs("cpu") if e.sample_input.input.dim() == 0)
    floats = {"float32": True}
    with pytest.MonkeyPatch.context() as mp:
        _refusing_complex(mp)
        with pytest.raises(opinfo_run.UnclaimedSample, match="complex64"):
            check_out(_ctx("fft.irfft", "out", supported_dtypes=floats), irfft, sample, "elementwise")
        with pytest.raises(RuntimeError, match="ComplexFloat"):  # claimed: the device's error stands
            check_out(_ctx("fft.irfft", "out"), irfft, sample, "elementwise")
        ctx = _ctx("fft.hfft", "errors", supported_dtypes=floats)
        with pytest.MonkeyPatch.context() as one:
            one.setattr(opinfo_run, "each_sample", lambda ctx, op, dtype, body, **kw: body(error_input))
            with pytest.raises(opinfo_run.UnclaimedSample, match="complex64"):
                opinfo_run.run_errors(ctx, hfft, torch.float32)
            with pytest.raises(OracleMismatch, match="different exception type"):
                opinfo_run.run_errors(_ctx("fft.hfft", "errors"), hfft, torch.float32)


def test_the_agree_kind_takes_a_failure_computed_in_an_unclaimed_dtype_as_unclaimed() -> None:
    """fft.hfft of float32 computes in complex64: on pytorch_ocl (float32 claimed) every other kind was
    not_claimed, but the agree kind (issue 50) was an error, 'Unsupported data type:ComplexFloat'."""
    from torchcts.cases.opinfo import agree

    hfft = lookup("fft.hfft")
    sample = SampleInput(torch.randn(5, 6, 7), kwargs={"n": 10, "dim": 1, "norm": "ortho"})
    with pytest.MonkeyPatch.context() as mp:
        _refusing_complex(mp)
        mp.setattr(agree, "copy_sample", opinfo_run.copy_sample)
        mp.setattr(agree, "call", opinfo_run.call)
        unclaimed = agree._Agree(_ctx("fft.hfft", "agree", supported_dtypes={"float32": True}), hfft, torch.float32)
        with pytest.raises(opinfo_run.UnclaimedSample, match="complex64"):
            unclaimed.sample(sample)
        claimed = agree._Agree(_ctx("fft.hfft", "agree"), hfft, torch.float32)
        with pytest.raises(RuntimeError, match="ComplexFloat"):  # claimed: the device's error stands
            claimed.sample(sample)


def test_a_write_through_a_view_that_overlaps_itself_is_not_checked() -> None:
    """as_strided_scatter explored to strides (8, 1, 2, 1) for size (2, 2, 2, 2) writes two src elements
    to one place: pytorch_ocl's order differed from CPU's in one element (bool), a failure of nothing."""
    op = lookup("as_strided_scatter")
    overlapping = SampleInput(torch.zeros(16), args=(torch.randn(2, 2, 2, 2), (2, 2, 2, 2), (8, 1, 2, 1), 0))
    distinct = SampleInput(torch.zeros(16), args=(torch.randn(2, 2, 2, 2), (2, 2, 2, 2), (8, 4, 2, 1), 0))

    def never(*args, **kwargs):
        raise AssertionError("the op ran: an undefined answer was compared")

    for check in (lambda s: check_call(_ctx("as_strided_scatter"), CallCheck(op, never, "elementwise"), s),
                  lambda s: check_out(_ctx("as_strided_scatter", "out"), op, s, "elementwise")):
        with pytest.raises(SkipSample, match="overlaps itself"):
            check(overlapping)
    check_call(_ctx("as_strided_scatter"), CallCheck(op, op.op, "elementwise"), distinct)  # a proper view: checked
    assert opinfo_run.view_overlaps((2, 2), (1, 1)) and not opinfo_run.view_overlaps((2, 3), (1, 2))
    assert opinfo_run.view_overlaps((3,), (0,)) and not opinfo_run.view_overlaps((1, 5), (0, 1))

# --- 5. a CPU reference that dies ---------------------------------------------------------------

_DIE = """
import faulthandler, sys, time, torch
from torch.testing._internal.opinfo.core import SampleInput
from torchcts.cases.opinfo.run import call, reference_call
log = open(sys.argv[1], "a")
log.write("\\n@@torchcts-case %f torchcts::opinfo/sdpa/float32/explore\\n" % time.time()); log.flush()
faulthandler.enable(file=log, all_threads=False)
q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 0, 8)  # no keys: CPU's flash attention divides by zero
sample = SampleInput(q, args=(k, k))
fn = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
reference_call(fn, sample) if sys.argv[2] == "reference" else call(fn, sample)
"""


@pytest.mark.parametrize("where", ["reference", "device"])
def test_a_cpu_reference_that_dies_is_never_the_devices_crash(tmp_path, where) -> None:
    """SIGFPE in _scaled_dot_product_flash_attention_for_cpu (a zero-size dimension) while TorchCTS
    computes CPU's reference: rerun alone, it dies there again, so it is pending (no reference, no
    verdict), not crashed. A death in the reference that does not recur alone is the device's
    (pytorch_ocl's uint8 tanh killed a worker while CPU computed: recorded pending, a false clean),
    and the same death in the device's call stays the device's crash."""
    import os
    import subprocess
    import sys

    from torchcts.workers.attribution import Alone, attribute, suspicion
    from torchcts.workers.isolation import child_death_record, log_path, read_log

    log = log_path(tmp_path, "gw0")
    proc = subprocess.run([sys.executable, "-c", _DIE, str(log), where], capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == -8, proc.stderr[-2000:]  # SIGFPE
    case = _case("nn.functional.scaled_dot_product_attention", "explore")
    nodeid = f"torchcts::{case.id}"
    log.write_text(log.read_text().replace("opinfo/sdpa/float32/explore", case.id))
    record = child_death_record(case, tmp_path, "gw0", nodeid, {"signal": "SIGFPE"})
    assert record.status == "crashed", record.message  # until the run alone settles it
    found = suspicion(record, read_log(tmp_path, "gw0"), nodeid)
    if where == "device":
        assert not (record.attribution or {}).get("reference") and found is None, record.message
        return
    assert "run.py:reference_call" in record.message and found is not None, record.message
    died_again = Alone(case.id, died={"signal": "SIGFPE"}, stderr="", reference="run.py:reference_call")
    settled = attribute([found], {case.id: died_again}, {case.id: case})
    assert [(r.status, r.attribution["belongs_to"]) for r in settled] == [("pending", None)], settled[0].message
    survived = Alone(case.id, died={"signal": "SIGSEGV"}, stderr="Fatal Python error: Segmentation fault\n")
    settled = attribute([found], {case.id: survived}, {case.id: case})
    assert [(r.status, r.attribution["belongs_to"]) for r in settled] == [("crashed", case.id)], settled[0].message
    assert "the device's crash" in settled[0].message
    assert settled[0].attribution["reference"] == "run.py:reference_call"


_DEEP = _DIE.replace("reference_call(fn, sample) if sys.argv[2] == \"reference\" else call(fn, sample)", """
def deep(n):
    return deep(n - 1) if n else reference_call(fn, sample)
deep(40)""").replace("log = open(sys.argv[1], \"a\")", "log = sys.stderr").replace("log.write(", "str(")


def test_a_death_in_cpus_reference_alone_is_read_from_its_whole_stderr(tmp_path, monkeypatch) -> None:
    """The run alone keeps 20 lines of stderr, and faulthandler's header sits above a deep stack: CPU's
    own death was read as the device's. The frame is found in the whole stderr (attribution._alone)."""
    import sys

    from torchcts.results.triage.crash_frames import reference_death
    from torchcts.workers.attribution import _alone

    (tmp_path / "deepdie.py").write_text(_DEEP)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    alone = _alone(tmp_path, "opinfo/x/float32/forward", tmp_path / "a", 120.0, None, "deepdie")
    assert alone.died.get("signal") == "SIGFPE", alone.stderr
    assert alone.reference == "run.py:reference_call", alone.stderr
    assert reference_death(alone.stderr) is None  # the tail kept for the record: the header is above it


def test_exploration_puts_no_nan_or_inf_where_ieee754_is_not_claimed() -> None:
    """pow(-inf, 0.5), gelu(-inf), max(nan) on pytorch_ocl (ieee754 not claimed) were failures of a
    claim never made; with the claim the same samples run."""
    from torchcts.cases.explore.run import run

    capabilities = dict(validation_manifest().capabilities)
    ctx = _ctx("abs", "explore", capabilities={**capabilities, "ieee754": False})
    ctx.case = dataclasses.replace(ctx.case, id="opinfo/abs/float32/explore")
    ctx.explore = 12
    run(ctx, op="abs", dtype=torch.float32)
    assert ctx.info["explored"].get("not_ieee754", 0) > 0 and ctx.info["explored"]["checks"] > 0, ctx.info
    claimed = _ctx("abs", "explore")
    claimed.case, claimed.explore = ctx.case, 12
    run(claimed, op="abs", dtype=torch.float32)
    assert "not_ieee754" not in claimed.info["explored"]


def test_an_error_input_of_an_unclaimed_dtype_is_not_the_devices_error() -> None:
    """masked_fill's error input passes a complex64 value: pytorch_ocl refused copying it to the device
    ('Unsupported data type:ComplexFloat'), an error of a dtype float32 alone does not claim."""
    from torchcts.cases.opinfo.run import run

    ctx = _ctx("masked_fill", "errors", supported_dtypes={"float32": True})
    try:
        run(ctx, op="masked_fill", kind="errors", dtype=torch.float32)
    except NotClaimed:
        pass
    assert any("unclaimed dtype complex" in why for why in ctx.info.get("samples_skipped", {})), ctx.info


def test_a_non_blocking_copy_to_the_host_needs_the_pinned_memory_claim() -> None:
    """_to_copy pins a non_blocking device-to-host result: pytorch_ocl (no pinned allocator, not
    claimed) raised NotImplementedError in transfers/to_host, a claim it never made."""
    from torchcts.cases.registry import suite_cases

    downloads = [c for c in suite_cases("transfers") if c.id.startswith("transfers/to_host/")]
    assert downloads and all("pinned_memory" in c.requires for c in downloads)


def test_an_opinfo_sample_copying_to_the_host_without_blocking_needs_the_pinned_memory_claim() -> None:
    """OpInfo's `to` samples include to('cpu', float64, True, True): pytorch_ocl (float64 claimed, no
    pinned allocator) failed to/float64 forward, method, backward, noncontiguous, agree and explore with
    'implement getPinnedMemoryAllocator', a claim it never made."""
    to = lookup("to")
    x = torch.randn(3)
    asking = [SampleInput(x, args=("cpu", torch.float64, True, True)),
              SampleInput(x, args=(torch.device("cpu"),), kwargs={"non_blocking": True})]
    plain = [SampleInput(x, args=("cpu", torch.float64, False, True)), SampleInput(x, args=(torch.float64, True))]
    unclaimed = _ctx("to", capabilities={**validation_manifest().capabilities, "pinned_memory": False})
    opinfo_run.require_pinned(unclaimed, to, asking[0])  # on the CPU itself nothing is copied across or pinned
    unclaimed.device = torch.device("meta")  # any other device: its copy to the host pins
    claimed = _ctx("to", capabilities={**validation_manifest().capabilities, "pinned_memory": True})
    claimed.device = torch.device("meta")
    for sample in asking:
        with pytest.raises(opinfo_run.UnclaimedSample, match="pinned_memory"):
            opinfo_run.require_pinned(unclaimed, to, sample)
        opinfo_run.require_pinned(claimed, to, sample)  # claimed: it runs
    for sample in plain:  # blocking, or to the device: nothing pinned
        opinfo_run.require_pinned(unclaimed, to, sample)
    stats = {"dropped": 0}
    assert _refused(unclaimed, to, asking[0], None, stats, 4) and stats == {"dropped": 4, "pinned_memory": 1}


def test_item_of_many_elements_asks_the_defined_call() -> None:
    """query_mutation/item demanded CPU's answer of aten::_local_scalar_dense on 12 elements (its first:
    CPU's kernel reads without checking); pytorch_ocl's refuses, in every dtype. item() checks and
    raises on both: error parity, the defined question."""
    from torchcts.cases.suites import query_mutation

    ctx = _ctx("item")
    query_mutation.item(ctx, torch.float32)
    assert ctx.info["checks"] == {"item": "checked", "many": "raises"}


def test_show_skips_counts_a_runtime_not_claimed_under_its_dtype() -> None:
    """`polar/float32` found at run time to need complex64 is counted under complex64, the claim that runs it."""
    from torchcts.model.record import CaseRecord
    from torchcts.results.reports.skips import summarize

    record = CaseRecord.from_case(_case("polar"))
    record.status = "not_claimed"
    record.message = "no sample holds only claimed dtypes: 9 x a tensor of the unclaimed dtype complex64"
    assert summarize([record]).by_dtype == {"complex64": 1}


def test_an_autogenerated_out_overload_is_not_required_to_refuse_an_out_on_another_device() -> None:
    """ones_like.out and zeros_like.out are autogenerated (the functional result copied into out, across
    devices too): pytorch_ocl did as PyTorch does and was failed for not raising."""
    from torchcts.cases.explore.host_rule import autogenerated

    assert autogenerated("ones_like.out") and autogenerated("zeros_like.out")
    assert not autogenerated("abs.out") and not autogenerated("add.out")  # their kernels check out's device
    assert not autogenerated("no_such_op.out")  # a name the yaml lacks keeps the check (never fails open)


def test_an_out_variant_whose_result_is_of_an_unclaimed_dtype_is_not_claimed() -> None:
    """fft_rfft.out of float32 writes complex64: pytorch_ocl's 'Unsupported data type:ComplexFloat' was an error."""
    from torchcts.cases.suites.out_variants import OUT_OPS, out_case

    case = next(k for k, v in OUT_OPS.items() if v[0] == "fft_rfft")
    with pytest.raises(NotClaimed, match="complex64"):
        out_case(_ctx("fft_rfft", supported_dtypes={"float32": True}), torch.float32, case)
    out_case(_ctx("fft_rfft"), torch.float32, case)  # claimed: it runs (CPU against CPU)


def test_dtype_cases_honour_the_dtype_claims_of_their_results() -> None:
    """dtypes/scalar/complex (float32 + 1j) and default_dtype's complex factory made complex64 on a
    float32-only pytorch_ocl: errors of a dtype it never claimed."""
    from torchcts.cases.suites.dtypes import default_dtype, scalar_operands

    floats = {"float32": True, "int64": True, "bool": True}
    with pytest.raises(NotClaimed, match="complex64"):
        scalar_operands(_ctx("add", supported_dtypes=floats), torch.float32, "complex")
    scalar_operands(_ctx("add", supported_dtypes=floats), torch.float32, "float")  # float32 result: runs
    ctx = _ctx("zeros", supported_dtypes=floats)
    default_dtype(ctx)
    assert ctx.info["not_claimed"] == ["tensor complex"]


def test_an_out_variant_computed_in_an_unclaimed_dtype_may_be_refused_not_answered_wrong() -> None:
    """fft_irfft.out of float32 returns float32 but computes in complex64: pytorch_ocl's refusal is
    not_claimed, a wrong float32 answer fails (as OpenReg's hfft2 should have), a right one passes."""
    from torchcts.cases.suites import out_variants

    case = next(k for k, v in out_variants.OUT_OPS.items() if v[0] == "fft_irfft")
    plain_inputs, plain_resolve = out_variants._inputs, out_variants.resolve

    def inputs(dtype, n, dev, *rest):  # the device's inputs (cpu:0 here) carry a mark
        made = plain_inputs(dtype, n, dev, *rest)
        for t in made:
            t.on_device = dev.index == 0
        return made

    def answering(how):
        def resolve(name, overload):
            fn = plain_resolve(name, overload)

            def device_fn(*args, **kwargs):
                return how(fn, *args, **kwargs) if getattr(args[0], "on_device", False) else fn(*args, **kwargs)
            return device_fn
        return resolve

    def refuse(fn, *args, **kwargs):
        raise RuntimeError("Unsupported data type:ComplexFloat")

    def off(fn, *args, **kwargs):
        result = fn(*args, **kwargs)
        result.add_(1)
        return result

    def ctx():
        made = _ctx("fft_irfft", supported_dtypes={"float32": True})
        made.device = torch.device("cpu", 0)
        return made

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(out_variants, "_inputs", inputs)
        mp.setattr(out_variants, "resolve", answering(refuse))
        with pytest.raises(NotClaimed, match="raised RuntimeError where CPU computes in the unclaimed dtype complex64"):
            out_variants.out_case(ctx(), torch.float32, case)
        mp.setattr(out_variants, "resolve", answering(off))
        with pytest.raises(OracleMismatch):
            out_variants.out_case(ctx(), torch.float32, case)
        mp.setattr(out_variants, "resolve", answering(lambda fn, *a, **k: fn(*a, **k)))
        out_variants.out_case(ctx(), torch.float32, case)


def test_a_composite_is_followed_through_the_key_it_has_a_kernel_for() -> None:
    """as_strided_scatter's composite is CompositeExplicitAutogradNonFunctional: calling its empty
    CompositeExplicitAutograd slot segfaulted torch 2.15.0 (the training template's level-8 slice)."""
    aten = torch.ops.aten
    assert host_rule._composite_key(aten.as_strided_scatter.default) == \
        torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional
    for op in (aten.as_strided_scatter.default, aten.mul.Tensor, aten.dist.default):
        key = host_rule._composite_key(op)
        assert key is None or torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), key.name), op


# --- 6. a case blames only the ops it tests -----------------------------------------------------

# What a case may run on the device besides the ops it declares: moving data, allocating, reading
# a result, and views (metadata only). Anything else is an op the case does not test, whose gap would
# be reported against the op it does (pytorch_ocl: `linspace` errored on the list index its endpoint
# check ran on the device).
TRANSPORT = {"aten::_to_copy", "aten::copy_", "aten::lift_fresh", "aten::empty", "aten::empty_strided",
             "aten::_local_scalar_dense", "aten::alias", "aten::detach", "aten::view", "aten::t",
             "aten::transpose", "aten::slice", "aten::select", "aten::unsqueeze", "aten::expand"}


def test_operator_cases_run_on_the_device_only_the_ops_they_declare(tmp_path) -> None:
    """Each core and aliasing case of the operators suite, run on the sim (where a device op is told
    apart from CPU work): every overload it dispatched there is one it declares, or transport."""
    from helpers.runs import latest_run, records, run_cli

    from torchcts.cases.registry import suite_cases

    ran = run_cli("run", "--device", "sim", "--manifest", "torchcts:sim/manifest.py", "--no-isolation",
                  "--case", "operators/core/*/float32", "--case", "operators/aliasing/inplace/*/float32",
                  "--case", "operators/aliasing/view_of_view/float32", "--case", "operators/aliasing/detach/float32",
                  cwd=tmp_path, timeout=600)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    declared = {c.id: {op.split(".")[0] for op in c.ops} for c in suite_cases("operators")}
    got = records(latest_run(tmp_path))
    assert len(got) > 25, len(got)
    extra = {r["id"]: sorted(op for op in r["dispatched"] if op.split(".")[0] not in declared[r["id"]] | TRANSPORT)
             for r in got}
    assert not {k: v for k, v in extra.items() if v}, extra


# --- 7. a shrunk find is the same failure, on the device -----------------------------------------

def test_a_shrunk_find_keeps_the_device_and_what_differs() -> None:
    """pytorch_ocl: full(10, 0.5, dtype=bool, device=ocl) gave False where CPU gives True; the shrinker
    dropped `device=`, so the 'find' became full(10, False) on the CPU, reported as 'output on the wrong
    device' (a mismatch like any other). It now keeps `device` and shrinks only while the same thing differs."""
    from torchcts.cases.explore.run import outcome
    from torchcts.cases.explore.shrink import candidates, shrink

    sample = SampleInput((10,), args=(0.5,), kwargs={"dtype": torch.bool, "device": "cpu"})
    labels = [label for label, _ in candidates(sample)]
    assert "drop dtype" in labels and "drop device" not in labels

    def check(s):  # the device's bug needs dtype=bool; without device= the result is elsewhere
        what = "values differ" if "dtype" in s.kwargs else "output on the wrong device"
        raise OracleMismatch(Mismatch(what))

    assert outcome(check, sample) == "mismatch"
    assert outcome(check, sample, detailed=True) == "mismatch: values differ"
    kept = shrink(sample, lambda s: outcome(check, s, detailed=True) == "mismatch: values differ").sample
    assert kept.kwargs["dtype"] is torch.bool


def test_an_explored_answer_of_nan_or_inf_needs_the_ieee754_claim() -> None:
    """pytorch_ocl (ieee754 not claimed): gradient of int64 explored to a zero spacing, CPU's answer
    NaN (0/0), the device's 0: a failure of IEEE semantics the manifest does not promise."""
    from torchcts.cases.explore import run as explore_run

    op = lookup("div", "no_rounding_mode")
    zero = SampleInput(torch.zeros(3, dtype=torch.long), args=(torch.zeros(3, dtype=torch.long),))
    finite = SampleInput(torch.ones(3, dtype=torch.long), args=(torch.full((3,), 2),))

    def differs(sample):  # the device answers 0 everywhere
        expected = torch.div(sample.input, *sample.args)
        assert_matches(torch.zeros_like(expected), expected, Tolerance(atol=1e-5, rtol=1.3e-6))

    capabilities = dict(validation_manifest().capabilities)
    unclaimed = _ctx("div", "explore", capabilities={**capabilities, "ieee754": False})
    checks = explore_run.variants(unclaimed, op, torch.int64)
    assert explore_run.outcome(checks["forward"], zero) is None  # a right device still agrees
    wrapped = explore_run._within_ieee754(op, differs)
    assert explore_run.outcome(wrapped, zero) == "skip"
    assert explore_run.outcome(wrapped, finite) == "mismatch"  # a finite answer is still demanded
    claimed = _ctx("div", "explore", capabilities={**capabilities, "ieee754": True})
    assert explore_run.variants(claimed, op, torch.int64)["forward"].__name__ == "<lambda>"  # not wrapped
    assert checks["forward"].__name__ == "checked"


def test_a_nan_or_inf_answer_demands_nothing_where_ieee754_is_not_claimed() -> None:
    """pytorch_ocl (ieee754 not claimed): dtypes/promotion/div/bool-bool failed on True / False = inf
    (the device: 1.0), an IEEE 754 answer the manifest never promised; a finite answer is still demanded."""
    capabilities = dict(validation_manifest().capabilities)
    unclaimed = _ctx("div", capabilities={**capabilities, "ieee754": False})
    claimed = _ctx("div", capabilities={**capabilities, "ieee754": True})
    expected = torch.tensor([float("inf"), float("nan"), 0.5])
    unclaimed.assert_close(torch.tensor([1.0, 0.0, 0.5]), expected)
    assert unclaimed.info["not_ieee754"] == 2
    with pytest.raises(OracleMismatch):
        unclaimed.assert_close(torch.tensor([1.0, 0.0, 0.25]), expected)  # the finite answer is wrong
    with pytest.raises(OracleMismatch):
        claimed.assert_close(torch.tensor([1.0, 0.0, 0.5]), expected)


def test_query_predicates_ask_a_channels_last_layout_only_where_it_is_claimed(monkeypatch) -> None:
    """pytorch_ocl keeps tensors contiguous (channels_last not claimed): query_mutation/predicates failed
    on is_contiguous of a channels_last tensor, True where CPU says False."""
    from torchcts.cases.suites import query_mutation

    asked: dict[str, object] = {}
    monkeypatch.setattr(query_mutation, "mirror", lambda ctx, checks: asked.update(checks))
    capabilities = dict(validation_manifest().capabilities)
    for claimed in (False, True):
        asked.clear()
        query_mutation.predicates(_ctx("is_contiguous", capabilities={**capabilities, "channels_last": claimed}),
                                  torch.float32)
        answers = asked["predicates"](torch.device("cpu"))
        assert ("channels_last" in answers) is claimed and len(answers["is_contiguous"]) == 2
