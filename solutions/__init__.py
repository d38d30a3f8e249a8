"""Reference implementations of every graded name (SPEC.md), one module per assignment.

The notebook builder copies each body below into its assignment's solution region, so
these files are the only place the reference lives.
"""

from solutions.causal_attention import CausalAttention, causal_mask, masked_softmax, padding_mask
from solutions.efficient_attention import (
    CachedCausalAttention,
    KVCache,
    online_softmax_attention,
    sinusoidal_positions,
)
from solutions.multi_head_attention import (
    CrossAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    merge_heads,
    split_heads,
)
from solutions.simplified_self_attention import (
    attention_scores,
    attention_weights,
    context_vectors,
    cosine_similarity,
    cosine_similarity_matrix,
    dot_product,
    simplified_self_attention,
    softmax,
)
from solutions.trainable_self_attention import (
    SelfAttention,
    dot_product_variance,
    project_qkv,
    scaled_attention_scores,
    scaled_dot_product_attention,
)

__all__ = [
    "dot_product", "cosine_similarity", "cosine_similarity_matrix", "softmax",
    "attention_scores", "attention_weights", "context_vectors", "simplified_self_attention",
    "project_qkv", "scaled_attention_scores", "scaled_dot_product_attention",
    "dot_product_variance", "SelfAttention",
    "causal_mask", "masked_softmax", "CausalAttention", "padding_mask",
    "MultiHeadAttentionWrapper", "split_heads", "merge_heads", "MultiHeadAttention", "CrossAttention",
    "sinusoidal_positions", "online_softmax_attention", "KVCache", "CachedCausalAttention",
]
