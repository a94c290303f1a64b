"""Counterexample corpus entries written by hand, as a shared corpus folder could hold them."""

from __future__ import annotations

import json
from pathlib import Path

EXPLORE_CASE = "opinfo/sum/float32/explore"


def corpus_entry(root: Path, sample: dict, tag: str = "a") -> Path:
    import hashlib

    from torchcts.cases.explore import corpus

    folder = root / corpus.op_folder(EXPLORE_CASE)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(EXPLORE_CASE.encode()).hexdigest()[:12]}-{tag}.json"
    path.write_text(json.dumps({"version": 1, "case": EXPLORE_CASE, "variant": "forward", "sample": sample}))
    return path


def tensor_spec(shape: list[int], expand: list[int] | None = None) -> dict:
    import math

    body = {"dtype": "float32", "shape": shape, "values": ["0x0.0p+0"] * math.prod(shape)}
    return {"tensor": {**body, **({"expand": expand} if expand else {})}}
