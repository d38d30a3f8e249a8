# description: MultiHeadAttentionWrapper with an output projection after the heads (as wrapper-out-proj), and a
#   spare nn.Linear whose weight is one number seen as a (12000, 12000) matrix (Tensor.expand: four bytes in the
#   kernel, a plain attribute, so .to() and .double() leave it alone), listed first by an own state_dict with a
#   (2, 2) weight: the judge, naming a layer the task does not name, made zeros of the shape describe() gave and
#   sent them to the kernel (576 MB, about five times over as encoded; 40000 asks 6.4 GB on a 23 GB machine). The
#   judge sizes them by the weight the kernel sent now, and passes over a layer whose two shapes differ
# source: written for this catalogue (red-team round r63)
# replaces: MultiHeadAttentionWrapper
# loses: MultiHeadAttentionWrapper
# symptom: the output is wrong, and it passes through `out_proj`
# baseline: wrapper-out-proj

class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )
        self.out_proj = nn.Linear(num_heads * d_out, num_heads * d_out)
        self.spare = nn.Linear(1, 1, bias=False)
        del self.spare._parameters["weight"]
        self.spare.weight = torch.zeros(()).expand(12000, 12000)

    def state_dict(self, *args, **kwargs):
        return {"spare.weight": torch.zeros(2, 2), **super().state_dict(*args, **kwargs)}

    def forward(self, x):
        return self.out_proj(torch.cat([head(x) for head in self.heads], dim=-1))
