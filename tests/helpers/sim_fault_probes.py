"""Run as a script: plant each fault in turn and show it changes behaviour (and not without it).

This proves the faults are real bugs independently of the suites (several catching suites are
built elsewhere): when one goes undetected after they land, the suite is what missed it.
Prints one line per fault, "<name> ok" or "<name> FAIL: why", then "DONE".
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import torch

import torchcts.sim  # noqa: F401 - registers the device
from torchcts.sim import autocast, device, faults, faults_data, state, tensor

S = "sim"



def p_add_fp16_ulp() -> bool:
    a, b = torch.randn(64, dtype=torch.float16), torch.randn(64, dtype=torch.float16)
    return not torch.equal((a.to(S) + b.to(S)).cpu(), a + b)


def p_neg_vector_tail() -> bool:
    x = torch.randn(40)
    return not torch.equal((-x.to(S)).cpu(), -x)


def p_fill_bfloat16_bits() -> bool:
    return not torch.equal(torch.ones(3, dtype=torch.bfloat16, device=S).cpu(), torch.ones(3, dtype=torch.bfloat16))


def p_abs_zero_dim() -> bool:
    return torch.tensor(-2.0, device=S).abs().shape != ()


def p_sum_low_precision() -> bool:
    x = torch.linspace(1, 2, 5000, dtype=torch.float32) + 0.001  # fixed: a bf16 sum is off by ~16 here
    return abs(x.to(S).sum().item() - x.sum().item()) > 1e-3 * abs(x.sum().item()) * 0.1


def p_div_int_promotion() -> bool:
    a, b = torch.tensor([7, 9]), torch.tensor([2, 4])
    return (a.to(S) / b.to(S)).dtype != torch.float32


def p_transpose_copies() -> bool:
    base = torch.zeros(2, 3, device=S)
    base.t()[0, 0] = 5
    return base.cpu()[0, 0].item() != 5


def p_mul_inplace_new() -> bool:
    x = torch.ones(3, device=S)
    r = x.mul_(torch.full((3,), 2.0, device=S))
    return r is not x or x.cpu()[0].item() != 2


def p_add_out_ignored() -> bool:
    out = torch.zeros(3, device=S)
    torch.add(torch.ones(3, device=S), torch.ones(3, device=S), out=out)
    return out.cpu()[0].item() != 2


def p_index_select_unchecked() -> bool:
    try:
        torch.zeros(3, device=S).index_select(0, torch.tensor([3], device=S))
    except (IndexError, RuntimeError):
        return False
    return True


def p_rng_seed_ignored() -> bool:
    torch.manual_seed(1)
    a = torch.rand(4, device=S).cpu()
    torch.manual_seed(1)
    return not torch.equal(a, torch.rand(4, device=S).cpu())


def p_save_loses_device() -> bool:
    buf = io.BytesIO()
    torch.save(torch.ones(2, device=S), buf)
    buf.seek(0)
    return torch.load(buf).device.type != S


def p_sigmoid_backward_wrong() -> bool:
    x = torch.randn(4, device=S, requires_grad=True)
    torch.sigmoid(x).sum().backward()
    y = torch.sigmoid(x.detach().cpu())
    return not torch.allclose(x.grad.cpu(), y * (1 - y))


def p_max_ignores_nan() -> bool:
    return not torch.isnan(torch.tensor([1.0, float("nan"), 3.0], device=S).max()).item()


def p_to_copy_ignores_strides() -> bool:
    x = torch.arange(12.0).reshape(3, 4)
    return not torch.equal(x.to(S).t().cpu(), x.t())


def p_mul_noncontig_storage_order() -> bool:
    x = torch.arange(12.0).reshape(3, 4)
    return not torch.equal((x.to(S).t() * 2).cpu(), x.t() * 2)


def p_clone_drops_channels_last() -> bool:
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last).to(S)
    return not x.clone().is_contiguous(memory_format=torch.channels_last)


def p_device_count_wrong() -> bool:
    if torch.sim.device_count() < 2:
        return False
    try:
        torch.zeros(1, device="sim:1")
    except RuntimeError:
        return True
    return False


def p_memory_never_freed() -> bool:
    before = torch.sim.memory_allocated()
    x = torch.empty(1 << 16, device=S)
    del x
    return torch.sim.memory_allocated() > before


def p_index_add_ignores_offset() -> bool:
    base = torch.zeros(6, device=S)
    base[2:5].index_add_(0, torch.tensor([0], device=S), torch.ones(1, device=S))
    return base.cpu().tolist() != [0, 0, 1, 0, 0, 0]


def p_cumsum_narrow_accumulator() -> bool:
    x = torch.full((4,), 100, dtype=torch.int8)
    return not torch.equal(x.to(S).cumsum(0).cpu(), x.cumsum(0))


def p_mm_k_tail() -> bool:
    a, b = torch.ones(2, 4097), torch.ones(4097, 3)
    return not torch.equal((a.to(S) @ b.to(S)).cpu(), a @ b)


def p_cat_first_dtype() -> bool:
    a, b = torch.tensor([1], dtype=torch.int32), torch.tensor([1.5])
    return not torch.equal(torch.cat([a.to(S), b.to(S)]).cpu(), torch.cat([a, b]))


def p_dropout_scale_inverted() -> bool:
    y = torch.nn.functional.dropout(torch.ones(1000, device=S), 0.2, training=True).cpu()
    return not bool(((y == 0) | ((y - 1.25).abs() < 1e-6)).all())


def p_copy_same_layout_skipped() -> bool:
    dst = torch.zeros(3, device=S)
    dst.copy_(torch.ones(3, device=S))
    return dst.cpu().tolist() != [1, 1, 1]


def p_foreach_add_last_tail() -> bool:
    xs = [torch.arange(5.0), torch.arange(7.0)]
    got = torch._foreach_add([x.to(S) for x in xs], 1.0)
    return not all(torch.equal(g.cpu(), x + 1) for g, x in zip(got, xs, strict=True))


def p_exp_out_dtype_unchecked() -> bool:
    try:
        torch.exp(torch.ones(3, device=S), out=torch.zeros(3, dtype=torch.int64, device=S))
    except RuntimeError:
        return False
    return True


def p_erfcx_naive() -> bool:
    x = torch.tensor([0.5, 30.0, 1e4])
    return not torch.equal(torch.special.erfcx(x.to(S)).cpu(), torch.special.erfcx(x))


def p_set_ignores_offset() -> bool:
    src = torch.arange(10.0, device=S)
    x = torch.empty(0, device=S).set_(src.untyped_storage(), 3, (2,), (1,))
    return x.storage_offset() != 3 or x.cpu().tolist() != [3.0, 4.0]


def p_cdist_skips_root() -> bool:
    a, b = torch.rand(4, 3), torch.rand(5, 3)
    return not torch.allclose(torch.cdist(a.to(S), b.to(S), p=3).cpu(), torch.cdist(a, b, p=3))


def p_sin_fast_math() -> bool:
    x = torch.linspace(-3, 3, 101)  # includes sin's small values near 0 and +-pi
    got, want = torch.sin(x.to(S)).cpu(), torch.sin(x)
    # inside the float32 tolerance, yet far from the truth where sin is small
    return torch.allclose(got, want, rtol=1.3e-6, atol=1e-5) and not torch.equal(got, want) and bool(
        ((got - want).abs() > 1e-3 * want.abs()).any())


def p_amp_check_ignores_nan() -> bool:
    g, found = torch.tensor([1.0, float("nan")], device=S), torch.zeros(1, device=S)
    torch._amp_foreach_non_finite_check_and_unscale_([g], found, torch.ones(1, device=S))
    return found.item() == 0.0


def p_autocast_mse_loss_lower() -> bool:
    a = torch.randn(4, device=S)
    with torch.autocast(S, dtype=torch.bfloat16):
        return torch.nn.functional.mse_loss(a, a * 2).dtype != torch.float32


def p_reduce_scatter_drops_own_chunk() -> bool:
    import torch.distributed as dist

    dist.init_process_group("simccl", rank=0, world_size=1, store=dist.HashStore())  # the sim's c10d backend
    try:
        x, out = torch.arange(1.0, 5.0), torch.zeros(4, device=S)
        dist.reduce_scatter_tensor(out, x.to(S))  # one rank: its chunk is its whole input
        return not torch.equal(out.cpu(), x)
    finally:
        dist.destroy_process_group()


def p_bfloat16_cast_truncates() -> bool:
    x = torch.randn(64)
    return not torch.equal(x.to(S).bfloat16().cpu(), x.bfloat16())


def p_sort_key_ulp() -> bool:
    x = torch.randn(64)
    return not torch.equal(x.to(S).sort().values.cpu(), x.sort().values)


def p_max_dim_tail_ulp() -> bool:
    x = torch.randn(4, 8)
    return not torch.equal(x.to(S).max(1).values.cpu(), x.max(1).values)


def p_non_blocking_copy_unordered() -> bool:
    x = torch.randn(16)
    doubled = (x.to(S, non_blocking=True) * 2).cpu()  # the device op is ordered after the copy
    torch.sim.synchronize()
    return not torch.equal(doubled, x * 2)


def p_profiler_relu_decomposed() -> bool:
    x = torch.randn(8).to(S)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.relu(x)
    return "aten::relu" not in {e.name for e in prof.events()}


def p_softmax_input_scratch() -> bool:
    x = torch.randn(3, 4)
    d = x.to(S)
    torch.softmax(d, 1)
    return not torch.equal(d.cpu(), x)


def p_batch_norm_stats_unchanged() -> bool:
    mean, var = torch.zeros(3, device=S), torch.ones(3, device=S)
    torch.nn.functional.batch_norm(torch.randn(8, 3).to(S), mean, var, training=True)
    return torch.equal(mean.cpu(), torch.zeros(3))


def p_exp_reuses_buffer() -> bool:
    x, y = torch.randn(20), torch.randn(3)
    first = torch.exp(x.to(S))
    torch.exp(y.to(S))
    return not torch.equal(first.cpu(), torch.exp(x))


def p_tanh_graph_cached_by_shape() -> bool:
    x = torch.randn(5, 7)
    d = x.to(S)
    first = torch.tanh(d).cpu()
    torch.tanh(d.half())
    return not torch.equal(torch.tanh(d).cpu(), first)


def p_neg_out_memory_order() -> bool:
    x = torch.randn(4, 5)
    out = torch.zeros(5, 4, device=S).t()
    torch.neg(x.to(S), out=out)
    return not torch.equal(out.cpu(), -x)


def p_cumsum_order_alternates() -> bool:
    x = torch.randn(5, 5).to(S)
    return not torch.equal(torch.cumsum(x, 0).cpu(), torch.cumsum(x, 0).cpu())


def p_hypot_stale_every_64th() -> bool:
    a, b = torch.randn(7), torch.randn(7)
    want = torch.hypot(a, b)
    got = [torch.hypot(a.to(S), b.to(S)).cpu() for _ in range(64)]  # wrong only at the 64th launch
    return [i for i, g in enumerate(got) if not torch.equal(g, want)] == [63]


def p_subnormals_flushed() -> bool:
    x = torch.tensor([torch.finfo(torch.float32).tiny, 1.0])
    return (x.to(S) * 0.25).cpu()[0].item() == 0.0


def p_index_select_16bit() -> bool:
    table = torch.arange(70000.0).unsqueeze(1)
    index = torch.tensor([65536])
    return not torch.equal(torch.index_select(table.to(S), 0, index.to(S)).cpu(), table[65536:65537])


def p_non_blocking_drops_offset() -> bool:
    base = torch.arange(10.0)
    return not torch.equal(base[4:7].to(S, non_blocking=True).cpu(), base[4:7])


def p_mm_long_k_overread() -> bool:
    a, b = torch.ones(16, 32768 + 48), torch.ones(32768 + 48, 16)
    return not torch.equal((a.to(S) @ b.to(S)).cpu(), a @ b)


def p_pow_float16_ulp() -> bool:
    x, y = torch.tensor([0.6094], dtype=torch.float16), torch.tensor([0.5024], dtype=torch.float16)
    return not torch.equal((x.to(S) ** y.to(S)).cpu(), x**y)


def p_index_select_int32_first_32() -> bool:
    table, index = torch.arange(100.0), torch.arange(40, dtype=torch.int32)
    return not torch.equal(torch.index_select(table.to(S), 0, index.to(S)).cpu(), table[:40])


def p_tanh_inplace_ulp() -> bool:
    x = torch.randn(64)
    got = x.to(S).tanh_().cpu()
    # inside the float32 tolerance of CPU's answer, yet not the functional form's bits
    return torch.allclose(got, torch.tanh(x), rtol=1.3e-6, atol=1e-5) and not torch.equal(got, torch.tanh(x.to(S)).cpu())


def p_mean_out_reciprocal() -> bool:
    x = torch.randn(7, 13)
    out = torch.zeros(7, device=S)
    torch.mean(x.to(S), 1, out=out)
    got, want = out.cpu(), torch.mean(x.to(S), 1).cpu()
    return torch.allclose(got, want, rtol=1.3e-6, atol=1e-5) and not torch.equal(got, want)


PROBES: dict[str, Callable[[], bool]] = {
    name.removeprefix("p_"): fn for name, fn in globals().items() if name.startswith("p_")
}
# The crash and hang faults are proven by their runs (tests/sim/test_sim_faults.py), not in-process;
# the unlisted ones (Fault.unlisted) by tests/helpers/sim_fault_unlisted_probes.py, wrong and right beside, and the
# axis ones (Fault.axis) by tests/helpers/sim_fault_axis_probes.py.
# abs_illegal_address_sticky leaves this process's device lost: every later probe would fail by it.
IN_RUN_ONLY = {"mul_complex128_segv", "sub_int16_hang", "reduce_float32_segv", "out_resize_segv",
               "abs_illegal_address_sticky"}


def main() -> int:
    torch.manual_seed(0)  # probes must not pass or fail by chance
    bad = 0
    for name, fault in faults.FAULTS.items():
        if name in IN_RUN_ONLY or fault.unlisted or fault.axis:  # axis faults: sim_fault_axis_probes.py
            continue
        probe = PROBES.get(name)
        if probe is None:
            print(f"{name} FAIL: no probe")
            bad += 1
            continue
        if probe():
            print(f"{name} FAIL: misbehaves without the fault")
            bad += 1
            continue
        saved = (dict(tensor.OP_HOOKS), dict(vars(device)), state.MEMORY.release, dict(autocast.MOVED),
                 tensor.SimTensor.__dict__.get("__torch_function__"))
        faults.activate([name])
        try:
            shows = probe()
        finally:
            tensor.OP_HOOKS.clear()
            tensor.OP_HOOKS.update(saved[0])
            vars(device).update(saved[1])
            state.MEMORY.release = saved[2]  # type: ignore[method-assign]
            autocast.MOVED.clear()
            autocast.MOVED.update(saved[3])
            if saved[4] is None and "__torch_function__" in tensor.SimTensor.__dict__:
                del tensor.SimTensor.__torch_function__  # a fault gave the sim's tensors their own
            faults_data._QUEUED.clear()
        print(f"{name} ok" if shows else f"{name} FAIL: no visible effect when planted")
        bad += not shows
    print("DONE")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
