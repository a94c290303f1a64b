"""Exact results (kind `exact`): the op facts of oracle/exactness.py, which reads them.

A float tolerance hides a 1-ulp error in a result that has exactly one right answer: a copy, a
cast between floating dtypes, a selection, a rounding. Each entry says which outputs, whether the
sign of a zero is defined, and why; `real_only` entries hold for real inputs only (the fact's
condition). Not exact, on purpose: arithmetic on floats, adding scans and reductions, `round` with
`decimals` (the facts with no value below).
"""

from __future__ import annotations

from dataclasses import dataclass

from torchcts.oracle.opfacts.model import ALWAYS, Fact, When
from torchcts.oracle.tolerances import Tolerance


@dataclass(frozen=True)
class Exact:
    """One registry entry: the op's outputs have one right answer each."""

    reason: str  # why the result is exact (shown in docs, checked non-empty by tests)
    outputs: tuple[int, ...] | None = None  # top-level outputs that are exact; None: every output
    # The sign of a zero result is defined (copies, neg, abs, rounding): -0.0 and 0.0 differ. False
    # where PyTorch does not define which zero wins (max/min/clamp/sort of -0.0 against 0.0).
    signed_zero: bool = True
    # Exact for real inputs only: on complex ones the op does arithmetic (abs of a complex is a hypot).
    real_only: bool = False

    def covers(self, output: int) -> bool:
        return self.outputs is None or output in self.outputs

    def tolerance(self) -> Tolerance:
        return Tolerance(0.0, 0.0, signed_zero=self.signed_zero)


_COPY = "moves or reinterprets elements without arithmetic"
_VIEW = "a view or a copy of elements: no arithmetic"
_CAST = "a cast between dtypes: round to nearest even (and truncation to integers) is defined"
_SELECT = "selects one input element per output element: no arithmetic"
_ORDER = "selects by comparison: each value is an input element"
_SIGN = "changes only the sign bit"
_ROUND = "rounds to an integral value: one right answer"
_CMP = "selects by comparison; which zero wins for -0.0 against 0.0 is not defined"
_VALUES = "values select input elements by comparison; indices follow the integer rule"


def _entries(reason: str, names: str, **kw: object) -> dict[str, Exact]:
    return {name: Exact(reason, **kw) for name in names.split()}  # type: ignore[arg-type]


_TABLE: dict[str, Exact] = {
    **_entries(_VIEW, "view reshape view_as reshape_as flatten unflatten squeeze unsqueeze t transpose permute movedim "
                      "expand expand_as narrow narrow_copy select diagonal as_strided unfold split chunk unbind "
                      "tensor_split hsplit vsplit dsplit split_with_sizes view_as_real view_as_complex real imag "
                      "resolve_conj resolve_neg T mT ravel atleast_1d atleast_2d atleast_3d broadcast_to "
                      "broadcast_tensors tile repeat diag diag_embed diagflat block_diag hstack vstack dstack "
                      "column_stack cat stack flip fliplr flipud rot90 roll tril triu slice alias "
                      "alias_copy as_strided_copy diagonal_copy expand_copy permute_copy squeeze_copy t_copy "
                      "transpose_copy unbind_copy unfold_copy unsqueeze_copy view_copy split_with_sizes_copy "
                      "nn.functional.pixel_shuffle nn.functional.pixel_unshuffle nn.functional.channel_shuffle "
                      "pixel_shuffle pixel_unshuffle channel_shuffle select_scatter slice_scatter diagonal_scatter "
                      "as_strided_scatter"),
    **_entries(_COPY, "clone contiguous copy_ _copy_from _copy_from_and_resize lift_fresh_copy "
                      "repeat_interleave constant_pad_nd nn.functional.pad.constant nn.functional.pad.reflect "
                      "nn.functional.pad.replicate nn.functional.pad.circular reflection_pad1d reflection_pad2d "
                      "reflection_pad3d replication_pad1d replication_pad2d replication_pad3d"),
    **_entries(_CAST, "to _to_copy double float half bfloat16 chalf cfloat cdouble"),
    **_entries(_SELECT, "gather index_select take take_along_dim index_copy index_fill masked_fill masked_select "
                        "masked_scatter where scatter nn.functional.embedding embedding"),
    **_entries(_SIGN, "neg negative positive conj copysign"),
    **_entries(_SIGN, "abs absolute", real_only=True),
    **_entries(_ROUND, "floor ceil trunc fix round"),
    **_entries(_CMP, "amax amin aminmax maximum minimum fmax fmin clamp clamp_min clamp_max clip "
                     "nn.functional.hardtanh nn.functional.relu6 nn.functional.relu relu hardtanh relu6",
               signed_zero=False),
    **_entries(_VALUES, "max min sort msort topk kthvalue median nanmedian mode cummax cummin "
                        "nn.functional.max_pool1d nn.functional.max_pool2d nn.functional.max_pool3d "
                        "nn.functional.adaptive_max_pool1d nn.functional.adaptive_max_pool2d "
                        "max_pool2d_with_indices max_pool3d_with_indices adaptive_max_pool2d adaptive_max_pool3d",
               outputs=(0,), signed_zero=False),
    **_entries("values and counts select input elements (sorted): no arithmetic", "unique unique_consecutive",
               signed_zero=False),
    "nan_to_num": Exact("replaces NaN and infinities by given values, copies the rest"),
    "nextafter": Exact("the next representable value is defined bit for bit"),
    "heaviside": Exact("selects 0, 1 or `values` by the sign of the input"),
}

# Entries that would match a name's base but are not exact: the variant scales by 10**decimals.
_NOT_EXACT = ("round.decimals_0", "round.decimals_3", "round.decimals_neg_3")

SOURCE = ("checked against PyTorch's own decompositions (torchcts.sim.decomp): a decomposition of an exact op "
          "matches the CPU kernel bit for bit (tests/oracle/test_exactness.py)")


def _complex(dtype: str) -> bool:
    return dtype.startswith("complex")


FACTS: tuple[Fact, ...] = (
    *(Fact("exact", (name,), e.reason, SOURCE, e, When(not_dtypes=_complex) if e.real_only else ALWAYS)
      for name, e in _TABLE.items()),
    Fact("exact", _NOT_EXACT, "round with decimals scales by 10**decimals: arithmetic, compared with the tolerance",
         "torch/_refs/__init__.py: round (decimals: mul, round, div)", value=None),
)
