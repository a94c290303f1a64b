"""Manifest: what a backend claims. Schema, loading, validation and templates."""

from torchcts.manifest.schema import Manifest

__all__ = ["Manifest"]
