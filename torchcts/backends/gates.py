"""Backend gates: a gate names a build family, a device names where tensors live (docs/backends.md).

One registry, GATES, for the in-tree gates; any other name is a PrivateUse1 gate, served when the
running process has registered a PrivateUse1 backend of that name. A gate expression joins gates
with `+` (`cuda+rocm`): evidence is collected for each gate the build serves, and the surfaces of
a gate it cannot serve are recorded `not_applicable` for this build, never passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torchcts.errors import UsageError

IN_TREE_DEVICES = ("cpu", "cuda", "mps", "xpu")
# Names that can never be gates: they would collide with the evidence store's own files or keys.
RESERVED = ("sources", "index", "meta")


def derive_gate(device_type: str) -> str:
    """The gate of the running build for a device: ROCm builds expose HIP through `cuda`."""
    if device_type == "cuda":
        from torchcts.compat import hip_version

        return "rocm" if hip_version() else "cuda"
    return device_type


def _torch_version_attr(name: str) -> str | None:
    import torch

    return getattr(torch.version, name, None)


def _mps_built() -> bool:
    import torch

    return bool(torch.backends.mps.is_built())


@dataclass(frozen=True)
class Gate:
    name: str
    device: str  # the runtime device type that serves this gate
    dispatch_key: str  # the dispatch key its native kernels register under
    description: str
    # None when the running build serves the gate, else why it cannot.
    build_gap: Callable[[], str | None]

    def why_not_served(self) -> str | None:
        return self.build_gap()


def _needs(attr: str, family: str, other: str | None = None) -> Callable[[], str | None]:
    def gap() -> str | None:
        if other and _torch_version_attr(other):
            return f"this is a {other.upper()} build of PyTorch, not a {family} build"
        if not _torch_version_attr(attr):
            return f"this PyTorch build has no {family} support (torch.version.{attr} is None)"
        return None

    return gap


GATES: dict[str, Gate] = {
    g.name: g
    for g in (
        Gate("cpu", "cpu", "CPU", "the CPU kernels of any build", lambda: None),
        Gate("cuda", "cuda", "CUDA", "NVIDIA CUDA builds (--device cuda)", _needs("cuda", "CUDA", other="hip")),
        Gate("rocm", "cuda", "CUDA", "AMD ROCm/HIP builds, exposed through --device cuda", _needs("hip", "ROCm/HIP")),
        Gate("mps", "mps", "MPS", "Apple MPS builds (--device mps)",
             lambda: None if _mps_built() else "this PyTorch build has no MPS support"),
        Gate("xpu", "xpu", "XPU", "Intel XPU builds (--device xpu)", _needs("xpu", "XPU")),
    )
}


def privateuse1_gate(name: str) -> Gate:
    """A gate named after a PrivateUse1 backend: served when this process registered that name."""

    def gap() -> str | None:
        from torchcts.compat import privateuse1_name

        registered = privateuse1_name()
        if registered != name:
            return f"no PrivateUse1 backend named '{name}' is registered (registered: '{registered}')"
        return None

    return Gate(name, name, "PrivateUse1", f"the PrivateUse1 backend '{name}'", gap)


def parse_gates(expression: str) -> list[Gate]:
    """`cuda+rocm` -> [cuda, rocm]; each name once, in the order given."""
    names = [n.strip() for n in expression.split("+")]
    if not expression.strip() or any(not n for n in names):
        raise UsageError(f"bad --backend-gate '{expression}': use gate names joined by '+', e.g. cuda+rocm")
    out: list[Gate] = []
    for n in dict.fromkeys(names):
        if n in GATES:
            out.append(GATES[n])
        elif n.isidentifier() and n.lower() == n and n not in RESERVED:
            out.append(privateuse1_gate(n))
        else:
            raise UsageError(
                f"unknown backend gate '{n}': use {', '.join(GATES)} or the name of a PrivateUse1 backend"
            )
    return out


def check_gates_for_device(gates: list[Gate], device: str) -> None:
    """A gate that contradicts the device is a usage error (before anything is written)."""
    for g in gates:
        if g.device != device:
            hint = " (ROCm builds run with --device cuda)" if g.name == "rocm" else ""
            raise UsageError(
                f"--backend-gate {g.name} contradicts --device {device}: gate '{g.name}' is served by "
                f"--device {g.device}{hint}; pass --device {g.device} or a gate of device '{device}'"
            )
