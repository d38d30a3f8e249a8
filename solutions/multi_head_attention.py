"""Assignment 04: multi-head attention, first as stacked heads, then with split weights (PyTorch)."""

import torch
from torch import nn

from solutions.causal_attention import CausalAttention, causal_mask, masked_softmax


class MultiHeadAttentionWrapper(nn.Module):
    """num_heads independent causal heads run side by side, outputs concatenated."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x):
        """x (batch, T, d_in) -> (batch, T, num_heads * d_out), head 0 first."""
        return torch.cat([head(x) for head in self.heads], dim=-1)


def split_heads(x, num_heads):
    """(batch, T, D) -> (batch, num_heads, T, D // num_heads); head i gets features [i*D/h, (i+1)*D/h)."""
    batch, num_tokens, width = x.shape
    return x.view(batch, num_tokens, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, num_heads, T, head_dim) -> (batch, T, num_heads * head_dim), undoing split_heads."""
    batch, num_heads, num_tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, num_tokens, num_heads * head_dim)


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention: one projection per role, split into heads, mixed by out_proj."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        """x (batch, T, d_in) -> (batch, T, d_out)."""
        num_tokens = x.shape[1]
        queries = split_heads(self.W_query(x), self.num_heads)  # (batch, heads, T, head_dim)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5  # (batch, heads, T, T)
        weights = self.dropout(masked_softmax(scores, self.mask[:num_tokens, :num_tokens]))
        return self.out_proj(merge_heads(weights @ values))
