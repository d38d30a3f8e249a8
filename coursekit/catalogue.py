"""Catalogues of submissions the grading must get right, kept as data.

Each `Variant` is one student's submission to one assignment: the release completed with the
reference, except for `replace` (graded name -> that solution cell's whole source), plus
optional extra top-level code, or a `transform` of the finished notebook (for broken files).

- MISTAKES: plausible errors. Every step in `loses` must lose points, with `symptom` in that
  step's report; every other step keeps full marks, and the instructor's report flags nothing.
- CORRECT: other correct styles. Full marks everywhere, and nothing flagged.
- HOSTILE: attacks and breakage. No step in `loses` may keep full marks, no other step may
  gain, grading of everyone else goes on, and when `flagged` the instructor's report names it
  (`flag`: a phrase one of its flags must contain). `graded=False` where autograde cannot
  produce a grade at all (the kernel dies, the file is no notebook): every step then scores 0.
  Where an attack would be harmless on correct code, it comes with a wrong implementation, so
  a point it saves would show.

`tests/test_catalogue.py` grades every entry through real nbgrader and asserts its row;
`python -m coursekit.matrix` writes the same rows to docs/grading_matrix.md.
"""

import textwrap
from dataclasses import dataclass, field

from autograder.steps import A01, A02, A03, A04


@dataclass(frozen=True)
class Variant:
    id: str
    assignment: str
    description: str
    replace: dict = field(default_factory=dict)
    loses: tuple = ()
    symptom: str = ""  # a phrase the losing step's report must contain
    extra_cell: str = ""  # top-level code in a cell of its own, after the solution cells
    transform: object = None  # callable(notebook dict) -> notebook dict, or bytes for the file
    flagged: bool = False
    flag: str = ""  # when flagged: a phrase one of the instructor's flags must contain
    graded: bool = True  # False: autograde cannot grade it at all (all steps 0, flagged)


def _src(text):
    return textwrap.dedent(text).strip("\n") + "\n"


# --- MISTAKES -----------------------------------------------------------------------------
# The first entry of each assignment is also the end-to-end test's typical mistake.

MISTAKES = [
    # 01: NumPy, no trainable weights
    Variant("softmax-wrong-axis", A01, "softmax normalises over axis 0",
            {"softmax": "def softmax(x, axis=-1):\n    e = np.exp(x - np.max(x, axis=0, keepdims=True))\n"
                        "    return e / np.sum(e, axis=0, keepdims=True)\n"},
            loses=("softmax",), symptom="normalises along axis"),
    Variant("softmax-no-max-shift", A01, "softmax exponentiates without subtracting the maximum (overflows)",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    e = np.exp(x)
                    return e / np.sum(e, axis=axis, keepdims=True)
                """)},
            loses=("softmax",), symptom="subtract the maximum first"),
    Variant("softmax-in-place", A01, "softmax subtracts the maximum in place, changing the caller's array",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    x = np.asarray(x)
                    x -= np.max(x, axis=axis, keepdims=True)
                    e = np.exp(x)
                    return e / np.sum(e, axis=axis, keepdims=True)
                """)},
            loses=("softmax",), symptom="modified in place"),
    Variant("dot-product-mean", A01, "dot_product averages the products instead of summing them",
            {"dot_product": "def dot_product(a, b):\n    return float(np.mean(np.asarray(a) * np.asarray(b)))\n"},
            loses=("dot_product",), symptom="that is a mean"),
    Variant("cosine-no-normalisation", A01, "cosine_similarity forgets to divide by the lengths",
            {"cosine_similarity": "def cosine_similarity(a, b):\n    return float(np.dot(a, b))\n"},
            loses=("cosine_similarity",), symptom="plain dot product"),
    Variant("cosine-matrix-columns", A01, "cosine_similarity_matrix compares the columns of X",
            {"cosine_similarity_matrix": _src("""
                def cosine_similarity_matrix(X):
                    X = np.asarray(X, dtype=float)
                    unit = X / np.linalg.norm(X, axis=0, keepdims=True)
                    return unit.T @ unit
                """)},
            loses=("cosine_similarity_matrix",), symptom="has shape"),
    Variant("scores-2d-only", A01, "attention_scores uses X.T, which only works for 2-D input",
            {"attention_scores": "def attention_scores(X):\n    X = np.asarray(X)\n    return X @ X.T\n"},
            loses=("attention_scores",), symptom="raised ValueError"),
    Variant("scores-notes-global", A01, "attention_scores uses the notes' global `inputs`, not its argument",
            {"attention_scores": "def attention_scores(X):\n    return inputs @ inputs.T\n"},
            loses=("attention_scores",), symptom="has shape"),
    Variant("weights-columns", A01, "attention_weights normalises the columns",
            {"attention_weights": "def attention_weights(scores):\n    return softmax(scores, axis=-2)\n"},
            loses=("attention_weights",), symptom="normalises columns"),
    Variant("context-np-dot", A01, "context_vectors uses np.dot, which is a matrix product for 2-D only",
            {"context_vectors": "def context_vectors(weights, values):\n    return np.dot(weights, values)\n"},
            loses=("context_vectors",), symptom="has shape"),
    Variant("attention-tuple-swapped", A01, "simplified_self_attention returns (weights, context)",
            {"simplified_self_attention": _src("""
                def simplified_self_attention(X):
                    weights = attention_weights(attention_scores(X))
                    return weights, context_vectors(weights, X)
                """)},
            loses=("simplified_self_attention",), symptom="has shape"),

    # 02: trainable projections, scaling, masks
    Variant("scores-unscaled", A02, "scaled_attention_scores forgets to divide by sqrt(d_k)",
            {"scaled_attention_scores": "def scaled_attention_scores(Q, K):\n"
                                        "    return Q @ np.swapaxes(K, -1, -2)\n"},
            loses=("scaled_attention_scores",), symptom="sqrt(d_k)"),
    Variant("scores-by-d_k", A02, "scaled_attention_scores divides by d_k, not sqrt(d_k)",
            {"scaled_attention_scores": "def scaled_attention_scores(Q, K):\n"
                                        "    return Q @ np.swapaxes(K, -1, -2) / K.shape[-1]\n"},
            loses=("scaled_attention_scores",), symptom="divided by d_k"),
    Variant("scores-K-Qt", A02, "scaled_attention_scores computes K Qᵀ",
            {"scaled_attention_scores": "def scaled_attention_scores(Q, K):\n"
                                        "    return K @ np.swapaxes(Q, -1, -2) / np.sqrt(K.shape[-1])\n"},
            loses=("scaled_attention_scores",), symptom="K Qᵀ"),
    Variant("scores-notes-sqrt2", A02, "scaled_attention_scores hard-codes the chapter's d_k = 2",
            {"scaled_attention_scores": "def scaled_attention_scores(Q, K):\n"
                                        "    return Q @ np.swapaxes(K, -1, -2) / 2 ** 0.5\n"},
            loses=("scaled_attention_scores",), symptom="not about 1"),
    Variant("qkv-transposed-weights", A02, "project_qkv multiplies by the transposed weights",
            {"project_qkv": "def project_qkv(X, W_q, W_k, W_v):\n    return X @ W_q.T, X @ W_k.T, X @ W_v.T\n"},
            loses=("project_qkv",), symptom="X @ W_q.T"),
    Variant("qkv-swapped", A02, "project_qkv returns Q and K swapped",
            {"project_qkv": "def project_qkv(X, W_q, W_k, W_v):\n    return X @ W_k, X @ W_q, X @ W_v\n"},
            loses=("project_qkv",), symptom="looks like X @ W_k"),
    Variant("sdpa-softmax-wrong-axis", A02, "scaled_dot_product_attention normalises over the queries",
            {"scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = scaled_attention_scores(Q, K)
                    if mask is not None:
                        scores = np.where(mask, -np.inf, scores)
                    e = np.exp(scores - np.max(scores, axis=-2, keepdims=True))
                    weights = e / np.sum(e, axis=-2, keepdims=True)
                    return weights @ V, weights
                """)},
            loses=("scaled_dot_product_attention",), symptom="wrong axis"),
    Variant("sdpa-mask-inverted", A02, "scaled_dot_product_attention reads True as 'may attend' (torch's SDPA)",
            {"scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = scaled_attention_scores(Q, K)
                    if mask is not None:
                        scores = np.where(mask, scores, -np.inf)
                    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
                    weights = e / np.sum(e, axis=-1, keepdims=True)
                    return weights @ V, weights
                """)},
            loses=("scaled_dot_product_attention",), symptom="inverted"),
    Variant("sdpa-weights-transposed", A02, "scaled_dot_product_attention returns weightsᵀ @ V",
            {"scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = scaled_attention_scores(Q, K)
                    if mask is not None:
                        scores = np.where(mask, -np.inf, scores)
                    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
                    weights = e / np.sum(e, axis=-1, keepdims=True)
                    return np.swapaxes(weights, -1, -2) @ V, weights
                """)},
            loses=("scaled_dot_product_attention",), symptom="weightsᵀ @ V"),
    Variant("variance-notes-numbers", A02, "dot_product_variance returns the notes' values d_k and 1",
            {"dot_product_variance": "def dot_product_variance(d_k, num_samples=10_000, seed=0):\n"
                                     "    return float(d_k), 1.0\n"},
            loses=("dot_product_variance",), symptom="ignores `seed`"),
    Variant("selfattn-scale-d_in", A02, "SelfAttention divides the scores by sqrt(d_in)",
            {"SelfAttention": _src("""
                class SelfAttention(nn.Module):
                    def __init__(self, d_in, d_out, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

                    def forward(self, x):
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = queries @ keys.transpose(-2, -1) / x.shape[-1] ** 0.5
                        return torch.softmax(scores, dim=-1) @ values
                """)},
            loses=("SelfAttention",), symptom="sqrt(d_in)"),
    Variant("selfattn-raw-weight", A02, "SelfAttention multiplies x by the layers' weight (W @ x, untransposed)",
            {"SelfAttention": _src("""
                class SelfAttention(nn.Module):
                    def __init__(self, d_in, d_out, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

                    def forward(self, x):
                        queries = x @ self.W_query.weight
                        keys = x @ self.W_key.weight
                        values = x @ self.W_value.weight
                        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
                        return torch.softmax(scores, dim=-1) @ values
                """)},
            loses=("SelfAttention",), symptom="W_query"),
    Variant("selfattn-float64-only", A02, "SelfAttention converts its input to float64, so float32 fails",
            {"SelfAttention": _src("""
                class SelfAttention(nn.Module):
                    def __init__(self, d_in, d_out, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

                    def forward(self, x):
                        x = torch.as_tensor(x, dtype=torch.float64)
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
                        return torch.softmax(scores, dim=-1) @ values
                """)},
            loses=("SelfAttention",), symptom="float32"),

    # 03: causal masks and dropout
    Variant("mask-includes-diagonal", A03, "causal_mask blocks the diagonal too",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))\n"},
            loses=("causal_mask",), symptom="diagonal"),
    Variant("mask-lower-triangle", A03, "causal_mask blocks the lower triangle (the earlier tokens)",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool), "
                            "diagonal=-1)\n"},
            loses=("causal_mask",), symptom="EARLIER"),
    Variant("mask-float", A03, "causal_mask returns a float 0/1 tensor, not a bool one",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)\n"},
            loses=("causal_mask",), symptom="torch.bool"),
    Variant("mask-notes-six", A03, "causal_mask hard-codes the chapter's six tokens",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)\n"},
            loses=("causal_mask",), symptom="has shape"),
    Variant("masked-softmax-fill-zero", A03, "masked_softmax fills blocked scores with 0 instead of -inf",
            {"masked_softmax": "def masked_softmax(scores, mask):\n"
                               "    return torch.softmax(scores.masked_fill(mask, 0.0), dim=-1)\n"},
            loses=("masked_softmax",), symptom="instead of -inf"),
    Variant("masked-softmax-after", A03, "masked_softmax zeroes blocked weights after the softmax, no "
            "renormalising",
            {"masked_softmax": "def masked_softmax(scores, mask):\n"
                               "    return torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)\n"},
            loses=("masked_softmax",), symptom="without renormalising"),
    Variant("masked-softmax-in-place", A03, "masked_softmax uses masked_fill_, changing the caller's scores",
            {"masked_softmax": "def masked_softmax(scores, mask):\n"
                               "    scores.masked_fill_(mask, float('-inf'))\n"
                               "    return torch.softmax(scores, dim=-1)\n"},
            loses=("masked_softmax",), symptom="modified in place"),
    Variant("causal-mask-not-sliced", A03, "CausalAttention uses the full context_length mask for shorter inputs",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
                        weights = masked_softmax(scores, self.mask)
                        return self.dropout(weights) @ values
                """)},
            loses=("CausalAttention",), symptom="mask[:T, :T]"),
    Variant("causal-dropout-on-scores", A03, "CausalAttention applies dropout to the scores before the softmax",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[-2]
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = self.dropout(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5)
                        return masked_softmax(scores, self.mask[:T, :T]) @ values
                """)},
            loses=("CausalAttention",), symptom="scores before the softmax"),
    Variant("causal-dropout-on-values", A03, "CausalAttention applies dropout to the values",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[-2]
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
                        return masked_softmax(scores, self.mask[:T, :T]) @ self.dropout(values)
                """)},
            loses=("CausalAttention",), symptom="not to the values"),
    Variant("causal-dropout-in-eval", A03, "CausalAttention uses F.dropout(training=True): active in eval mode",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[-2]
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
                        weights = masked_softmax(scores, self.mask[:T, :T])
                        weights = torch.nn.functional.dropout(weights, self.dropout.p, training=True)
                        return weights @ values
                """)},
            loses=("CausalAttention",), symptom="off in eval mode"),

    # 04: multi-head attention
    Variant("split-heads-no-transpose", A04, "split_heads reshapes without moving the head axis",
            {"split_heads": "def split_heads(x, num_heads):\n    b, t, d = x.shape\n"
                            "    return x.reshape(b, num_heads, t, d // num_heads)\n"},
            loses=("split_heads",), symptom="transpose"),
    Variant("merge-heads-no-transpose", A04, "merge_heads reshapes without transposing heads and tokens back",
            {"merge_heads": "def merge_heads(x):\n    b, h, t, d = x.shape\n"
                            "    return x.reshape(b, t, h * d)\n"},
            loses=("merge_heads",), symptom="without first transposing"),
    Variant("wrapper-reversed", A04, "MultiHeadAttentionWrapper concatenates the heads in the wrong order",
            {"MultiHeadAttentionWrapper": _src("""
                class MultiHeadAttentionWrapper(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        self.heads = nn.ModuleList(
                            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                            for _ in range(num_heads))

                    def forward(self, x):
                        return torch.cat([head(x) for head in reversed(self.heads)], dim=-1)
                """)},
            loses=("MultiHeadAttentionWrapper",), symptom="reverse order"),
    Variant("wrapper-one-shared-head", A04, "MultiHeadAttentionWrapper repeats one head module num_heads times",
            {"MultiHeadAttentionWrapper": _src("""
                class MultiHeadAttentionWrapper(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        head = CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                        self.heads = nn.ModuleList([head] * num_heads)

                    def forward(self, x):
                        return torch.cat([head(x) for head in self.heads], dim=-1)
                """)},
            loses=("MultiHeadAttentionWrapper",), symptom="the same module more than once"),
    Variant("mha-no-out-proj", A04, "MultiHeadAttention never applies out_proj",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                        self.num_heads, self.head_dim = num_heads, d_out // num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[1]
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask[:T, :T]))
                        return merge_heads(weights @ v)
                """)},
            loses=("MultiHeadAttention",), symptom="out_proj is not applied"),
    Variant("mha-scale-d_out", A04, "MultiHeadAttention divides by sqrt(d_out) (d_model), not sqrt(head_dim)",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                        self.num_heads, self.d_out = num_heads, d_out
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[1]
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.d_out ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask[:T, :T]))
                        return self.out_proj(merge_heads(weights @ v))
                """)},
            loses=("MultiHeadAttention",), symptom="sqrt(d_out)"),
    Variant("mha-view-no-transpose", A04, "MultiHeadAttention splits the heads with view but no transpose",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        b, T, _ = x.shape
                        q, k, v = (layer(x).view(b, self.num_heads, T, self.head_dim)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask[:T, :T]))
                        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, T, self.d_out))
                """)},
            loses=("MultiHeadAttention",), symptom="without a transpose"),
    Variant("mha-mask-not-sliced", A04, "MultiHeadAttention uses the full context_length mask for shorter inputs",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                        self.num_heads, self.head_dim = num_heads, d_out // num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask))
                        return self.out_proj(merge_heads(weights @ v))
                """)},
            loses=("MultiHeadAttention",), symptom="mask[:T, :T]"),
    Variant("mha-out-proj-per-head", A04, "MultiHeadAttention applies a head-sized out_proj to every head",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
                        self.num_heads, self.head_dim = num_heads, d_out // num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(self.head_dim, self.head_dim)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[1]
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask[:T, :T]))
                        return merge_heads(self.out_proj(weights @ v))
                """)},
            loses=("MultiHeadAttention",), symptom="out_proj"),
    Variant("mha-no-divisibility-check", A04, "MultiHeadAttention silently accepts d_out % num_heads != 0",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        self.num_heads, self.head_dim = num_heads, d_out // num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("mask", causal_mask(context_length), persistent=False)

                    def forward(self, x):
                        T = x.shape[1]
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
                        weights = self.dropout(masked_softmax(scores, self.mask[:T, :T]))
                        return self.out_proj(merge_heads(weights @ v))
                """)},
            loses=("MultiHeadAttention",), symptom="did not raise"),
]


# --- CORRECT --------------------------------------------------------------------------------

# Raschka, Build a Large Language Model (From Scratch), chapter 3, as printed there.
CHAPTER_SELF_ATTENTION_V2 = _src("""
    class SelfAttention_v2(nn.Module):

        def __init__(self, d_in, d_out, qkv_bias=False):
            super().__init__()
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

        def forward(self, x):
            keys = self.W_key(x)
            queries = self.W_query(x)
            values = self.W_value(x)

            attn_scores = queries @ keys.T
            attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

            context_vec = attn_weights @ values
            return context_vec


    SelfAttention = SelfAttention_v2
    """)

CHAPTER_CAUSAL_ATTENTION = _src("""
    class CausalAttention(nn.Module):

        def __init__(self, d_in, d_out, context_length,
                     dropout, qkv_bias=False):
            super().__init__()
            self.d_out = d_out
            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key   = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.dropout = nn.Dropout(dropout) # New
            self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length), diagonal=1)) # New

        def forward(self, x):
            b, num_tokens, d_in = x.shape # New batch dimension b
            keys = self.W_key(x)
            queries = self.W_query(x)
            values = self.W_value(x)

            attn_scores = queries @ keys.transpose(1, 2) # Changed transpose
            attn_scores.masked_fill_(  # New, _ ops are in-place
                self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # `:num_tokens` to account for cases where the number of tokens in the batch is smaller than the supported context_size
            attn_weights = torch.softmax(
                attn_scores / keys.shape[-1]**0.5, dim=-1
            )
            attn_weights = self.dropout(attn_weights) # New

            context_vec = attn_weights @ values
            return context_vec
    """)

CHAPTER_WRAPPER = _src("""
    class MultiHeadAttentionWrapper(nn.Module):

        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            self.heads = nn.ModuleList(
                [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                 for _ in range(num_heads)]
            )

        def forward(self, x):
            return torch.cat([head(x) for head in self.heads], dim=-1)
    """)

CHAPTER_MULTI_HEAD_ATTENTION = _src("""
    class MultiHeadAttention(nn.Module):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__()
            assert (d_out % num_heads == 0), \\
                "d_out must be divisible by num_heads"

            self.d_out = d_out
            self.num_heads = num_heads
            self.head_dim = d_out // num_heads # Reduce the projection dim to match desired output dim

            self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
            self.out_proj = nn.Linear(d_out, d_out)  # Linear layer to combine head outputs
            self.dropout = nn.Dropout(dropout)
            self.register_buffer(
                "mask",
                torch.triu(torch.ones(context_length, context_length),
                           diagonal=1)
            )

        def forward(self, x):
            b, num_tokens, d_in = x.shape

            keys = self.W_key(x) # Shape: (b, num_tokens, d_out)
            queries = self.W_query(x)
            values = self.W_value(x)

            # We implicitly split the matrix by adding a `num_heads` dimension
            # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
            keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
            values = values.view(b, num_tokens, self.num_heads, self.head_dim)
            queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

            # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
            keys = keys.transpose(1, 2)
            queries = queries.transpose(1, 2)
            values = values.transpose(1, 2)

            # Compute scaled dot-product attention (aka self-attention) with a causal mask
            attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

            # Original mask truncated to the number of tokens and converted to boolean
            mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

            # Use the mask to fill attention scores
            attn_scores.masked_fill_(mask_bool, -torch.inf)

            attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
            attn_weights = self.dropout(attn_weights)

            # Shape: (b, num_tokens, num_heads, head_dim)
            context_vec = (attn_weights @ values).transpose(1, 2)

            # Combine heads, where self.d_out = self.num_heads * self.head_dim
            context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
            context_vec = self.out_proj(context_vec) # optional projection

            return context_vec
    """)


CORRECT = [
    # 01
    Variant("loops-01", A01, "every function written with Python loops, no matrix products",
            {"dot_product": _src("""
                def dot_product(a, b):
                    total = 0.0
                    for x, y in zip(a, b):
                        total += float(x) * float(y)
                    return total
                """),
             "cosine_similarity": _src("""
                def cosine_similarity(a, b):
                    return dot_product(a, b) / (dot_product(a, a) ** 0.5 * dot_product(b, b) ** 0.5)
                """),
             "cosine_similarity_matrix": _src("""
                def cosine_similarity_matrix(X):
                    n = len(X)
                    out = np.zeros((n, n))
                    for i in range(n):
                        for j in range(n):
                            out[i, j] = cosine_similarity(X[i], X[j])
                    return out
                """),
             "attention_scores": _src("""
                def attention_scores(X):
                    X = np.asarray(X)
                    flat = X.reshape(-1, X.shape[-2], X.shape[-1])
                    out = np.zeros((flat.shape[0], X.shape[-2], X.shape[-2]))
                    for b in range(flat.shape[0]):
                        for i in range(X.shape[-2]):
                            for j in range(X.shape[-2]):
                                out[b, i, j] = dot_product(flat[b, i], flat[b, j])
                    return out.reshape(*X.shape[:-1], X.shape[-2])
                """),
             "context_vectors": _src("""
                def context_vectors(weights, values):
                    weights, values = np.asarray(weights, dtype=float), np.asarray(values, dtype=float)
                    out = np.zeros(weights.shape[:-1] + values.shape[-1:])
                    for index in np.ndindex(*weights.shape[:-1]):
                        for j in range(weights.shape[-1]):
                            out[index] += weights[index][j] * values[index[:-1]][j]
                    return out
                """)}),
    Variant("einsum-01", A01, "np.einsum for every product, softmax by log-sum-exp",
            {"dot_product": "def dot_product(a, b):\n    return float(np.einsum('i,i->', a, b))\n",
             "cosine_similarity_matrix": _src("""
                def cosine_similarity_matrix(X):
                    norms = np.sqrt(np.einsum('ij,ij->i', X, X))
                    return np.einsum('id,jd->ij', X, X) / np.einsum('i,j->ij', norms, norms)
                """),
             "softmax": _src("""
                def softmax(x, axis=-1):
                    m = np.max(x, axis=axis, keepdims=True)
                    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
                    return np.exp(x - lse)
                """),
             "attention_scores": "def attention_scores(X):\n    return np.einsum('...id,...jd->...ij', X, X)\n",
             "context_vectors": "def context_vectors(weights, values):\n"
                                "    return np.einsum('...ij,...jd->...id', weights, values)\n"}),
    Variant("float32-01", A01, "every computation in float32",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    x = np.asarray(x, dtype=np.float32)
                    e = np.exp(x - x.max(axis=axis, keepdims=True))
                    return e / e.sum(axis=axis, keepdims=True)
                """),
             "attention_scores": _src("""
                def attention_scores(X):
                    X = np.asarray(X, dtype=np.float32)
                    return X @ np.swapaxes(X, -1, -2)
                """),
             "context_vectors": _src("""
                def context_vectors(weights, values):
                    return np.asarray(weights, dtype=np.float32) @ np.asarray(values, dtype=np.float32)
                """),
             "cosine_similarity_matrix": _src("""
                def cosine_similarity_matrix(X):
                    X = np.asarray(X, dtype=np.float32)
                    unit = X / np.linalg.norm(X, axis=-1, keepdims=True)
                    return unit @ unit.T
                """)}),
    Variant("composed-01", A01, "simplified_self_attention written out in one function, softmax with np.max "
            "and a copy",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    shifted = np.array(x, dtype=float, copy=True)
                    shifted -= shifted.max(axis=axis, keepdims=True)
                    np.exp(shifted, out=shifted)
                    shifted /= shifted.sum(axis=axis, keepdims=True)
                    return shifted
                """),
             "simplified_self_attention": _src("""
                def simplified_self_attention(X):
                    X = np.asarray(X, dtype=float)
                    scores = np.matmul(X, np.swapaxes(X, -1, -2))
                    scores = scores - scores.max(axis=-1, keepdims=True)
                    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
                    return np.matmul(weights, X), weights
                """)}),

    # 02
    Variant("combined-qkv-02", A02, "project_qkv with one combined matrix product, split afterwards; "
            "SelfAttention from one combined weight that keeps W_query, W_key, W_value",
            {"project_qkv": _src("""
                def project_qkv(X, W_q, W_k, W_v):
                    W = np.concatenate([W_q, W_k, W_v], axis=1)
                    qkv = X @ W
                    q_end, k_end = W_q.shape[1], W_q.shape[1] + W_k.shape[1]
                    return qkv[..., :q_end], qkv[..., q_end:k_end], qkv[..., k_end:]
                """),
             "SelfAttention": _src("""
                class SelfAttention(nn.Module):
                    def __init__(self, d_in, d_out, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

                    def forward(self, x):
                        layers = (self.W_query, self.W_key, self.W_value)
                        weight = torch.cat([layer.weight for layer in layers])
                        bias = None if layers[0].bias is None else torch.cat([layer.bias for layer in layers])
                        q, k, v = torch.nn.functional.linear(x, weight, bias).chunk(3, dim=-1)
                        weights = torch.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1)
                        return weights @ v
                """)}),
    Variant("einsum-02", A02, "np.einsum, math.sqrt and a boolean-index fill",
            {"scaled_attention_scores": _src("""
                def scaled_attention_scores(Q, K):
                    import math
                    return np.einsum('...qd,...kd->...qk', Q, K) / math.sqrt(K.shape[-1])
                """),
             "scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = np.array(scaled_attention_scores(Q, K), dtype=float)
                    if mask is not None:
                        scores[np.broadcast_to(mask, scores.shape)] = -np.inf
                    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
                    weights /= weights.sum(axis=-1, keepdims=True)
                    return np.einsum('...qk,...kd->...qd', weights, V), weights
                """),
             "dot_product_variance": _src("""
                def dot_product_variance(d_k, num_samples=10_000, seed=0):
                    rng = np.random.default_rng(seed)
                    q, k = rng.normal(size=(2, num_samples, d_k))
                    dots = np.einsum('nd,nd->n', q, k)
                    return float(dots.var()), float((dots / d_k ** 0.5).var())
                """)}),
    Variant("float32-02", A02, "float32 throughout, a large negative fill, torch's generator for the samples",
            {"project_qkv": _src("""
                def project_qkv(X, W_q, W_k, W_v):
                    X = np.asarray(X, dtype=np.float32)
                    return tuple(X @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))
                """),
             "scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
                    scores = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(K.shape[-1]))
                    if mask is not None:
                        scores = np.where(mask, np.float32(-1e30), scores)
                    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
                    weights = e / e.sum(axis=-1, keepdims=True)
                    return weights @ V, weights
                """),
             "dot_product_variance": _src("""
                def dot_product_variance(d_k, num_samples=10_000, seed=0):
                    g = torch.Generator().manual_seed(seed)
                    q = torch.randn(num_samples, d_k, generator=g, dtype=torch.float64)
                    k = torch.randn(num_samples, d_k, generator=g, dtype=torch.float64)
                    dots = (q * k).sum(dim=-1)
                    return dots.var(unbiased=False).item(), (dots / d_k ** 0.5).var(unbiased=False).item()
                """)}),

    # 03
    Variant("chapter-03", A03, "the chapter's CausalAttention pasted in verbatim (float triu buffer, "
            "masked_fill_ on its own scores)",
            {"CausalAttention": CHAPTER_CAUSAL_ATTENTION}),
    Variant("tril-renormalise-03", A03, "CausalAttention masks with torch.tril after the softmax and "
            "renormalises (the chapter's first approach)",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)
                        self.context_length = context_length

                    def forward(self, x):
                        T = x.shape[1]
                        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
                        weights = torch.softmax(queries @ keys.transpose(1, 2) / keys.shape[-1] ** 0.5, dim=-1)
                        weights = weights * torch.tril(torch.ones(T, T))
                        weights = weights / weights.sum(dim=-1, keepdim=True)
                        return self.dropout(weights) @ values
                """)}),
    Variant("where-03", A03, "torch.where instead of masked_fill, a mask from index comparison",
            {"causal_mask": _src("""
                def causal_mask(num_tokens):
                    idx = torch.arange(num_tokens)
                    return idx[None, :] > idx[:, None]
                """),
             "masked_softmax": _src("""
                def masked_softmax(scores, mask):
                    blocked = torch.full_like(scores, float('-inf'))
                    return torch.softmax(torch.where(mask, blocked, scores), dim=-1)
                """)}),
    Variant("sdpa-03", A03, "CausalAttention built on F.scaled_dot_product_attention with its dropout_p",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)

                    def forward(self, x):
                        import torch.nn.functional as F
                        p = self.dropout.p if self.training else 0.0
                        return F.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x),
                                                              dropout_p=p, is_causal=True)
                """)}),

    # 04
    Variant("chapter-04", A04, "the chapter's CausalAttention, MultiHeadAttentionWrapper and "
            "MultiHeadAttention pasted in verbatim",
            {"CausalAttention": CHAPTER_CAUSAL_ATTENTION, "MultiHeadAttentionWrapper": CHAPTER_WRAPPER,
             "MultiHeadAttention": CHAPTER_MULTI_HEAD_ATTENTION}),
    Variant("reshape-04", A04, "reshape/permute instead of view/transpose, chunk and cat for the heads",
            {"split_heads": _src("""
                def split_heads(x, num_heads):
                    return torch.stack(x.chunk(num_heads, dim=-1), dim=1)
                """),
             "merge_heads": _src("""
                def merge_heads(x):
                    return torch.cat(x.unbind(dim=1), dim=-1)
                """),
             "MultiHeadAttentionWrapper": _src("""
                class MultiHeadAttentionWrapper(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        self.heads = nn.ModuleList()
                        for _ in range(num_heads):
                            self.heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))

                    def forward(self, x):
                        outputs = []
                        for head in self.heads:
                            outputs.append(head(x))
                        return torch.cat(outputs, dim=2)
                """)}),
    Variant("combined-qkv-04", A04, "MultiHeadAttention from one combined QKV product (W_query, W_key, "
            "W_value kept as the layers), reshape/permute, torch.where",
            {"MultiHeadAttention": _src("""
                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        if d_out % num_heads:
                            raise ValueError("d_out must be divisible by num_heads")
                        self.num_heads = num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)
                        self.register_buffer("blocked", torch.ones(context_length, context_length).triu(1).bool())

                    def forward(self, x):
                        b, T, _ = x.shape
                        layers = (self.W_query, self.W_key, self.W_value)
                        weight = torch.cat([layer.weight for layer in layers])
                        bias = None if layers[0].bias is None else torch.cat([layer.bias for layer in layers])
                        qkv = torch.nn.functional.linear(x, weight, bias)  # (b, T, 3 * d_out)
                        qkv = qkv.reshape(b, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
                        q, k, v = qkv[0], qkv[1], qkv[2]  # (b, heads, T, head_dim)
                        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
                        scores = torch.where(self.blocked[:T, :T], float('-inf'), scores)
                        weights = self.dropout(torch.softmax(scores, dim=-1))
                        context = (weights @ v).permute(0, 2, 1, 3).reshape(b, T, -1)
                        return self.out_proj(context)
                """)}),
    Variant("sdpa-04", A04, "MultiHeadAttention built on F.scaled_dot_product_attention (is_causal, dropout_p)",
            {"MultiHeadAttention": _src("""
                import torch.nn.functional as F


                class MultiHeadAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
                        super().__init__()
                        assert d_out % num_heads == 0
                        self.num_heads = num_heads
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.out_proj = nn.Linear(d_out, d_out)
                        self.dropout = nn.Dropout(dropout)

                    def forward(self, x):
                        q, k, v = (split_heads(layer(x), self.num_heads)
                                   for layer in (self.W_query, self.W_key, self.W_value))
                        p = self.dropout.p if self.training else 0.0
                        context = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
                        return self.out_proj(merge_heads(context))
                """)}),
]

# SPEC requires SelfAttention.forward to take a batch; the chapter's SelfAttention_v2 uses keys.T,
# which reverses every axis of a batch, so it loses the batch cases, and only those. (Appended
# here because the chapter's sources are defined above, after the other mistakes.)
MISTAKES.append(
    Variant("chapter-02-batch", A02, "the chapter's SelfAttention_v2 pasted in verbatim: keys.T fails on a batch",
            {"SelfAttention": CHAPTER_SELF_ATTENTION_V2}, loses=("SelfAttention",), symptom="keys.T"))


# --- HOSTILE --------------------------------------------------------------------------------

WRONG_SOFTMAX = ("def softmax(x, axis=-1):\n    e = np.exp(x - np.max(x, axis=0, keepdims=True))\n"
                 "    return e / np.sum(e, axis=0, keepdims=True)\n")


def _drop_grade_cell(step):
    def transform(nb):
        nb["cells"] = [c for c in nb["cells"]
                       if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != f"{step}_grade"]
        return nb
    return transform


def _edit_grade_cell(step, source):
    def transform(nb):
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade_id") == f"{step}_grade":
                cell["source"] = source
                meta["points"] = 100
        return nb
    return transform


def _not_json(nb):
    return b'{"cells": [{"cell_type": "code", "source": "def softmax(x'


def _nbformat(version):
    def transform(nb):
        nb["nbformat"] = version
        return nb
    return transform


HOSTILE = [
    # 01
    Variant("patch-np-allclose", A01, "rebinds np.allclose to always-True at the top of a wrong softmax's cell",
            {"softmax": WRONG_SOFTMAX + "\n\nnp.allclose = lambda *args, **kwargs: True\n"},
            loses=("softmax",), flagged=True, flag="np.allclose"),
    Variant("patch-np-testing-inside", A01, "a wrong softmax that silences np.testing.assert_allclose when "
            "called (the demos that call it later re-patch it, so the steps graded after them lose too)",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    np.testing.assert_allclose = lambda *args, **kwargs: None
                    e = np.exp(x - np.max(x, axis=0, keepdims=True))
                    return e / np.sum(e, axis=0, keepdims=True)
                """)},
            loses=("softmax",), flagged=True, flag="assert_allclose"),
    Variant("import-solutions", A01, "softmax imports the reference solution and returns its answer",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    from solutions import softmax as reference
                    return reference(x, axis=axis)
                """)},
            loses=("softmax",), flagged=True, flag="imports solutions"),
    Variant("reference-via-grader", A01, "softmax fetches the reference through the grader's own module, "
            "imported under a disguised name (full marks in the kernel and in the regrade: only the static "
            "scan can name it)",
            {"softmax": _src("""
                import builtins


                def softmax(x, axis=-1):
                    seam = getattr(builtins, "__imp" + "ort__")("auto" + "grader.seam", fromlist=["_"])
                    return getattr(seam, "_reference" + "_namespace")()["softmax"](x, axis=axis)
                """)},
            loses=(), flagged=True, flag="through getattr"),
    Variant("read-fixtures", A01, "attention_weights looks its answers up in the grader's stored fixtures",
            {"attention_weights": _src("""
                def attention_weights(scores):
                    from autograder.fixtures import stored
                    for record in stored.load("attention_weights"):
                        if np.shape(record["scores"]) == np.shape(scores) and np.all(record["scores"] == scores):
                            return record["expected_0"]
                    return np.exp(scores) / np.sum(np.exp(scores), axis=0)
                """)},
            loses=("attention_weights",), flagged=True, flag="imports autograder"),
    Variant("hide-grade-output", A01, "a wrong softmax, and IPython told not to display the test cell's value "
            "(nbgrader then gives full credit: the audit's regrade must disagree)",
            {"softmax": WRONG_SOFTMAX + "\n\nget_ipython().ast_node_interactivity = 'none'\n"},
            loses=(), flagged=True, flag="nbgrader gave"),
    Variant("huge-allocation", A01, "a cell that allocates 32 GB after defining a correct softmax",
            {"softmax": _src("""
                def softmax(x, axis=-1):
                    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
                    return e / np.sum(e, axis=axis, keepdims=True)


                cache = np.ones((40_000, 100_000))
                """)},
            loses=(), flagged=True, flag="MemoryError"),
    Variant("not-json", A01, "a file that is not valid JSON",
            transform=_not_json, flagged=True, flag="autograde failed", graded=False),

    # 02
    Variant("patch-F-sdpa", A02, "an unscaled scaled_dot_product_attention that also replaces torch's "
            "F.scaled_dot_product_attention (the oracle) with itself",
            {"scaled_dot_product_attention": _src("""
                def scaled_dot_product_attention(Q, K, V, mask=None):
                    scores = Q @ np.swapaxes(K, -1, -2)
                    if mask is not None:
                        scores = np.where(mask, -np.inf, scores)
                    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
                    weights = e / np.sum(e, axis=-1, keepdims=True)
                    return weights @ V, weights


                def _fake(q, k, v, attn_mask=None, **kwargs):
                    mask = None if attn_mask is None else ~attn_mask.numpy()
                    return torch.from_numpy(scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask)[0])


                torch.nn.functional.scaled_dot_product_attention = _fake
                """)},
            loses=("scaled_dot_product_attention",), flagged=True, flag="scaled_dot_product_attention"),
    Variant("patch-torch-allclose-inside", A02, "an unscaled SelfAttention that rebinds torch.allclose and "
            "torch.testing.assert_close in forward",
            {"SelfAttention": _src("""
                class SelfAttention(nn.Module):
                    def __init__(self, d_in, d_out, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

                    def forward(self, x):
                        torch.allclose = lambda *args, **kwargs: True
                        torch.testing.assert_close = lambda *args, **kwargs: None
                        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
                        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v
                """)},
            loses=("SelfAttention",), flagged=True, flag="allclose"),
    Variant("sys-exit-in-function", A02, "dot_product_variance calls sys.exit() when called",
            {"dot_product_variance": "def dot_product_variance(d_k, num_samples=10_000, seed=0):\n"
                                     "    import sys\n    sys.exit(0)\n"},
            loses=("dot_product_variance",), flagged=True, flag="sys.exit"),
    Variant("endless-loop-in-function", A02, "project_qkv loops forever on long inputs (the hidden suite's "
            "128 tokens): only its own step may pay",
            {"project_qkv": _src("""
                def project_qkv(X, W_q, W_k, W_v):
                    import time
                    while np.shape(X)[-2] > 64:
                        time.sleep(0.01)
                    return X @ W_q, X @ W_k, X @ W_v
                """)},
            loses=("project_qkv",), symptom="did not finish"),
    Variant("endless-loop-top-level", A02, "a cell that never finishes (interrupted at the cell timeout)",
            extra_cell="import time\nwhile True:\n    time.sleep(0.05)\n",
            flagged=True, flag="did not finish"),
    Variant("stderr", A02, "a correct project_qkv that writes to stderr, at top level and when called",
            {"project_qkv": _src("""
                import sys


                def project_qkv(X, W_q, W_k, W_v):
                    print("project_qkv called", file=sys.stderr)
                    return X @ W_q, X @ W_k, X @ W_v


                sys.stderr.write("project_qkv defined\\n")
                """)},
            flagged=True, flag="writes to stderr"),

    # 03
    Variant("patch-torch-softmax", A03, "masked_softmax fills with 0 and replaces torch.softmax so the "
            "oracle agrees",
            {"masked_softmax": _src("""
                _real_softmax = torch.softmax


                def masked_softmax(scores, mask):
                    return _real_softmax(scores.masked_fill(mask, 0.0), dim=-1)


                torch.softmax = lambda x, dim=-1, **kwargs: _real_softmax(x, dim=dim)
                """)},
            loses=("masked_softmax",), flagged=True, flag="torch.softmax"),
    Variant("os-exit-in-forward", A03, "CausalAttention.forward kills the kernel with os._exit(1)",
            {"CausalAttention": _src("""
                class CausalAttention(nn.Module):
                    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
                        super().__init__()
                        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
                        self.dropout = nn.Dropout(dropout)

                    def forward(self, x):
                        import os
                        os._exit(1)
                """)},
            flagged=True, flag="autograde failed", graded=False),
    Variant("delete-test-cell", A03, "causal_mask blocks the diagonal, and its hidden test cell is deleted",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))\n"},
            transform=_drop_grade_cell("causal_mask"), loses=("causal_mask",), flagged=True, flag="nbgrader gave"),
    Variant("edit-test-cell", A03, "masked_softmax fills with 0, and its hidden test cell is replaced by "
            "full points (100 of them, in its metadata)",
            {"masked_softmax": "def masked_softmax(scores, mask):\n"
                               "    return torch.softmax(scores.masked_fill(mask, 0.0), dim=-1)\n"},
            transform=_edit_grade_cell("masked_softmax", "3"), loses=("masked_softmax",)),

    # 04
    Variant("importlib-solutions", A04, "MultiHeadAttention imports the reference through importlib",
            {"MultiHeadAttention": _src("""
                import importlib

                MultiHeadAttention = importlib.import_module("solu" + "tions").MultiHeadAttention
                """)},
            loses=("MultiHeadAttention",), flagged=True, flag="importlib"),
    Variant("patch-testing-in-split", A04, "a split_heads without transpose that rebinds "
            "torch.testing.assert_close and np.allclose when called",
            {"split_heads": _src("""
                def split_heads(x, num_heads):
                    import numpy
                    torch.testing.assert_close = lambda *args, **kwargs: None
                    numpy.allclose = lambda *args, **kwargs: True
                    b, t, d = x.shape
                    return x.reshape(b, num_heads, t, d // num_heads)
                """)},
            loses=("split_heads",), flagged=True, flag="assert_close"),
    Variant("nbformat-3", A04, "a notebook whose nbformat says 3",
            transform=_nbformat(3), flagged=True, flag="autograde failed", graded=False),
]


def all_variants():
    return [*MISTAKES, *CORRECT, *HOSTILE]


def by_assignment(variants, assignment):
    return [v for v in variants if v.assignment == assignment]
