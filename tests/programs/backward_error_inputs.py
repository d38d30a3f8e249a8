# A SelfAttention, right in every forward, whose backward raises with the inputs of the case in its text (a
# custom autograd Function): the gradient case's report quoted that text whole (red-team round r63).
import torch
import torch.nn as nn


class Leak(torch.autograd.Function):
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
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        out = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) @ v
        return Leak.apply(out, x) if self.training and torch.is_grad_enabled() else out
