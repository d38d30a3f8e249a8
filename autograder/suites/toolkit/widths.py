"""Q Kᵀ divided by the square root of another width than d_k, K's last axis: the widths such code takes, for the
ladders of scaled_attention_scores and scaled_dot_product_attention, and SelfAttention's fixed axis. Each symptom
names d_k: a suite confirms those on one matrix, where no two widths coincide."""

import numpy as np

FIXED_AXIS = ("reads d_k from a fixed axis (shape[1]), not the last: on one matrix axis 1 is d_k, but on a batch it "
              "is the number of queries or keys, or a batch axis; d_k is the width of each key, K.shape[-1], "
              "the last axis on any number of batch axes")


def wrong_widths(Q, K, V=None):
    """(width, symptom) of the widths a scale by sqrt(width) takes for d_k, K's last axis: a batch's axis 1 (code
    that reads d_k as shape[1], right on one matrix: first, since it can equal the number of keys or queries,
    so a suite confirms FIXED_AXIS where the code is right on one matrix), the numbers of keys and of queries,
    the values' width, and the count of all K's entries (NumPy's K.size, read as if it were the last axis's)."""
    why = "; d_k is the width of each key, K.shape[-1]"
    return [*[(a.shape[1], FIXED_AXIS) for a in (K, Q) if np.ndim(a) > 2 and a.shape[1] not in (1, K.shape[-1])],
            (K.shape[-2], f"divides by the square root of the number of keys{why}"),
            (Q.shape[-2], f"divides by the square root of the number of queries{why}"),
            *([] if V is None else [(V.shape[-1], f"divides by the square root of the values' width, V.shape[-1]{why}")]),
            *[(np.size(K), ENTRIES_OF_K)] * (np.size(K) != K.shape[-1]),
            *[(np.size(Q), ENTRIES_OF_Q)] * (np.size(Q) != K.shape[-1])]


# K.size in NumPy is the count of the entries (torch's K.size(-1) is a width): n_k * d_k, times any batch axes.
ENTRIES_OF_K = ("divides by the square root of K.size, the count of all of K's entries (every key times its width, "
                "and every batch item), not of one key's width: NumPy's .size is no axis's length; d_k is "
                "K.shape[-1]")
# Q.size likewise, the queries' entries counted: n_q * d_k, times any batch axes (where Q and K hold as many entries,
# the two readings give one divisor, and both are named).
ENTRIES_OF_Q = ("divides by the square root of Q.size, the count of all of Q's entries (every query times its width, "
                "and every batch item), not of one key's width: NumPy's .size is no axis's length; d_k is "
                "K.shape[-1]")
