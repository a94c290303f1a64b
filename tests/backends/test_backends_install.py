"""`torchcts install`: detection with fake probes, the plan for every family, consent; nothing downloads."""

from __future__ import annotations

import pytest

import torchcts.cli.install as install_cli
from torchcts.backends import signals as sig
from torchcts.backends.install_plan import INDEX, plan_install
from torchcts.backends.signals import InstalledTorch, Signals, detect
from torchcts.compat import MAX_VALIDATED_TORCH, build_family, fmt
from torchcts.errors import UsageError

NVIDIA_BANNER = "| NVIDIA-SMI 570.86.10   Driver Version: 570.86.10   CUDA Version: 12.8 |\n"


def fake_detect(tools=(), paths=(), outputs=None, files=None, system="Linux", machine="x86_64") -> Signals:
    outputs = outputs or {}
    files = files or {}
    return detect(
        which=lambda name: f"/usr/bin/{name}" if name in tools else None,
        exists=lambda path: path in paths,
        run=lambda cmd: outputs.get(" ".join(cmd)),
        read=lambda path: files.get(path),
        system=system, machine=machine,
    )


def test_detect_nvidia():
    s = fake_detect(tools=("nvidia-smi",), outputs={
        "nvidia-smi": NVIDIA_BANNER, "nvidia-smi --query-gpu=name --format=csv,noheader": "NVIDIA H100\nNVIDIA H100\n"})
    assert s.nvidia_smi and s.nvidia_cuda == "12.8" and s.nvidia_gpus == ("NVIDIA H100", "NVIDIA H100")
    assert not (s.amd_kfd or s.rocminfo or s.xpu_smi or s.sycl_ls)


def test_detect_amd_and_intel():
    s = fake_detect(tools=("rocminfo",), paths=("/dev/kfd",), files={"/opt/rocm/.info/version": "6.3.2-96\n"})
    assert s.amd_kfd and s.rocminfo and s.rocm_version == "6.3.2"
    s = fake_detect(tools=("sycl-ls",), outputs={"sycl-ls": "[level_zero:gpu][level_zero:0] Intel(R) Arc(TM) A770\n"
                                                             "[opencl:cpu][opencl:0] Intel(R) Xeon\n"})
    assert s.sycl_ls and len(s.sycl_gpus) == 1


def test_detect_nothing_and_failing_probe():
    s = fake_detect(tools=("nvidia-smi",))  # nvidia-smi present but every run fails
    assert s.nvidia_smi and s.nvidia_cuda is None and s.nvidia_gpus == ()
    assert "nvidia-smi: yes" in s.describe()


def test_real_probe_on_this_machine_never_raises():
    s = detect()
    assert s.system and isinstance(s.describe(), str)


@pytest.mark.parametrize(("signals", "family", "confidence"), [
    (Signals("Linux", "x86_64"), "cpu", "high"),
    (Signals("Windows", "AMD64"), "cpu", "high"),
    (Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="11.8"), "cpu", "low"),
    (Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="12.4"), "cpu", "low"),
    (Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="12.6"), "cu126", "high"),
    (Signals("Windows", "AMD64", nvidia_smi=True, nvidia_cuda="12.9"), "cu128", "high"),
    (Signals("Linux", "aarch64", nvidia_smi=True, nvidia_cuda="13.0"), "cu130", "high"),
    (Signals("Linux", "x86_64", nvidia_smi=True), "cu126", "medium"),
    (Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="11.4"), "cpu", "low"),
    (Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="12.8", amd_kfd=True), "cu128", "low"),
    (Signals("Linux", "x86_64", amd_kfd=True, rocminfo=True, rocm_version="6.3.2"), "rocm6.3", "high"),
    (Signals("Linux", "x86_64", amd_kfd=True), "rocm6.4", "medium"),
    (Signals("Linux", "x86_64", rocminfo=True, rocm_version="7.0.1", sycl_ls=True), "rocm7.0", "medium"),
    (Signals("Linux", "x86_64", xpu_smi=True), "xpu", "medium"),
    (Signals("Linux", "x86_64", sycl_ls=True, sycl_gpus=("[level_zero:gpu] Intel Arc",)), "xpu", "high"),
    (Signals("Darwin", "arm64"), "default", "high"),
    (Signals("Darwin", "x86_64"), "default", "low"),
])
def test_auto_plan_for_every_family(signals, family, confidence):
    """Torch 2.9.1 publishes cu126, cu128 and cu130: a driver older than CUDA 12.6 gets the CPU wheel."""
    plan = plan_install(signals, torch_version="2.9.1", python="python3")
    assert (plan.family, plan.confidence, plan.action) == (family, confidence, "install")
    assert plan.reasons and plan.torch_version == "2.9.1"
    if family == "default":
        assert plan.command == ["python3", "-m", "pip", "install", "torch==2.9.1"]
    else:
        assert plan.command == ["python3", "-m", "pip", "install", f"torch==2.9.1+{family}",
                                "--index-url", f"{INDEX}/{family}"]


@pytest.mark.parametrize(("driver", "version", "family"), [
    ("11.8", "2.7.1", "cu118"), ("12.4", "2.7.1", "cu118"), ("13.0", "2.7.1", "cu128"),
    ("13.2", None, "cu132"), ("13.0", None, "cu130"), ("12.8", None, "cpu"), ("13.2", "2.14.1", "cu132"),
])
def test_auto_cuda_family_is_among_the_releases_published_ones(driver, version, family):
    """issue 49: the families come from the release table (torchcts/releases.py): 2.15.0, the default,
    publishes cu130 and cu132 only, so an auto plan never names a family pip would find no wheel of."""
    plan = plan_install(Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda=driver), torch_version=version)
    assert plan.family == family and plan.torch_version == (version or fmt(MAX_VALIDATED_TORCH))
    assert not any("not published" in n for n in plan.notes)


def test_default_release_is_the_newest_validated_and_never_a_silent_downgrade():
    """issue 49: on a 2.15.0 environment install planned 2.13.0 (with --family cpu, silently)."""
    assert fmt(MAX_VALIDATED_TORCH) == "2.15.0"
    newer = InstalledTorch("2.16.0+cu132", "cu132", ("cuda",))
    plan = plan_install(Signals("Linux", "x86_64"), "cpu", installed=newer)
    assert plan.torch_version == "2.16.0" and any("not a downgrade" in n for n in plan.notes)
    asked = plan_install(Signals("Linux", "x86_64"), "cpu", "2.13.0", installed=newer)
    assert asked.torch_version == "2.13.0" and any("a downgrade: torch 2.16.0+cu132 is replaced by the older 2.13.0"
                                                   in n for n in asked.notes)
    same = plan_install(Signals("Linux", "x86_64"), "cpu", installed=InstalledTorch("2.15.0+cu132", "cu132", ("cpu",)))
    assert same.torch_version == "2.15.0" and not any("downgrade" in n for n in same.notes)


def test_cu132_is_the_family_run_reports_for_a_cuda_13_2_build():
    """issue 49: run reports family cu132 (compat.build_family) and install must accept the same name."""
    assert build_family("2.15.0+cu132", "13.2", None, None, "Linux") == "cu132"
    plan = plan_install(Signals("Linux", "x86_64"), "cu132", "2.15.0")
    assert plan.command[-1] == f"{INDEX}/cu132" and plan.command[4] == "torch==2.15.0+cu132"
    with pytest.raises(UsageError, match="cu132 wheels are not published for torch 2.11.0"):
        plan_install(Signals("Linux", "x86_64"), "cu132", "2.11.0")


@pytest.mark.parametrize("family", ["cpu", "cu118", "cu126", "cu128", "cu130", "rocm6.3", "rocm6.4", "xpu", "default"])
def test_explicit_family_overrides_signals(family):
    version = "2.7.1" if family == "cu118" else "2.9.1"  # cu118 has no 2.9 wheels: a usage error (below)
    plan = plan_install(Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="12.8"), family, version)
    assert plan.family == family and plan.confidence == "high" and "--family" in plan.reasons[0]
    assert plan.torch_version == version
    assert ("--index-url" in plan.command) == (family != "default")


def test_family_outside_its_published_range_is_a_usage_error_with_the_fix():
    """issue 30: `--family cu118` for 2.13 said "not published" and exited 0."""
    with pytest.raises(UsageError, match=r"cu118 wheels are not published for torch 2.10.0 \(only for torch up to "
                       r"2.7\): pass --torch 2.7.0 or --family cu130 for torch 2.10.0"):
        plan_install(Signals("Linux", "x86_64"), "cu118", "2.10.0")
    assert not plan_install(Signals("Linux", "x86_64"), "cu118", "2.7.1").notes
    with pytest.raises(UsageError, match="pass --torch 2.9.0 or --family cu128 for torch 2.8.0"):
        plan_install(Signals("Linux", "x86_64"), "cu130", "2.8.0")


def test_auto_never_picks_a_cuda_family_the_release_lacks():
    cuda = plan_install(Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="12.4"), "auto", "2.13.0")
    assert cuda.family == "cpu" and "older than every CUDA wheel of the release (cu126+)" in cuda.reasons[1]


@pytest.mark.parametrize(("typed", "driver", "version", "family"), [
    ("cuda", None, "2.13.0", "cu132"), ("cuda", None, "2.8.0", "cu128"), ("cuda", "12.6", "2.13.0", "cu126"),
    ("cuda12.8", None, "2.11.0", "cu128"), ("cuda11.8", None, "2.7.1", "cu118"), ("mps", None, "2.13.0", "default"),
])
def test_family_names_users_type_are_mapped_and_said(typed, driver, version, family):
    """issue 30: `--family cuda` and `mps` were rejected while `rocm` was accepted."""
    signals = Signals("Darwin", "arm64") if typed == "mps" else Signals("Linux", "x86_64", nvidia_smi=driver is not None,
                                                                        nvidia_cuda=driver)
    plan = plan_install(signals, typed, version)
    assert plan.family == family and plan.reasons[0].startswith(f"--family {typed}: ")
    assert family in plan.reasons[0] and not plan.notes


def test_cli_family_cuda_prints_the_family_chosen(fake_machine, cli, capsys):
    assert cli(["install", "--family", "cuda", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "plan: wheel family cu130" in out and "--family cuda: cu130, the newest CUDA family published for torch " \
        "2.15.0 that the driver (CUDA 13.0) runs" in out
    assert cli(["install", "--family", "cu118", "--dry-run"]) == 2
    assert "cu118 wheels are not published for torch 2.15.0" in capsys.readouterr().err


def test_default_family_on_linux_warns_about_size():
    assert any("multi-GB" in n for n in plan_install(Signals("Linux", "x86_64"), "default").notes)
    assert not plan_install(Signals("Darwin", "arm64"), "default").notes


def test_torch_version_range():
    with pytest.raises(UsageError, match="older than the supported 2.7.0"):
        plan_install(Signals("Linux", "x86_64"), "cpu", "2.6.0")
    with pytest.raises(UsageError, match="bad --torch"):
        plan_install(Signals("Linux", "x86_64"), "cpu", "latest")
    plan = plan_install(Signals("Linux", "x86_64"), "cpu", "2.16.0")
    assert any("newer than the validated range" in n for n in plan.notes)
    with pytest.raises(UsageError, match="unknown wheel family 'cu999'"):
        plan_install(Signals("Linux", "x86_64"), "cu999")


def test_installed_torch_is_kept_unless_asked():
    nvidia = Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="13.0")
    cpu_build = InstalledTorch("2.13.0+cpu", "cpu", ("cpu",))
    keep = plan_install(nvidia, installed=cpu_build)
    assert keep.action == "keep" and keep.family == "cu130"
    assert "pass --family cu130" in keep.reasons[-1]
    assert plan_install(nvidia, "cu130", installed=cpu_build).action == "install"
    assert plan_install(nvidia, torch_version="2.12.0", installed=cpu_build).action == "install"
    assert plan_install(Signals("Linux", "x86_64"), installed=cpu_build).action == "keep"  # 2.13: older, kept
    newest_cpu = InstalledTorch(f"{fmt(MAX_VALIDATED_TORCH)}+cpu", "cpu", ("cpu",))
    assert plan_install(Signals("Linux", "x86_64"), installed=newest_cpu).action == "none"


class FakeRunner:
    def __init__(self, code: int = 0) -> None:
        self.code = code
        self.calls: list[list[str]] = []

    def __call__(self, cmd: list[str]) -> int:
        self.calls.append(cmd)
        return self.code


@pytest.fixture
def fake_machine(monkeypatch):
    """A machine with an NVIDIA driver and a CPU torch installed; pip is a recorder."""
    monkeypatch.setattr(sig, "detect", lambda: Signals("Linux", "x86_64", nvidia_smi=True, nvidia_cuda="13.0"))
    monkeypatch.setattr(sig, "installed_torch", lambda: InstalledTorch("2.13.0+cpu", "cpu", ("cpu",)))
    runner = FakeRunner()
    monkeypatch.setattr(install_cli, "run_command", runner)
    monkeypatch.setenv("CI", "true")
    return runner


def test_cli_keeps_installed_torch(fake_machine, cli, capsys):
    assert cli(["install"]) == 0
    out = capsys.readouterr().out
    assert "installed: torch 2.13.0+cpu (family cpu); devices it can use: cpu" in out
    assert "plan: wheel family cu130 (confidence high)" in out
    assert "--index-url https://download.pytorch.org/whl/cu130" in out
    assert "kept the installed torch" in out and not fake_machine.calls


def test_cli_dry_run_never_installs(fake_machine, cli, capsys):
    assert cli(["install", "--family", "cu130", "--dry-run"]) == 0
    assert "dry run: nothing installed" in capsys.readouterr().out and not fake_machine.calls


def test_cli_refuses_without_yes_when_non_interactive(fake_machine, cli, capsys):
    assert cli(["install", "--family", "cu130"]) == 2
    assert "pass --yes" in capsys.readouterr().err and not fake_machine.calls


def test_cli_yes_runs_the_printed_command(fake_machine, cli, capsys):
    assert cli(["install", "--family", "rocm6.4", "--torch", "2.9.1", "--yes"]) == 0
    (cmd,) = fake_machine.calls
    assert cmd[1:] == ["-m", "pip", "install", "torch==2.9.1+rocm6.4", "--index-url", f"{INDEX}/rocm6.4"]
    assert " ".join(cmd[1:]) in capsys.readouterr().out


def test_cli_pip_failure_exits_1(fake_machine, cli, capsys):
    fake_machine.code = 1
    assert cli(["install", "--family", "cpu", "--torch", "2.8.0", "--yes"]) == 1
    assert "pip exited with status 1" in capsys.readouterr().err


def test_cli_bad_family_is_usage_error(fake_machine, cli, capsys):
    assert cli(["install", "--family", "cuda99"]) == 2
    assert "unknown wheel family 'cuda99'" in capsys.readouterr().err


def test_cli_interactive_asks_first(fake_machine, cli, capsys, monkeypatch):
    import torchcts.cli.common as common

    monkeypatch.setattr(common, "non_interactive", lambda: False)
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert cli(["install", "--family", "xpu"]) == 0
    assert "not installed" in capsys.readouterr().out and not fake_machine.calls
    assert cli(["install", "--family", "xpu"]) == 0
    assert fake_machine.calls[0][4:] == ["torch==2.15.0+xpu", "--index-url", f"{INDEX}/xpu"]


def test_no_torch_installed_plans_an_install(fake_machine, cli, capsys, monkeypatch):
    monkeypatch.setattr(sig, "installed_torch", lambda: None)
    assert cli(["install", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "installed: no torch in this environment" in out and "plan: wheel family cu130" in out
    assert "dry run: nothing installed" in out


@pytest.mark.parametrize(("torch_version", "family"), [("2.7.1", "rocm6.3"), ("2.9.1", "rocm6.4"),
                                                       ("2.10.0", "rocm7.1"), ("2.13.0", "rocm7.2")])
def test_family_rocm_is_the_newest_rocm_for_the_torch_version(torch_version, family):
    plan = plan_install(Signals("Linux", "x86_64"), "rocm", torch_version)
    assert plan.family == family and f"{family} is the newest ROCm family" in plan.reasons[0]
    assert plan.command[-1] == f"{INDEX}/{family}" and not plan.notes
    newer = plan_install(Signals("Linux", "x86_64"), "rocm", "2.20.0")
    assert newer.family == "rocm7.2" and any("no ROCm family is known for torch 2.20.0" in n for n in newer.notes)


def test_cli_family_rocm_dry_run_and_hip(fake_machine, cli, capsys):
    assert cli(["install", "--family", "rocm", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "plan: wheel family rocm7.2" in out and "torch==2.15.0+rocm7.2" in out and not fake_machine.calls
    assert cli(["install", "--family", "hip", "--dry-run"]) == 2
    assert "the wheel family is rocm, the device --device cuda" in capsys.readouterr().err
