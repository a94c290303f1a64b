"""TorchCTS: a conformance test suite for PyTorch device backends."""

__version__ = "0.1.0"
