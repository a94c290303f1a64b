"""Overloads another suite declares but never dispatches: the generated suite makes a case for each.

A packet or OpInfo name declares every overload of its packet (cases/ops.py), so `opinfo/clamp_max`
declares `clamp_max.out`, but no OpInfo sample of clamp_max calls that overload. Such an overload is
not *remaining* by name, so before this list it got no generated case and stayed unobserved in every
run. The list is measured, not guessed: the overloads `torchcts coverage report RUN
--list-unobserved` gave the reason `not_dispatched` in a level-8 `--validation` run of every dtype
(torch 2.13.0 CPU, main at b539bf1; coverage/gaps.py), less those a generated case cannot reach
either (`set.source_Storage*`: a Storage argument; `detach_`: the query_mutation suite's own case).
An overload this PyTorch lacks is skipped (the plan iterates the build's overloads).
"""

from __future__ import annotations

# overload -> the cases that declare it (by packet or OpInfo name) without calling it
UNREACHED: dict[str, str] = {
    "aten::_softmax_backward_data.out": "opinfo/_softmax_backward_data",
    "aten::bincount.out": "out_variants/bincount",
    "aten::bitwise_and.Scalar_Tensor": "opinfo/bitwise_and",
    "aten::bitwise_or.Scalar_Tensor": "opinfo/bitwise_or",
    "aten::bitwise_xor.Scalar_Tensor": "opinfo/bitwise_xor",
    "aten::bitwise_left_shift.Scalar_Tensor": "opinfo/bitwise_left_shift",
    "aten::bitwise_left_shift.Tensor_Scalar": "opinfo/bitwise_left_shift",
    "aten::bitwise_left_shift_.Tensor_Scalar": "opinfo/bitwise_left_shift",
    "aten::bitwise_right_shift.Scalar_Tensor": "opinfo/bitwise_right_shift",
    "aten::bitwise_right_shift.Tensor_Scalar": "opinfo/bitwise_right_shift",
    "aten::bitwise_right_shift_.Tensor_Scalar": "opinfo/bitwise_right_shift",
    "aten::bucketize.Scalar": "opinfo/bucketize",
    "aten::clamp.out": "opinfo/clamp",
    "aten::clamp_max": "opinfo/clamp_max",
    "aten::clamp_max.out": "opinfo/clamp_max",
    "aten::clamp_max_": "opinfo/clamp_max",
    "aten::clamp_min.out": "opinfo/clamp_min",
    "aten::eq_.Scalar": "opinfo/eq",
    "aten::fill.Tensor": "opinfo/fill",
    "aten::floor_divide.Scalar": "opinfo/floor_divide",
    "aten::floor_divide_.Scalar": "opinfo/floor_divide",
    "aten::fmod.Scalar": "opinfo/fmod",
    "aten::fmod_.Scalar": "opinfo/fmod",
    "aten::glu.out": "out_variants/glu",
    "aten::isin.Scalar_Tensor": "opinfo/isin",
    "aten::isin.Tensor_Scalar": "opinfo/isin",
    "aten::linalg_matrix_exp.out": "out_variants/linalg_matrix_exp",
    "aten::max_pool2d_with_indices_backward.grad_input": "opinfo/max_pool2d_with_indices_backward",
    "aten::native_dropout_backward.out": "opinfo/native_dropout_backward",
    "aten::norm.ScalarOpt_dim_dtype": "opinfo/norm",
    "aten::norm.ScalarOpt_dtype": "opinfo/norm",
    "aten::normal.out": "opinfo/normal",
    "aten::remainder.Scalar_Tensor": "opinfo/remainder",
    "aten::squeeze_copy.dims": "opinfo/squeeze_copy",
    "aten::view_as_complex_copy": "out_variants/view_as_complex_copy",
    "aten::view_as_complex_copy.out": "out_variants/view_as_complex_copy",
    "aten::view_as_real_copy": "out_variants/view_as_real_copy",
    "aten::view_as_real_copy.out": "out_variants/view_as_real_copy",
    "aten::view_copy.dtype": "opinfo/view_copy",
    "aten::xlogy_.Scalar_Other": "opinfo/xlogy",
}
