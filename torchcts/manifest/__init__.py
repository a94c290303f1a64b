"""Manifest: what a backend claims. Schema, loading, validation and templates."""

from torchcts.model.manifest import Manifest

__all__ = ["Manifest"]
