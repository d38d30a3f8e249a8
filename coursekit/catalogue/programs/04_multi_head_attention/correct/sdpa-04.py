# description: MultiHeadAttention built on F.scaled_dot_product_attention (is_causal, dropout_p)
# source: written for this catalogue
# replaces: MultiHeadAttention

import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        q, k, v = (split_heads(layer(x), self.num_heads)
                   for layer in (self.W_query, self.W_key, self.W_value))
        p = self.dropout.p if self.training else 0.0
        context = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.out_proj(merge_heads(context))
