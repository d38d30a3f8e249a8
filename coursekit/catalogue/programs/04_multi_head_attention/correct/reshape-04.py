# description: reshape/permute instead of view/transpose, chunk and cat for the heads
# source: written for this catalogue

# %% replaces: split_heads
def split_heads(x, num_heads):
    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)


# %% replaces: merge_heads
def merge_heads(x):
    return torch.cat(x.unbind(dim=1), dim=-1)


# %% replaces: MultiHeadAttentionWrapper
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList()
        for _ in range(num_heads):
            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

    def forward(self, x):
        outputs = []
        for head in self.heads:
            outputs.append(head(x))
        return torch.cat(outputs, dim=2)
