"""Failures grouped: signatures (signatures.py, crash_frames.py), root-cause clusters (clusters.py,
root_causes.py) and what a cluster's failures share (shared_args.py).
"""
