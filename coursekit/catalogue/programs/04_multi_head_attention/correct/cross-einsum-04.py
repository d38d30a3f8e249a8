# description: CrossAttention with einsum, torch.where and -1e9 for padded keys, math.sqrt scaling
# source: written for this catalogue
# replaces: CrossAttention

import math


class CrossAttention(nn.Module):
    def __init__(self, d_q, d_kv, d_out, num_heads, dropout=0.0, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError("num_heads must divide d_out")
        self.num_heads, self.head_dim = num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_q, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, context, key_padding_mask=None):
        q = split_heads(self.W_query(x), self.num_heads)
        k = split_heads(self.W_key(context), self.num_heads)
        v = split_heads(self.W_value(context), self.num_heads)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.head_dim)
        if key_padding_mask is not None:
            scores = torch.where(key_padding_mask.unsqueeze(1).unsqueeze(2), torch.full_like(scores, -1e9), scores)
        weights = self.dropout(scores.softmax(dim=-1))
        return self.out_proj(merge_heads(torch.einsum("bhqk,bhkd->bhqd", weights, v)))
