"""Assignment 03: causal (masked) self-attention with dropout (PyTorch)."""

import torch
from torch import nn


def causal_mask(num_tokens):
    """The causal mask for num_tokens tokens: True where query i may NOT see key j (j > i).

    num_tokens: int T -> a torch.bool tensor (T, T), True strictly above the diagonal, False on
    and below it.
    """
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


def masked_softmax(scores, mask):
    """Softmax over the last dimension of scores, with weight exactly 0 wherever mask is True.

    scores: float tensor (..., T_q, T_k); mask: bool tensor broadcastable to scores (for example
    (T_q, T_k) for a whole batch), True = blocked -> weights (..., T_q, T_k) in the dtype of
    scores, each row summing to 1 over its unblocked entries, blocked ones exactly 0 however large
    or small the scores. `scores` is not modified.
    """
    return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)


def padding_mask(lengths, num_tokens):
    """The key padding mask of a batch of sequences padded to num_tokens tokens.

    lengths: 1-D integer tensor (batch,), each entry between 1 and num_tokens: how many tokens
    of that sequence are real; the rest of its num_tokens positions are padding. ->
    a torch.bool tensor (batch, 1, num_tokens), True where key position j >= lengths[b]
    (padding: blocked). The middle axis of size 1 stands for "every query", so the mask
    broadcasts against scores (batch, T, T) and combines with causal_mask(T) by `|`.
    `lengths` is not modified.
    """
    positions = torch.arange(num_tokens, device=lengths.device)  # (T,)
    return (positions >= lengths[:, None])[:, None, :]  # (batch, 1, T)


class CausalAttention(nn.Module):
    """Self-attention in which each token attends only to itself and earlier tokens.

    Attributes (the grader looks for these names):
        W_query, W_key, W_value: nn.Linear(d_in, d_out, bias=qkv_bias) each.
        dropout: nn.Dropout(dropout), applied to the attention weights.
    Also keep causal_mask(context_length) on the module as a buffer (not a parameter), for
    example named mask.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # a buffer follows the module to its device and is not a trained parameter
        self.register_buffer("mask", causal_mask(context_length), persistent=False)

    def forward(self, x):
        """x (batch, T, d_in), T <= context_length -> (batch, T, d_out)."""
        num_tokens = x.shape[-2]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5  # (batch, T, T)
        weights = masked_softmax(scores, self.mask[:num_tokens, :num_tokens])
        return self.dropout(weights) @ values
