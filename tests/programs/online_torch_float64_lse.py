# Red-team round r58: the catalogue's torch style (torch-05: the log-sum-exp form) in float64, an honest
# online_softmax_attention. It peaked at 19.5 MiB on 05's first memory case, over the limit (18 MiB), as glibc kept
# its freed blocks of scores on the heap for the next ones (13.8 on the second).
import torch


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Q, K, V = (torch.as_tensor(a).double() for a in (Q, K, V))
    out = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    lse = torch.full((*Q.shape[:-1], 1), float("-inf"), dtype=Q.dtype)
    rows = torch.arange(Q.shape[-2])[:, None]
    for j in range(0, K.shape[-2], block_size):
        s = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / K.shape[-1] ** 0.5
        if causal:
            s = torch.where(torch.arange(j, j + s.shape[-1]) > rows, torch.tensor(float("-inf"), dtype=s.dtype), s)
        new_lse = torch.logaddexp(lse, torch.logsumexp(s, dim=-1, keepdim=True))
        out = out * torch.exp(lse - new_lse) + torch.exp(s - new_lse) @ V[..., j:j + block_size, :]
        lse = new_lse
    return out.float()
