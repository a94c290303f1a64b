"""The one place that knows about differences between PyTorch versions, and the validated range."""

from __future__ import annotations

import re
import sys

from torchcts.errors import UsageError

MIN_TORCH = (2, 7, 0)
# Newest release this suite was validated against (the newest on the build machines).
MAX_VALIDATED_TORCH = (2, 13, 0)


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise ValueError(f"not a version: {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def fmt(v: tuple[int, int, int]) -> str:
    return ".".join(map(str, v))


def check_torch_version(version: str | None = None, warn=None) -> str | None:  # noqa: ANN001
    """Usage error below 2.7; one warning (returned and printed) above the validated range."""
    if version is None:
        import torch

        version = torch.__version__
    v = parse_version(version)
    if v < MIN_TORCH:
        raise UsageError(
            f"PyTorch {version} is older than the supported {fmt(MIN_TORCH)}: "
            f"upgrade with 'torchcts install' or pip install 'torch>={fmt(MIN_TORCH)}'"
        )
    if v[:2] > MAX_VALIDATED_TORCH[:2]:
        msg = (
            f"warning: PyTorch {version} is newer than the validated range "
            f"{fmt(MIN_TORCH)}-{fmt(MAX_VALIDATED_TORCH)}; continuing"
        )
        (warn or (lambda m: print(m, file=sys.stderr)))(msg)
        return msg
    return None


def build_info() -> dict[str, str | None]:
    """Which build of torch is installed: version, CUDA and HIP versions, debug flag."""
    import torch

    return {
        "torch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "xpu": getattr(torch.version, "xpu", None),
        "git": (getattr(torch.version, "git_version", None) or "")[:12] or None,
    }
