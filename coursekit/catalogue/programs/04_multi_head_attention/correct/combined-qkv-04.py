# description: MultiHeadAttention from one combined QKV product (W_query, W_key, W_value kept as the
#   layers), reshape/permute, torch.where
# source: written for this catalogue
# replaces: MultiHeadAttention

class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError("d_out must be divisible by num_heads")
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("blocked", torch.ones(context_length, context_length).triu(1).bool())

    def forward(self, x):
        b, T, _ = x.shape
        layers = (self.W_query, self.W_key, self.W_value)
        weight = torch.cat([layer.weight for layer in layers])
        bias = None if layers[0].bias is None else torch.cat([layer.bias for layer in layers])
        qkv = torch.nn.functional.linear(x, weight, bias)  # (b, T, 3 * d_out)
        qkv = qkv.reshape(b, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (b, heads, T, head_dim)
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        scores = torch.where(self.blocked[:T, :T], float('-inf'), scores)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = (weights @ v).permute(0, 2, 1, 3).reshape(b, T, -1)
        return self.out_proj(context)
