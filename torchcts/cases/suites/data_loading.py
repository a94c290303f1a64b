"""Data loading to the device (level 6): pinned memory, DataLoader workers, non_blocking copies, sharing.

Level 6 (integration), beside device_api and memory: each case exercises the device runtime around
the kernels (the host allocator, the copy queue's order with compute, fork after the device is
initialised, interprocess handles), not an operator's values. Every case is cheap: tiny tensors,
at most one DataLoader (two workers) or one child process.

- `pin_memory/tensor` (claim `pinned_memory`, per dtype): `pin_memory()` copies into pinned memory
  (`is_pinned()`, values equal, the pageable source unchanged and unpinned), pinning a pinned tensor
  returns it, and it copies to the device and back.
- `dataloader/workers` (float32): after the device is initialised, a DataLoader with two worker
  processes yields the batches plain slicing gives, from both workers; on the device they compute
  like on CPU.
- `dataloader/pinned` (claim `pinned_memory`): the same with `pin_memory=True` and
  `pin_memory_device=<device>` (newer PyTorch ignores the argument with a warning and pins for the
  current accelerator): every batch is pinned, and non_blocking copies of it compute like on CPU.
- `non_blocking/pageable|pinned` (claim `device_api`; pinned also `pinned_memory`): host-to-device
  `.to(non_blocking=True)` and `copy_(non_blocking=True)`, device ops right after them (the stream
  order makes that safe without a synchronize), a device-to-host non_blocking copy read after
  `torch.<device>.synchronize()`: values equal CPU's.
- `sharing/queue` (claim `ipc`): a tensor on the device put on a `torch.multiprocessing` queue is
  written in place by the child process, and the parent sees the write (shared memory, not a copy).

On the host device "cpu" pinned memory means nothing (it is memory locked for copies to an
accelerator): the pinned cases are not_applicable there, as `training/data/pin_memory` is.
"""

from __future__ import annotations

import importlib
import queue as queue_module
import time
import warnings
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from torchcts.cases.api import CaseContext, CaseSet, expect, not_on_host, synchronize

SUITE = CaseSet("data_loading")
cases = SUITE.cases

F32 = ("float32",)
PINNED = ("pinned_memory",)
PIN_DTYPES = ("float32", "float16", "int64", "bool")
_ROWS, _BATCH = 16, 4


def _data(ctx: CaseContext, dtype: torch.dtype, *shape: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(*shape, generator=g) * 8
    return x.to(dtype)


# --- pinned memory --------------------------------------------------------------------------------

@SUITE.case("pin_memory/tensor", level=6, dtypes=PIN_DTYPES, requires=PINNED, ops=("aten::_pin_memory", "aten::is_pinned"))
def pin_tensor(ctx: CaseContext, dtype: torch.dtype) -> None:
    """pin_memory() is a pinned copy with equal values; pinning a pinned tensor returns it."""
    not_on_host(ctx)
    src = _data(ctx, dtype, 6, 5).t()  # a non-contiguous source
    before = src.clone()
    pinned = src.pin_memory()
    expect(pinned.is_pinned(), "pin_memory() returned a tensor is_pinned() calls pageable")
    expect(not src.is_pinned(), "pin_memory() pinned its pageable source in place (it must copy)")
    expect(pinned.untyped_storage().data_ptr() != src.untyped_storage().data_ptr(),
           "pin_memory() returned its pageable source")
    expect(torch.equal(pinned, before) and torch.equal(src, before), "pin_memory() changed the values",
           got=pinned.tolist(), expected=before.tolist())
    expect(pinned.shape == src.shape and pinned.dtype == src.dtype and pinned.device.type == "cpu",
           "pin_memory() changed the shape, dtype or device", got=f"{pinned.shape} {pinned.dtype} {pinned.device}")
    again = pinned.pin_memory()
    expect(again.data_ptr() == pinned.data_ptr(), "pin_memory() of a pinned tensor copied it again (it returns self)")
    on_device = pinned.to(ctx.device)
    expect(not on_device.is_pinned(), "a device tensor reports is_pinned()")
    expect(torch.equal(on_device.cpu(), before), "a pinned tensor's copy to the device and back changed its values")


# --- DataLoader -----------------------------------------------------------------------------------

class _Rows(Dataset):
    """Rows of two tensors plus the id of the worker that read them (-1 in the main process)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        info = get_worker_info()
        return self.x[i], self.y[i], -1 if info is None else info.id


def _rows(ctx: CaseContext) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(ctx.seed)
    return torch.randn(_ROWS, 8, generator=g), torch.randint(0, 10, (_ROWS,), generator=g)


def _load(ctx: CaseContext, pin: bool) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """One DataLoader with two workers, after the device is initialised (the workers fork from it)."""
    torch.ones(1, device=ctx.device).cpu()
    x, y = _rows(ctx)
    pin_kwargs: dict[str, Any] = {"pin_memory": True, "pin_memory_device": ctx.device_type} if pin else {}
    loader = DataLoader(_Rows(x, y), batch_size=_BATCH, shuffle=False, num_workers=2, timeout=120, **pin_kwargs)
    with warnings.catch_warnings():  # PyTorch 2.8+: pin_memory_device is deprecated (the current accelerator pins)
        warnings.filterwarnings("ignore", message=".*pin_memory_device.*")
        batches = list(loader)
    expect(len(batches) == _ROWS // _BATCH, "the DataLoader yielded the wrong number of batches",
           got=len(batches), expected=_ROWS // _BATCH)
    for i, (bx, by, _) in enumerate(batches):
        rows = slice(i * _BATCH, (i + 1) * _BATCH)
        expect(torch.equal(bx, x[rows]) and torch.equal(by, y[rows]),
               "a DataLoader batch differs from the same rows of the dataset", batch=i)
    seen = sorted({int(w) for _, _, ws in batches for w in ws})
    expect(seen == [0, 1], "the batches did not come from the two worker processes", got=seen)
    return batches


def _compute_like_cpu(ctx: CaseContext, batches: list, non_blocking: bool) -> None:
    """A linear layer over each batch on the device (copied non_blocking or not) equals CPU's."""
    g = torch.Generator().manual_seed(ctx.seed + 1)
    w, b = torch.randn(8, 3, generator=g), torch.randn(3, generator=g)
    wd, bd = w.to(ctx.device), b.to(ctx.device)
    outs = []
    for bx, by, _ in batches:
        dx, dy = bx.to(ctx.device, non_blocking=non_blocking), by.to(ctx.device, non_blocking=non_blocking)
        outs.append((dx @ wd + bd, dy * 2))
    if non_blocking:
        synchronize(ctx.device_type)
    for (bx, by, _), (out, labels) in zip(batches, outs, strict=True):
        ctx.assert_close(out.cpu(), bx @ w + b, category="matmul")
        expect(torch.equal(labels.cpu(), by * 2), "labels copied to the device and doubled differ from CPU's")


@SUITE.case("dataloader/workers", level=6, dtypes=F32, ops=("aten::mm", "aten::add.Tensor"))
def dataloader_workers(ctx: CaseContext, dtype: torch.dtype) -> None:
    """Two DataLoader workers forked after the device is initialised give the dataset's batches."""
    batches = _load(ctx, pin=False)
    _compute_like_cpu(ctx, batches, non_blocking=False)


@SUITE.case("dataloader/pinned", level=6, dtypes=F32, requires=(*PINNED, "device_api"),
            ops=("aten::_pin_memory", "aten::mm", "aten::add.Tensor"))
def dataloader_pinned(ctx: CaseContext, dtype: torch.dtype) -> None:
    """pin_memory=True batches are pinned; their non_blocking copies compute like CPU."""
    not_on_host(ctx)
    batches = _load(ctx, pin=True)
    for i, (bx, by, _) in enumerate(batches):
        expect(bx.is_pinned() and by.is_pinned(), "a pin_memory DataLoader returned an unpinned batch", batch=i)
    _compute_like_cpu(ctx, batches, non_blocking=True)


# --- non_blocking copies --------------------------------------------------------------------------

def _overlap(ctx: CaseContext, pin: bool) -> None:
    """Host-to-device non_blocking copies, device ops right after them, a non_blocking copy back."""
    src, other = _data(ctx, torch.float32, 64, 64), _data(ctx, torch.float32, 64, 64).flip(0).contiguous()
    if pin:
        src, other = src.pin_memory(), other.pin_memory()
        expect(src.is_pinned(), "pin_memory() returned an unpinned tensor")
    a = src.to(ctx.device, non_blocking=True)
    b = torch.empty(64, 64, device=ctx.device)
    b.copy_(other, non_blocking=True)
    out = (a @ b).relu_() + a  # queued behind the copies on the device: no synchronize needed
    if pin:
        back = torch.empty(64, 64).pin_memory()
        back.copy_(out, non_blocking=True)
    else:
        back = out.to("cpu", non_blocking=True)
    synchronize(ctx.device_type)  # a device-to-host non_blocking copy may be read only after this
    ctx.describe(pinned=pin)
    ctx.assert_close(back, (src @ other).relu_() + src, category="matmul")
    ctx.assert_close(a.cpu(), src, category="elementwise")


@SUITE.case("non_blocking/pageable", level=6, dtypes=F32, requires=("device_api",),
            ops=("aten::_to_copy", "aten::copy_", "aten::mm"))
def non_blocking_pageable(ctx: CaseContext, dtype: torch.dtype) -> None:
    """non_blocking copies from pageable memory: device ops after them see the copied values."""
    _overlap(ctx, pin=False)


@SUITE.case("non_blocking/pinned", level=6, dtypes=F32, requires=("device_api", *PINNED),
            ops=("aten::_to_copy", "aten::copy_", "aten::mm", "aten::_pin_memory"))
def non_blocking_pinned(ctx: CaseContext, dtype: torch.dtype) -> None:
    """non_blocking copies from and into pinned memory (truly asynchronous): the same values as CPU."""
    not_on_host(ctx)
    _overlap(ctx, pin=True)


# --- sharing between processes --------------------------------------------------------------------

def _consumer(inbox: Any, outbox: Any, done: Any, device_type: str, backend: str | None) -> None:
    """Child process: add 1 in place to the tensor received, report its sum, wait until released."""
    if backend:
        importlib.import_module(backend)
    t = inbox.get(timeout=120)
    t.add_(1)
    synchronize(device_type)
    outbox.put((str(t.device.type), float(t.sum())))
    done.wait(120)  # the producer keeps the memory alive; the consumer lets go of it first
    del t


def _answer(outbox: Any, child: Any, limit: float = 120.0) -> tuple[str, float]:
    """The child's report; a child that died or stays silent for `limit` seconds fails the case now."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return outbox.get(timeout=0.5)
        except queue_module.Empty:
            if not child.is_alive() or time.monotonic() > deadline:
                expect(False, "the child process never answered (it could not receive the shared tensor)",
                       exitcode=child.exitcode)


@SUITE.case("sharing/queue", level=6, dtypes=F32, requires=("ipc",), ops=("aten::add_.Tensor",))
def sharing_queue(ctx: CaseContext, dtype: torch.dtype) -> None:
    """A device tensor sent through a torch.multiprocessing queue is shared: the child's write shows here."""
    import torch.multiprocessing as mp

    # CPU tensors go to shared memory with fork; device runtimes (CUDA) cannot be forked once initialised
    method = "fork" if ctx.device_type == "cpu" and "fork" in mp.get_all_start_methods() else "spawn"
    mpc = mp.get_context(method)
    source = torch.arange(12, dtype=dtype).reshape(3, 4)
    t = source.to(ctx.device, copy=True)
    inbox, outbox, done = mpc.Queue(), mpc.Queue(), mpc.Event()
    child = mpc.Process(target=_consumer, args=(inbox, outbox, done, ctx.device_type, ctx.manifest.backend_import),
                        daemon=True)
    child.start()
    try:
        inbox.put(t)
        where, total = _answer(outbox, child)
        expect(where == ctx.device_type, "the child received the tensor on another device type", got=where)
        expect(total == float(source.sum() + source.numel()), "the child saw other values than were sent",
               got=total, expected=float(source.sum() + source.numel()))
        expect(torch.equal(t.cpu(), source + 1), "the child's in-place write is not visible to the parent "
               "(the tensor was copied, not shared)", got=t.cpu().tolist())
        ctx.describe(start_method=method)
    finally:
        done.set()
        child.join(60)
        if child.is_alive():
            child.terminate()
            child.join(10)
