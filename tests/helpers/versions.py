"""Tests of features newer than the oldest supported PyTorch (2.7.0) skip, never fail, saying which
PyTorch they need; presence of the feature decides, the version only names it."""

from __future__ import annotations

import pytest
import torch


def needs_torch(version: str, feature: str, present: bool) -> pytest.MarkDecorator:
    """skipif the feature is absent: "needs PyTorch >= VERSION (FEATURE); this is X"."""
    return pytest.mark.skipif(not present, reason=f"needs PyTorch >= {version} ({feature}); this is {torch.__version__}")


HAS_LINEAR_CROSS_ENTROPY = hasattr(torch.nn.functional, "linear_cross_entropy")
needs_linear_cross_entropy = needs_torch("2.13", "torch.nn.functional.linear_cross_entropy", HAS_LINEAR_CROSS_ENTROPY)
