# description: CausalAttention masks with torch.tril after the softmax and renormalises (the
#   chapter's first approach)
# source: written for this catalogue
# replaces: CausalAttention

class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.context_length = context_length

    def forward(self, x):
        T = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        weights = torch.softmax(queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5, dim=-1)
        weights = weights * torch.tril(torch.ones(T, T))
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return self.dropout(weights) @ values
