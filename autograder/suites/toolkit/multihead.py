"""What the suites of the two multi-head layers, `MultiHeadAttention` and `CrossAttention`, share:
the names of their layers, how a stored record holds their weights, the probe of their dropout,
the check that d_out splits into equal heads, and the mistakes of their heads. Both NumPy models
(`model.attention` and `cross_attention`, the CrossAttention suite's, here) take the same switches for
these mistakes, so one (switches, message) pair serves both ladders."""

import math
import re

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import error_name
from autograder.steps import PROJECTIONS
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.axis_orders import keys_axes_mistakes
from autograder.suites.toolkit.model import (
    BIASES_LEFT_OUT_MISTAKE,
    HEADS_FACTORS,
    MULTIPLIED_BY_SQRT,
    NORMALISERS,
    NOT_A_SOFTMAX,
    RESIDUAL_ADDED,
    SCALED_BY_TOKENS,
    SOFTMAX_AXIS_MISTAKES,
    explain_by_probe,
    softmax,
)
from autograder.suites.toolkit.modules import loaded_module, random_linear, tensor

LAYERS = PROJECTIONS + ("out_proj",)
BIAS_KEYS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value", "out_proj": "b_out"}

# The mistakes of the heads, as (switches of the model, diagnosis).
NOT_SCALED = (dict(scale="none"), "the scores are not scaled (their divisor is 1): divide them by "
                                  "sqrt(head_dim), head_dim = d_out // num_heads")
SCALED_BY_D_OUT = (dict(scale="d_out"), "the scores are divided by sqrt(d_out); each head's keys are head_dim = "
                                        "d_out // num_heads wide: divide by sqrt(head_dim)")
DIVIDED_BY_HEAD_DIM = (dict(scale="head_linear"), "the scores are divided by head_dim instead of sqrt(head_dim)")
SCALED_BY_HEADS = (dict(scale="heads"), "the scores are divided by sqrt(num_heads); divide by sqrt(head_dim), the "
                                        "width of each head's keys (head_dim = d_out // num_heads)")
DIVIDED_BY_TWICE_HEAD_DIM = (dict(scale="twice_linear"), "the scores are divided by 2 head_dim: `/ head_dim ** 1 / 2` "
                             "divides by head_dim, then by 2 (** binds first, and / runs left to right); divide "
                             "by sqrt(head_dim)")
HEADS_REVERSED = (dict(merge="reversed"), "the heads are merged in reverse order: head 0's features come first")
SOFTMAX_OVER_HEADS = (dict(axis=-3), "the softmax runs over dim=1, the heads: each query's weights must sum to 1 "
                                    "over the keys, dim=-1")
HEADS_TIMES = (dict(heads_factor="times"), "each head's output is num_heads times too large before the merge: are the "
                                          "attention weights (or the values) multiplied by num_heads? Each head's "
                                          "weights sum to 1 over the keys, whatever the number of heads")
HEADS_AVERAGED = (dict(heads_factor="over"), "each head's output is divided by num_heads before the merge: are the "
                                             "heads averaged (weights or values divided by num_heads)? The heads "
                                             "are set side by side, each with weights that sum to 1 over the keys")
# sqrt(T_k), the number of keys (keys.shape[-2]) for their width: the one-head layers' message (model.SCALED_BY_TOKENS).
SCALED_BY_KEYS_COUNT = (dict(scale="tokens"), SCALED_BY_TOKENS)
LOG_SOFTMAX = (dict(normaliser="log_softmax"), "the attention weights are log-probabilities (log_softmax): the values are "
                                      "weighted by the probabilities themselves (softmax); where a key is blocked, "
                                      "log(0) = -inf gives nan")
SIGMOID = (dict(normaliser="sigmoid"), "the attention weights are the sigmoid of each score on its own: " + NOT_A_SOFTMAX)
NO_OUT_PROJ = (dict(out_proj=False), "out_proj is not applied: the merged heads go through out_proj "
                                     "(an nn.Linear(d_out, d_out)) at the end")

# CrossAttention's key_padding_mask misused. A blocked score set to 0, or raised by the bool mask added to it
# (True = 1): one message for both.
NOT_MINUS_INF = ("blocked scores are not -inf (set to 0 instead of -inf, or the bool mask added to them, True "
                 "counting as 1), so padded keys still get weight")
# CrossAttention's scores divided by the square root of an input's width, whole or per head: one message each.
FROM_D_Q = ("the scores are divided by the square root of a width taken from d_q, the width of x (sqrt(d_q), or "
            "head_dim as d_q // num_heads); divide by sqrt(head_dim), head_dim = d_out // num_heads")
FROM_D_KV = ("the scores are divided by sqrt(d_kv), the context's width (or by the square root of d_kv // num_heads); "
             "divide by sqrt(head_dim), the width of each head's keys (head_dim = d_out // num_heads)")
INPUT_WIDTH_MISTAKES = [(dict(scale="d_q"), FROM_D_Q), (dict(scale="d_q_heads"), FROM_D_Q),
                        (dict(scale="d_kv"), FROM_D_KV), (dict(scale="d_kv_heads"), FROM_D_KV)]

KEY_PADDING_MISTAKES = [
    (dict(mask="ignored"), "key_padding_mask is ignored: padded keys still get weight; fill the blocked "
                           "scores with -inf before the softmax, and keep what masked_fill returns (scores = "
                           "scores.masked_fill(...)): it makes a new tensor, only masked_fill_ fills in place"),
    (dict(mask="inverted"), "key_padding_mask is used the wrong way round: True means blocked (padding), "
                            "as in nn.MultiheadAttention, so fill the scores where the mask is True"),
    (dict(mask="zero"), NOT_MINUS_INF),
    (dict(mask="added"), NOT_MINUS_INF),
    # -inf written into the weights after the softmax makes the same nan rows (the product with the values
    # meets -inf * 0 or inf - inf), so the message names both
    (dict(mask="plus_inf"), "the padded sequences' rows are nan: blocked scores are filled with +inf "
                            "(float(\"inf\")), not -inf, and the softmax of a row that holds +inf is nan (inf - "
                            "inf); or -inf is written into the weights after the softmax, which the product with "
                            "the values turns into nan: fill the scores with float(\"-inf\") before the softmax"),
    (dict(mask="heads"), "the key_padding_mask is lined up with the heads, not the batch: a (batch, 1, T_k) "
                         "mask broadcasts sequence b's mask onto head b; reshape it to (batch, 1, 1, T_k)"),
    # key_padding_mask[None, None]: (1, 1, batch, T_k), which fits the scores only where T_q == batch
    (dict(mask="queries"), "the key_padding_mask is lined up with the queries, not the batch: new axes put in "
                           "front of it ([None, None], (1, 1, batch, T_k)) broadcast sequence q's padding onto "
                           "query q of every sequence, and fit the scores only where there are as many queries "
                           "as sequences; its batch axis comes first: (batch, 1, 1, T_k)"),
    # scores + mask * float("-inf"): an additive mask made from the bool one, nan wherever the mask is False
    (dict(mask="times_minus_inf"), "every output is nan whenever a key_padding_mask is given: the mask is "
                                   "multiplied by -inf and added to the scores, and an open key's False (0) times "
                                   "-inf is nan, not 0, so every score is nan or -inf; put -inf into the blocked "
                                   "scores only"),
]


# CrossAttention's ladder (its suite's), as switches of `cross_attention`.
CROSS_MISTAKES = [
    *KEY_PADDING_MISTAKES,
    (dict(causal=True), "a causal mask is applied: cross-attention is not causal, every query may look "
                        "at every real token of the context"),
    NOT_SCALED,
    SCALED_BY_D_OUT,
    DIVIDED_BY_HEAD_DIM,
    NO_OUT_PROJ,
    HEADS_REVERSED,
    DIVIDED_BY_TWICE_HEAD_DIM,
    *INPUT_WIDTH_MISTAKES,
    MULTIPLIED_BY_SQRT, SCALED_BY_KEYS_COUNT,
    SOFTMAX_OVER_HEADS,
    HEADS_TIMES,
    HEADS_AVERAGED, LOG_SOFTMAX, SIGMOID, BIASES_LEFT_OUT_MISTAKE,
    # heads cut straight to (batch, num_heads, T, head_dim) from each sequence's own projections
    (dict(split="no_transpose"), "the heads are split with view/reshape straight to (batch, num_heads, T, head_dim), "
                                 "with no transpose, so each head holds pieces of several tokens, of x's and of the "
                                 "context's alike: view as (batch, T, num_heads, head_dim), then swap those two axes"),
    (dict(split="no_transpose", merge="no_transpose"), "the heads are split and merged with view/reshape alone, no "
                                                       "transpose either way, so each head holds pieces of several "
                                                       "tokens, of x's and of the context's alike"),
    # the queries split right (split_heads) and the context's projections cut straight, each line written apart
    (dict(split="keys_no_transpose"), "the keys are split with view/reshape straight to (batch, num_heads, T_k, "
                                      "head_dim), with no transpose, while the queries are split right: each key "
                                      "head holds pieces of several context tokens"),
    (dict(split="context_no_transpose"), "the keys and values are split with view/reshape straight to (batch, "
                                         "num_heads, T_k, head_dim), with no transpose, while the queries are split "
                                         "right: each head of the context holds pieces of several of its tokens"),
    (dict(merge="no_transpose"), "the heads are merged with view/reshape without transposing the head and token "
                                 "dimensions back first, which mixes the queries"),
    (dict(values="W_key"), "the values come from W_key: use W_value"),
    (dict(after=True), "the padding mask is applied after the softmax without renormalising, so rows no longer "
                       "sum to 1: fill the blocked scores with -inf before the softmax"),
    RESIDUAL_ADDED,  # fits only where d_q == d_out; elsewhere the forward raises, and its explainer names it
] + SOFTMAX_AXIS_MISTAKES


def fixed_heads(num_heads, d_out):
    """A number of heads hard-coded (the chapter's 2, say) instead of num_heads: the features cut into
    `heads` heads, scaled by the head_dim of those heads or of num_heads, for each other divisor of d_out."""
    def why(heads):
        if heads == d_out // num_heads:
            return (f"the features are cut into {heads} head{'s' * (heads > 1)}, which is head_dim here, not "
                    f"num_heads = {num_heads}: are num_heads and head_dim swapped (or a number of heads hard-coded)?")
        if heads == 1:
            return (f"all the features form one head whatever num_heads is (here {num_heads}): are the queries, "
                    "keys and values split into num_heads heads?")
        return (f"the features are cut into {heads} heads whatever num_heads is (here {num_heads}): is a "
                "number of heads hard-coded? The heads, and head_dim, follow num_heads")
    return [(dict(split_into=heads, scale=scale), why(heads))
            for heads in range(1, d_out + 1) if d_out % heads == 0 and heads != num_heads
            for scale in ("head", "cut")]


def put_layers(record, layers):
    """Store {layer: (weight, bias or None)} in a stored-output record (a missing bias as zeros)."""
    for name, (weight, bias) in layers.items():
        record[name] = weight
        record[BIAS_KEYS[name]] = bias if bias is not None else np.zeros(weight.shape[0], dtype=np.float32)
    return record


def record_linears(record):
    """{layer: (weight, bias or None)} of a record written by `put_layers`; out_proj always has a bias."""
    bias = bool(record["qkv_bias"])
    linears = {name: (record[name], record[BIAS_KEYS[name]] if bias else None) for name in PROJECTIONS}
    linears["out_proj"] = (record["out_proj"], record["b_out"])
    return linears


def dropout_probe_linears(linears, num_tokens):
    """`linears` of 2 heads of width 2T on x = eye(T), made into `properties.check_dropout`'s probe:
    W_value = [I; 2I; I; 2I] and out_proj = I, so the output shows each head's attention weights twice."""
    d_out = 4 * num_tokens
    eye = np.eye(num_tokens, dtype=np.float32)
    return dict(linears, W_value=(np.vstack([eye, 2 * eye, eye, 2 * eye]), None),
                out_proj=(np.eye(d_out, dtype=np.float32), np.zeros(d_out, dtype=np.float32)))


def check_rejects_indivisible(make, cases, explain=None):
    """make(d_out, num_heads) -> (what, a call that builds the layer) must raise AssertionError or
    ValueError for every (d_out, num_heads) of `cases`, where d_out does not split into equal heads;
    explain(what, error), if given, may name why it raised something else."""
    for d_out, num_heads in cases:
        what, build = make(d_out, num_heads)
        try:
            build()
        except CaseFailure:
            raise  # a missing class must fail here, not count as "raised"
        except (AssertionError, ValueError):
            continue
        except Exception as error:  # noqa: BLE001
            if explain is not None:
                explain(what, error)
            name = error_name(error)
            raise CaseFailure(f"{what} raised {name}; raise AssertionError or ValueError "
                              "(e.g. assert d_out % num_heads == 0, \"...\")") from None
        raise CaseFailure(f"{what} did not raise: check in __init__ that d_out is divisible by num_heads "
                          "(raise AssertionError or ValueError)")


def lengths_mask(lengths, num_tokens):
    """A key_padding_mask (batch, T) of sequences of these lengths: True on the padding after each."""
    return np.arange(num_tokens)[None, :] >= np.asarray(lengths)[:, None]


def mask_for_self(key_padding_mask, x):
    """The key_padding_mask where keys come from x (a mistake's model): kept only if it has one entry per token of x."""
    return None if key_padding_mask is None or np.shape(key_padding_mask)[-1] != np.shape(x)[-2] else key_padding_mask


class SelfView:
    """A CrossAttention handle seen as a layer of one input: x attends over x itself (for
    `properties.check_dropout`, which probes with x = eye(T))."""

    def __init__(self, module):
        self.module = module

    def __call__(self, x, _seed=None):
        return self.module(x, x, _seed=_seed)

    def train(self):
        self.module.train()
        return self

    def eval(self):
        self.module.eval()
        return self

    def describe(self, path=""):
        """The layer's own description: check_dropout asks it whether forward left the layer in eval mode."""
        return self.module.describe(path)


def multiplies_an_input(error, x, context):
    """`error` is torch's matrix product of mismatched shapes, whose left factor's rows are as wide as x or as the
    context: an input went to a layer of the other's width. Rows of another width (a head's output fed to
    out_proj, say) are no wrong input."""
    found = re.search(r"shapes cannot be multiplied \((\d+)x(\d+) and", str(error))
    return found is not None and int(found.group(2)) in (x.shape[-1], context.shape[-1])


def cross_attention(x, context, linears, num_heads, key_padding_mask=None, *, mask="keys", scale="head",
                    causal=False, out_proj=True, split="ok", merge="ok", axis=-1, values="W_value", after=False,
                    heads_factor=None, split_into=None, keys_axes=None, normaliser="softmax", biases=True,
                    residual=False):
    """Multi-head cross-attention in float64: queries from x (..., T_q, d_q), keys and values from
    context (..., T_k, d_kv); key_padding_mask (batch, T_k) or None, True = blocked.

    The defaults are the correct layer; each switch reproduces one mistake: mask "ignored" |
    "inverted" | "zero" (blocked scores set to 0) | "plus_inf" (to +inf) | "added" (the bool mask added to the scores) | "times_minus_inf" (mask * -inf added:
    nan where the mask is False) | "heads" (the
    mask lined up with the heads) | "queries" (with the queries); scale "none" | "d_out" | "head_linear" | "twice_linear" (2 head_dim) | "d_kv"
    (sqrt(d_kv)) | "d_q" (sqrt(d_q), x's width) | "d_q_heads" (sqrt(d_q // num_heads)) | "d_kv_heads" | "times_sqrt" | "cut"
    | "tokens" (sqrt(T_k), the number of keys) | "queries" (sqrt(T_q)) | "heads" (sqrt(num_heads)) | a number (a fixed divisor);
    `split_into` and `keys_axes` as for `model.attention` (a number of heads hard-coded, with scale "cut" its
    head_dim; the keys' axes in the scores' product);
    `causal` (a causal mask as well); `out_proj` False; split "no_transpose" (every projection cut straight into
    heads) | "keys_no_transpose" (the keys only) | "context_no_transpose" (keys and values); merge "reversed" |
    "no_transpose";
    the softmax `axis`;
    `values` from another layer; `after` (the mask applied to the weights after the softmax, without
    renormalising); `heads_factor`, `biases` and `residual` (x added to the output) as for `model.attention`;
    `normaliser` "log_softmax" | "sigmoid" for the softmax, as for `model.attention`."""
    x, context = np.asarray(x, dtype=np.float64), np.asarray(context, dtype=np.float64)

    def project(name, source):
        weight, bias = linears[name]
        y = source @ np.asarray(weight, dtype=np.float64).T
        return y if bias is None or not biases else y + np.asarray(bias, dtype=np.float64)

    cut = split_into or num_heads

    def into_heads(z, straight):
        if straight:  # (..., T, d_out) read straight as (..., heads, T, width)
            return z.reshape(*z.shape[:-2], cut, z.shape[-2], z.shape[-1] // cut)
        return np.swapaxes(z.reshape(*z.shape[:-1], cut, z.shape[-1] // cut), -3, -2)

    straight = {"no_transpose": "qkv", "keys_no_transpose": "k", "context_no_transpose": "kv"}.get(split, "")
    q = into_heads(project("W_query", x), "q" in straight)
    k = into_heads(project("W_key", context), "k" in straight)
    v = into_heads(project(values, context), "v" in straight)
    d_out = cut * q.shape[-1]
    head_dim = d_out // num_heads
    divisor = {"head": math.sqrt(head_dim), "none": 1.0, "d_out": math.sqrt(d_out), "head_linear": head_dim,
               "twice_linear": 2 * head_dim, "d_kv": math.sqrt(context.shape[-1]), "d_q": math.sqrt(x.shape[-1]),
               "d_q_heads": math.sqrt(x.shape[-1] // num_heads), "times_sqrt": 1 / math.sqrt(head_dim),
               "d_kv_heads": math.sqrt(context.shape[-1] // num_heads),
               "cut": math.sqrt(q.shape[-1]), "tokens": math.sqrt(context.shape[-2]), "heads": math.sqrt(num_heads),
               "queries": math.sqrt(x.shape[-2]),
               }[scale] if isinstance(scale, str) else scale  # a number: a fixed divisor written in
    scores = q @ (np.swapaxes(k, -1, -2) if keys_axes is None else np.transpose(k, keys_axes)) / divisor
    blocked = np.zeros(scores.shape, dtype=bool)
    if key_padding_mask is not None and mask != "ignored":
        keys = np.asarray(key_padding_mask, dtype=bool)
        keys = ~keys if mask == "inverted" else keys
        # "heads": the mask reshaped to (batch, 1, T_k), which lines sequence b up with head b; "queries": [None,
        # None], which lines it up with query b
        blocked |= {"heads": keys[None, :, None, :], "queries": keys[None, None]}.get(mask, keys[:, None, None, :])
    if causal:
        blocked |= np.triu(np.ones(scores.shape[-2:], dtype=bool), 1)
    if after:
        weights = softmax(scores, axis) * ~blocked
    elif mask in ("added", "times_minus_inf"):
        with np.errstate(invalid="ignore"):  # 0 * -inf
            weights = softmax(scores + (blocked * -np.inf if mask == "times_minus_inf" else blocked), axis)
    else:
        filled = np.where(blocked, {"zero": 0.0, "plus_inf": np.inf}.get(mask, -np.inf), scores)
        weights = softmax(filled, axis) if normaliser == "softmax" else NORMALISERS[normaliser](filled, axis)
    heads = weights @ v * HEADS_FACTORS[heads_factor](num_heads)
    if merge == "reversed":
        heads = heads[..., ::-1, :, :]
    merged = (heads if merge == "no_transpose" else np.swapaxes(heads, -3, -2)).reshape(*x.shape[:-1], d_out)
    if out_proj:
        weight, bias = linears["out_proj"]
        merged = merged @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, dtype=np.float64)
    return merged + x if residual else merged


def random_cross_layers(r, d_q, d_kv, d_out, bias, out_bias=False):
    """Random layers of CrossAttention; out_proj's bias is zeros unless `out_bias`. Only the stored records give it
    values (as MultiHeadAttention's suite does), so out_proj built without a bias, a slip, costs the stored case
    and the attribute case, not every case that loads the layer."""
    layers = {"W_query": random_linear(r, d_out, d_q, bias)}
    layers |= {name: random_linear(r, d_out, d_kv, bias) for name in ("W_key", "W_value")}
    layers["out_proj"] = random_out_proj(r, d_out, out_bias)
    return layers


def random_out_proj(r, d_out, with_bias):
    """A random out_proj (weight, bias); its bias is zeros unless `with_bias`, but drawn either way, so the
    random stream is the same. The multi-head suites give that bias values only in the cases about it, so
    out_proj built without a bias, a slip, costs those and the attribute case, not every case."""
    weight, bias = random_linear(r, d_out, d_out, True)
    return weight, bias if with_bias else np.zeros_like(bias)


# The keys' axes in any order but the right one (queries @ keys, say): they fit where T_k == head_dim == 2.
CROSS_KEYS_AXES = keys_axes_mistakes({0: "batch", 1: "num_heads", 2: "T_k", 3: "head_dim"})


# A forward that raises with several heads and is right with one, where the heads before and after the merge
# differ only by an axis of size 1 (both multi-head layers' explainers).
BEFORE_MERGE = ("something that takes the merged heads (batch, T, d_out), out_proj or a view, gets the heads "
                "(batch, num_heads, T, head_dim) before they are merged")
# The same, where torch says a view or reshape asked for a shape of another size: the merge's own reshape asked
# for one head's width (reshape(b, T, head_dim)), which fits where there is one head.
MERGED_TO_ONE_HEAD = ("the merge's view or reshape asks for a shape that fits one head only (head_dim wide, say), "
                      "where the merged heads are d_out = num_heads * head_dim wide: reshape to (batch, T, d_out)")


def before_merge_why(error):
    """What a forward that raised with several heads and is right with one shows, told by torch's message."""
    return MERGED_TO_ONE_HEAD if "is invalid for input of size" in str(error) else BEFORE_MERGE


def explain_cross_forward(impl, what, error):
    """A CrossAttention forward that raised, run again (`explain_by_probe`) on a layer of 2 heads of width 2,
    x of 2 queries and a context of 2 tokens, where the keys' axes fit in any order, without a mask; then
    with one head of width 4 (`BEFORE_MERGE`), and with 4 heads, where a number of heads written in fits."""
    r = np.random.default_rng(1912)
    linears = {"W_query": random_linear(r, 4, 3, False), "W_key": random_linear(r, 4, 5, False),
               "W_value": random_linear(r, 4, 5, False), "out_proj": random_linear(r, 4, 4, True)}
    x, context = r.normal(size=(2, 2, 3)), r.normal(size=(2, 2, 5))
    # Built inside the probe, as every layer's explainer does: a layer this probe cannot build (its out_proj
    # has a bias) explains nothing, instead of blaming the build for the forward's error.
    def probe(num_heads):
        return loaded_module(impl, "CrossAttention", (3, 5, 4, num_heads), linears, explained=False)(
            tensor(x), tensor(context))

    explain_by_probe(what, error, lambda: probe(2), lambda **kw: cross_attention(x, context, linears, 2, **kw),
                     CROSS_KEYS_AXES, "batch, T_q, T_k, num_heads and head_dim are all 2")
    # One head explains only an error that two heads raise on the same inputs, without a mask: an error of the
    # mask alone (one lined up wrong) is no merge's.
    try:
        right = np.allclose(probe(2), cross_attention(x, context, linears, 2), atol=1e-5, rtol=1e-4)
    except (RemoteError, CaseFailure):
        explain_by_probe(what, error, lambda: probe(1), lambda: cross_attention(x, context, linears, 1),
                         [({}, before_merge_why(error))], "there is one head")
        right = False
    if right:
        _explain_length_from_x(impl, what, error, linears, x, r.normal(size=(2, 3, 5)))
    # a number of heads written in (self.num_heads = 2) raises where it does not divide d_out; 4 heads of width 1 run it
    explain_by_probe(what, error, lambda: probe(4), lambda **kw: cross_attention(x, context, linears, 4, **kw),
                     fixed_heads(4, 4), "d_out = 4 divides into 1, 2 or 4 heads")
    # x added to the output fits only where x is as wide as the output: a layer whose d_q is d_out
    square, x_square = dict(linears, W_query=random_linear(r, 4, 4, False)), r.normal(size=(2, 2, 4))
    explain_by_probe(what, error, lambda: loaded_module(impl, "CrossAttention", (4, 5, 4, 2), square, explained=False)(
                         tensor(x_square), tensor(context)),
                     lambda **kw: cross_attention(x_square, context, square, 2, **kw), [RESIDUAL_ADDED],
                     "d_q equals d_out")


LENGTH_FROM_X = ("a length is taken from the wrong input: the context's keys and values have a row per context "
                 "token (T_k), the queries and the output a row per token of x (T_q)")


def _explain_length_from_x(impl, what, error, linears, x, longer_context):
    """A forward that raised, right on the probe where x and the context both have 2 tokens: it raises again
    on a context of 3 tokens (`longer_context`), or says nothing, and the CaseFailure names a length read from
    the wrong input (the context's keys viewed with x's number of tokens, say)."""
    try:
        loaded_module(impl, "CrossAttention", (3, 5, 4, 2), linears, explained=False)(tensor(x), tensor(longer_context))
    except (RemoteError, CaseFailure):
        raise CaseFailure(f"{what} raised {error.type_name}; right where x and the context have as many tokens "
                          f"(2 and 2), it raises where they differ (2 and 3): {LENGTH_FROM_X}") from None


def explain_mask_sized_by_x(module, x, context, key_padding_mask, what, error):
    """A forward that fails only with a mask, where x and the context differ in length: run again with x made
    as long as the context (its tokens repeated), it is right there, each sequence getting what its open
    context tokens alone give, if the mask is sized by x's length (viewed as (batch, 1, 1, T_q), say), and the
    CaseFailure names the length taken from the wrong input. A mask laid on another axis runs there too, but
    blocks the wrong entries, and is left to the caller's message."""
    t_q, t_k = x.shape[1], context.shape[1]
    if t_q == t_k:
        return
    x_long = x[:, [i % t_q for i in range(t_k)]]
    try:
        out = checks.to_array(module(x_long, context, key_padding_mask), what)
        for b, blocked in enumerate(np.asarray(key_padding_mask, dtype=bool)):
            alone = checks.to_array(module(x_long[b:b + 1], context[b:b + 1, ~blocked]), what)
            if not np.allclose(out[b:b + 1], alone, atol=1e-5, rtol=1e-4):
                return
    except (RemoteError, CaseFailure):
        return
    raise CaseFailure(f"{what} raised {error.type_name} only when given a key_padding_mask and only where x and "
                      f"the context differ in length ({t_q} and {t_k}): {LENGTH_FROM_X}; the mask has "
                      "one entry per context token, (batch, T_k)") from None
