"""Sim kernels for the ops that PyTorch routes to device-only kernels, with no CPU kernel to reuse.

`torch.nn.GRU`/`LSTM` on a non-CPU device (CUDA, XPU, PrivateUse1) compute their cells with
`_thnn_fused_{gru,lstm}_cell` and differentiate them with the matching backward ops; CPU has
none of them, so the sim writes them in CPU tensor math. The workspaces are the sim's own
layouts (GRU: r, z, n, hx, hidden n-gate; LSTM: the activated i, f, g, o gates), read back only
by its own backward kernels.
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


def _fused_lstm_cell(igates: torch.Tensor, hgates: torch.Tensor, cx: torch.Tensor,
                     ibias: torch.Tensor | None = None, hbias: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gates = igates + hgates
    for bias in (ibias, hbias):
        if bias is not None:
            gates = gates + bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    cy = f * cx + i * g
    return o * torch.tanh(cy), cy, torch.cat([i, f, g, o], 1)


def _fused_lstm_cell_backward(grad_hy: torch.Tensor | None, grad_cy: torch.Tensor | None, cx: torch.Tensor,
                              cy: torch.Tensor, workspace: torch.Tensor, has_bias: bool
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    i, f, g, o = workspace.chunk(4, 1)
    grad_hy = torch.zeros_like(cy) if grad_hy is None else grad_hy
    tanh_cy = torch.tanh(cy)
    d_cy = grad_hy * o * (1 - tanh_cy * tanh_cy) + (0 if grad_cy is None else grad_cy)
    d_gates = torch.cat([d_cy * g * i * (1 - i), d_cy * cx * f * (1 - f), d_cy * i * (1 - g * g),
                         grad_hy * tanh_cy * o * (1 - o)], 1)
    return d_gates, d_cy * f, d_gates.sum(0) if has_bias else None


KERNELS: dict[Any, Callable[..., Any]] = {
    torch.ops.aten._thnn_fused_gru_cell.default: _fused_gru_cell,
    torch.ops.aten._thnn_fused_gru_cell_backward.default: _fused_gru_cell_backward,
    torch.ops.aten._thnn_fused_lstm_cell.default: _fused_lstm_cell,
    torch.ops.aten._thnn_fused_lstm_cell_backward_impl.default: _fused_lstm_cell_backward,
}
