"""Level 3 transfers with flags: copies between the host and the device whose sources are slices of a
larger tensor (issue 39 item 3, argument kinds: `non_blocking`, `copy`).

A copy engine takes a source pointer, a size and, for a strided source, its strides; a slice adds a
storage offset, and `non_blocking=True` sends the copy down another path (a staging buffer, a DMA
queue) than a blocking one. The copy round trips of level 1 copy whole tensors, the strides suite
copies views without flags, and the data_loading suite's non_blocking copies take whole tensors: a
path that drops the offset passes all of them. Each case copies one view of a larger tensor (an
offset slice, a step slice, a transposed slice) with one set of flags, host to device
(`Tensor.to(device, ...)`, `copy_` into a device tensor) and back (`.to("cpu", non_blocking=True)` of
a device view, then the device's synchronize; PyTorch pins that result, so the claim `pinned_memory`;
and `copy_` of a device view into a host tensor, blocking and not), and compares the values with the
view's, exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchcts.cases.api import CaseContext, CaseSet, expect, on_cpu, sample, synchronize

SUITE = CaseSet("transfers")
cases = SUITE.cases
LEVEL = 3
DTYPES = ("float32", "int64", "float16")

# source view name -> the view of a (12, 10) tensor
VIEWS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "offset": lambda t: t[3:9],
    "step": lambda t: t[1::2, ::3],
    "transposed_offset": lambda t: t[2:, 4:].t(),
}
# flags name -> Tensor.to keyword arguments
FLAGS: dict[str, dict[str, bool]] = {
    "non_blocking": {"non_blocking": True},
    "copy": {"copy": True},
    "non_blocking_copy": {"non_blocking": True, "copy": True},
}


def _upload(view: str, flags: str) -> None:
    @SUITE.family(f"to_device/{view}/{flags}", qualname=f"upload_{view}_{flags}", level=LEVEL, dtypes=DTYPES,
                  ops=("aten::_to_copy",))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        src = on_cpu(lambda: VIEWS[view](sample((12, 10), dtype, 7)))
        out = src.to(ctx.device, **FLAGS[flags])
        synchronize(ctx.device_type)
        got = out.cpu()
        expect(torch.equal(got, src), f"{view} view of a host tensor copied to the device with {FLAGS[flags]}: "
               "values differ from the view's", storage_offset=src.storage_offset(), strides=list(src.stride()),
               got=got.reshape(-1).tolist()[:6], expected=src.reshape(-1).tolist()[:6])


def _copy_into(view: str) -> None:
    @SUITE.family(f"copy_into_device/{view}", qualname=f"copy_into_{view}", level=LEVEL, dtypes=DTYPES,
                  ops=("aten::copy_",))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        src = on_cpu(lambda: VIEWS[view](sample((12, 10), dtype, 8)))
        dst = torch.zeros(src.shape, dtype=dtype).to(ctx.device)
        dst.copy_(src, non_blocking=True)
        synchronize(ctx.device_type)
        got = dst.cpu()
        expect(torch.equal(got, src), f"copy_(non_blocking=True) of a {view} view of a host tensor into a device "
               "tensor: values differ from the view's", storage_offset=src.storage_offset(),
               got=got.reshape(-1).tolist()[:6], expected=src.reshape(-1).tolist()[:6])


def _download(view: str) -> None:
    # `_to_copy` pins the host result of a non_blocking copy from a PrivateUse1 (or CUDA) device: the
    # backend's pinned allocator is asked for (NotImplementedError without one), so it is that claim's case
    @SUITE.family(f"to_host/{view}", qualname=f"download_{view}", level=LEVEL, dtypes=DTYPES,
                  ops=("aten::_to_copy",), requires=("pinned_memory",))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        base = on_cpu(sample, (12, 10), dtype, 9)
        dev_view = VIEWS[view](base.to(ctx.device))
        got = dev_view.to("cpu", non_blocking=True)
        synchronize(ctx.device_type)
        want = VIEWS[view](base)
        expect(torch.equal(got, want), f"a {view} view of a device tensor copied to the host with non_blocking=True: "
               "values differ from the view's", got=got.reshape(-1).tolist()[:6], expected=want.reshape(-1).tolist()[:6])


def _copy_to_host(view: str, non_blocking: bool) -> None:
    # `copy_` into a host tensor (a pageable destination: no pinned allocator asked for) from a device
    # view, blocking and not: the download path `.cpu()` never takes, which every other suite reads by
    @SUITE.family(f"copy_into_host/{view}/{'non_blocking' if non_blocking else 'blocking'}",
                  qualname=f"copy_into_host_{view}_{non_blocking}", level=LEVEL, dtypes=DTYPES, ops=("aten::copy_",))
    def run(ctx: CaseContext, dtype: torch.dtype) -> None:
        base = on_cpu(sample, (12, 10), dtype, 10)
        want = VIEWS[view](base)
        got = torch.zeros(want.shape, dtype=dtype)
        got.copy_(VIEWS[view](base.to(ctx.device)), non_blocking=non_blocking)
        synchronize(ctx.device_type)
        expect(torch.equal(got, want), f"copy_(non_blocking={non_blocking}) of the {view} view of a device tensor into "
               "a host tensor: values differ from the view's", got=got.reshape(-1).tolist()[:6],
               expected=want.reshape(-1).tolist()[:6])


for _view in VIEWS:
    for _flags in FLAGS:
        _upload(_view, _flags)
    _copy_into(_view)
    _download(_view)
    for _non_blocking in (False, True):
        _copy_to_host(_view, _non_blocking)
