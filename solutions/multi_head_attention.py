"""Assignment 04: multi-head attention, first as stacked heads, then with split weights (PyTorch)."""

import torch
from torch import nn

from solutions.causal_attention import CausalAttention, causal_mask, masked_softmax


class MultiHeadAttentionWrapper(nn.Module):
    """num_heads independent causal heads run side by side, outputs concatenated.

    Attributes (the grader looks for this name):
        heads: nn.ModuleList of num_heads CausalAttention(d_in, d_out, context_length, dropout,
            qkv_bias) layers, each with its own W_query, W_key, W_value. Here d_out is the width
            of ONE head.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x):
        """x (batch, T, d_in) -> (batch, T, num_heads * d_out): the heads' outputs side by side,
        head 0's first."""
        return torch.cat([head(x) for head in self.heads], dim=-1)


def split_heads(x, num_heads):
    """Cut the features of every token into num_heads consecutive slices, heads in front of tokens.

    x: (batch, T, D), D divisible by num_heads -> (batch, num_heads, T, D // num_heads), in which
    head i holds features [i*D/num_heads, (i+1)*D/num_heads) of every token.
    """
    batch, num_tokens, width = x.shape
    return x.view(batch, num_tokens, num_heads, width // num_heads).transpose(1, 2)


def merge_heads(x):
    """Put the heads side by side again, undoing split_heads.

    x: (batch, num_heads, T, head_dim) -> (batch, T, num_heads * head_dim), head 0's features
    first for every token.
    """
    batch, num_heads, num_tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, num_tokens, num_heads * head_dim)


class MultiHeadAttention(nn.Module):
    """Causal multi-head attention: one projection per role, split into heads, mixed by out_proj.

    Raises ValueError (or AssertionError) when d_out is not divisible by num_heads. Here d_out is
    the width of the WHOLE layer; each head gets head_dim = d_out // num_heads features.

    Attributes (the grader looks for these names):
        W_query, W_key, W_value: nn.Linear(d_in, d_out, bias=qkv_bias) each.
        out_proj: nn.Linear(d_out, d_out), with its default bias.
        dropout: nn.Dropout(dropout), applied to the attention weights.
    Also keep num_heads and head_dim for forward, and causal_mask(context_length) as a buffer
    (not a parameter), for example named mask.
    """

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


class CrossAttention(nn.Module):
    """Multi-head attention whose queries come from x and whose keys and values come from context.

    Not causal: every query may look at every real token of the context. Raises ValueError (or
    AssertionError) when d_out is not divisible by num_heads.

    Attributes (the grader looks for these names):
        W_query: nn.Linear(d_q, d_out, bias=qkv_bias), applied to x.
        W_key, W_value: nn.Linear(d_kv, d_out, bias=qkv_bias) each, applied to context.
        out_proj: nn.Linear(d_out, d_out), with its default bias.
        dropout: nn.Dropout(dropout), applied to the attention weights.
    """

    def __init__(self, d_q, d_kv, d_out, num_heads, dropout=0.0, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out={d_out} must be divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_q, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, key_padding_mask=None):
        """x (batch, T_q, d_q), context (batch, T_k, d_kv), key_padding_mask None or bool
        (batch, T_k), True = blocked -> (batch, T_q, d_out). No input is modified."""
        queries = split_heads(self.W_query(x), self.num_heads)  # (batch, heads, T_q, head_dim)
        keys = split_heads(self.W_key(context), self.num_heads)  # (batch, heads, T_k, head_dim)
        values = split_heads(self.W_value(context), self.num_heads)
        scores = queries @ keys.transpose(-2, -1) / self.head_dim ** 0.5  # (batch, heads, T_q, T_k)
        if key_padding_mask is not None:
            # one row of blocked keys per sequence, shared by every head and every query
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return self.out_proj(merge_heads(weights @ values))
