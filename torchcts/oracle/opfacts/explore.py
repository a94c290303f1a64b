"""What exploration may vary of an op (kinds `one_device`, `near_zero`, `extremes_unbounded`, `values_kept`,
`cpu_unsafe_arguments`, `cpu_unsafe_variants`, `switch_points`, `int_dividing`, `integer_args_kept`):
the op facts cases/explore/ reads (docs/exploration.md).

Exploration varies an op's samples (switch points, value classes, placement, magnitude); these say
where an op's own definition, or CPU as the reference, rules a variation out or in.
"""

from __future__ import annotations

from torchcts.oracle.opfacts.model import Fact

_EXPLORED = "an explored input on CPU (the reference), PyTorch 2.7 to 2.13"


def _words(*words: str) -> tuple[str, ...]:
    """Patterns matching a name (`name.variant`) holding one of `words` between `.` and `_`."""
    return tuple(p for w in words for p in (w, f"{w}[._]*", f"*[._]{w}", f"*[._]{w}[._]*"))


FACTS: tuple[Fact, ...] = (
    Fact("one_device", ("meshgrid",),
         "its tensors must all be on one device, a 0-dim one too: CUDA refuses a CPU scalar tensor as well",
         "aten meshgrid: 'meshgrid expects all tensors to have the same device'"),
    Fact("one_device", ("nn.functional.linear_cross_entropy",),
         "its tensors must all be on one device, a 0-dim one too: CUDA refuses a CPU scalar tensor as well",
         "its chunked path calls the custom op torch_nn._linear_cross_entropy_batch_chunked, whose device check "
         "refuses a CPU target"),
    Fact("near_zero", ("log1p", "expm1", "sinc", "special.log1p", "special.expm1", "special.sinc"),
         "exists because log(1 + x) and exp(x) - 1 lose every digit for tiny x: accuracy there is its point",
         "the op's documentation (torch.log1p, torch.expm1, torch.sinc)"),
    Fact("near_zero", ("asinh", "atanh", "sinh", "tanh", "sin", "tan", "erf", "erfinv", "special.erf", "special.erfinv",
                       "logaddexp", "nn.functional.softplus", "special.entr"),
         "f(x) ~ x (or a known series) near zero: a naive kernel loses the digits a right one keeps there",
         "the functions' series at zero (C99 and the libm these kernels follow)"),
    Fact("extremes_unbounded", ("bincount", "repeat_interleave", "nn.functional.one_hot", "histc", "histogram", "histogramdd",
                         "arange", "linspace", "logspace", "range", "nn.functional.embedding_bag"),
         "its output size is a value of its input: an extreme value allocates without bound (bincount of "
         "iinfo.max: 16 GB), and a whole tensor at an extreme is an extreme too",
         _EXPLORED),
    Fact("extremes_unbounded", _words("polynomial"),
         "the special polynomials loop n times for degree n: iinfo.max, or finfo.max, takes hours", _EXPLORED),
    Fact("values_kept", _words("grid", "sampler"),
         "the grid samplers read out of bounds on non-finite or huge grid values", _EXPLORED),
    Fact("values_kept", _words("householder", "ormqr", "geqrf", "lu", "eig", "eigh", "eigvals", "eigvalsh", "svd",
                               "svdvals", "cholesky", "lstsq", "solve", "inv", "inverse", "det", "logdet", "slogdet",
                               "pinv", "pinverse", "matrix", "cond", "qr", "triangular"),
         "LAPACK crashes or loops on non-finite or huge values, and duplicates, zeros and subnormals make the "
         "matrices singular or ill-conditioned, whose solutions are not unique (lstsq on CPU differs from itself)",
         _EXPLORED),
    Fact("values_kept", _words("nuc"),
         "norm's nuc variant is an SVD: a NaN in it may keep LAPACK from converging", _EXPLORED),
    Fact("int_dividing", ("*div*", "*mod*", "*remainder*", "*gcd*", "*lcm*"),
         "divides integers: CPU traps (SIGFPE) on INT_MIN / -1, INT_MIN % -1 and lcm's overflows, killing the worker "
         "before a verdict, so its integer tensors get no `extremes`", _EXPLORED),
    Fact("integer_args_kept", ("*scatter*", "*index_put*", "*index_copy*", "put*", "*take_along*"),
         "which of duplicate indices' writes wins is unspecified (scatter without reduction, index_put/put without "
         "accumulate, index_copy): explored integer arguments would differ between two right devices", _EXPLORED),
    Fact("integer_args_kept", ("*masked_scatter*", "*ctc_loss*", "*segment_reduce*"),
         "CPU's kernel trusts its integer arguments (mask counts, CTC lengths, segment offsets): explored ones abort "
         "or read out of bounds instead of raising", _EXPLORED),
    Fact("cpu_unsafe_arguments", ("nn.functional.embedding_bag",),
         "include_last_offset=True on offsets that do not end at the indices' length: CPU reads past the indices "
         "(two CPU calls differ, ~1e23) and 2.7's backward corrupts its heap",
         "PyTorch 2.12 and 2.7 on CPU, explored embedding_bag samples", frozenset({"include_last_offset"})),
    Fact("cpu_unsafe_arguments", ("nn.functional.pad.replicate_negative",),
         "circular padding by negative amounts (this variant's pads) reads outside the input on CPU: two CPU calls "
         "differ (int8: 64 vs -80), so its mode (argument 1) is never switched",
         "explored nn.functional.pad samples on CPU", frozenset({1, "mode"})),
    Fact("no_lazy_views", ("view_as_real",),
         "a view of a conjugated tensor's memory as real pairs cannot carry the conjugation: PyTorch raises "
         "('view_as_real doesn't work on unresolved conjugated tensors') on every device",
         "torch.view_as_real's documentation; the clean sim's sweep of exploration's lazy views", True),
    Fact("cpu_unsafe_arguments", ("resize_", "resize_as_"),
         "the size a storage is resized to: a size the sample did not hold gives elements whose values are "
         "undefined (two CPU calls differ), so exploration keeps the sample's sizes",
         "explored resize_ samples on CPU (issue 39's size lists)", frozenset({0})),
    Fact("cpu_unsafe_variants", ("nn.functional.embedding_bag",),
         "PyTorch 2.7's CPU embedding_bag backward corrupts its heap (munmap_chunk: invalid pointer, SIGABRT) on "
         "explored offsets and include_last_offset=True",
         "PyTorch 2.7 on CPU, explored embedding_bag samples", frozenset({"backward"})),
    # switch points: argument (a keyword name or a position after the input) -> values, tried first
    *(Fact("switch_points", (op,),
           "its interpolation and padding modes are enums passed as ints whose other values CPU does not check "
           "(they read out of bounds at -1): exactly the values PyTorch defines",
           "aten/src/ATen/native/GridSampler.h: GridSamplerInterpolation, GridSamplerPadding", points)
      for op, points in (("grid_sampler_2d", {1: (0, 1, 2), 2: (0, 1, 2)}), ("grid_sampler_3d", {1: (0, 1), 2: (0, 1, 2)}))),
)
