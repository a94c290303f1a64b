"""The one place that knows about differences between PyTorch versions, and the validated range."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path
from typing import Any

from torchcts import settings
from torchcts.errors import UsageError

# The validated range and the release table live in torchcts/releases.py (one table); re-exported here.
from torchcts.releases import MAX_VALIDATED_TORCH, MIN_TORCH, drift, fmt, parse_version, validated_range  # noqa: F401


def check_torch_version(version: str | None = None) -> None:
    """Usage error below the supported range. A torch newer than the validated range is not an
    error and prints nothing: build_info() records it (`drift`) in run.json, summary.md and
    report.html, so every one-line error stays one line."""
    if version is None:
        version = installed_torch_version()
    if parse_version(version) < MIN_TORCH:
        raise UsageError(
            f"PyTorch {version} is older than the supported {fmt(MIN_TORCH)}: "
            f"upgrade with 'torchcts install' or pip install 'torch>={fmt(MIN_TORCH)}'"
        )


def torch_version_file() -> str:
    """The text of the installed torch's version.py, read without importing torch.

    It names the release, git revision and toolkit of the build, so it keys caches and answers
    version checks on paths (collection, show-skips) that must not pay torch's import.
    """
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("PyTorch is not installed: install it first ('torchcts install' prints the command)")
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        import torch

        return f"__version__ = {torch.__version__!r}\ngit_version = {getattr(torch.version, 'git_version', '')!r}\n"


def _version_fields() -> dict[str, Any]:
    """The build's version fields (version, git, cuda, hip, xpu): from the imported torch when it
    is loaded, else from the constant assignments of torch/version.py, without importing torch."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "version"):
        return {"__version__": torch.__version__,
                **{k: getattr(torch.version, k, None) for k in ("cuda", "hip", "xpu", "git_version")}}
    import ast

    fields: dict[str, Any] = {}
    try:
        tree = ast.parse(torch_version_file())
    except SyntaxError:
        return fields
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            fields[target.id] = value.value
    return fields


def _build_fields() -> dict[str, Any]:
    fields = _version_fields()
    if not isinstance(fields.get("__version__"), str):
        import torch  # noqa: F401 - an unparseable version.py: importing is slower but always right

        fields = _version_fields()
    return fields


def installed_torch_version() -> str:
    return _build_fields()["__version__"]


def build_family(version: str, cuda: str | None, hip: str | None, xpu: str | None, system: str) -> str:
    """The wheel family of a build (cpu, cu128, rocm6.4, xpu, default), from its version fields.

    On macOS the one PyPI wheel ('default') carries MPS; elsewhere the family follows the toolkit
    the build was compiled against.
    """
    if hip:
        major, minor = (hip.split(".") + ["0"])[:2]
        return f"rocm{major}.{minor}"
    if cuda:
        major, minor = (cuda.split(".") + ["0"])[:2]
        return f"cu{major}{minor}"
    if xpu or version.endswith("+xpu"):
        return "xpu"
    if system == "Darwin":
        return "default"
    return "cpu"


def build_info() -> dict[str, str | None]:
    """Which build of torch is installed: version, family, CUDA/HIP/XPU versions, git revision."""
    import platform

    fields = _build_fields()
    info = {
        "torch": fields["__version__"],
        "cuda": fields.get("cuda"),
        "hip": fields.get("hip"),
        "xpu": fields.get("xpu"),
        "git": (fields.get("git_version") or "")[:12] or None,
    }
    info["family"] = build_family(info["torch"], info["cuda"], info["hip"], info["xpu"], platform.system())
    info["validated_range"] = validated_range()
    info["drift"] = drift(info["torch"])  # None inside the range; the sentence reports print otherwise
    return info


# --- device module APIs -----------------------------------------------------------------------

def hip_version() -> str | None:
    """The HIP version of a ROCm build, None on every other build."""
    import torch

    return torch.version.hip or None


def privateuse1_name() -> str:
    """The device name the PrivateUse1 key carries now ('privateuseone' until a backend renames it)."""
    import torch

    return str(torch._C._get_privateuse1_backend_name())


def device_module(device_type: str) -> Any:
    """torch.<device_type> (torch.cuda, torch.xpu, a PrivateUse1 module), or None."""
    import torch

    return getattr(torch, device_type, None)


# The availability queries a device module should answer; a real backend may lack them (pytorch_ocl's
# torch.ocl has neither, so every torch.accelerator call on it raises).
AVAILABILITY_QUERIES = ("is_available", "device_count")


def device_available(device_type: str) -> bool:
    """Whether a device type can be used here; MPS answers through torch.backends.mps. A device
    module without is_available() is asked the way a user would find out: a backend that can
    allocate a tensor is available (module_gaps says what is missing)."""
    import torch

    if device_type == "cpu":
        return True
    if device_type == "mps":
        return bool(torch.backends.mps.is_available())
    mod = device_module(device_type)
    fn = getattr(mod, "is_available", None)
    if callable(fn):
        return bool(fn())
    return device_type == privateuse1_name() and _allocates(device_type)


def _allocates(device_type: str) -> bool:
    import torch

    try:
        torch.empty(1, device=device_type)
    except Exception:  # noqa: BLE001 - any refusal means not usable here
        return False
    return True


def module_gaps(device_type: str) -> list[str]:
    """The availability queries (AVAILABILITY_QUERIES) torch.<device_type> lacks; [] for the CPU and MPS."""
    if device_type in ("cpu", "mps"):
        return []
    mod = device_module(device_type)
    return [name for name in AVAILABILITY_QUERIES if not callable(getattr(mod, name, None))]


def module_gaps_note(device_type: str) -> str | None:
    """One line saying what the device module lacks and what TorchCTS did instead, or None."""
    gaps = module_gaps(device_type)
    if not gaps:
        return None
    did = []
    if "is_available" in gaps:
        did.append("availability probed by allocating a tensor")
    if "device_count" in gaps:
        did.append("device count taken as 1")
    return (f"torch.{device_type} lacks {' and '.join(f'{g}()' for g in gaps)}, so torch.accelerator calls fail "
            f"on this backend: {', '.join(did)}")


def device_count(device_type: str) -> int:
    """How many devices of a type; 1 when the module has none or no device_count (a backend's module)."""
    fn = getattr(device_module(device_type), "device_count", None)
    return int(fn()) if callable(fn) else 1


def device_model(device_type: str, index: int = 0) -> str | None:
    """The device's model name where the module can tell it, else None."""
    fn = getattr(device_module(device_type), "get_device_name", None)
    if not callable(fn):
        return None
    try:
        return str(fn(index))
    except Exception:  # noqa: BLE001 - a name is a nicety, never a reason to fail
        return None


def current_accelerator() -> str | None:
    """The accelerator torch itself would pick (torch.accelerator), or None when there is none."""
    import torch

    try:
        if not torch.accelerator.is_available():
            return None
        dev = torch.accelerator.current_accelerator()
    except Exception:  # noqa: BLE001 - a backend without hooks or is_available() makes these raise
        return None
    return None if dev is None else dev.type


# The capability queries a backend answers itself (issue 32 item 5): name -> (where, function).
# Each is asked only where this PyTorch and the device module have it; absent ones are left out.
CAPABILITY_QUERIES: dict[str, tuple[str, str]] = {
    "accelerator.is_available": ("accelerator", "is_available"),
    "accelerator.device_count": ("accelerator", "device_count"),
    "module.is_available": ("module", "is_available"),
    "module.device_count": ("module", "device_count"),
    "module.is_bf16_supported": ("module", "is_bf16_supported"),
    "module.get_amp_supported_dtype": ("module", "get_amp_supported_dtype"),
    "module.get_device_capability": ("module", "get_device_capability"),
}


def reported_capabilities(device_type: str) -> dict[str, Any]:
    """What the backend reports about itself: `torch.accelerator` (when it is this device type's)
    and the device module's queries, as JSON values; a query that raises reports its first line."""
    import torch

    accelerator = getattr(torch, "accelerator", None)
    current = current_accelerator() if accelerator is not None else None
    owners = {"accelerator": accelerator if current == device_type else None, "module": device_module(device_type)}
    out: dict[str, Any] = {"accelerator.current": current}
    for name, (owner, attr) in CAPABILITY_QUERIES.items():
        fn = getattr(owners[owner], attr, None)
        if not callable(fn):
            continue
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - a failing query is itself what the backend reports
            out[name] = f"raised {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
            continue
        if isinstance(value, (list, tuple)):
            value = [str(v).removeprefix("torch.") if isinstance(v, torch.dtype) else v for v in value]
        out[name] = value if isinstance(value, (bool, int, float, str, list)) or value is None else str(value)
    return out


# --- OpInfo fields ------------------------------------------------------------------------------

# One-time costs this process paid, by what, in wall seconds: a worker's first OpInfo case imports
# the database (seconds; 13 s on a loaded machine), which is the worker's warm-up, not that case's
# time (engine/one_case.py moves it from the record's duration_s to its warmup_s).
WARMUP_S: dict[str, float] = {}
_OP_DB_MODULE = "torch.testing._internal.common_methods_invocations"


def op_db() -> list[Any]:
    """PyTorch's OpInfo database (imports expecttest and the testing internals)."""
    import time

    first, start = _OP_DB_MODULE not in sys.modules, time.perf_counter()
    from torch.testing._internal.common_methods_invocations import op_db as db

    _frames_only_test_fn_lookup()
    if first:  # a warm server's workers have it imported already: nothing to charge
        WARMUP_S["OpInfo database"] = WARMUP_S.get("OpInfo database", 0.0) + time.perf_counter() - start
    return list(db)


@functools.lru_cache(maxsize=1)
def _identity_output_code() -> Any:
    from torch.testing._internal.opinfo.core import SampleInput

    return SampleInput(0).output_process_fn_grad.__code__


def processes_output(sample: Any) -> bool:
    """Whether an OpInfo sample's `output_process_fn_grad` does anything (SampleInput's default is an
    identity lambda): where it does (the sign-fixing `abs` of an SVD's factors), the suites apply it to a
    CPU copy of the device's output, so a device op the case does not test never runs (issue 40)."""
    fn = getattr(sample, "output_process_fn_grad", None)
    return callable(fn) and getattr(fn, "__code__", None) is not _identity_output_code()


def _frames_only_test_fn_lookup() -> None:
    """Make OpInfo sample generation cheap outside unittest.

    Every `OpInfo.sample_inputs()` call looks for the running unittest test twice through
    `common_utils.extract_test_fn`, which calls `inspect.stack()`: that reads the source file of
    every frame on the stack (a deep one under pytest) and scans sys.modules per frame. Without
    it a 40-op float64 level-5 run took 36 s instead of 47 s. The same lookup over the frames alone
    returns the same answer (None for TorchCTS, which runs no unittest.TestCase) in microseconds.
    """
    import unittest

    try:
        from torch.testing._internal import common_utils
        from torch.testing._internal.opinfo import core
    except ImportError:
        return
    original = getattr(common_utils, "extract_test_fn", None)
    if not callable(original) or hasattr(original, "__wrapped__"):
        return  # not in this torch, or already replaced

    def extract_test_fn() -> Any:
        frame = sys._getframe(1)
        while frame is not None:
            self_val = frame.f_locals.get("self")
            if isinstance(self_val, unittest.TestCase):
                *_, cls_name, test_name = self_val.id().rsplit(".", 2)
                if cls_name == type(self_val).__name__ and test_name.startswith("test"):
                    return getattr(self_val, test_name).__func__
            frame = frame.f_back
        return None

    extract_test_fn.__wrapped__ = original  # type: ignore[attr-defined]
    for module in (common_utils, core):
        if hasattr(module, "extract_test_fn"):
            module.extract_test_fn = extract_test_fn


def opinfo_dtypes(op: Any, device_type: str) -> set[Any]:
    """The dtypes an OpInfo declares for a device type, across the field layouts of 2.7+."""
    supported = getattr(op, "supported_dtypes", None)
    if callable(supported):
        try:
            return set(supported(device_type))
        except Exception:  # noqa: BLE001 - fall back to the plain fields below
            pass
    by_device = getattr(op, "dtypesIf", None)
    if isinstance(by_device, dict) and by_device.get(device_type) is not None:
        return set(by_device[device_type])
    return set(getattr(op, "dtypes", None) or ())


def opinfo_aten_name(op: Any) -> str:
    """The aten operator name of an OpInfo (aten_name, else its name)."""
    return str(getattr(op, "aten_name", None) or op.name)


# Ops PyTorch 2.13 flags `has_nondeterministic_output` (outputs not comparable between two runs or
# two devices). Older OpInfo has no such field (it skipped their tests with decorators instead).
NONDETERMINISTIC_OUTPUT_OPS = frozenset({
    "torch.ops.aten._flash_attention_forward", "torch.ops.aten._efficient_attention_forward",
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
})


def opinfo_nondeterministic_output(op: Any) -> bool:
    """OpInfo's `has_nondeterministic_output` (2.13+), else whether 2.13 flags an op of that name."""
    flag = getattr(op, "has_nondeterministic_output", None)
    if flag is not None:
        return bool(flag)
    use_fallback("opinfo.has_nondeterministic_output")
    return op.name in NONDETERMINISTIC_OUTPUT_OPS


# --- exception types ----------------------------------------------------------------------------

# PyTorch's message for a kernel missing for a dtype: `"arange_cpu" not implemented for 'Bool'`.
_MISSING_KERNEL = re.compile(r"not implemented for '[^']+'")


def is_missing_kernel(exc: BaseException) -> bool:
    """Whether an exception says "no kernel for this (dtype)": NotImplementedError, or, where
    PyTorch raised RuntimeError for it (2.7 and older kernels), that error's standard message."""
    if isinstance(exc, NotImplementedError):
        return True
    if isinstance(exc, RuntimeError) and _MISSING_KERNEL.search(str(exc).split("\n", 1)[0]):
        use_fallback("exception.missing_kernel_runtime_error")
        return True
    return False


# --- PrivateUse1 backends written in Python ------------------------------------------------------

PRIVATEUSE1_GUARD_SOURCE = Path(__file__).with_name("compat_privateuse1.cpp")


def setup_python_backend(name: str, module: Any) -> None:
    """Rename PrivateUse1 to `name` and register `module` as torch.<name>, with a device guard
    and hooks, so a backend whose kernels are Python works like a C++ one.

    PyTorch 2.10+ does it all from Python (`_setup_privateuseone_for_python_backend`); 2.7-2.9
    cannot register a guard or hooks from Python: there they are compiled from a small C++ file
    (torch.utils.cpp_extension, once per torch build, cached; needs a C++ compiler)."""
    import torch
    from torch.utils import backend_registration

    setup = getattr(backend_registration, "_setup_privateuseone_for_python_backend", None)
    if setup is not None:
        setup(name, backend_module=module)
        return
    use_fallback("privateuse1.cpp_device_guard")
    _load_privateuse1_guard()
    torch.utils.rename_privateuse1_backend(name)
    torch.utils.generate_methods_for_privateuse1_backend()
    torch._register_device_module(name, module)


def _load_privateuse1_guard() -> None:
    import contextlib
    import io
    import shutil

    import torch

    if shutil.which("c++") is None and shutil.which("g++") is None:
        raise UsageError(
            f"a Python PrivateUse1 backend on PyTorch {torch.__version__} needs a C++ compiler to build its device "
            "guard (this PyTorch cannot register one from Python): install g++, or use a PyTorch with "
            "torch.utils.backend_registration._setup_privateuseone_for_python_backend"
        )
    log = io.StringIO()  # cpp_extension prints "No CUDA runtime is found" on CUDA wheels without a GPU
    try:
        name, source = _privateuse1_guard_build()
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            from torch.utils.cpp_extension import load

            load(name=name, sources=[str(source)], build_directory=str(source.parent),
                 is_python_module=False, verbose=False)
    except Exception as exc:  # noqa: BLE001 - any build failure is the same missing prerequisite
        raise UsageError(
            f"building the PrivateUse1 device guard for PyTorch {torch.__version__} failed "
            f"({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}): "
            "check the C++ compiler and ninja, or use a newer PyTorch"
        ) from None


def _privateuse1_guard_build() -> tuple[str, Path]:
    """(extension name, source copy) in a build folder keyed by torch build and source text.

    Every checkout and process with the same source and torch then builds once and reuses the
    library: ninja rebuilds when a source path changes, so the source is copied there first."""
    import hashlib

    text = PRIVATEUSE1_GUARD_SOURCE.read_bytes()
    key = hashlib.sha256(text + torch_version_file().encode()).hexdigest()[:12]
    name = f"torchcts_privateuse1_guard_{key}"
    folder = settings.torch_extensions_folder() / name
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "privateuse1_guard.cpp"
    if not source.exists() or source.read_bytes() != text:
        from torchcts.safe_io import write_atomic

        write_atomic(folder, source.name, text, fsync=False)  # atomic: a concurrent builder never reads half a file
    return name, source


# --- which fallbacks a process used ---------------------------------------------------------------

FALLBACKS: dict[str, str] = {
    "opinfo.has_nondeterministic_output":
        "OpInfo has no has_nondeterministic_output field (new in 2.13): the ops 2.13 flags were "
        "named from TorchCTS's list (compat.NONDETERMINISTIC_OUTPUT_OPS)",
    "exception.missing_kernel_runtime_error":
        "the CPU reported a missing dtype kernel as RuntimeError (\"... not implemented for 'Bool'\"), "
        "not NotImplementedError: read as no kernel, so no reference (not_applicable)",
    "privateuse1.cpp_device_guard":
        "torch.utils.backend_registration has no _setup_privateuseone_for_python_backend: the Python "
        "backend's device guard, hooks and autograd fallback were compiled from torchcts/compat_privateuse1.cpp",
}
_USED: set[str] = set()
_WATCHERS: list[set[str]] = []


def use_fallback(name: str) -> None:
    """Note that this process took a compatibility fallback (recorded in records and run.json)."""
    if name not in FALLBACKS:
        raise KeyError(f"unregistered compatibility fallback {name!r}")
    _USED.add(name)
    for seen in _WATCHERS:
        seen.add(name)


def watch_fallbacks():  # noqa: ANN201 - a context manager yielding a set
    """Collect the fallbacks taken inside a block (even ones this process had taken before)."""
    import contextlib

    @contextlib.contextmanager
    def scope():  # noqa: ANN202
        seen: set[str] = set()
        _WATCHERS.append(seen)
        try:
            yield seen
        finally:  # by identity: nested scopes (a suite built from others) hold equal sets
            _WATCHERS[:] = [w for w in _WATCHERS if w is not seen]

    return scope()


def fallbacks_used() -> list[str]:
    return sorted(_USED)


def describe_fallbacks(names: Any) -> dict[str, str]:
    """{name: what differed and what TorchCTS did} for run.json; unknown names kept, undescribed."""
    return {n: FALLBACKS.get(n, "") for n in sorted(set(names))}


# --- Runtime API differences used by the level 4-8 suites: small helpers, one per question. ---


def fused_optimizer_devices() -> list[str] | None:
    """Device types the optimizers' fused=True accepts in this build; None when unknown."""
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    except ImportError:
        return None
    return list(_get_fused_kernels_supported_devices())


def gloo_has_every_collective() -> bool:
    """Whether gloo, under the sim's c10d backend simccl, runs every collective the distributed suite
    checks: PyTorch 2.12+ (2.12.1 and 2.13.0 measured); 2.7's gloo has no ReduceOp.AVG, reduce_scatter
    or alltoall (`--validation` records those cases not_applicable, naming gloo)."""
    return _python_backend_release()


def python_backend_compiles() -> bool:
    """Whether torch.compile runs on a Python PrivateUse1 backend's wrapper-subclass tensors (the sim,
    torchcts/sim/dynamo.py): PyTorch 2.12+ (2.12.1 and 2.13.0 measured). 2.7's dynamo asserts in
    wrap_tensor on any tensor subclass but a few of its own; a C++ backend's plain tensors need neither."""
    return _python_backend_release()


def _python_backend_release() -> bool:
    """PyTorch 2.12+: where the sim's compile and distributed claims are measured to hold."""
    import torch

    return parse_version(torch.__version__)[:2] >= (2, 12)


COMPILE_BACKEND_ENV = settings.env_name("compile_backend")
INDUCTOR_DEVICES = ("cpu", "cuda", "xpu")


def compile_backend(device_type: str) -> str:
    """The torch.compile backend for a device: inductor where it generates code, else aot_eager.

    TORCHCTS_COMPILE_BACKEND overrides the choice (e.g. aot_eager where no C++ compiler exists).
    """
    forced = settings.current().compile_backend
    if forced:
        return forced
    return "inductor" if device_type in INDUCTOR_DEVICES else "aot_eager"


def deterministic_fill():  # a context manager
    """Deterministic algorithms with uninitialized memory filled (NaN / max int), restored on exit."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def scope():
        det = torch.utils.deterministic
        old_mode, old_warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
        old_fill = det.fill_uninitialized_memory
        torch.use_deterministic_algorithms(True)
        det.fill_uninitialized_memory = True
        try:
            yield
        finally:
            det.fill_uninitialized_memory = old_fill
            torch.use_deterministic_algorithms(old_mode, warn_only=old_warn)

    return scope()
