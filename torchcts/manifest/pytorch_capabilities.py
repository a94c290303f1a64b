"""The manifest's claims in PyTorch's own words: the device-generic tests' `Capability` names.

PyTorch 2.15's device-generic tests (torch/testing/_internal/common_device_type.py) skip a test
unless the device's test base declares each capability it `@requires_capabilities`; an out-of-tree
backend declares them in its `DeviceTypeTestBase._capabilities()`. Where a PyTorch name means what
a manifest claim means, the declaration is derived from the manifest, so the backend's manifest and
its upstream declaration agree (docs/versions.md). A name with no TorchCTS claim behind it is listed
as such (None), never guessed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# PyTorch Capability name -> (where in the manifest, the claim): "capability" for the capabilities
# table, "dtype" for supported_dtypes; None where TorchCTS has no claim of that meaning.
PYTORCH_CAPABILITIES: dict[str, tuple[str, str] | None] = {
    "dtype.fp8": ("capability", "fp8"),        # float8 dtypes
    "dtype.bf16": ("dtype", "bfloat16"),
    # SDPA's fused kernels: TorchCTS compares scaled_dot_product_attention's results whichever
    # kernel the device picks, and claims no particular one.
    "attention.flash_attention": None,
    "attention.mem_efficient_attention": None,
}


def declaration(manifest: Any) -> dict[str, bool | None]:
    """{PyTorch Capability name: what the manifest claims} (None: no TorchCTS claim means it)."""
    out: dict[str, bool | None] = {}
    for name, source in PYTORCH_CAPABILITIES.items():
        if source is None:
            out[name] = None
        elif source[0] == "capability":
            out[name] = manifest.claims(source[1])
        else:
            out[name] = manifest.claims_dtype(source[1])
    return out


def installed_names() -> list[str] | None:
    """The installed torch's Capability names (2.15+), None where it has none. Read from the source
    of common_device_type.py, never imported: that import pulls in PyTorch's test harness (seconds)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "testing" / "_internal" / "common_device_type.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Capability"), None)
    if cls is None:
        return None
    return sorted(node.value.value for group in cls.body if isinstance(group, ast.ClassDef) for node in group.body
                  if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str))


def render_lines(manifest: Any) -> list[str]:
    """check-manifest's lines: the declaration, and any name this torch has that the table lacks."""
    decl = declaration(manifest)
    said = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in decl.items() if v is not None)
    lines = [f"  PyTorch capabilities (DeviceTypeTestBase._capabilities): {said}",
             f"    no TorchCTS claim behind: {', '.join(k for k, v in decl.items() if v is None)}"]
    unknown = sorted(set(installed_names() or ()) - set(PYTORCH_CAPABILITIES))
    if unknown:
        lines.append(f"    new in this PyTorch, not mapped by TorchCTS: {', '.join(unknown)}")
    return lines
