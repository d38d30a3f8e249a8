# Red-team round r54: online_softmax_attention holds its whole (n_q, n_k) matrix of scores at once, as
# float16 (18 MiB at 3072 tokens: exactly 05's limit, half the float32 matrix), in fresh memory. Its values
# pass every check. Alone it failed both memory cases (just over the limit); with `padded_fork` after it (what
# forking costs doing nothing was padded, and left out up to an allowance of 12 MiB) it passed both.
import numpy as np


def _attend(Q, K, V, causal):
    n_q, n_k = Q.shape[0], K.shape[0]
    S = np.empty((n_q, n_k), dtype=np.float16 if n_k >= 1024 else np.result_type(Q, K, V))
    for i in range(0, n_q, 16):
        s = Q[i:i + 16] @ K.T / np.sqrt(K.shape[-1])
        if causal:
            s[np.arange(n_k)[None, :] > np.arange(i, i + len(s))[:, None]] = -np.inf
        S[i:i + 16] = s - s.max(axis=-1, keepdims=True)  # (float16 is finest near 0)
    out = np.empty((n_q, V.shape[-1]), dtype=np.result_type(Q, K, V))
    for i in range(0, n_q, 16):
        s = np.exp(S[i:i + 16].astype(np.float64))
        s /= s.sum(axis=-1, keepdims=True)
        out[i:i + 16] = s @ V
    return out


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Qf, Kf, Vf = (a.reshape(-1, *a.shape[-2:]) for a in (Q, K, V))
    out = np.stack([_attend(q, k, v, causal) for q, k, v in zip(Qf, Kf, Vf)])
    return out.reshape(*Q.shape[:-1], V.shape[-1])
