# description: the wrapper's heads are a single-head attention written in the wrapper's cell, with
#   no causal mask (a student who skipped 03's CausalAttention)
# source: written for this catalogue
# replaces: MultiHeadAttentionWrapper
# loses: MultiHeadAttentionWrapper
# symptom: the heads are not causal

class Head(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return torch.softmax(scores, dim=-1) @ values


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([Head(d_in, d_out, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
