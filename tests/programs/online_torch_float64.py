# Red-team round r58: an honest online_softmax_attention in torch, in float64 throughout (a running maximum, sum and
# output, a block of keys at a time). It peaked at 18.5 MiB on 05's memory cases, over the limit (18 MiB), 1.2 MiB of
# it the float32 inputs the judge wrote into the call's process inside its window.
import torch


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (torch.as_tensor(a, dtype=torch.float64) for a in (Q, K, V))
    out = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    m = torch.full((*Q.shape[:-1], 1), float("-inf"), dtype=Q.dtype)
    total = torch.zeros((*Q.shape[:-1], 1), dtype=Q.dtype)
    rows = torch.arange(Q.shape[-2])[:, None]
    for j in range(0, K.shape[-2], block_size):
        s = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / K.shape[-1] ** 0.5
        if causal:
            s = s.masked_fill(torch.arange(j, j + s.shape[-1]) > rows, float("-inf"))
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - m_new)
        scale = torch.exp(m - m_new)
        total = total * scale + p.sum(-1, keepdim=True)
        out = out * scale + p @ V[..., j:j + block_size, :]
        m = m_new
    return (out / total).numpy()
