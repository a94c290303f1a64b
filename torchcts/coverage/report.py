"""`coverage report`: coverage by surface kind and the largest uncovered families (Markdown or JSON)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from torchcts.coverage.inventory import Inventory, Row
from torchcts.coverage.surfaces import KERNELS, KINDS

# Name prefixes that make one family (an op namespace or a kernel library); else the op's stem.
FAMILY_PREFIXES = (
    "_foreach_", "_fused_", "linalg_", "_linalg_", "fft_", "_fft_", "special_", "_nested_", "nested_",
    "_sparse_", "sparse_", "quantized_", "q_", "mkldnn_", "_mkldnn_", "cudnn_", "_cudnn_", "miopen_",
    "_mps_", "fbgemm_", "_test_", "_masked_", "_scaled_dot_product_", "_efficient_attention",
    "_flash_attention", "_native_", "_cufft_", "_cslt_", "_cummax", "_cummin",
)
_STEM_SUFFIXES = ("_backward", "_forward", "_out", "_copy")


def family(op: str) -> str:
    """aten::_foreach_add_ -> foreach, aten::max_pool2d_with_indices_backward -> max_pool2d_with_indices."""
    base = op.split("::", 1)[-1]
    for prefix in FAMILY_PREFIXES:
        if base.startswith(prefix):
            return prefix.strip("_")
    stem = base.strip("_")
    changed = True
    while changed:
        changed = False
        for suffix in _STEM_SUFFIXES:
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem, changed = stem[: -len(suffix)], True
    return stem.rstrip("_") or base


def summarize(inv: Inventory, top: int = 25) -> dict[str, Any]:
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        rows = [r for r in inv.rows if r.kind == kind]
        kernels = Counter(r.registration["kernel"] for r in rows)
        covered = sum(1 for r in rows if r.cases)
        by_kind[kind] = {
            "surfaces": len(rows),
            "covered": covered,
            "percent": round(100.0 * covered / len(rows), 1) if rows else 0.0,
            "kernels": {k: kernels.get(k, 0) for k in KERNELS},
        }
    families: dict[str, list[Row]] = {}
    for r in inv.rows:
        families.setdefault(family(r.op), []).append(r)
    uncovered = []
    for name, rows in families.items():
        missing = [r for r in rows if not r.cases]
        if missing:
            uncovered.append({"family": name, "uncovered": len(missing), "surfaces": len(rows),
                              "examples": [r.name for r in missing[:4]]})
    uncovered.sort(key=lambda f: (-f["uncovered"], f["family"]))
    total = len(inv.rows)
    covered = sum(1 for r in inv.rows if r.cases)
    return {
        "device": inv.device,
        "dispatch_key": inv.dispatch_key,
        "suites": inv.suites,
        "totals": {"surfaces": total, "covered": covered,
                   "percent": round(100.0 * covered / total, 1) if total else 0.0, "cases": len(inv.coverage.cases)},
        "by_kind": by_kind,
        "largest_uncovered_families": uncovered[:top],
        "unmapped_case_ops": {k: len(v) for k, v in sorted(inv.coverage.unmapped.items())},
    }


def render_markdown(summary: dict[str, Any], build: dict[str, Any]) -> str:
    t = summary["totals"]
    suites = ", ".join(summary["suites"]) if summary["suites"] else "all registered suites"
    lines = [
        "# TorchCTS dispatcher coverage",
        "",
        f"PyTorch {build.get('torch')}; kernels for --device {summary['device']} (dispatch key "
        f"{summary['dispatch_key']}); cases from {suites}.",
        "",
        f"**{t['covered']} of {t['surfaces']} aten overloads covered ({t['percent']}%)** by {t['cases']} cases.",
        "",
        "## By surface kind",
        "",
        "| kind | surfaces | covered | % | " + " | ".join(KERNELS) + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in KERNELS) + " |",
    ]
    for kind, row in summary["by_kind"].items():
        kernels = " | ".join(str(row["kernels"][k]) for k in KERNELS)
        lines.append(f"| {kind} | {row['surfaces']} | {row['covered']} | {row['percent']} | {kernels} |")
    lines += ["", "## Largest uncovered families", "", "| family | uncovered | of | examples |",
              "| --- | ---: | ---: | --- |"]
    for f in summary["largest_uncovered_families"]:
        lines.append(f"| {f['family']} | {f['uncovered']} | {f['surfaces']} | {', '.join(f['examples'])} |")
    if summary["unmapped_case_ops"]:
        lines += ["", "## Case ops that map to no overload", ""]
        lines += [f"- `{name}` ({n} cases)" for name, n in summary["unmapped_case_ops"].items()]
    return "\n".join(lines) + "\n"
