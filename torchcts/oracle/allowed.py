"""Allowed answers: where PyTorch itself permits more than one answer, the oracle accepts the set.

CPU is the oracle of values, but not every property of CPU's answer is the law: PyTorch's own
composite kernels (what a backend without a kernel of its own runs) and its own test expectations
allow other answers in a few places. Each rule here names what it covers (op, output or argument,
condition), the answers it accepts, the reason, and the PyTorch source that produces or documents
the other answer; docs/oracles.md ("Allowed answers") lists them. Every rule is narrow: a rule
never opens a comparison beyond the answers PyTorch gives itself.

Four kinds, each consulted where a comparison would otherwise fail or a call would be wrong:

- `OutputRule`: an output's layout (shape, dtype) PyTorch leaves open under a condition, accepted
  by `oracle/compare.py: tensor_mismatch` through `output_alternatives` (values still compared
  wherever both answers have elements);
- `ErrorTypeRule`: the exception type of an OpInfo error input, where OpInfo's error inputs expect
  another type on non-CPU devices than on CPU (`cases/opinfo/run.py: run_errors`);
- `HostArgument`: a tensor argument PyTorch requires on the CPU whatever the device, kept there by
  the OpInfo suite and the generated suite when they move a call to the device;
- `OutCastRule`: an out= of another dtype that CPU's kernel rejects and PyTorch's composite kernel
  fills with the safely cast result (`cases/suites/out_variants.py`'s wrong_dtype check);
- `CompositeRule`: an op whose CompositeExplicitAutograd kernel answers otherwise than CPU's fused
  kernel on some inputs (non-finite, extreme, a zero variance with eps 0): for a device whose
  dispatch key has no kernel of its own for it, the dispatcher runs that composite, so its answer
  (computed on CPU, `oracle/composite.py`) is accepted besides CPU's (`cases/opinfo/run.py`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import torch

__all__ = ["RULES", "AllowedLookup", "Alternative", "CompositeRule", "ErrorTypeRule", "HostArgument", "OutCastRule",
           "OutputRule", "accepted_exception", "composite_rules", "host_arguments", "out_cast_allowed",
           "output_alternatives"]


@dataclass(frozen=True)
class Alternative:
    """An output layout a rule accepts besides CPU's; `rule` names it in the case's record."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    rule: str

    def matches(self, t: torch.Tensor) -> bool:
        return tuple(t.shape) == self.shape and t.dtype == self.dtype


@dataclass(frozen=True)
class OutputRule:
    """Outputs (positions in the op's result tuple) whose layout PyTorch leaves open when `when`
    holds for the op's first input; `alternative(input)` is the other (shape, dtype) PyTorch gives."""

    name: str
    ops: frozenset[str]  # OpInfo names and aten packet names of the op
    outputs: tuple[int, ...]
    when: Callable[[torch.Tensor], bool]
    alternative: Callable[[torch.Tensor], tuple[tuple[int, ...], torch.dtype]]
    reason: str
    source: str


@dataclass(frozen=True)
class ErrorTypeRule:
    """An error input's exception: CPU's type, or the type (with its message regex) OpInfo's error
    inputs expect on a device that is not CPU, where that differs from what they expect on CPU."""

    name: str
    reason: str
    source: str


@dataclass(frozen=True)
class HostArgument:
    """A tensor argument (by schema name) PyTorch requires on the CPU for every device."""

    name: str
    op: str  # aten packet name (also the OpInfo name where one exists)
    argument: str  # the argument's name in the aten schema
    reason: str
    source: str


@dataclass(frozen=True)
class OutCastRule:
    """out= overloads whose CPU kernel rejects an out= of a dtype the result can be safely cast to
    (torch.can_cast), where PyTorch's composite kernel writes the cast result: either answer."""

    name: str
    overloads: frozenset[str]  # "packet.overload"
    reason: str
    source: str


@dataclass(frozen=True)
class CompositeRule:
    """aten overloads ("packet.overload") whose CompositeExplicitAutograd kernel is an allowed answer
    for a device that has no kernel of its own for them (the dispatcher's choice, never CPU's)."""

    name: str
    overloads: frozenset[str]
    reason: str
    source: str


Rule = OutputRule | ErrorTypeRule | HostArgument | OutCastRule | CompositeRule


def _empty_low_precision(x: torch.Tensor) -> bool:
    return x.numel() == 0 and x.dtype in (torch.float16, torch.bfloat16)


def _composite_layer_norm_stats(x: torch.Tensor) -> tuple[tuple[int, ...], torch.dtype]:
    return tuple(x.shape), torch.promote_types(x.dtype, torch.float32)


def host_argument_ops() -> frozenset[str]:
    """The aten packets with an argument PyTorch keeps on the CPU for every device (HostArgument)."""
    return frozenset(r.op for r in RULES if isinstance(r, HostArgument))


RULES: tuple[Rule, ...] = (
    OutputRule(
        name="layer_norm_empty_stats",
        ops=frozenset({"native_layer_norm"}),
        outputs=(1, 2),
        when=_empty_low_precision,
        alternative=_composite_layer_norm_stats,
        reason="for an empty input, native_layer_norm's mean and rstd hold no statistic; PyTorch's composite "
               "kernel returns them as empty_like(input) promoted to float32, CPU's fused kernel as the "
               "input dtype in the statistics' shape: both are PyTorch's answer (no values either way)",
        source="aten/src/ATen/native/layer_norm.cpp: math_native_layer_norm (input.numel() == 0 branch) "
               "vs layer_norm_cpu",
    ),
    ErrorTypeRule(
        name="opinfo_error_type_per_device",
        reason="OpInfo's error inputs (PyTorch's own tests) expect some errors to be raised with another "
               "exception type on non-CPU devices than on CPU (narrow_copy's out-of-range dim: IndexError, "
               "CPU's narrow_copy_dense_cpu_out raises RuntimeError); a backend may raise either, the "
               "other only with the message OpInfo expects",
        source="torch/testing/_internal/common_methods_invocations.py: error_inputs_* branching on "
               "torch.device(device).type == 'cpu' (generated for the 'meta' device as any non-CPU device)",
    ),
    OutCastRule(
        name="reduction_out_safe_cast",
        overloads=frozenset({"all.dims_out", "any.dims_out"}),
        reason="PyTorch's out= rule lets a result be written to an out= of a dtype it can be safely cast to "
               "(torch.can_cast); CPU's all/any kernels accept only bool (or uint8) outs and raise, "
               "PyTorch's composite all.dims_out/any.dims_out (what a backend without the kernel runs) "
               "computes the result and copies it into out: raising and writing the cast result are both "
               "PyTorch's answer",
        source="docs/source/tensor_attributes.rst (type promotion: out= casting) and "
               "ATen's CompositeExplicitAutograd all_dims_out_default / any_dims_out_default vs the structured "
               "CPU kernels ('all only supports bool tensor for result')",
    ),
    CompositeRule(
        name="addr_composite",
        overloads=frozenset({"addr.default", "addr.out"}),
        reason="math_addr computes beta * self + alpha * outer(vec1, vec2) as separate products: an outer product "
               "that underflows to -0 times alpha = inf gives NaN where CPU's fused addr kernel gives -inf",
        source="aten/src/ATen/native/LinearAlgebra.cpp: math_addr (CompositeExplicitAutograd) vs addr_kernel (CPU)",
    ),
    CompositeRule(
        name="layer_norm_composite",
        overloads=frozenset({"native_layer_norm.default"}),
        reason="math_native_layer_norm computes mean and variance with var_mean: on rows of equal values with "
               "eps = 0 it gives 0 where CPU's Welford kernel gives NaN, and on rows past FLT_MAX / n or holding "
               "-inf it gives -inf where CPU gives NaN",
        source="aten/src/ATen/native/layer_norm.cpp: math_native_layer_norm (CompositeExplicitAutograd) vs "
               "layer_norm_cpu (Welford, aten/src/ATen/native/cpu/layer_norm_kernel.cpp)",
    ),
    CompositeRule(
        name="group_norm_composite",
        overloads=frozenset({"native_group_norm.default"}),
        reason="math_group_norm reshapes to a batch norm over groups: on groups of equal values with eps = 0 it "
               "gives 0 where CPU's fused group norm kernel gives NaN",
        source="aten/src/ATen/native/group_norm.cpp: math_group_norm (CompositeExplicitAutograd) vs "
               "GroupNormKernelImpl (aten/src/ATen/native/cpu/group_norm_kernel.cpp)",
    ),
    HostArgument(
        name="tensor_split_indices_on_host",
        op="tensor_split",
        argument="tensor_indices_or_sections",
        reason="torch.tensor_split documents a tensor indices_or_sections as 'a one-dimensional long tensor on "
               "the CPU' (its sizes are read on the host)",
        source="torch/_torch_docs.py: tensor_split",
    ),
    HostArgument(
        name="randint_like_high_on_host",
        op="randint_like",
        argument="high",
        reason="randint_like's tensor high is read as a host scalar: its kernel checks 'high must be a "
               "scalar tensor and on CPU' on every device, so a device tensor high is an error by PyTorch's design",
        source="ATen's randint_like.Tensor kernels (RuntimeError 'high must be a scalar tensor and on CPU', "
               "raised for a device tensor high on every device type)",
    ),
    HostArgument(
        name="pack_padded_sequence_lengths_on_host",
        op="_pack_padded_sequence",
        argument="lengths",
        reason="pack_padded_sequence's lengths must be on the CPU if a tensor (torch.nn.utils.rnn docs); its "
               "kernel checks \"'lengths' argument should be a 1D CPU int64 tensor\" on every device",
        source="torch/nn/utils/rnn.py: pack_padded_sequence; ATen's PackedSequence.cpp checkLongTensor",
    ),
    HostArgument(
        name="pack_padded_sequence_batch_sizes_out_on_host",
        op="_pack_padded_sequence",
        argument="out1",
        reason="the batch_sizes _pack_padded_sequence returns are a CPU int64 tensor on every device, and its "
               "out= overload's wrapper checks \"Expected out tensor to have device cpu\" for them (OpenReg, CUDA)",
        source="ATen's PackedSequence.cpp (batch_sizes built on the CPU); the generated out= wrapper's device check",
    ),
    HostArgument(
        name="reshape_from_tensor_shape_on_host",
        op="_reshape_from_tensor",
        argument="shape",
        reason="_reshape_from_tensor reads its shape tensor's values on the host (an accessor of a 1-D int64 "
               "tensor), as a size: a device tensor shape is not an input PyTorch supports",
        source="ATen's TensorShape.cpp: _reshape_from_tensor (shape_tensor.accessor<int64_t, 1>())",
    ),
    *(HostArgument(
        name=f"{op}_batch_sizes_on_host",
        op=op,
        argument="batch_sizes",
        reason="a PackedSequence's batch_sizes are always a CPU int64 tensor, whatever the data's device: "
               "the kernels read them on the host",
        source="torch/nn/utils/rnn.py: PackedSequence; ATen's PackedSequence.cpp (batch_sizes must be a CPU "
               "int64 tensor)",
    ) for op in ("_pad_packed_sequence", "_pack_padded_sequence_backward", "gru", "rnn_tanh", "rnn_relu")),
)


# path of an output in the compared result ("[1]"), the device's tensor, CPU's -> the allowed
# alternative the device's tensor matches, or None.
AllowedLookup = Callable[[str, torch.Tensor, torch.Tensor], Alternative | None]


def output_alternatives(op: str, first_input: object) -> AllowedLookup | None:
    """The allowed output layouts of op's result for this input (a lookup for tensor_mismatch), or
    None when no rule covers this op and input."""
    if not isinstance(first_input, torch.Tensor):
        return None
    rules = [r for r in RULES if isinstance(r, OutputRule) and op in r.ops and r.when(first_input)]
    if not rules:
        return None
    by_path = {f"[{i}]": r for r in rules for i in r.outputs}

    def lookup(path: str, actual: torch.Tensor, expected: torch.Tensor) -> Alternative | None:
        rule = by_path.get(path)
        if rule is None:
            return None
        shape, dtype = rule.alternative(first_input)
        alt = Alternative(shape, dtype, rule.name)
        return alt if alt.matches(actual) else None

    return lookup


def accepted_exception(exc: BaseException, cpu_exc: BaseException,
                       off_cpu: tuple[type, type, str] | None) -> str | None:
    """Whether the device's `exc` is an allowed answer where CPU raised `cpu_exc`: "" for CPU's own
    type, the rule's name for the type OpInfo expects off the CPU (`off_cpu`: OpInfo's type on CPU,
    its type off the CPU and that one's message regex, given only where the two types differ),
    None when not allowed."""
    if isinstance(exc, type(cpu_exc)):
        return ""
    if off_cpu is None or not isinstance(cpu_exc, off_cpu[0]):
        return None
    _, kind, regex = off_cpu
    if isinstance(exc, kind) and re.search(regex, str(exc)):
        return "opinfo_error_type_per_device"
    return None


def out_cast_allowed(overload: str, result: torch.dtype, out: torch.dtype) -> str | None:
    """The rule's name when writing `overload`'s result (of dtype `result`) into an out= of dtype
    `out` is an allowed answer where CPU raises; None otherwise."""
    if not torch.can_cast(result, out):
        return None
    return next((r.name for r in RULES if isinstance(r, OutCastRule) and overload in r.overloads), None)


def host_arguments(op: str) -> frozenset[str]:
    """The schema names of op's tensor arguments that PyTorch requires on the CPU for every device."""
    return frozenset(r.argument for r in RULES if isinstance(r, HostArgument) and r.op == op)


@functools.cache
def composite_rules() -> Mapping[str, str]:
    """overload ("packet.overload") -> the name of the CompositeRule accepting its composite's answer; a
    rule on `name.default` covers its in-place and out= overloads too (`name_.default`, `name.out`), where
    this PyTorch has them: a composite answer accepted on one path is accepted on every path."""
    found = {}
    for rule in (r for r in RULES if isinstance(r, CompositeRule)):
        for overload in rule.overloads:
            found[overload] = rule.name
            packet = overload.removesuffix(".default")
            if packet != overload:
                for other in (f"{packet}_.default", f"{packet}.out"):
                    if _exists(other):
                        found.setdefault(other, rule.name)
    return MappingProxyType(found)  # once per process (RULES and this torch's overloads are fixed); read-only, as shared


def _exists(overload: str) -> bool:
    packet, _, name = overload.partition(".")
    return hasattr(getattr(torch.ops.aten, packet, None), name)
