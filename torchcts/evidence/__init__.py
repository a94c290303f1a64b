"""The backend evidence store (docs/coverage.md): append-only, canonical JSON lines without host identity."""
