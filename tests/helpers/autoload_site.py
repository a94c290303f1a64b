"""A site folder holding a backend module and the dist-info whose `torch.backends` entry point names
it, as `pip install` of an out-of-tree backend leaves: PyTorch's `import torch` autoloads it
(TORCH_DEVICE_BACKEND_AUTOLOAD=1). Used by the tests and bench/crash.py (OpenReg is such a backend)."""

from __future__ import annotations

import os
from pathlib import Path


def autoload_site(root: Path, module: str, source: str, entry: str = "autoload") -> dict[str, str]:
    """Write `module`.py (its text `source`) and its dist-info under root/site; the environment that
    puts it on the path with autoloading on (PYTHONPATH first, then the caller's)."""
    site = root / "site"
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / f"{module}.py").write_text(source)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[torch.backends]\n{module} = {module}:{entry}\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
