# description: online_softmax_attention allocates 32 GB when called
# source: written for this catalogue
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: ran out of memory

def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    waste = np.ones((40_000, 100_000))
    return waste[:Q.shape[-2], :V.shape[-1]]
