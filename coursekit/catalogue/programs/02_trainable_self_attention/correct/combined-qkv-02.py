# description: project_qkv with one combined matrix product, split afterwards; SelfAttention from
#   one combined weight that keeps W_query, W_key, W_value
# source: written for this catalogue

# %% replaces: project_qkv
def project_qkv(X, W_q, W_k, W_v):
    W = np.concatenate([W_q, W_k, W_v], axis=1)
    qkv = X @ W
    q_end, k_end = W_q.shape[1], W_q.shape[1] + W_k.shape[1]
    return qkv[..., :q_end], qkv[..., q_end:k_end], qkv[..., k_end:]


# %% replaces: SelfAttention
class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        layers = (self.W_query, self.W_key, self.W_value)
        weight = torch.cat([layer.weight for layer in layers])
        bias = None if layers[0].bias is None else torch.cat([layer.bias for layer in layers])
        q, k, v = torch.nn.functional.linear(x, weight, bias).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
        return weights @ v
