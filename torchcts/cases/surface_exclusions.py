"""Surfaces a backend is not expected to implement: backend-specific kernel families, each with why.

Coverage of "implementable surfaces" (`torchcts coverage report RUN`, docs/coverage.md) leaves
these out and lists them with their reason. A pattern is a glob over the overload name without
the `aten::` namespace (`cudnn_*` matches `aten::cudnn_convolution.out`); the first match wins.
Lives in cases/ so that case generators and coverage/ read the same list.
"""

from __future__ import annotations

import fnmatch
import functools

EXCLUDED: dict[str, str] = {
    "cudnn_*": "cuDNN library kernels: CUDA builds only",
    "_cudnn_*": "cuDNN library kernels: CUDA builds only",
    "miopen_*": "MIOpen library kernels: ROCm builds only",
    "_miopen_*": "MIOpen library kernels: ROCm builds only",
    "mkldnn_*": "oneDNN (mkldnn) layout kernels of the CPU backend",
    "_mkldnn_*": "oneDNN (mkldnn) layout kernels of the CPU backend",
    "to_mkldnn*": "oneDNN (mkldnn) layout conversion of the CPU backend",
    "*_mps": "Metal (MPS) backend kernels: Apple builds only",
    "_mps_*": "Metal (MPS) backend kernels: Apple builds only",
    "_cufft_*": "cuFFT plan cache controls: CUDA builds only",
    "_cslt_*": "cuSPARSELt kernels: CUDA builds only",
    "_cudnn*": "cuDNN library kernels: CUDA builds only",
    "_use_cudnn_*": "cuDNN dispatch predicates: CUDA builds only",
    "_nnpack_*": "NNPACK kernels of the CPU backend",
    "fbgemm_*": "FBGEMM quantized engine of the CPU backend",
    "_fbgemm_*": "FBGEMM quantized engine of the CPU backend",
    "quantized_*": "quantized engines (FBGEMM, QNNPACK, oneDNN): quantized tensors, not a device's dense kernels",
    "q_*": "quantized tensor accessors: quantized tensors only",
    "*quantize_per_*": "quantized engines: quantized tensors only",
    "dequantize*": "quantized engines: quantized tensors only",
    "int_repr*": "quantized tensor accessors: quantized tensors only",
    "_make_per_*": "quantized tensor constructors: quantized tensors only",
    "fake_quantize_*": "quantization-aware training kernels of the quantized engines",
    "_fake_quantize_*": "quantization-aware training kernels of the quantized engines",
    "_choose_qparams_*": "quantized engines: quantization parameters",
    "choose_qparams_*": "quantized engines: quantization parameters",
    "_saturate_weight_to_fp16": "FBGEMM weight packing of the CPU backend",
    "_weight_int4pack_mm*": "int4 weight-packing kernels specific to CUDA/CPU/MPS builds",
    "_convert_weight_to_int4pack*": "int4 weight-packing kernels specific to CUDA/CPU/MPS builds",
    "_weight_int8pack_mm*": "int8 weight-packing kernels specific to CPU/MPS builds",
    "_xpu_*": "XPU backend kernels: Intel GPU builds only",
    "xpu_*": "XPU backend kernels: Intel GPU builds only",
    "_cuda_*": "CUDA runtime internals: CUDA builds only",
    "cuda_*": "CUDA runtime internals: CUDA builds only",
    "_flash_attention_*": "FlashAttention kernels of the CUDA backend",
    "_efficient_attention_*": "memory-efficient attention kernels of the CUDA backend",
    "_scaled_dot_product_cudnn_*": "cuDNN attention: CUDA builds only",
    "_scaled_dot_product_flash_attention": "FlashAttention kernels of the CUDA backend",
    "_scaled_dot_product_flash_attention.*": "FlashAttention kernels of the CUDA backend",
    "_scaled_dot_product_flash_attention_backward*": "FlashAttention kernels of the CUDA backend",
    "_scaled_dot_product_efficient_attention*": "memory-efficient attention kernels of the CUDA backend",
    "_scaled_dot_product_fused_attention_overrideable*": "attention hook for out-of-tree backends to override",
    "_fused_sdp_choice": "attention kernel selection of the in-tree backends",
    "_test_*": "PyTorch's own dispatcher tests, not kernels",
    "_nested_*": "nested-tensor layout internals: NestedTensor keys, not a device's dense kernels",
    "_sparse_*": "sparse layout kernels: Sparse keys, not a device's dense kernels",
    "sparse_*": "sparse layout kernels: Sparse keys, not a device's dense kernels",
    "_to_sparse*": "sparse layout conversions: Sparse keys",
    "to_sparse*": "sparse layout conversions: Sparse keys",
    "_spdiags*": "sparse layout constructors: Sparse keys",
    "_coalesce*": "sparse layout internals: Sparse keys",
    "_values*": "sparse layout accessors: Sparse keys",
    "_indices*": "sparse layout accessors: Sparse keys",
    "crow_indices*": "sparse compressed layout accessors",
    "col_indices*": "sparse compressed layout accessors",
    "ccol_indices*": "sparse compressed layout accessors",
    "row_indices*": "sparse compressed layout accessors",
    "_autocast_to_*": "autocast internals of the in-tree backends",
    "_has_compatible_shallow_copy_type": "tensor-impl query of the in-tree backends",
    "_is_zerotensor": "ZeroTensor dispatch key internals",
    "_efficientzerotensor*": "ZeroTensor dispatch key internals",
    "_functionalize_*": "functionalization pass internals (Functionalize key)",
    "_propagate_xla_data": "XLA bridge internal",
    "_cummax_helper": "CPU/CUDA helper kernel of cummax (a backend implements cummax)",
    "_cummin_helper": "CPU/CUDA helper kernel of cummin (a backend implements cummin)",
    "_nnz*": "sparse layout accessors: Sparse keys",
    "_dimI*": "sparse layout accessors: Sparse keys",
    "_dimV*": "sparse layout accessors: Sparse keys",
    "sym_*": "symbolic-shape queries answered by the tensor, not a kernel",
}


@functools.cache
def excluded_reason(overload: str) -> str | None:
    """Why this overload (`aten::cudnn_convolution`, `aten::add.out`) is excluded, or None."""
    name = overload.split("::", 1)[-1]
    for pattern, why in EXCLUDED.items():
        if fnmatch.fnmatchcase(name, pattern):
            return why
    return None
