"""Dispatcher coverage: the aten overloads of this build, their kinds and kernels, and the cases that cover them."""
