"""A stand-in for the worker's run state, enough for engine/one_case.py: run_one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch

from torchcts.manifest.templates import validation_manifest


def run_state(tmp_path: Path) -> SimpleNamespace:
    spec = SimpleNamespace(selection=SimpleNamespace(max_samples=None, sample=None), validation=True, explore=None)
    return SimpleNamespace(spec=spec, run_dir=tmp_path, work_dir=None, worker="main", setup_fallbacks=set(),
                           budget=None, context_parts=lambda: (torch.device("cpu"), validation_manifest()))
