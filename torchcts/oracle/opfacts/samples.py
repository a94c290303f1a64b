"""How an op's OpInfo samples are prepared (kinds `strengthen`, `device_policy`, `writes_through_view`,
`pins_on_host`): the op facts
cases/opinfo/ reads (strengthen.py, samples.py).

`strengthen`'s value names the rewrite (and its arguments) cases/opinfo/strengthen.py applies to
each sample whose reference could not tell a right result from a wrong one (docs/oracles.md, "Weak
comparisons"); the rewrites are code there, which op gets which is a fact here.
"""

from __future__ import annotations

from torchcts.oracle.opfacts.model import Fact

_WEAK = "OpInfo's sample generator (common_methods_invocations.py), its passes flagged weak (docs/oracles.md)"


def _rewrite(names: str, value: tuple[object, ...], reason: str) -> Fact:
    return Fact("strengthen", tuple(names.split()), reason, _WEAK, value)


FACTS: tuple[Fact, ...] = (
    _rewrite("eq ne isclose", ("agree",),
             "two random float tensors are never equal (eq all False, as a backend returning zeros): every other "
             "element of the second operand made equal to the input's gives both answers"),
    _rewrite("logical_not logical_xor logical_and bool", ("zeros",),
             "OpInfo's random values are nonzero, so the result is one value: every third input element zero"),
    _rewrite("logical_or", ("both_zeros",),
             "logical_or of nonzero values is all True: zeros at the same places in both operands"),
    _rewrite("isin", ("shared_test_elements",),
             "random test elements are never found in the input: half of them taken from it"),
    _rewrite("isnan isinf isposinf isneginf isfinite", ("specials",),
             "finite random values give all False: special values injected"),
    _rewrite("round.decimals_neg_3", ("scaled", 1000.0), "round(x, -3) of |x| < 500 is all zeros: the input scaled"),
    _rewrite("asin atanh erfinv acos logit special.ndtri", ("integral_places", 1),
             "a bool or uint8 input inside the op's domain takes one value only (all 0): every other element set "
             "to the domain's other edge, 1 (asin(1) = pi/2, atanh(1) = inf, logit(1) = inf)"),
    _rewrite("acosh", ("integral_places", 0),
             "a bool or uint8 input inside acosh's domain [1, inf) is all True: every other element set to 0, "
             "just outside it (acosh(0) = NaN, defined)"),
    _rewrite("isreal", ("real_places",), "random complex values are never real: every third element made real"),
    _rewrite("xlogy", ("other_places", 0),
             "xlogy's samples keep `other` in log's domain, so a bool `other` is all True and x * log(y) all 0: "
             "every third element of an integer `other` set to 0 (-inf where x is not 0)"),
    _rewrite("min.reduction_no_dim prod cumprod", ("odd_unsigned",),
             "OpInfo's uint8 values 0-9 put a 0 in every min and a wrapped product is 0 modulo 256: inputs made "
             "odd and varied"),
    Fact("device_policy", ("nn.functional.linear_cross_entropy",),
         "its `options=` (acc_policy 'auto', chunk size) are resolved per device type before computing: both sides "
         "get the device's resolution, or CPU's reference runs another algorithm",
         "torch/nn/functional.py: LinearCrossEntropyOptions._adjust"),
    Fact("pins_on_host", ("to",),
         "OpInfo's samples of `to` include to('cpu', dtype, True, True): on a device, a non-blocking copy to the "
         "host allocates pinned memory (pytorch_ocl: 'implement getPinnedMemoryAllocator'), which the manifest "
         "claims apart, as the transfers suite's non-blocking downloads need it",
         "aten/src/ATen/native/TensorConversions.cpp: _to_copy (pin_out)"),
    Fact("writes_through_view", ("as_strided_scatter",),
         "copies src into self.as_strided(size, stride, storage_offset); with strides that overlap (explored: "
         "(8, 1, 2, 1) for size (2, 2, 2, 2)) two src elements land on one element, in an order nobody defines "
         "(copy_ refuses only the overlaps it can prove, stride 0)", "aten/src/ATen/native/TensorShape.cpp: "
         "as_strided_scatter", (1, 2, 3)),
)
