"""How a sample's tensors reach a device, in torch alone.

The OpInfo suite copies every sample with it (samples.py: copy_sample), and every standalone repro
script runs this module's source as it is (results/repro/script.py: shared_source), so a script rebuilds its
inputs exactly as the run did: the same strides, the same aliasing, the same conj/neg bits. Before,
the script kept its own copier, which also rebuilt storage offsets the run's copy dropped. Hence: no
import but torch, no `from __future__`, nothing at module level but definitions, and annotations quoted: a script
may run on a Python older than TorchCTS needs (3.9, with torch 2.7).
"""
# ruff: noqa: UP037

import torch


def storage_key(t: torch.Tensor) -> "tuple[int, torch.dtype] | None":
    """What identifies the memory a tensor views (None: a tensor copied on its own)."""
    if t.layout != torch.strided or t.is_conj() or t.is_neg() or t.is_quantized or t.numel() == 0:
        return None
    return t.untyped_storage().data_ptr(), t.dtype


class Copier:
    """Copies a sample's tensors to a device, keeping sizes, strides, conj/neg bits and the aliasing between them
    (error inputs pass `out=` overlapping the input on purpose). A tensor that shares its storage,
    or whose strides a plain copy would not keep, is rebuilt as a view of a flat copy of its storage."""

    def __init__(self, device: torch.device, tensors: "list[torch.Tensor]") -> None:
        self.device = device
        self.bases: "dict[tuple[int, torch.dtype], torch.Tensor]" = {}
        keys = [k for k in map(storage_key, tensors) if k is not None]
        self.shared = {k for k in keys if keys.count(k) > 1}

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        if t.device.type == "meta":  # error inputs pass meta tensors on purpose: they have no data
            return t
        # A lazily conjugated or negated view stays one on the device (a copy would resolve it): its
        # memory is copied and the bit set again, so the kernel reads memory through the bit. The CPU
        # reference gets the resolved values, the bit's meaning: CPU's own kernels do not all honour it
        # (PyTorch 2.13's max_pool1d reads a negated view's raw memory)
        if (t.is_conj() or t.is_neg()) and self.device.type == "cpu":
            t = t.resolve_conj().resolve_neg()
        elif t.is_conj():
            return self(t.conj()).conj()
        elif t.is_neg():
            return torch._neg_view(self(torch._neg_view(t)))
        src = t.detach()
        key = storage_key(src)
        out = None
        if key not in self.shared:
            out = src.to(self.device, copy=True)
        if key is not None and (out is None or out.stride() != src.stride()):
            base = self.bases.get(key)
            if base is None:
                base = self.bases[key] = storage_copy(src, self.device)
            out = base.as_strided(src.shape, src.stride(), src.storage_offset())
        assert out is not None
        if t.requires_grad:
            out.requires_grad_(True)
        return out


def over_storage(t: torch.Tensor, device: "torch.device | str") -> torch.Tensor:
    """t on `device` as the same view of a copy of its whole storage: an out= destination, whose
    offset, strides and the memory around it are what the out kind checks (cases/opinfo/out_layouts.py;
    a plain copy would make it contiguous at offset 0, the very layout under test)."""
    return storage_copy(t, device).as_strided(t.shape, t.stride(), t.storage_offset())


def storage_copy(t: torch.Tensor, device: "torch.device | str") -> torch.Tensor:
    """t's whole storage, copied to `device` as a flat tensor of t's dtype."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0).to(device, copy=True)
