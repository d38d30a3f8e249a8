# description: CausalAttention built on F.scaled_dot_product_attention with its dropout_p
# source: written for this catalogue
# replaces: CausalAttention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        import torch.nn.functional as F
        p = self.dropout.p if self.training else 0.0
        return F.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x),
                                              dropout_p=p, is_causal=True)
