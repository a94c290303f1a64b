"""Planted fault: scaled_dot_product_attention ignores is_causal."""

import torch.nn.functional as F

_sdpa = F.scaled_dot_product_attention


def _no_causal(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
    return _sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=False, **kwargs)


F.scaled_dot_product_attention = _no_causal
