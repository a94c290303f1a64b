"""The sim's planted faults and the groups planted together in one run, each fault with the case meant to catch it."""

from __future__ import annotations

from torchcts.engine.selftest import fault_catalog

FAULTS = {f["name"]: f for f in fault_catalog()}


# Faults no existing case targets (sim/faults_unlisted.py): meant for input exploration, proven
# missed by OpInfo and narrow in tests/sim/test_sim_faults_unlisted.py; no suite of this file catches them.
UNLISTED = {n for n, f in FAULTS.items() if f["unlisted"]}


# Faults of one input axis each (sim/faults_axes.py): measured by tests/explore/test_axis_faults.py.
AXIS = {n for n, f in FAULTS.items() if f["axis"]}


# Faults planted together in one run: each maps to the case meant to catch it, and their catching
# cases are disjoint (each hook touches only its own op, dtype or runtime call), so each case fails
# by its own fault. `controls` are cases beside them that no fault in the group touches: they must
# pass, which shows the faults are narrow. No isolation: these faults neither crash nor hang.
GROUPS: dict[str, dict[str, object]] = {
    "level1": {
        "caught": {
            "add_fp16_ulp": "operators/elementwise/add/float16",
            "neg_vector_tail": "operators/elementwise/neg/float32",
            "fill_bfloat16_bits": "operators/core/ones/bfloat16",
            "abs_zero_dim": "operators/elementwise/abs/float32",
            "to_copy_ignores_strides": "strides/noncontig/transposed/add/float32",
            "sum_low_precision": "operators/reduction/sum/n65537/float32",
        },
        "controls": ("operators/elementwise/add/float32", "operators/core/ones/float32",
                     "operators/elementwise/mul/float32", "operators/reduction/amax/n65537/float32"),
    },
    "level3": {
        "caught": {
            "transpose_copies": "operators/aliasing/view/transpose/float32",
            "mul_inplace_new": "operators/aliasing/inplace/mul_/float32",
            "add_out_ignored": "operators/aliasing/out/add/float32",
            "div_int_promotion": "dtypes/promotion/div/int64-int64",
            "index_select_unchecked": "errors/index_out_of_range/index_select/float32",
            "rng_seed_ignored": "rng/manual_seed/rand/float32",
            "save_loses_device": "serialization/layout/float32",
        },
        "controls": ("operators/aliasing/view/narrow/float32", "operators/aliasing/detach/float32",
                     "operators/aliasing/out/mul/float32", "dtypes/promotion/add/int64-int64",
                     "errors/index_out_of_range/gather/float32"),
    },
    "level4to6": {
        "caught": {
            "sigmoid_backward_wrong": "autograd/composite/tanh_norm/float32",
            "clone_drops_channels_last": "strides/clone/channels_last/float32",
            "device_count_wrong": "device_api/module/device_count",
            "memory_never_freed": "memory/stats/alloc_free",
        },
        "controls": ("autograd/composite/poly/float32", "strides/clone/permuted/float32",
                     "device_api/module/is_available", "memory/stats/empty_cache"),
    },
    # issue 18's bug classes (docs/depth.md): each fault in its class's new suite; the controls are
    # beside the bug (an index op without the offset bug, a wide cumsum, a small K, same-dtype cat
    # values, dropout at p = 0.5 where 1/p == 1/(1 - p), the same op compiled without an in-place write-back).
    "depth": {
        "caught": {
            "index_add_ignores_offset": "inplace_views/ops/index_add_/views/float32",
            "cumsum_narrow_accumulator": "limits/cumsum/high/int8",
            "mm_k_tail": "tiling/contraction/mm/K/float32",
            "cat_first_dtype": "mixed_dtypes/pair/cat/others/int32",
            "dropout_scale_inverted": "random_ops/dropout/scaling/p0.1/float32",
            "copy_same_layout_skipped": "compiler_ops/elementwise/sigmoid/inplace/float32",
        },
        "controls": ("inplace_views/ops/index_copy_/views/float32", "limits/cumsum/high/int32",
                     "tiling/long/sum/dims/float32", "mixed_dtypes/pair/maximum/others/int32",
                     "random_ops/dropout/scaling/p0.5/float32", "compiler_ops/elementwise/sigmoid/static/float32"),
    },
    # issue 20's dispatcher surfaces (docs/coverage.md): the controls are the same suites' cases of
    # a neighbouring op (_foreach_mul, exp2's out=, erfc, resize_).
    "surfaces": {
        "caught": {
            "foreach_add_last_tail": "foreach/add/lists/float32",
            "exp_out_dtype_unchecked": "out_variants/exp/out/float32",
            "erfcx_naive": "special_values/erfcx/edges/float32",
            "set_ignores_offset": "query_mutation/set_/float32",
        },
        "controls": ("foreach/mul/lists/float32", "out_variants/exp2/out/float32",
                     "special_values/erfc/edges/float32", "query_mutation/resize_/float32"),
    },
    # issue 32: automatic mixed precision (docs/semantic-suites.md); the controls are the inf
    # gradient (the NaN check's neighbour) and a loss on the right list.
    "amp": {
        "caught": {
            "amp_check_ignores_nan": "amp/gradscaler/skip_nonfinite/nan/float32",
            "autocast_mse_loss_lower": "amp/autocast/float32/mse_loss/bfloat16",
        },
        "controls": ("amp/gradscaler/skip_nonfinite/inf/float32", "amp/autocast/float32/l1_loss/bfloat16",
                     "amp/autocast/lower/mm/bfloat16"),
    },
    # issue 32 items 3-4 (docs/semantic-suites.md): the controls pin and load without non_blocking
    # copies, and profile a program without relu.
    "data_profiler": {
        "caught": {
            "non_blocking_copy_unordered": "data_loading/non_blocking/pageable/float32",
            "profiler_relu_decomposed": "profiler/ops/pointwise/float32",
        },
        "controls": ("data_loading/pin_memory/tensor/float32", "data_loading/dataloader/workers/float32",
                     "profiler/ops/matmul/float32"),
    },
    # issue 32: collectives (docs/semantic-suites.md); the control is reduce_scatter of lists, the
    # neighbouring c10d op, and an all_reduce.
    "distributed": {
        "caught": {"reduce_scatter_drops_own_chunk": "distributed/reduce_scatter_tensor/float32"},
        "controls": ("distributed/reduce_scatter/float32", "distributed/all_reduce/sum/float32"),
    },
    # issue 39 item 4: subnormals flushed where the manifest claims them preserved; the control is
    # float16, which the fault (float32/float64 FTZ) leaves alone.
    # ... an index past 2^16 (the magnitude suite; its control, another index op past 2^16), and a
    # non_blocking upload of an offset view (transfers; controls: a blocking one, a download).
    "claims_magnitude": {
        "caught": {"subnormals_flushed": "subnormals/produce/mul/float32",
                   "index_select_16bit": "magnitude/index/index_select/float32",
                   "non_blocking_drops_offset": "transfers/to_device/offset/non_blocking/int64"},
        "controls": ("subnormals/produce/mul/float16", "subnormals/consume/add/bfloat16",
                     "magnitude/index/gather/float32", "transfers/to_device/offset/copy/int64",
                     "transfers/to_host/offset/int64"),
    },
    # issue 50: faults shaped as real reports, caught by the field case replaying each report; the
    # controls are field cases of the same ops' other reports (tests/suites/test_field_suite.py: OpInfo misses them).
    "field": {
        "caught": {"mm_long_k_overread": "field/V4/pytorch-pytorch-193487/float32",
                   "pow_float16_ulp": "field/V2/microsoft-DirectML-370/float16",
                   "index_select_int32_first_32": "field/V3/torch-spyre-torch-spyre-3851/float16"},
        "controls": ("field/V1/microsoft-DirectML-398/float64", "field/V3/ROCm-rocBLAS-340/float16",
                     "field/V4/pytorch-pytorch-189495/float32"),
    },
    # issue 20: a fault in an op only the generated suite names (cases/schema/); the control is
    # another generated case.
    "generated": {
        "caught": {"cdist_skips_root": "generated/_cdist_forward/float32"},
        "controls": ("generated/_logcumsumexp/float32",),
    },
}
