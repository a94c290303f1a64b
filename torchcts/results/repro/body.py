"""The body of a standalone repro script (results/repro/script.py renders the header constants above it).

Static text, no formatting: the header defines CASE, DEVICE, BACKEND_IMPORT, KIND, ATOL, RTOL,
TIMEOUT_S, INPUTS and OP, and the float64 truth's rule (TRUTH and its constants); the elementwise
tolerance rule and its metrics are torchcts/oracle/metrics.py's own source, copied above (`widened`,
`outside_tolerance`, `error_maxima`) and the truth's measure (`ulp`, `ulps`), so the script
measures and judges as the record did; the inputs reach the device through the OpInfo suite's own
copier (cases/opinfo/copier.py: `Copier`, also copied above): each tensor keeps its sizes, strides
and dtype, and tensors that shared a storage share one again, exactly as in the run (a plain
`.to(device)` would make a strided or aliased input contiguous and hide a layout bug). The truth's
judgement (`sensitivity`, `truth_problem`) repeats torchcts/oracle/truth.py's `judge_leaf` and
cases/opinfo/truth.py, since it cannot import them.
"""

BODY = r'''
def leaves(obj, path=""):
    if isinstance(obj, (list, tuple)):
        for i, o in enumerate(obj):
            yield from leaves(o, f"{path}[{i}]")
    elif isinstance(obj, dict) and HOST not in obj and FORMAT not in obj:
        for k, v in obj.items():
            yield from leaves(v, f"{path}[{k!r}]")
    else:
        yield path, obj


def place(obj, device):
    """obj with its tensors on device as the run copied them (`Copier`, the OpInfo suite's own source
    above): same sizes, strides, dtype, conj/neg bits (resolved on "cpu", the reference),
    requires_grad, and shared storages shared again; {HOST: t} stays on the host (a view over a copy of
    its storage)."""
    one = Copier(torch.device(device), [t for _, t in leaves(obj) if isinstance(t, torch.Tensor)])

    def walk(o):
        if isinstance(o, torch.Tensor):
            return one(o)
        if isinstance(o, dict) and HOST in o:
            h = o[HOST].detach()
            return h.clone() if h.storage_offset() == 0 and h.is_contiguous() else over_storage(h, "cpu")
        if isinstance(o, dict) and FORMAT in o and o[FORMAT] in MEMORY_FORMATS:
            return getattr(torch, o[FORMAT])
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
        a64, e64 = widened(a.resolve_conj().resolve_neg()), widened(e.resolve_conj().resolve_neg())
        diff, bad = outside_tolerance(a64, e64, ATOL, RTOL)  # the record's rule and metrics (metrics.py above)
        if not bad.any():  # assert_close saw a difference the rule did not: show every unequal element
            bad = ~((a64 == e64) | (torch.isnan(a64) & torch.isnan(e64)))
        max_abs, max_rel = error_maxima(diff, bad, e64)
        rel = f"{max_rel:.3g}" if max_rel is not None else "n/a (expected 0)"
        first = bad.nonzero()[0].tolist() if bad.any() else []
        got = a[tuple(first)].item() if first or a.dim() == 0 else "?"
        exp = e[tuple(first)].item() if first or e.dim() == 0 else "?"
        return (f"{where}: values differ: {int(bad.sum())}/{a.numel()} elements differ, max abs error "
                f"{max_abs:.3g}, max rel error {rel} "
                f"(atol {ATOL:.3g}, rtol {RTOL:.3g}); first at index {first}: got {got}, expected {exp}")
    return None


def strides_problem(actual, expected):
    """None when each output's strides equal CPU's over its dimensions of size > 1, else which differ."""
    for (path, a), (_, e) in zip(leaves(actual), leaves(expected)):
        if not isinstance(a, torch.Tensor) or not isinstance(e, torch.Tensor) or a.layout != torch.strided:
            continue
        wide = [d for d in range(a.dim()) if a.shape[d] > 1]
        if a.shape == e.shape and [a.stride(d) for d in wide] != [e.stride(d) for d in wide]:
            return f"output{path}: strides {list(a.stride())}, CPU's {list(e.stride())} (the memory format asked for)"
    return None


def around(device_out, cpu_out):
    """None when the storage of each out= destination outside its view is as CPU left it, else what changed."""
    for (path, d), (_, c) in zip(leaves(device_out), leaves(cpu_out)):
        if not isinstance(c, torch.Tensor) or c.layout != torch.strided:
            continue
        n = c.untyped_storage().nbytes() // c.element_size()
        if n <= c.numel():
            continue
        inside = torch.zeros(n, dtype=torch.bool)
        inside.as_strided(c.shape, c.stride(), c.storage_offset()).fill_(True)
        try:
            got = d.detach().as_strided((n,), (1,), 0).cpu()[~inside]
        except RuntimeError as exc:
            return f"out{path}: its storage no longer holds {n} elements ({exc})"
        want = c.detach().as_strided((n,), (1,), 0)[~inside]
        changed = ~((got == want) | (got.isnan() & want.isnan()))
        if changed.any():
            return f"out{path}: written outside the view: {int(changed.sum())} of the {len(want)} elements around it changed"
    return None


def call(sample, device):
    out = sample["kwargs"].get("out") if KIND == "out" else None
    if not isinstance(out, (torch.Tensor, tuple, list)):
        out = None
    args, kwargs = place((sample["args"], {k: v for k, v in sample["kwargs"].items() if out is None or k != "out"}),
                         device)
    if out is not None:  # over its whole storage, as the run sends an out= kind's destination (`over_storage`):
        # its offset and what is around it are checked
        kwargs["out"] = over_storage(out, device) if isinstance(out, torch.Tensor) else \
            type(out)(over_storage(t, device) for t in out)
    if "device" in kwargs:  # a factory-like sample names the device: the one under test
        kwargs["device"] = device
    return args, kwargs, OP(*args, **kwargs)


def gradients(args, kwargs, result):
    """The case's gradients: its weights go in as the outputs' gradients (no sum on the device)."""
    inputs = [t for _, t in leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
    outs = [t for _, t in leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad]
    return list(torch.autograd.grad(outs, inputs, grad_outputs=[weights(o) for o in outs], allow_unused=True))


def weights(o):
    """The case's output gradients (1, 1.125, ..., 1.75 repeating; w + wi for a complex output)."""
    w = (1 + (torch.arange(o.numel()) % 7).to(torch.float32) / 8).reshape(o.shape).to(o.real.dtype)
    return (torch.complex(w, w) if o.is_complex() else w).to(o.device)


def is_same(result, target):
    if isinstance(target, torch.Tensor):
        return result is target
    return isinstance(result, (tuple, list)) and len(result) == len(target) and all(
        r is t for r, t in zip(result, target))


def widen(o):
    """o with its floating tensors in float64 (complex in complex128): the truth is the op's result on these."""
    if isinstance(o, torch.Tensor) and (o.is_floating_point() or o.is_complex()):
        return o.detach().to(torch.complex128 if o.is_complex() else torch.float64)
    if isinstance(o, (list, tuple)):
        return type(o)(widen(x) for x in o)
    if isinstance(o, dict):
        return {k: widen(v) for k, v in o.items()}
    return o


def is_float(t):
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


def sensitivity(wide, truth):
    """The summed |f(.., x (1 + eps), ..) - f(..)| over each floating input x in turn; None when not measurable."""
    from torch.utils import _pytree as pytree

    flat, spec = pytree.tree_flatten(wide)
    moved_at = [i for i, x in enumerate(flat) if is_float(x)]
    out, out_spec = pytree.tree_flatten(truth)
    if not moved_at or len(moved_at) > 4:
        return None
    total = [torch.zeros(t.shape, dtype=torch.float64) if is_float(t) and t.layout == torch.strided else None for t in out]
    for i in moved_at:
        moved = list(flat)
        moved[i] = flat[i] * (1 + TRUTH_EPS)
        args, kwargs = pytree.tree_unflatten(moved, spec)
        again, again_spec = pytree.tree_flatten(OP(*args, **kwargs))
        if again_spec != out_spec:
            return None
        for k, (a, t) in enumerate(zip(again, out)):
            if total[k] is not None:
                total[k] += torch.nan_to_num((a - t).abs().double(), nan=float("inf"))
    return pytree.tree_unflatten(total, out_spec)


def dense_wide(t):
    t = t.detach().cpu().resolve_conj().resolve_neg()
    t = t.to_dense() if t.layout != torch.strided else t
    return t.to(torch.complex128 if t.is_complex() else torch.float64)


def truth_problem(actual, expected, args, kwargs, problem):
    """Judge floating outputs by the float64 truth as the run did (TorchCTS docs/oracles.md, "Truth beyond
    CPU"): an element outside the tolerance passes when the device is no farther from the truth than CPU;
    for pointwise ops (TRUTH == "strict") one inside it fails when the device is farther from the truth
    than max(WORSE_FACTOR x CPU, WORSE_FLOOR_ULPS, COND_FACTOR x the sensitivity), CPU within CPU_ILL_ULPS."""
    from torch.utils import _pytree as pytree

    wide = widen((args, kwargs))
    truth = OP(*wide[0], **wide[1])
    sens = sensitivity(wide, truth) if TRUTH == "strict" else None
    a_leaves, e_leaves, t_leaves = pytree.tree_leaves(actual), pytree.tree_leaves(expected), pytree.tree_leaves(truth)
    s_leaves = pytree.tree_leaves(sens) if sens is not None else [None] * len(e_leaves)
    if not len(a_leaves) == len(e_leaves) == len(t_leaves) == len(s_leaves):
        return problem
    for i, (a, e, t, s) in enumerate(zip(a_leaves, e_leaves, t_leaves, s_leaves)):
        measured = is_float(e) and is_float(a) and is_float(t) and a.shape == e.shape == t.shape and a.dtype == e.dtype
        if not measured:
            other = compare(a, e, f"output leaf {i}")
            if other:
                return other
            continue
        a64, e64, t64 = dense_wide(a), dense_wide(e), dense_wide(t)
        _, outside = outside_tolerance(a64, e64, ATOL, RTOL)
        dev, cpu = ulps(a64, t64, e.dtype), ulps(e64, t64, e.dtype)
        rescued = torch.isfinite(dev) & (dev <= RESCUE_FACTOR * cpu) & (torch.isfinite(cpu) | (dev <= WORSE_FLOOR_ULPS))
        if (outside & ~rescued).any():
            return problem or compare(a, e, f"output leaf {i}")
        if s is None:
            continue
        allowed = torch.maximum(torch.clamp(WORSE_FACTOR * cpu, min=WORSE_FLOOR_ULPS),
                                COND_FACTOR * torch.nan_to_num(s / ulp(t64, e.dtype), nan=float("inf")))
        normal = t64.abs() >= torch.finfo(real_dtype(e.dtype)).smallest_normal
        worse = ~outside & normal & (dev > allowed) & (cpu <= CPU_ILL_ULPS)
        if worse.any():
            at = torch.where(worse, dev, torch.full_like(dev, -1.0)).argmax()
            return (f"output leaf {i}: much less accurate than CPU against the float64 truth: {int(worse.sum())}/"
                    f"{worse.numel()} elements inside the tolerance; worst {float(dev.flatten()[at]):.3g} ulps from "
                    f"the truth where CPU is {float(cpu.flatten()[at]):.3g}: got {a64.flatten()[at].item()}, "
                    f"CPU {e64.flatten()[at].item()}, truth {t64.flatten()[at].item()}")
    return None


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
    problem = compare(actual, expected, "output")
    if kwargs.get("memory_format") in tuple(getattr(torch, name) for name in STRICT_FORMATS) \
            and "device" not in kwargs and not any(isinstance(a, (str, torch.device)) for a in args):
        problem = problem or strides_problem(actual, expected)
    if KIND == "out":
        problem = problem or around(kwargs["out"], cpu_kwargs["out"])
    if KIND == "call" and TRUTH:
        problem = truth_problem(actual, expected, cpu_args, cpu_kwargs, problem)
    return problem or compare((args, kwargs), (cpu_args, cpu_kwargs), "argument after the call")


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
