"""Backends: devices, backend gates, PrivateUse1 import, catalog and install plan."""
