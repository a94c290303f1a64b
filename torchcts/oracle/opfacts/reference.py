"""Which oracle and reference an op gets (kinds `random`, `seeded_deterministic`, `uninitialized`,
`matmul_category`, `conv_category`, `no_cpu_reference`, `no_truth`): the op facts
oracle/categories.py and the OpInfo suite read.

OpInfo has no flag for a random op, so `random` is one list here (tests/opinfo/test_opinfo_build.py checks
it covers every op wrapped in `wrapper_set_seed`); the contraction families are exact aten names,
never substrings of op names.
"""

from __future__ import annotations

from torchcts.oracle.opfacts.model import Fact, When

_OPINFO = "torch/testing/_internal/common_methods_invocations.py (the op's OpInfo)"


def _names(kind: str, names: str, reason: str, source: str, value: object = True, when: When = When()) -> Fact:
    return Fact(kind, tuple(names.split()), reason, source, value, when)


def _no_reference(case_kind: str, ops: tuple[str, ...], why: str, source: str) -> Fact:
    """CPU cannot be the reference of these ops' cases of one kind: `why` is the case's reason."""
    return Fact("no_cpu_reference", ops, why, source, why, When(case_kinds=frozenset({case_kind})))


# (name, variant) pairs that use wrapper_set_seed but are deterministic.
SEEDED_BUT_DETERMINISTIC = frozenset({("item", ""), ("nn.functional.feature_alpha_dropout", "without_train")})

FACTS: tuple[Fact, ...] = (
    _names("nondeterministic_kernel", "index_add index_copy index_put index_reduce put scatter scatter_add "
                                      "scatter_reduce masked_scatter histc bincount kthvalue median nanmedian cumsum "
                                      "cumprod nn.functional.embedding_bag nn.functional.nll_loss nn.functional.ctc_loss",
           "accumulates or writes with atomics on an accelerator (CUDA): two calls of one kernel may round or "
           "order differently", "torch.use_deterministic_algorithms' documentation (the ops it lists for CUDA)"),
    _names("random", "bernoulli cauchy exponential geometric log_normal multinomial normal uniform rand_like randint "
                     "randint_like randn randn_like",
           "draws from the random generator: values differ from CPU's by design", _OPINFO),
    _names("random", "nn.functional.dropout nn.functional.dropout2d nn.functional.dropout3d nn.functional.alpha_dropout "
                     "nn.functional.feature_alpha_dropout nn.functional.rrelu",
           "drops or scales elements at random in training mode", _OPINFO),
    _names("random", "nn.functional.fractional_max_pool2d nn.functional.fractional_max_pool3d",
           "draws its pooling regions at random", _OPINFO),
    _names("random", "nn.functional.scaled_dot_product_attention nn.functional.multi_head_attention_forward",
           "its samples apply dropout (OpInfo wraps them in wrapper_set_seed)", _OPINFO),
    _names("random", "svd_lowrank pca_lowrank", "a randomized algorithm: its projection is drawn at random", _OPINFO),
    *(Fact("seeded_deterministic", (f"{n}.{v}" if v else n,),
           "its OpInfo uses wrapper_set_seed, yet its values are deterministic: compared with CPU", _OPINFO)
      for n, v in sorted(SEEDED_BUT_DETERMINISTIC)),
    _names("uninitialized", "empty empty_like empty_strided empty_permuted new_empty new_empty_strided",
           "a factory whose values are whatever the allocator left behind", "torch.empty's documentation"),
    _names("matmul_category", "mm bmm addmm addmv addbmm baddbmm addr matmul mv dot vdot inner tensordot einsum linear "
                              "bilinear chain_matmul __rmatmul__ cdist kron _addmm_activation outer linalg_multi_dot "
                              "linalg_vecdot",
           "a contraction: its rounding grows with the reduced dimension", "the op's definition", "matmul"),
    _names("conv_category", "conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d convolution",
           "a convolution: its rounding grows with the kernel's reduced size", "the op's definition", "conv"),
    _no_reference("special_values", ("linalg.eigvals", "linalg.eig"),
                  "the CPU reference (LAPACK geev) crashes the process on NaN/Inf input",
                  "a crashed special_values case on CPU"),
    _no_reference("explore", ("linalg.pinv.singular",),
                  "the pseudo-inverse of these rank-deficient samples is discontinuous: a last-bit difference in "
                  "the SVD moves the rank cut-off, and two CPU runs of one explored input differed (complex128)",
                  "two CPU runs of one explored input (complex128)"),
    _no_reference("explore", ("linalg.lstsq",),
                  "least squares of explored (rank-deficient) inputs are not unique: one explored input failed and "
                  "then passed twice on the clean sim (float32, float64)",
                  "explored linalg.lstsq runs on the clean sim (float32, float64)"),
    *(Fact("no_truth", (op,), why, "the op's definition", why) for op, why in (
        ("nextafter", "its result is the neighbouring value of the input's own dtype"),
        ("nan_to_num", "its default replacements are the input dtype's largest values"))),
)
