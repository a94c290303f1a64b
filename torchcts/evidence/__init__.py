"""The backend evidence store (SPEC §8): append-only, canonical JSON lines without host identity."""
