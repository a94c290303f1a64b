"""The reviewed exclusion list: dispatcher surfaces no backend under test is expected to implement.

A surface (`aten::cudnn_convolution.out`) is excluded when its op name matches a family pattern
here: a kernel library of one vendor (cuDNN, MIOpen, oneDNN, Metal, NNPACK, cuFFT, cuSPARSELt),
a quantized-engine or quantized-tensor op (whose inputs are quantized tensors or packed weights of
one CPU library), a sparse or nested layout's internals (they take sparse/nested tensors, which
the `sparse`/`nested` capabilities and their own suites cover), autograd/functorch/tracing
machinery, or PyTorch's own test ops. Each family has a one-line reason, shown in the coverage
report; the generated suite (cases/schema/) makes no case for an excluded surface.

Patterns are fnmatch globs over the op name without the `aten::` namespace and without the
overload (`cudnn_*` matches `aten::cudnn_convolution.out`). Reviewed 2026-11-30 against
torch 2.7-2.13; a new family is one entry, with its reason.
"""

from __future__ import annotations

import fnmatch
import functools
import re

_CUDNN = "cuDNN library kernels (CUDA only); the device's convolution/RNN/attention surfaces are tested instead"
_MIOPEN = "MIOpen library kernels (ROCm only)"
_MKLDNN = "oneDNN (mkldnn) CPU library kernels and its opaque tensor layout"
_MPS = "Apple Metal (MPS) backend kernels"
_QUANT = "quantized engines (fbgemm/qnnpack) and quantized tensors: inputs a dense backend cannot hold"
_SPARSE = "sparse-layout internals: need sparse COO/CSR inputs (sparse capability, not dense kernels)"
_NESTED = "nested-tensor internals: need NestedTensor or jagged inputs (nested capability)"

EXCLUDED: dict[str, str] = {
    # vendor kernel libraries
    "cudnn_*": _CUDNN,
    "_cudnn_*": _CUDNN,
    "_use_cudnn_*": "asks whether cuDNN would be used (CUDA only)",
    "_scaled_dot_product_cudnn_attention*": _CUDNN,
    "_cufft_*": "cuFFT plan cache (CUDA only)",
    "_cslt_*": "cuSPARSELt semi-structured sparse kernels (CUDA only)",
    "miopen_*": _MIOPEN,
    "_use_miopen_*": "asks whether MIOpen would be used (ROCm only)",
    "mkldnn_*": _MKLDNN,
    "_mkldnn_*": _MKLDNN,
    "to_mkldnn*": _MKLDNN,
    "mps_*": _MPS,
    "_mps_*": _MPS,
    "_lstm_mps*": _MPS,
    "lstm_mps_*": _MPS,
    "_scaled_dot_product_attention_math_for_mps": _MPS,
    "_nnpack_*": "NNPACK CPU library kernels",
    "is_vulkan_available": "Vulkan backend query",
    "_propagate_xla_data": "XLA (lazy tensor) bookkeeping",
    "_triton_*": "Triton kernels of the CUDA build",
    # quantized engines and quantized tensors
    "fbgemm_*": _QUANT,
    "quantized_*": _QUANT,
    "quantize_per_*": _QUANT,
    "dequantize": _QUANT,
    "q_*": _QUANT,
    "qscheme": _QUANT,
    "int_repr": _QUANT,
    "_make_per_*_quantized_tensor": _QUANT,
    "_empty_*quantized": _QUANT,
    "empty_quantized": _QUANT,
    "_choose_qparams_per_tensor": _QUANT,
    "choose_qparams_optimized": _QUANT,
    "_saturate_weight_to_fp16": _QUANT,
    "_wrapped_linear_prepack": _QUANT,
    "_wrapped_quantized_linear_prepacked": _QUANT,
    "_dyn_quant_*": _QUANT,
    "_weight_int4pack_mm*": "int4 packed-weight matmul: a packing format of one backend's kernel",
    "_convert_weight_to_int4pack*": "int4 weight packing: the packed format is backend-specific",
    "_weight_int8pack_mm": "int8 packed-weight matmul of the CPU/MPS backends",
    # a host-side code path: registered CompositeExplicitAutograd, it reads its arguments through CPU
    # accessors, and PyTorch calls it only for CPU tensors (grid_sampler_2d's CPU fallback); on a device
    # it dereferences device memory on the host (OpenReg: SIGSEGV), as it would on CUDA
    "*_cpu_fallback*": "a CPU-only code path PyTorch calls for CPU tensors alone (reads arguments on the host)",
    "_fused_moving_avg_obs_fq_helper*": "quantization-aware-training observer of the quantization engine",
    "fused_moving_avg_obs_fake_quant": "quantization-aware-training observer of the quantization engine",
    # sparse and nested layouts
    "_sparse_*": _SPARSE,
    "sparse_*": _SPARSE,
    "_to_sparse*": _SPARSE,
    "to_sparse*": _SPARSE,
    "_validate_sparse_*": _SPARSE,
    "_validate_compressed_sparse_indices": _SPARSE,
    "_coalesce*": _SPARSE,
    "coalesce": _SPARSE,
    "is_coalesced": _SPARSE,
    "_coalesced*": _SPARSE,
    "_indices*": _SPARSE,
    "indices*": _SPARSE,
    "_values*": _SPARSE,
    "values*": _SPARSE,
    "crow_indices*": _SPARSE,
    "col_indices*": _SPARSE,
    "ccol_indices*": _SPARSE,
    "row_indices*": _SPARSE,
    "_nnz": _SPARSE,
    "_dimI": _SPARSE,
    "_dimV": _SPARSE,
    "dense_dim": _SPARSE,
    "resize_as_sparse*": _SPARSE,
    "copy_sparse_to_sparse*": _SPARSE,
    "hspmm*": _SPARSE,
    "smm": _SPARSE,
    "sspaddmm*": _SPARSE,
    "_spsolve": _SPARSE,
    "_spdiags*": _SPARSE,
    "_convert_indices_from_*": _SPARSE,
    "_gather_sparse_backward": _SPARSE,
    "embedding_sparse_backward": _SPARSE,
    "_embedding_bag_sparse_backward": _SPARSE,
    "_to_dense*": _SPARSE,
    "to_dense*": _SPARSE,
    "_nested_*": _NESTED,
    "nested_*": _NESTED,
    "to_padded_tensor*": _NESTED,
    "_jagged_to_padded_dense_forward": _NESTED,
    "_padded_dense_to_jagged_forward": _NESTED,
    # machinery above the kernels: autograd, functorch, tracing, export, tests
    "_test_*": "PyTorch's own test operators",
    "_foobar*": "PyTorch's own test operator",
    "_add_batch_dim": "functorch vmap bookkeeping (a BatchedTensor wrapper, no kernel)",
    "_remove_batch_dim": "functorch vmap bookkeeping (a BatchedTensor wrapper, no kernel)",
    "_make_dual*": "forward-mode autograd bookkeeping (dual tensors), no device kernel",
    "_unpack_dual": "forward-mode autograd bookkeeping (dual tensors), no device kernel",
    "_fw_primal*": "forward-mode autograd bookkeeping (dual tensors), no device kernel",
    "_backward": "the autograd engine entry point, not a kernel",
    "retain_grad": "autograd bookkeeping, not a kernel",
    "retains_grad": "autograd bookkeeping, not a kernel",
    "requires_grad_": "autograd bookkeeping, not a kernel",
    "output_nr": "autograd bookkeeping, not a kernel",
    "_version": "autograd version counter, not a kernel",
    "is_leaf": "autograd bookkeeping, not a kernel",
    "set_data": "autograd variable bookkeeping, not a kernel",
    "data": "autograd variable bookkeeping, not a kernel",
    "get_gradients": "distributed autograd context query",
    "is_distributed": "legacy distributed query, always False",
    "_functional_sym_constrain_range*": "symbolic-shape assertion of torch.export/compile, no kernel",
    "sym_constrain_range*": "symbolic-shape assertion of torch.export/compile, no kernel",
    "_make_dep_token": "torch.export effect token, no kernel",
    "_print": "tracing debug print, no kernel",
    "record_stream": "allocator stream bookkeeping (tested by the device_api suite), no values",
    "_autocast_to_*": "autocast machinery (amp), not a kernel of its own",
}


# One regex per pattern, compiled once (a case-list build asks about ~2,000 overloads).
_COMPILED = tuple((p, re.compile(fnmatch.translate(p))) for p in EXCLUDED)


def _base(overload: str) -> str:
    return overload.split("::", 1)[-1].split(".", 1)[0]


@functools.lru_cache(maxsize=8192)
def excluded_pattern(overload: str) -> str | None:
    """The EXCLUDED pattern matching an overload (`aten::cudnn_convolution.out`, `cudnn_convolution`)."""
    base = _base(overload)
    return next((p for p, rx in _COMPILED if rx.match(base)), None)


def excluded_reason(overload: str) -> str | None:
    """Why an overload is not a surface a backend is expected to implement, or None when it is."""
    pattern = excluded_pattern(overload)
    return EXCLUDED[pattern] if pattern is not None else None
