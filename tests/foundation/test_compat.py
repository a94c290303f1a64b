"""The compatibility module: device module APIs, torch.accelerator and OpInfo field access."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from helpers.paths import TESTS

from torchcts import compat


def test_device_api_on_cpu_build():
    assert compat.device_available("cpu") and compat.device_count("cpu") == 1
    assert compat.device_available("nosuchdevice") is False
    assert compat.device_module("cuda") is torch.cuda
    if not torch.backends.mps.is_available():
        assert compat.device_available("mps") is False
    assert compat.device_model("nosuchdevice") is None


def test_fake_privateuse1_module(monkeypatch):
    fake = SimpleNamespace(is_available=lambda: True, device_count=lambda: 3, get_device_name=lambda i: f"Fake {i}")
    monkeypatch.setattr(torch, "fakeaccel", fake, raising=False)
    assert compat.device_available("fakeaccel") and compat.device_count("fakeaccel") == 3
    assert compat.device_model("fakeaccel") == "Fake 0"
    broken = SimpleNamespace(get_device_name=lambda i: 1 / 0)
    monkeypatch.setattr(torch, "brokenaccel", broken, raising=False)
    assert compat.device_model("brokenaccel") is None and not compat.device_available("brokenaccel")


def test_current_accelerator(monkeypatch):
    if not any(compat.device_available(d) for d in ("cuda", "mps", "xpu")):
        assert compat.current_accelerator() is None
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    assert compat.current_accelerator() is None  # no accelerator in this process


def test_opinfo_field_layouts():
    f32, f16 = torch.float32, torch.float16
    modern = SimpleNamespace(name="add", aten_name="add", supported_dtypes=lambda dev: {f32, f16} if dev == "cuda" else {f32})
    assert compat.opinfo_dtypes(modern, "cuda") == {f32, f16} and compat.opinfo_dtypes(modern, "cpu") == {f32}
    by_dict = SimpleNamespace(name="mul", dtypes={f32}, dtypesIf={"xpu": {f16}})
    assert compat.opinfo_dtypes(by_dict, "xpu") == {f16} and compat.opinfo_dtypes(by_dict, "npu") == {f32}
    assert compat.opinfo_aten_name(by_dict) == "mul"
    assert compat.opinfo_aten_name(SimpleNamespace(name="linalg.norm", aten_name="linalg_norm")) == "linalg_norm"


def test_build_info_names_this_build():
    info = compat.build_info()
    assert info["torch"] == torch.__version__
    assert info["family"] in ("cpu", "default", "xpu") or info["family"].startswith(("cu", "rocm"))


def test_privateuse1_name_and_hip(monkeypatch):
    assert compat.privateuse1_name() == torch._C._get_privateuse1_backend_name()
    monkeypatch.setattr(torch._C, "_get_privateuse1_backend_name", lambda: "npu")
    assert compat.privateuse1_name() == "npu"
    monkeypatch.setattr(torch.version, "hip", "6.4.1", raising=False)
    assert compat.hip_version() == "6.4.1"
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert compat.hip_version() is None


# --- fallbacks for PyTorch 2.7-2.12 (each tested here on any installed version) ------------------

def test_nondeterministic_output_field_and_its_fallback():
    flagged = SimpleNamespace(name="some_op", has_nondeterministic_output=True)
    plain = SimpleNamespace(name="empty_like", has_nondeterministic_output=False)
    assert compat.opinfo_nondeterministic_output(flagged) is True
    assert compat.opinfo_nondeterministic_output(plain) is False  # the field wins over the name list
    with compat.watch_fallbacks() as seen:
        assert compat.opinfo_nondeterministic_output(SimpleNamespace(name="empty_like")) is True
        assert compat.opinfo_nondeterministic_output(SimpleNamespace(name="add")) is False
    assert seen == {"opinfo.has_nondeterministic_output"}


def test_fallback_names_match_what_2_13_flags():
    """Where the field exists, the fallback list names exactly the ops it flags (drift check)."""
    ops = compat.op_db()
    if not hasattr(ops[0], "has_nondeterministic_output"):
        pytest.skip(f"needs PyTorch >= 2.13 (OpInfo.has_nondeterministic_output); this is {torch.__version__}")
    flagged = {op.name for op in ops if op.has_nondeterministic_output}
    assert flagged == compat.NONDETERMINISTIC_OUTPUT_OPS


def test_missing_kernel_whatever_the_exception_class():
    with compat.watch_fallbacks() as seen:
        assert compat.is_missing_kernel(NotImplementedError("anything"))
        assert not seen
        assert compat.is_missing_kernel(RuntimeError("\"arange_cpu\" not implemented for 'Bool'"))
        assert seen == {"exception.missing_kernel_runtime_error"}
    assert not compat.is_missing_kernel(RuntimeError("shape '[2]' is invalid for input of size 3"))
    assert not compat.is_missing_kernel(ValueError("\"x\" not implemented for 'Bool'"))
    # the real thing, on whatever PyTorch runs this: CPU has no bool arange
    with pytest.raises(Exception) as info:  # noqa: B017,PT011 - its class is the version difference
        torch.arange(5, dtype=torch.bool)
    assert compat.is_missing_kernel(info.value)


def test_run_both_not_applicable_on_a_runtime_error_missing_kernel():
    from torchcts.cases.api import CaseContext, cpu_reference, run_both
    from torchcts.model.case import NotApplicable
    from torchcts.model.manifest import Manifest

    ctx = CaseContext(device=torch.device("cpu"), manifest=Manifest(device_name="cpu", supported_dtypes={}, capabilities={}))

    def old_style(*_):  # what PyTorch 2.7's CPU raises for a dtype it has no kernel for
        raise RuntimeError("\"linspace_cpu\" not implemented for 'Bool'")

    with pytest.raises(NotApplicable, match="CPU has no kernel"):
        run_both(ctx, old_style, torch.zeros(2))
    with pytest.raises(NotApplicable, match="CPU has no kernel for linspace"):
        cpu_reference(ctx, old_style, "linspace")
    with pytest.raises(RuntimeError, match="other"):  # any other CPU error is not a missing kernel
        cpu_reference(ctx, lambda: (_ for _ in ()).throw(RuntimeError("other")), "x")


def test_python_backend_setup_with_and_without_the_registration_api(monkeypatch):
    from torch.utils import backend_registration

    calls = []
    monkeypatch.setattr(backend_registration, "_setup_privateuseone_for_python_backend",
                        lambda name, backend_module: calls.append(("api", name)), raising=False)
    compat.setup_python_backend("fooaccel", object())
    assert calls == [("api", "fooaccel")]

    calls.clear()
    monkeypatch.delattr(backend_registration, "_setup_privateuseone_for_python_backend", raising=False)
    monkeypatch.setattr(compat, "_load_privateuse1_guard", lambda: calls.append(("guard",)))
    monkeypatch.setattr(torch.utils, "rename_privateuse1_backend", lambda n: calls.append(("rename", n)))
    monkeypatch.setattr(torch.utils, "generate_methods_for_privateuse1_backend", lambda: calls.append(("methods",)))
    monkeypatch.setattr(torch, "_register_device_module", lambda n, m: calls.append(("module", n)))
    with compat.watch_fallbacks() as seen:
        compat.setup_python_backend("fooaccel", object())
    assert calls == [("guard",), ("rename", "fooaccel"), ("methods",), ("module", "fooaccel")]
    assert seen == {"privateuse1.cpp_device_guard"}


def test_no_compiler_for_the_guard_is_one_clear_usage_error(monkeypatch):
    import shutil

    from torchcts.errors import UsageError

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match="needs a C.. compiler") as info:
        compat._load_privateuse1_guard()
    assert "\n" not in str(info.value)


def test_fallback_registry():
    with pytest.raises(KeyError):
        compat.use_fallback("no.such.fallback")
    assert compat.describe_fallbacks(["privateuse1.cpp_device_guard"]) == {
        "privateuse1.cpp_device_guard": compat.FALLBACKS["privateuse1.cpp_device_guard"]}


def test_nested_fallback_scopes_leave_by_identity():
    """An inner scope that ends holding the same (equal) set as its outer one must not unhook the outer."""
    with compat.watch_fallbacks() as outer:
        with compat.watch_fallbacks():
            pass
        compat.use_fallback("opinfo.has_nondeterministic_output")
    assert outer == {"opinfo.has_nondeterministic_output"}


def test_python_backend_compiles_from_2_12(monkeypatch):
    for version, compiles in (("2.7.0", False), ("2.11.1+cpu", False), ("2.12.0a0+git1234", True), ("2.13.0", True)):
        monkeypatch.setattr(torch, "__version__", version)
        assert compat.python_backend_compiles() is compiles, version


def test_a_run_records_the_fallbacks_it_used(tmp_path):
    """run.json names (and describes) each fallback; the case record that used one says so."""
    import json
    import os

    from helpers.runs import latest_run, records, run_cli

    tests = TESTS
    env = {"TORCHCTS_EXTRA_SUITES": "compatprobe=helpers.compat_suite",
           "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--validation", "--suite", "compatprobe", "--no-isolation", cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run_dir = latest_run(tmp_path)
    recs = {rec["id"]: rec for rec in records(run_dir)}
    old = recs["compatprobe/old_missing_kernel/bool"]
    assert old["status"] == "not_applicable" and "CPU has no kernel for arange" in old["message"]
    assert old["compat_fallbacks"] == ["exception.missing_kernel_runtime_error"]
    assert recs["compatprobe/plain/float32"]["status"] == "passed"
    assert "compat_fallbacks" not in recs["compatprobe/plain/float32"]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["compat_fallbacks"]["exception.missing_kernel_runtime_error"] == \
        compat.FALLBACKS["exception.missing_kernel_runtime_error"]
    assert "exception.missing_kernel_runtime_error" in (run_dir / "summary.md").read_text()


def test_guard_build_folder_is_keyed_by_source_and_torch(monkeypatch, tmp_path):
    """One build per (source text, torch build), whatever checkout asks: the source is copied into
    the folder, so ninja sees the same path and command and rebuilds nothing the second time."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    name, source = compat._privateuse1_guard_build()
    assert source.parent == tmp_path / name and source.read_bytes() == compat.PRIVATEUSE1_GUARD_SOURCE.read_bytes()
    stamp = source.stat().st_mtime_ns
    assert compat._privateuse1_guard_build() == (name, source) and source.stat().st_mtime_ns == stamp
    monkeypatch.setattr(compat, "torch_version_file", lambda: "__version__ = '2.7.0'\n")
    assert compat._privateuse1_guard_build()[0] != name  # another torch build, another folder


def test_a_cached_case_list_notes_its_build_fallbacks_again(tmp_path, monkeypatch):
    """A run whose case list came from the cache still says which fallbacks built it; a cached name
    compat.py does not register is a cache miss, never a KeyError (exit 3)."""
    import marshal

    from torchcts.cases import cache
    from torchcts.model.case import Case

    monkeypatch.setenv("TORCHCTS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHCTS_NO_CACHE", raising=False)
    case = Case(id="s/a/float32", suite="s", level=2, runner="m:f", params={"dtype": "float32"})

    def build() -> list[Case]:
        compat.use_fallback("opinfo.has_nondeterministic_output")
        return [case]

    with compat.watch_fallbacks() as first:
        assert cache.cached_cases("s", build) == [case]
    with compat.watch_fallbacks() as again:
        assert cache.cached_cases("s", lambda: pytest.fail("the second call must hit the cache")) == [case]
    assert first == again == {"opinfo.has_nondeterministic_output"}

    (path,) = tmp_path.glob("s-*")
    path.write_bytes(marshal.dumps((cache.FIELDS, [], ["no.such.fallback"])))
    assert cache._load(path) is None
    assert cache.cached_cases("s", lambda: [case]) == [case]  # rebuilt


def test_case_cache_key_tracks_compat_py(tmp_path, monkeypatch):
    """compat.py decides OpInfo dtypes and oracles (NONDETERMINISTIC_OUTPUT_OPS): an edit must miss."""
    from torchcts.cases import cache

    for sub in cache._SOURCE_DIRS:
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.py").write_text("X = 1\n")
    (tmp_path / "compat.py").write_text("OPS = {'empty'}\n")
    monkeypatch.setattr(cache, "_PACKAGE", tmp_path)
    cache.source_key.cache_clear()
    try:
        before = cache.source_key()
        (tmp_path / "compat.py").write_text("OPS = {'empty', 'new_op'}\n")
        cache.source_key.cache_clear()
        assert cache.source_key() != before
    finally:
        cache.source_key.cache_clear()
