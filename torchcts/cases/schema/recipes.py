"""Family recipes: inputs for overloads whose arguments must agree with each other.

The generator (synth.py) gives every data tensor one shape, which is all most overloads need. A
convolution's weight must match its input's channels and its kernel_size, a loss's target must be
integer class indices of one dimension less, an upsample's output_size must have one entry per
spatial dimension: no single shape does. A recipe names such a family (globs over the op name,
without `aten::` and the overload) and gives the arguments that must agree; every argument it does
not name is made by the generic rules with the recipe's data shape. A recipe's profiles are tried
before the generic ones (documented in docs/coverage.md, "Generated cases": Family recipes).

Values: `T(shape, dtype, low, high)` a tensor (dtype None: the case's; integers in [low, high),
floats in [0.1, 1.1)), or `T(values=...)` exact values; any other value is used as is, except
that an `int` given for a list argument is repeated (N times for `int[N]`, once per spatial
dimension of the data shape otherwise), and a number given for a Tensor argument (a bound: clip_'s
`min`, randint's `high`) is a 0-dim tensor (int64, or the case's dtype for a float).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class T:
    shape: tuple[int, ...] = ()
    dtype: str | None = None  # None: the case's dtype
    low: int = 0
    high: int = 3
    values: tuple[Any, ...] | None = None  # exact values (then shape and the range are ignored)


@dataclass(frozen=True)
class Recipe:
    name: str
    patterns: tuple[str, ...]
    shape: tuple[int, ...]  # every data tensor the recipe does not name
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def spatial(self) -> int:
        return max(len(self.shape) - 2, 1)


def _conv(dims: int, transposed: bool = False) -> dict[str, Any]:
    """A 2-channel input of side 4, a 2->2 channel 3-wide kernel: output side 2 (6 transposed)."""
    out_side = 6 if transposed else 2
    return {
        "weight": T((2, 2) + (3,) * dims), "bias": T((2,)), "kernel_size": 3, "stride": 1, "padding": 0,
        "dilation": 1, "output_padding": 0, "groups": 1, "transposed": transposed, "bias_sizes": [2],
        "grad_output": T((1, 2) + (out_side,) * dims), "output_mask": [True, True, True],
    }


_TOTAL = T(values=(3.0,))  # nll_loss's total_weight: the number of (unweighted) targets


def _rnn(gates: int) -> dict[str, Any]:
    """One layer, hidden size 2, 2 input features, batch 2: `.input` is time 2 x batch 2, `.data` a
    packed sequence of lengths 2 and 1 (batch sizes 2, 1: 3 rows); weights of `gates` x hidden rows."""
    rows = gates * 2
    return {"input": T((2, 2, 2)), "data": T((3, 2)), "batch_sizes": T(values=(2, 1), dtype="int64"),
            "hx": T((1, 2, 2)), "params": [T((rows, 2)), T((rows, 2)), T((rows,)), T((rows,))], "has_biases": True,
            "num_layers": 1, "dropout": 0.0, "train": False, "bidirectional": False, "batch_first": False}


_LENGTHS = T(values=(3, 2), dtype="int64")  # a padded batch of 2 sequences of lengths 3 and 2 ...
_BATCH_SIZES = T(values=(2, 2, 1), dtype="int64")  # ... packed: 2, 2 and 1 rows per time step (5 rows)

RECIPES: tuple[Recipe, ...] = (
    Recipe("conv3d", ("slow_conv3d*", "slow_conv_dilated3d", "conv_depthwise3d"), (1, 2, 4, 4, 4), _conv(3)),
    Recipe("conv_transpose3d", ("slow_conv_transpose3d",), (1, 2, 4, 4, 4), _conv(3, transposed=True)),
    Recipe("conv_transpose2d", ("slow_conv_transpose2d",), (1, 2, 4, 4), _conv(2, transposed=True)),
    Recipe("convolution_mode", ("_convolution_mode",), (1, 2, 4, 4), {**_conv(2), "padding": "valid"}),
    Recipe("conv2d", ("_convolution*", "convolution*", "slow_conv*", "thnn_conv2d*", "_slow_conv2d*",
                      "conv_depthwise2d*", "_conv_depthwise2d*"), (1, 2, 4, 4), _conv(2)),
    Recipe("conv_tbc", ("conv_tbc*",), (4, 1, 2), {"weight": T((3, 2, 2)), "bias": T((2,)), "grad": T((2, 1, 2))}),
    Recipe("upsample1d", ("upsample_*1d*", "_upsample_*1d*"), (1, 2, 3), {"output_size": 4, "input_size": [1, 2, 3]}),
    Recipe("upsample2d", ("upsample_*2d*", "_upsample_*2d*"), (1, 2, 3, 3),
           {"output_size": 4, "input_size": [1, 2, 3, 3]}),
    Recipe("upsample3d", ("upsample_*3d*", "_upsample_*3d*"), (1, 2, 3, 3, 3),
           {"output_size": 4, "input_size": [1, 2, 3, 3, 3]}),
    Recipe("gru", ("gru",), (2, 2, 2), _rnn(3)),
    Recipe("rnn", ("rnn_tanh", "rnn_relu"), (2, 2, 2), _rnn(1)),
    Recipe("pack_padded_sequence", ("_pack_padded_sequence",), (3, 2, 2), {"lengths": _LENGTHS, "batch_first": False}),
    Recipe("pack_padded_sequence_backward", ("_pack_padded_sequence_backward",), (5, 2),
           {"input_size": [3, 2, 2], "batch_sizes": _BATCH_SIZES, "batch_first": False}),
    Recipe("pad_packed_sequence", ("_pad_packed_sequence",), (5, 2),
           {"batch_sizes": _BATCH_SIZES, "batch_first": False, "padding_value": 0.0, "total_length": 3}),
    Recipe("nll_loss2d", ("nll_loss2d*",), (1, 3, 2, 2),
           {"target": T((1, 2, 2), "int64"), "reduction": 1, "ignore_index": -100, "total_weight": _TOTAL,
            "grad_output": T(())}),
    Recipe("nll_loss", ("nll_loss*",), (3, 4),
           {"target": T((3,), "int64", high=4), "reduction": 1, "ignore_index": -100, "total_weight": _TOTAL,
            "grad_output": T(())}),
    Recipe("layer_norm", ("native_layer_norm*",), (2, 3),
           {"normalized_shape": [3], "weight": T((3,)), "bias": T((3,)), "mean": T((2, 1)), "rstd": T((2, 1)),
            "output_mask": [True, True, True]}),
    Recipe("group_norm", ("native_group_norm*",), (2, 4, 3),
           {"mean": T((2, 2)), "rstd": T((2, 2)), "weight": T((4,)), "bias": T((4,)), "N": 2, "C": 4, "HxW": 3,
            "group": 2, "output_mask": [True, True, True]}),
    Recipe("embedding_backward", ("embedding_dense_backward*", "embedding_backward"), (3, 4),
           {"indices": T((3,), "int64", high=5), "num_weights": 5, "padding_idx": -1}),
    Recipe("select", ("select_backward*", "select_scatter*"), (3, 3),
           {"grad_output": T((3,)), "src": T((3,)), "input_sizes": [3, 3], "dim": 0, "index": 1}),
    Recipe("diagonal", ("diagonal_backward*", "diagonal_scatter*"), (3, 3),
           {"grad_output": T((3,)), "src": T((3,)), "input_sizes": [3, 3], "offset": 0, "dim1": 0, "dim2": 1}),
    Recipe("glu", ("glu", "glu_*"), (4, 3),
           {"grad_output": T((2, 3)), "glu": T((2, 3)), "grad_glu": T((2, 3)), "dgrad_glu": T((2, 3)), "dim": 0}),
    Recipe("grid_sampler", ("grid_sampler_2d*", "_grid_sampler_2d*"), (1, 2, 3, 3),
           {"grid": T((1, 2, 2, 2)), "grad_output": T((1, 2, 2, 2)), "interpolation_mode": 0, "padding_mode": 0,
            "output_mask": [True, True]}),
    Recipe("affine_grid", ("affine_grid_generator*",), (1, 2, 3), {"size": [1, 2, 3, 3], "grad": T((1, 3, 3, 2))}),
    Recipe("col2im", ("col2im*",), (1, 2, 9), {"output_size": [3, 3], "kernel_size": [1, 1]}),
    Recipe("pad", ("constant_pad_nd*", "_pad_enum"), (3, 3), {"pad": [1, 1], "mode": 0}),
    Recipe("clamp_bound", ("clip_", "clamp"), (3, 3), {"min": 0.5}),  # one bound at least, inside the values' range
    Recipe("float_power_out", ("float_power",), (3, 3), {"out": T((3, 3), "float64")}),  # its result is float64
    Recipe("orgqr", ("orgqr",), (3, 3), {"input2": T((3,))}),  # tau: one dimension less
    Recipe("nuclear_norm", ("nuclear_norm",), (3, 3), {"dim": [0, 1]}),
    Recipe("trace_backward", ("trace_backward",), (), {"sizes": [3, 3]}),  # a 0-dim grad of a 3x3 trace
    Recipe("value_selecting_reduction_backward", ("value_selecting_reduction_backward",), (3,),
           {"dim": 0, "indices": T((3,), "int64"), "sizes": [3, 3], "keepdim": False}),
    Recipe("reshape_from_tensor", ("_reshape_from_tensor",), (3, 3), {"shape": T(values=(9,), dtype="int64")}),
    Recipe("unflatten_dense_tensors", ("unflatten_dense_tensors",), (3, 3), {"flat": T((18,))}),
    Recipe("grouped_mm", ("_grouped_mm",), (2, 4, 8), {"mat2": T((2, 8, 4))}),  # rows of 16-byte multiples
    Recipe("scatter_reduce", ("scatter",), (3, 3), {"index": T((2, 2), "int64"), "src": T((2, 2)), "reduce": "add"}),
    Recipe("randint", ("randint*",), (3, 3), {"low": 0, "high": 3, "size": [3, 3]}),
    Recipe("segment_reduce", ("segment_reduce*", "_segment_reduce_backward*"), (3, 3),
           {"lengths": T(values=(1, 2), dtype="int64"), "reduce": "sum"}),
    Recipe("fractional_max_pool2d", ("fractional_max_pool2d*",), (1, 2, 4, 4),
           {"kernel_size": [2, 2], "output_size": [2, 2], "random_samples": T((1, 2, 2))}),
    Recipe("fractional_max_pool3d", ("fractional_max_pool3d*",), (1, 2, 4, 4, 4),
           {"kernel_size": [2, 2, 2], "output_size": [2, 2, 2], "random_samples": T((1, 2, 3))}),
    Recipe("complex", ("_conj", "_conj_copy", "_fft_c2c", "view_as_real_copy"), (3, 3),
           {"self": T((3, 3), "complex64"), "dim": [0], "normalization": 0, "forward": True}),
    Recipe("fft_c2r", ("_fft_c2r",), (3, 2), {"self": T((3, 2), "complex64"), "dim": [1], "normalization": 0,
                                               "last_dim_size": 3}),
    Recipe("histogramdd_edges", ("_histogramdd_from_bin_tensors",), (5, 2),
           {"bins": [T(values=(0.0, 0.5, 1.2)), T(values=(0.0, 0.7, 1.2))]}),
    Recipe("histogramdd", ("_histogramdd*",), (5, 2), {"bins": [2, 2]}),
    Recipe("empty_permuted", ("empty_permuted*",), (3, 3), {"size": [3, 3], "physical_layout": [1, 0]}),
    Recipe("amp_update_scale", ("_amp_update_scale*",), (1,),
           {"growth_tracker": T((1,), "int32"), "found_inf": T(values=(0.0,)), "growth_interval": 2}),
    Recipe("batch_norm_update", ("_batch_norm_with_update*",), (2, 3, 2),
           {"weight": T((3,)), "bias": T((3,)), "running_mean": T((3,)), "running_var": T((3,))}),
    Recipe("attention", ("_native_multi_head_attention*", "_transformer_encoder_layer_fwd*"), (1, 2, 4),
           {"embed_dim": 4, "num_head": 2, "num_heads": 2, "qkv_weight": T((12, 4)), "qkv_bias": T((12,)),
            "proj_weight": T((4, 4)), "proj_bias": T((4,)), "use_gelu": False, "norm_first": False, "eps": 1e-5,
            "norm_weight_1": T((4,)), "norm_bias_1": T((4,)), "norm_weight_2": T((4,)), "norm_bias_2": T((4,)),
            "ffn_weight_1": T((8, 4)), "ffn_bias_1": T((8,)), "ffn_weight_2": T((4, 8)), "ffn_bias_2": T((4,))}),
    Recipe("ctc_loss", ("_ctc_loss*",), (4, 1, 3),  # log_probs: time 4, batch 1, 3 classes (0 is blank)
           {"targets": T((1, 2), "int64", low=1), "input_lengths": [4], "target_lengths": [2], "blank": 0,
            "grad": T((1,)), "neg_log_likelihood": T((1,)), "log_alpha": T((1, 4, 5))}),
    Recipe("fake_quantize_learnable", ("_fake_quantize_learnable_per_channel*",), (2, 3),
           {"scale": T((2,)), "zero_point": T((2,)), "axis": 0, "quant_min": 0, "quant_max": 255}),
    Recipe("fake_quantize_learnable_tensor", ("_fake_quantize_learnable_per_tensor*",), (2, 3),
           {"scale": T((1,)), "zero_point": T((1,)), "quant_min": 0, "quant_max": 255}),
    Recipe("fake_quantize_channel", ("fake_quantize_per_channel*",), (2, 3),
           {"scale": T((2,)), "zero_point": T((2,), "int32", high=1), "axis": 0, "quant_min": 0, "quant_max": 255}),
    Recipe("view_as_complex", ("view_as_complex_copy",), (3, 2), {}),  # a last dimension of 2
    # overloads of unreached.py whose generic inputs give an all-zero or constant result (a weak pass):
    # a bound inside the values' range, a shift that keeps bits, a divisor below them, values that match
    Recipe("clamp_one_bound", ("clamp_min", "clamp_max", "clamp_max_"), (3, 3),
           {"self": T(values=(0.0, 0.25, 1.0, 2.0)), "min": 0.5, "max": 0.5}),  # values on both sides of the bound
    Recipe("shift", ("bitwise_right_shift", "bitwise_right_shift_"), (3, 3), {"self": T((3, 3), high=64), "other": 1}),
    Recipe("floor_divide", ("floor_divide", "floor_divide_"), (3, 3), {"other": 0.25}),
    Recipe("eq_scalar", ("eq_",), (4,), {"self": T(values=(1.0, 2.0, 2.0, 3.0)), "other": 2}),
    Recipe("isin", ("isin",), (3,), {"elements": T(values=(1.0, 2.0, 3.0)), "test_elements": T(values=(2.0, 5.0)),
                                     "element": 2.0, "test_element": 2.0}),
    Recipe("bincount", ("bincount",), (5,), {"self": T((5,), "int64")}),
    Recipe("int_mm", ("_int_mm",), (2, 8), {"self": T((2, 8), "int8"), "mat2": T((8, 4), "int8")}),
    Recipe("linear_combination", ("_compute_linear_combination*",), (3, 3), {"coefficients": T((2, 3))}),
)


def recipe_for(base: str) -> Recipe | None:
    """The first recipe whose globs match the op name `base` (no `aten::`, no overload)."""
    return next((r for r in RECIPES if any(fnmatch.fnmatchcase(base, p) for p in r.patterns)), None)


def by_name(name: str) -> Recipe:
    return next(r for r in RECIPES if r.name == name)
