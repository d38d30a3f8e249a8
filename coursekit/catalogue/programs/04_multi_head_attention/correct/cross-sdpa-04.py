# description: CrossAttention on F.scaled_dot_product_attention with the mask flipped to "allowed"
#   (~key_padding_mask), its own view/transpose head split, dropout_p only in training
# source: written for this catalogue
# replaces: CrossAttention

import torch.nn.functional as F


class CrossAttention(nn.Module):
    def __init__(self, d_q, d_kv, d_out, num_heads, dropout=0.0, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.h = num_heads
        self.W_query = nn.Linear(d_q, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_kv, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)

    def _heads(self, t):
        b, n, d = t.shape
        return t.view(b, n, self.h, d // self.h).transpose(1, 2)

    def forward(self, x, context, key_padding_mask=None):
        q = self._heads(self.W_query(x))
        k = self._heads(self.W_key(context))
        v = self._heads(self.W_value(context))
        allowed = None if key_padding_mask is None else ~key_padding_mask[:, None, None, :]
        p = self.dropout.p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        b, h, n, d = out.shape
        return self.out_proj(out.transpose(1, 2).reshape(b, n, h * d))
