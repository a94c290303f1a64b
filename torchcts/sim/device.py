"""`torch.sim`: the device module of the simulated backend (what `torch.cuda` is to CUDA).

Registered with `torch._register_device_module`, so `torch.sim.device_count()` and friends work
and `torch.manual_seed` reaches `manual_seed_all` here.
"""

from __future__ import annotations

from typing import Any

import torch

from torchcts.sim import state


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def _is_in_bad_fork() -> bool:
    return False


def _lazy_init() -> None:
    return None


def device_count() -> int:
    return state.COUNT


def current_device() -> int:
    return state.current()


def set_device(device: int | str | torch.device) -> None:
    state.set_current(_index(device))


def _index(device: int | str | torch.device | None) -> int:
    if device is None:
        return state.current()
    if isinstance(device, int):
        return device
    d = torch.device(device)
    if d.type != state.NAME:
        raise ValueError(f"expected a {state.NAME} device, got {d}")
    return d.index if d.index is not None else state.current()


class device:  # noqa: N801 - mirrors torch.cuda.device
    """Context manager that makes a sim device index current."""

    def __init__(self, device: int | str | torch.device | None) -> None:
        self.idx = _index(device)
        self.prev = state.current()

    def __enter__(self) -> None:
        self.prev = state.current()
        state.set_current(self.idx)

    def __exit__(self, *exc: Any) -> None:
        state.set_current(self.prev)


def synchronize(device: int | str | torch.device | None = None) -> None:
    """Sim ops run synchronously on CPU: there is never pending work."""
    state.check_index(_index(device))


def get_device_name(device: int | str | torch.device | None = None) -> str:
    state.check_index(_index(device))
    return "TorchCTS simulated device"


def get_device_capability(device: int | str | torch.device | None = None) -> tuple[int, int]:
    state.check_index(_index(device))
    return (1, 0)


# --- random numbers: one generator per device, apart from CPU's ---------------------------------

def manual_seed(seed: int) -> None:
    state.generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def seed() -> None:
    state.generator().seed()


def seed_all() -> None:
    seed()


def initial_seed() -> int:
    return state.generator().initial_seed()


def get_rng_state(device: int | str | torch.device = "sim") -> torch.Tensor:
    return state.generator().get_state()


def set_rng_state(new_state: torch.Tensor, device: int | str | torch.device = "sim") -> None:
    state.generator().set_state(new_state)


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state()]


def set_rng_state_all(new_states: list[torch.Tensor]) -> None:
    set_rng_state(new_states[0])


# --- memory ------------------------------------------------------------------------------------

def memory_allocated(device: int | str | torch.device | None = None) -> int:
    return state.MEMORY.allocated


def max_memory_allocated(device: int | str | torch.device | None = None) -> int:
    return state.MEMORY.peak


def memory_reserved(device: int | str | torch.device | None = None) -> int:
    return state.MEMORY.allocated


def reset_peak_memory_stats(device: int | str | torch.device | None = None) -> None:
    state.MEMORY.reset_peak()


def empty_cache() -> None:
    return None


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """The sim computes bfloat16 on CPU (as torch.cuda.is_bf16_supported answers for CUDA)."""
    return True
