"""The body of a standalone repro script (results/repro.py renders the header constants above it).

Static text, no formatting: the header defines CASE, DEVICE, BACKEND_IMPORT, KIND, ATOL, RTOL,
TIMEOUT_S, INPUTS and OP. The script cannot import TorchCTS, so `place` repeats the rule of the
OpInfo suite's `_Copier` (cases/opinfo/samples.py): each tensor is rebuilt on the device with its
sizes, strides, storage offset and dtype, and tensors that shared a storage share one again. A
plain `.to(device)` would make a strided or aliased input contiguous and hide a layout bug.
"""

BODY = r'''
def leaves(obj, path=""):
    if isinstance(obj, (list, tuple)):
        for i, o in enumerate(obj):
            yield from leaves(o, f"{path}[{i}]")
    elif isinstance(obj, dict) and HOST not in obj:
        for k, v in obj.items():
            yield from leaves(v, f"{path}[{k!r}]")
    else:
        yield path, obj


def place(obj, device):
    """obj with its tensors rebuilt on device: same sizes, strides, storage offset, dtype, conj/neg
    bits, requires_grad, and shared storages shared again; {HOST: t} stays on the host."""
    bases = {}

    def one(t):
        if t.device.type == "meta":
            return t
        src = t.detach()
        storage = src.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes(), src.dtype)
        if key not in bases or storage.nbytes() == 0:
            flat = src.as_strided((storage.nbytes() // src.element_size(),), (1,), 0)
            bases[key] = flat.to(device, copy=True)
        out = bases[key].as_strided(src.shape, src.stride(), src.storage_offset())
        if t.requires_grad:
            out.requires_grad_(True)
        return out

    def walk(o):
        if isinstance(o, torch.Tensor):
            return one(o) if o.layout == torch.strided else o.detach().clone().to(device)
        if isinstance(o, dict) and HOST in o:
            return o[HOST].detach().clone()
        if isinstance(o, (list, tuple)):
            return type(o)(walk(x) for x in o)
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        return o

    return walk(obj)


def describe_tensor(t):
    return f"{str(t.dtype).removeprefix('torch.')} shape {list(t.shape)} strides {list(t.stride())}" \
        if t.layout == torch.strided else f"{t.dtype} shape {list(t.shape)} {t.layout}"


def compare(actual, expected, what):
    """None when equal within ATOL/RTOL (NaN equal to NaN), else a description with metrics."""
    a_leaves, e_leaves = list(leaves(actual)), list(leaves(expected))
    if len(a_leaves) != len(e_leaves):
        return f"{what}: {len(a_leaves)} leaves, expected {len(e_leaves)}"
    for (path, a), (_, e) in zip(a_leaves, e_leaves):
        where = f"{what}{path}"
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or a != e:
                return f"{where}: got {a!r}, expected {e!r}"
            continue
        if not isinstance(a, torch.Tensor):
            return f"{where}: expected a tensor, got {type(a).__name__}"
        if a.shape != e.shape or a.dtype != e.dtype:
            return f"{where}: got {describe_tensor(a)}, expected {describe_tensor(e)}"
        a = a.detach().cpu()
        e = e.detach()
        if a.layout != torch.strided:
            a, e = a.to_dense(), e.to_dense()
        try:
            torch.testing.assert_close(a, e, atol=ATOL, rtol=RTOL, equal_nan=True, check_device=False,
                                       check_stride=False)
            continue
        except AssertionError:
            pass
        wide = torch.complex128 if a.dtype.is_complex else torch.float64
        a64, e64 = a.resolve_conj().resolve_neg().to(wide), e.resolve_conj().resolve_neg().to(wide)
        same = (a64 == e64) | (torch.isnan(a64) & torch.isnan(e64))
        diff = torch.where(same, torch.zeros_like(a64), a64 - e64).abs()
        diff = diff.real if diff.is_complex() else diff
        bad = ~same & ~(diff <= ATOL + RTOL * e64.abs())
        bad = bad if bad.any() else ~same
        scale = e64.abs().real if e64.is_complex() else e64.abs()
        nonzero = bad & (scale > 0)
        rel = f"{float((diff / scale)[nonzero].max()):.3g}" if nonzero.any() else "n/a (expected 0)"
        first = bad.nonzero()[0].tolist() if bad.any() else []
        got = a[tuple(first)].item() if first or a.dim() == 0 else "?"
        exp = e[tuple(first)].item() if first or e.dim() == 0 else "?"
        return (f"{where}: values differ: {int(bad.sum())}/{a.numel()} elements differ, max abs error "
                f"{float(diff[bad].max()) if bad.any() else 0.0:.3g}, max rel error {rel} "
                f"(atol {ATOL:.3g}, rtol {RTOL:.3g}); first at index {first}: got {got}, expected {exp}")
    return None


def call(sample, device):
    args, kwargs = place((sample["args"], sample["kwargs"]), device)
    if "device" in kwargs:  # a factory-like sample names the device: the one under test
        kwargs["device"] = device
    return args, kwargs, OP(*args, **kwargs)


def gradients(args, kwargs, result):
    inputs = [t for _, t in leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
    outs = [t for _, t in leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad]
    loss = sum(((o.real * weights(o)).sum() + (o.imag * weights(o)).sum()) if o.is_complex() else (o * weights(o)).sum()
               for o in outs)
    return list(torch.autograd.grad(loss, inputs, allow_unused=True))


def weights(o):
    """The case's loss weights (1, 1.125, ..., 1.75 repeating), so the gradients are the case's."""
    w = 1 + (torch.arange(o.numel()) % 7).to(torch.float32) / 8
    return w.reshape(o.shape).to(o.real.dtype).to(o.device)


def is_same(result, target):
    if isinstance(target, torch.Tensor):
        return result is target
    return isinstance(result, (tuple, list)) and len(result) == len(target) and all(
        r is t for r, t in zip(result, target))


def check(sample):
    """None when the device agrees with CPU on this sample, else what differs."""
    if KIND == "errors":
        try:
            call(sample, "cpu")
        except Exception as exc:
            cpu_exc = exc
        else:
            return None  # CPU accepts it: nothing to compare (the case skips such a sample)
        try:
            call(sample, DEVICE)
        except Exception as exc:
            if isinstance(exc, type(cpu_exc)):
                return None
            return f"raised {type(exc).__name__}: {exc}; CPU raised {type(cpu_exc).__name__}: {cpu_exc}"
        return f"did not raise; CPU raised {type(cpu_exc).__name__}: {cpu_exc}"
    cpu_args, cpu_kwargs, expected = call(sample, "cpu")
    try:
        args, kwargs, actual = call(sample, DEVICE)
        if KIND == "backward":
            return compare(gradients(args, kwargs, actual), gradients(cpu_args, cpu_kwargs, expected), "gradient")
    except Exception as exc:
        traceback.print_exc()
        return f"the device raised {type(exc).__name__}: {exc}"
    if KIND == "inplace" and actual is not args[0]:
        return f"the in-place op did not return self (got a {type(actual).__name__})"
    if KIND == "out" and is_same(expected, cpu_kwargs["out"]) and not is_same(actual, kwargs["out"]):
        return "the out= op did not return the out tensor(s)"
    return compare(actual, expected, "output") or compare((args, kwargs), (cpu_args, cpu_kwargs), "argument after the call")


def main():
    samples = torch.load(os.path.join(_HERE, INPUTS), weights_only=True)  # tensors and plain data only: no code
    torch.testing.assert_close(torch.zeros(1), torch.zeros(1))  # its lazy imports must not count as a hang
    print(f"case {CASE}: {OP_NAME} ({KIND}) on {DEVICE} vs cpu, atol {ATOL}, rtol {RTOL}")
    failed = 0
    for sample in samples:
        faulthandler.dump_traceback_later(TIMEOUT_S, exit=True)  # a hang exits 1 with the stack
        problem = check(sample)
        faulthandler.cancel_dump_traceback_later()
        print(f"sample {sample['describe']}: " + ("MISMATCH " + problem if problem else "ok"))
        failed += problem is not None
    print(f"{failed} of {len(samples)} sample(s) failed" if failed else "all samples match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
'''
