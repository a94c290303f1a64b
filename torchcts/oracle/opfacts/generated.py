"""What the generated suite does with an aten packet (kinds `properties_only`, `no_generated_case`,
`integer_only`, `generated_category`): the op facts cases/schema/build.py reads (docs/coverage.md,
"Generated cases").

Selectors are patterns of packet names (fnmatch, first match wins): a generated input is synthesised
from the schema, not an OpInfo sample, so these say which packets' results two right backends may
differ in, which calls are no conformance question, and which tolerance category a packet gets.
"""

from __future__ import annotations

from torchcts.oracle.opfacts.model import Fact

_SOURCE = "the generated suite's calls of the packet on CPU (cases/schema/, docs/coverage.md)"

# Results that differ between two correct backends: only shapes, dtypes and types are compared.
_PROPERTIES_ONLY: dict[str, str] = {
    "*empty*": "uninitialised memory",
    "resize*": "grown storage is uninitialised",
    "_resize_output*": "grown storage is uninitialised",
    "set*": "storage-dependent",
    "get_device": "the device index differs from CPU's -1",
    "cumprod_backward": "takes the forward's output; generated inputs are inconsistent with it, where "
                        "the formulas for plain tensors and subclasses legitimately differ",
    "_fused_sdp_choice": "the attention backend chosen differs by device",
    # Generated indices repeat: which of several writes to one element wins is unspecified.
    "max_unpool*": "duplicate generated indices: the winning write is unspecified",
    "scatter": "duplicate generated indices: the winning write is unspecified",
    "scatter_": "duplicate generated indices: the winning write is unspecified",
    "index_put*": "duplicate generated indices: the winning write is unspecified",
    "_index_put_impl*": "duplicate generated indices: the winning write is unspecified",
    "_unsafe_index_put": "duplicate generated indices: the winning write is unspecified",
    "put": "duplicate generated indices: the winning write is unspecified",
    "put_": "duplicate generated indices: the winning write is unspecified",
    "index_copy*": "duplicate generated indices: the winning write is unspecified",
    "*rand*": "random",
    "*dropout*": "random",
    "bernoulli*": "random",
    "normal*": "random",
    "multinomial*": "random",
    "poisson*": "random",
    "binomial*": "random",
    "_standard_gamma": "random",
    "_sample_dirichlet*": "random",
    "rrelu*": "random",
    "random*": "random",
    "exponential*": "random",
    "geometric*": "random",
    "cauchy*": "random",
    "log_normal*": "random",
    "uniform*": "random",
}

# Surfaces whose generated call is not a conformance question (reason per pattern): no case.
_UNSAFE: dict[str, str] = {
    "pin_memory": "host (CPU) memory op: a device tensor cannot be pinned",
    "_pin_memory*": "host (CPU) memory op: a device tensor cannot be pinned",
    "_to_cpu": "copies to CPU by definition",
    "from_file*": "reads a file",
    "_assert_*": "an assertion with no result",
    "_functional_assert_*": "an assertion with no result",
    "_debug_has_internal_overlap": "reports the memory layout of the storage, not a value",
    "_has_same_storage_numel": "storage-dependent",
    "_sobol_engine_*": "a host-only kernel: it reads its tensors' data on the host (torch.quasirandom.SobolEngine "
                       "keeps its state on the CPU)",
    # CPU kernels that trust their callers' shapes: generated inputs read or write out of bounds
    # (SIGSEGV, SIGABRT, or garbage that differs from run to run).
    "batch_norm_backward": "CPU kernel does not check generated shapes (segfaults)",
    "native_batch_norm_backward": "CPU kernel does not check generated shapes (segfaults)",
    "_batch_norm_no_update": "CPU kernel does not check generated shapes (segfaults)",
    "_batch_norm_impl_index*": "CPU kernel does not check generated shapes (segfaults)",
    "_native_batch_norm_legit*": "CPU kernel does not check generated shapes (segfaults)",
    "_embedding_bag*": "CPU kernel does not check generated offsets (aborts)",
    "_weight_norm_interface*": "CPU kernel does not check generated shapes (reads uninitialised memory)",
    "lstm_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "gru_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "rnn_tanh_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
    "rnn_relu_cell": "CPU kernel of torch 2.7 does not check generated weight shapes (segfaults)",
}

# Integer-only ops: their cases use int64 instead of DTYPES.
_INTEGER_ONLY = ("*bitwise*", "*shift*", "__and__", "__or__", "__xor__", "__iand__", "__ior__", "__ixor__",
                "gcd*", "lcm*")

# Tolerance category by name (first match), else "reduction": a generated input is not an
# OpInfo sample conditioned for its op, so the default is the loose end of the elementwise range.
_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("*backward*", "backward"), ("*linalg*", "linalg"), ("*fft*", "fft"), ("*conv*", "conv"),
    ("*mm*", "matmul"), ("*matmul*", "matmul"), ("*norm*", "normalization"), ("special_*", "special"),
    ("_fused_*", "training"), ("_foreach_*", "elementwise"),
)


FACTS: tuple[Fact, ...] = (
    *(Fact("properties_only", (pattern,), why, _SOURCE, why) for pattern, why in _PROPERTIES_ONLY.items()),
    *(Fact("no_generated_case", (pattern,), why, _SOURCE, why) for pattern, why in _UNSAFE.items()),
    Fact("integer_only", _INTEGER_ONLY, "bitwise, shift, gcd and lcm take integers only: their cases use int64",
         "their aten schemas' CPU kernels (no floating dtype)"),
    *(Fact("generated_category", (pattern,), f"a {category} packet by its name: its rounding is that category's",
           "the tolerance categories of oracle/tolerances.py", category) for pattern, category in _CATEGORIES),
)
