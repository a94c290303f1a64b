"""Oracles: comparison against the CPU reference, tolerances, and properties."""
