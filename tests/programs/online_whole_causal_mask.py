# A lean torch online_softmax_attention whose causal mask is made whole, (n_q, n_k) of True/False (9 MiB at 3072
# tokens), and cut into blocks: 14.5 MiB at once in a kernel, under 05's limit (18 MiB), where the same mask beside
# the reference's style landed on the limit itself, failing or passing by chance.
import torch


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (torch.as_tensor(a) for a in (Q, K, V))
    out = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    m = torch.full((*Q.shape[:-1], 1), float("-inf"), dtype=Q.dtype)
    total = torch.zeros((*Q.shape[:-1], 1), dtype=Q.dtype)
    future = torch.arange(K.shape[-2])[None, :] > torch.arange(Q.shape[-2])[:, None] if causal else None
    for j in range(0, K.shape[-2], block_size):
        s = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / K.shape[-1] ** 0.5
        if causal:
            s = s.masked_fill(future[:, j:j + s.shape[-1]], float("-inf"))
        m_new = torch.maximum(m, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - m_new)
        scale = torch.exp(m - m_new)
        total = total * scale + p.sum(-1, keepdim=True)
        out = out * scale + p @ V[..., j:j + block_size, :]
        m = m_new
    return (out / total).numpy()
