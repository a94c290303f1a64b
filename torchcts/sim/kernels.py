"""Sim kernels for the ops that PyTorch routes to device-only kernels, with no CPU kernel to reuse.

`torch.nn.GRU` on a non-CPU device (CUDA, XPU, PrivateUse1) computes its cells with
`_thnn_fused_gru_cell` and differentiates them with `_thnn_fused_gru_cell_backward`; CPU has
neither, so the sim writes them in CPU tensor math. The workspace is the sim's own layout
(r, z, n, hx, hidden n-gate), read back only by its own backward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def _fused_gru_cell(igates: torch.Tensor, hgates: torch.Tensor, hx: torch.Tensor,
                    ibias: torch.Tensor | None = None, hbias: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    if ibias is not None:
        igates = igates + ibias
    if hbias is not None:
        hgates = hgates + hbias
    i_r, i_z, i_n = igates.chunk(3, 1)
    h_r, h_z, h_n = hgates.chunk(3, 1)
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return n + z * (hx - n), torch.cat([r, z, n, hx, h_n], 1)


def _fused_gru_cell_backward(grad_hy: torch.Tensor, workspace: torch.Tensor, has_bias: bool
                             ) -> tuple[torch.Tensor | None, ...]:
    r, z, n, hx, h_n = workspace.chunk(5, 1)
    d_n = grad_hy * (1 - z) * (1 - n * n)
    d_r = d_n * h_n * r * (1 - r)
    d_z = grad_hy * (hx - n) * z * (1 - z)
    d_igates = torch.cat([d_r, d_z, d_n], 1)
    d_hgates = torch.cat([d_r, d_z, d_n * r], 1)
    biases = (d_igates.sum(0), d_hgates.sum(0)) if has_bias else (None, None)
    return (d_igates, d_hgates, grad_hy * z, *biases)


KERNELS: dict[Any, Callable[..., Any]] = {
    torch.ops.aten._thnn_fused_gru_cell.default: _fused_gru_cell,
    torch.ops.aten._thnn_fused_gru_cell_backward.default: _fused_gru_cell_backward,
}
