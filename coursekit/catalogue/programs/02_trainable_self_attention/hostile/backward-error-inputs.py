# description: SelfAttention without the sqrt(d_k) scale (as selfattn-unscaled), whose output in train mode goes
#   through an autograd Function whose backward raises with the first twelve inputs of the case, to six decimals,
#   as its text: the gradient case's report quoted that text whole, the hidden inputs in the feedback; a suite
#   quotes an error's text now without the numbers that could hold them
# source: written for this catalogue (red-team round r63)
# replaces: SelfAttention
# loses: SelfAttention
# symptom: backpropagating through SelfAttention failed (inputs -… 
# baseline: selfattn-unscaled

class _Said(torch.autograd.Function):
    @staticmethod
    def forward(ctx, out, x):
        ctx.said = "inputs " + " ".join(f"{v:.6f}" for v in x.flatten()[:12].tolist())
        return out.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(ctx.said)


class SelfAttention(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        out = torch.softmax(queries @ keys.transpose(-2, -1), dim=-1) @ values
        return _Said.apply(out, x) if self.training and torch.is_grad_enabled() else out
