"""A NumPy model of (multi-head, causal) attention in float64, whose keyword switches each
reproduce one known mistake, so a wrong output can be named by its symptom (`symptoms`)."""

import functools
import math

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.axis_orders import keys_axes_mistakes
from autograder.suites.toolkit.cases import check_stored, rng
from autograder.suites.toolkit.modules import explains_forward, loaded_module, random_projections, tensor
from autograder.suites.toolkit.shifts import NAN_HINT

# --- a NumPy model of attention, with known mistakes as switches ----------------------------

def softmax(s, axis=-1, shift_axis=None):
    """The softmax along `axis`; `shift_axis` (the axis each maximum is taken along) is `axis` unless given."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(s - s.max(axis=axis if shift_axis is None else shift_axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def exponentials(s):
    """The shifted exponentials of a softmax over the last axis, never divided by their sum."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.exp(s - s.max(axis=-1, keepdims=True))


NO_KEEPDIMS = ("takes the maximum or the sum along the axis without keepdims=True, so it no longer lines up "
               "with the array it normalises: on a square matrix row j's value lands on column j, and other "
               "shapes do not fit")


def without_keepdims_mistakes(s):
    """(candidate, symptom) of a softmax over the last axis of scores s whose maximum, sum or both were taken
    without keepdims=True, as such code computes it: each broadcasts along the last axis, so on square
    scores row j's maximum or sum meets column j (other shapes raise)."""
    def loose(which):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            e = np.exp(s - (s.max(axis=-1) if which != "sum" else s.max(axis=-1, keepdims=True)))
            return e / (e.sum(axis=-1) if which != "max" else e.sum(axis=-1, keepdims=True))

    return [(lambda which=which: loose(which), NO_KEEPDIMS) for which in ("sum", "max", "both")]


BASE_TWO = ("exponentiates in base 2 (np.exp2, 2 ** x): softmax raises e to each score (np.exp); another base "
            "is a softmax of rescaled scores, flatter than attention's")
EPSILON_IN_SUM = ("adds a small constant (an epsilon) to the sum it divides by, so each row sums to less than 1: "
                  "after the shift by the maximum the largest exponential is 1, so the sum is never 0 and needs "
                  "no epsilon")
# the epsilons a hand-written softmax adds; smaller ones stay within the grader's tolerance
EPSILONS = (1e-1, 1e-2, 1e-3, 1e-4)
ONE_MATRIX_SUMS = ("the row sums are indexed for one matrix ([:, None]), which on a batch puts the new axis second, "
                   "not last: with as many queries as keys each row is divided by another row's sum, and other "
                   "shapes do not fit; keepdims=True (or [..., None]) keeps it last")
LOG_SOFTMAX = "returns the log of the softmax (log-softmax): the weights are the normalised exponentials themselves"
# exp(x - max) / sum(exp(x)): the shift written above the fraction only, so each row is the softmax times exp(-max)
UNSHIFTED_SUM = ("divides the shifted exponentials, exp(x - max), by the sum of unshifted ones, exp(x): the shift "
                 "cancels only where the exponentials and their sum are shifted alike, so each row sums to exp(-max), "
                 "not 1 (and to 0 where exp(x) overflows)")
NOT_A_SOFTMAX = ("the softmax exponentiates every score and divides by its row's sum of exponentials, so the "
                 "weights are positive, sum to 1 and keep the scores' order")


def shift_above_only(s, axis=-1, overflowed=np.nan):
    """UNSHIFTED_SUM's weights, exp(s - max) / sum(exp(s)); a slice whose sum overflows, 0 there, is `overflowed`: nan
    (claiming nothing) unless a probe confirmed the mistake, since every softmax that overflows gives those zeros."""
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.exp(s).sum(axis=axis, keepdims=True)
        return np.where(np.isinf(sums), overflowed, np.exp(s - s.max(axis=axis, keepdims=True)) / sums)


def hand_written_softmax_mistakes(s, axis=-1):
    """(candidate, symptom) of a hand-written softmax's slips in the formula, on scores s: exp in base 2, the
    log-softmax, other normalisations, the shift left out of the sum alone, and an epsilon added to the normaliser (to
    the sum, or to every exponential inside it)."""
    def unshifted():
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(s)

    @functools.cache  # the eight epsilon candidates share one array of exponentials
    def shifted(base_two=False):
        with np.errstate(invalid="ignore", over="ignore"):
            z = s - s.max(axis=axis, keepdims=True)
            return np.exp2(z) if base_two else np.exp(z)

    def base_two():
        e = shifted(True)
        return e / e.sum(axis=axis, keepdims=True)

    found = [
        (base_two, BASE_TWO),
        (lambda: np.log(shifted() / shifted().sum(axis=axis, keepdims=True)), LOG_SOFTMAX),
        (lambda: 1 / (1 + np.exp(-s)), f"applies the sigmoid to each score on its own: {NOT_A_SOFTMAX}"),
        (lambda: s / np.linalg.norm(s, axis=axis, keepdims=True),
         f"divides the scores by their row's length (an L2 normalisation): {NOT_A_SOFTMAX}"),
        (lambda: shifted() / np.linalg.norm(shifted(), axis=axis, keepdims=True),
         f"divides the exponentials by their row's length (an L2 normalisation), not by their sum: {NOT_A_SOFTMAX}"),
        (shifted, "gives each row's exponentials divided by the largest of them (exp(x - max), never divided by "
                  f"their sum), so the largest weight is 1: {NOT_A_SOFTMAX}"),
        (lambda: (s == s.max(axis=axis, keepdims=True)).astype(float),
         f"puts all the weight on each row's largest score (a one-hot maximum, hard attention): {NOT_A_SOFTMAX}"),
        (lambda: shift_above_only(s, axis), UNSHIFTED_SUM),
    ]

    if np.ndim(s) == 3 and axis in (-1, 2):  # on one matrix [:, None] is right, on more axes it raises
        # off the diagonal the row maxima no longer cancel, so with and without the shift differ
        found += [(lambda e=e: e() / e().sum(axis=-1)[:, None], ONE_MATRIX_SUMS) for e in (shifted, unshifted)]
    for eps in EPSILONS:
        found += [(lambda eps=eps: shifted() / (shifted().sum(axis=axis, keepdims=True) + eps), EPSILON_IN_SUM),
                  (lambda eps=eps: shifted() / (shifted() + eps).sum(axis=axis, keepdims=True), EPSILON_IN_SUM)]
    return found


def nan_in_every_mixed_row(attend, Q, K, V, full_mask, nan_rows):
    """Whether the weights of `attend(Q, K, V, mask)` (context, weights) are nan in every row with both open and
    blocked keys of `full_mask`, as mask * -inf makes them (0 * -inf = nan); an inverted mask leaves those rows
    finite. Confirmed on a mask that blocks one key per query and no key for every query (a padding mask's column
    gives nan to a column-wise shift too)."""
    mixed = full_mask.any(axis=-1) & ~full_mask.all(axis=-1)
    n_q, n_k = full_mask.shape[-2:]
    if (mixed.any() and not nan_rows[mixed].all()) or n_q < 2 or n_k < 2:
        return False
    one_each = np.zeros((n_q, n_k), dtype=bool)
    one_each[np.arange(n_q), (np.arange(n_q) + 1) % n_k] = True
    first = (0,) * (Q.ndim - 2)  # one item: a softmax over the batch's axis makes nan of a mask blocking every item
    try:
        weights = checks.to_array(attend(Q[first], K[first], V[first], one_each)[1], "the weights")
    except Exception:  # noqa: BLE001 - only asks how this mask is read
        return False
    return weights.shape == one_each.shape and bool(np.isnan(weights).any(axis=-1).all())


def truncation_mistakes(exact, from_integer_inputs, inputs, name, divides):
    """(candidate, symptom) of a result cut to whole numbers: computed from its `inputs` converted to
    integers (`from_integer_inputs`), or `exact` converted (astype(int)), or, where the step `divides`,
    floor-divided (//). Where the two cuts agree (no negative entry), one symptom names both. All zeros is
    no evidence (small entries, or an array never filled): the last rung describes it."""
    cut, floored = np.trunc(exact), np.floor(exact)
    found = [(from_integer_inputs, f"{inputs} to integers first (an int dtype)")]
    if not divides:
        found.append((cut, f"the {name} to integers (astype(int), int())"))
    elif np.array_equal(cut, floored):
        found.append((cut, f"the {name} to whole numbers (astype(int), int(), or floor division //; keep "
                           "floats, divide with /)"))
    else:
        found += [(cut, f"the {name} to integers (astype(int), int())"),
                  (floored, f"the {name} to whole numbers with floor division (//; divide with /)")]
    return [(lambda value=value: value, f"converts {what}, which drops the fractional part")
            for value, what in found if value.any()]


# The heads' outputs scaled by the number of heads (`heads_factor`), as the switch names it.
HEADS_FACTORS = {None: lambda heads: 1.0, "times": lambda heads: heads, "over": lambda heads: 1.0 / heads}


def attention(x, linears, num_heads=1, *, mask="causal", fill=-np.inf, after=False, scale="head",
              axis=-1, transpose_weights=False, roles="qkv", untransposed=False, split="ok", merge="ok",
              out_proj=True, split_into=None, keys_axes=None, values_axes=None, heads_factor=None, biases=True,
              residual=False, softmax_twice=None, normaliser="softmax"):
    """(Multi-head, causal) self-attention of x (..., T, d_in) in float64.

    `linears`: {"W_query", "W_key", "W_value" and optionally "out_proj": (weight (out, in), bias
    or None)}. The defaults are the correct model; each switch reproduces a known mistake:
    mask "none" | "lower" | "diagonal" | "inverted" (the diagonal and below) | "heads" (the causal mask's rows
    on the heads' axis, mask.unsqueeze(1), where num_heads == T); `fill` for blocked scores; `after`: mask the weights after
    the softmax; scale "none" | "d_in" | "d_out" | "head_linear" | "d_out_linear" | "twice_linear" | "tokens"
    (sqrt(T)) | "heads" (sqrt(num_heads)) | "times_sqrt" (multiplied by sqrt(head_dim)) | "first_axis"
    (sqrt(keys.shape[0]): the batch size of a batch) | "floor" (// sqrt(head_dim), each score rounded down) | "notes"
    (sqrt(2), the chapter's d_out written in); the softmax
    `axis`; `transpose_weights` (weightsᵀ @ values); `roles` (which projections serve as queries,
    keys, values: "kqv", "qkk", "qkx" with x the raw input ...); `untransposed` (x @ W.weight; "no_bias": without the bias);
    split "no_transpose" | "no_transpose_q" or "_k" (that role's only) | "interleaved"; merge "no_transpose" | "reversed"; `out_proj` False;
    `split_into`: the number of heads the features are cut into (a hard-coded one), while scale "head"
    keeps the head_dim of num_heads, and scale "cut" takes that of the heads cut; `keys_axes`: the
    order the keys' axes (batch, heads, T, head_dim) take in the scores' product, and `values_axes` the
    values' in the product with the weights, where the shapes fit; `heads_factor` "times" | "over": the
    heads' outputs (their weights, or values) multiplied or divided by num_heads before the merge;
    `biases` False: the projections' biases left out (x @ W.weight.T); `residual`: x added to the output;
    `softmax_twice` "before" | "after": a second softmax over the scores before the masked one, or over its weights;
    `normaliser` "log_softmax" | "sigmoid": the masked scores made weights by another function than the softmax.
    """
    x = np.asarray(x, dtype=np.float64)
    lead, num_tokens, d_in = x.shape[:-2], x.shape[-2], x.shape[-1]

    def project(name):
        weight, bias = linears[name]
        weight = np.asarray(weight, dtype=np.float64)
        y = x @ (weight if untransposed else weight.T)
        if bias is None or untransposed == "no_bias" or not biases:
            return y
        return y + np.asarray(bias, dtype=np.float64)

    made = {"q": project("W_query"), "k": project("W_key"), "v": project("W_value"), "x": x}
    q, k, v = (made[role] for role in roles)
    d_out = made["q"].shape[-1]
    head_dim = d_out // num_heads

    cut = split_into or num_heads

    def split_(z, role):
        width = z.shape[-1] // cut
        if split in ("no_transpose", f"no_transpose_{role}"):
            return z.reshape(*lead, cut, num_tokens, width)
        if split == "interleaved":
            return np.moveaxis(z.reshape(*lead, num_tokens, width, cut), -1, -3)
        return np.swapaxes(z.reshape(*lead, num_tokens, cut, width), -3, -2)

    q, k, v = split_(q, "q"), split_(k, "k"), split_(v, "v")  # (..., heads, T, width)
    divisor = {"head": math.sqrt(head_dim), "none": 1.0, "d_in": math.sqrt(d_in), "d_out": math.sqrt(d_out),
               "head_linear": head_dim, "d_out_linear": d_out, "twice_linear": 2 * head_dim, "tokens": math.sqrt(num_tokens),
               "heads": math.sqrt(num_heads), "cut": math.sqrt(d_out // cut), "times_sqrt": 1 / math.sqrt(head_dim),
               "first_axis": math.sqrt(x.shape[0]), "floor": math.sqrt(head_dim), "notes": math.sqrt(2)}[scale]
    product = q @ (np.swapaxes(k, -1, -2) if keys_axes is None else np.transpose(k, keys_axes))
    scores = np.floor_divide(product, divisor) if scale == "floor" else product / divisor
    ones = np.ones((num_tokens, num_tokens))
    blocked = {"causal": np.triu(ones, 1), "diagonal": np.triu(ones, 0), "lower": np.tril(ones, -1),
               "inverted": np.tril(ones, 0), "none": 0 * ones, "heads": np.triu(ones, 1)[:, None],
               "next_open": np.triu(ones, 2)}[mask].astype(bool)
    if softmax_twice == "before":
        scores = softmax(scores, axis)
    if after:
        weights = softmax(scores, axis) * ~blocked
    elif normaliser == "softmax":
        weights = softmax(np.where(blocked, fill, scores), axis)
    else:
        weights = NORMALISERS[normaliser](np.where(blocked, fill, scores), axis)
    if softmax_twice == "after":
        weights = softmax(weights, axis)
    if transpose_weights:
        weights = np.swapaxes(weights, -1, -2)
    context = weights @ (v if values_axes is None else np.transpose(v, values_axes))  # (..., heads, T, width)
    context = context * HEADS_FACTORS[heads_factor](num_heads)
    if merge == "reversed":
        context = context[..., ::-1, :, :]
    if merge == "no_transpose":
        context = context.reshape(*lead, num_tokens, -1)
    else:
        context = np.swapaxes(context, -3, -2).reshape(*lead, num_tokens, -1)
    if out_proj and "out_proj" in linears:
        weight, bias = linears["out_proj"]
        context = context @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, dtype=np.float64)
    return context + x if residual else context


# Other functions than the softmax that turn the masked scores into weights: the log of the softmax (a blocked key's
# weight is log 0 = -inf), and the sigmoid of each score on its own (a blocked key's is sigmoid(-inf) = 0).
NORMALISERS = {"log_softmax": lambda s, axis: np.log(softmax(s, axis)),
               "sigmoid": lambda s, axis: 1 / (1 + np.exp(-s))}


def heads_side_by_side(x, heads, **switches):
    """Single-head causal attention per head ({name: (weight, bias)} each), concatenated."""
    return np.concatenate([attention(x, head, **switches) for head in heads], axis=-1)


def torch_identity_multihead(x, num_heads):
    """torch.nn.MultiheadAttention on x (batch, tokens, d) with identity projections: attention
    run per head on slices of x, the heads' outputs side by side. The oracle of the head split."""
    d = x.shape[-1]
    mha = torch.nn.MultiheadAttention(d, num_heads, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([torch.eye(d)] * 3))
        mha.out_proj.weight.copy_(torch.eye(d))
        return mha.eval()(x, x, x, need_weights=False)[0]


def symptoms(compute, mistakes):
    """[(candidate, message)] for `checks.expect_close`: compute(**switches) per known mistake."""
    return [((lambda kw=kw: compute(**kw)), message) for kw, message in mistakes]


def told_apart(symptoms, same=None):
    """The symptoms, computed now; one whose output another's equals here (a lone new token that sees only itself:
    the cache never read, or the earlier keys blocked; sqrt(T) where it equals head_dim) names them all, none alone.
    `same(a, b)` says when two outputs coincide: by default within the tolerance a student's output is named in."""
    same = same or (lambda a, b: checks.named_mistake(a, [(b, "")]) is not None)
    computed = []
    for candidate, message in symptoms:
        try:
            with np.errstate(all="ignore"):
                computed.append((np.asarray(candidate(), dtype=np.float64), message))
        except Exception:  # noqa: BLE001 - a model that cannot run on this input just does not apply
            continue
    fits = [list(dict.fromkeys(other for twin, other in computed if same(value, twin))) for value, _ in computed]
    return [(value, checks.one_or_all(fit or [message])) for (value, message), fit in zip(computed, fits)]


MASK_MISTAKES = [
    (dict(mask="none"), "no causal mask is applied: every token also attends to the tokens after it (if masked_fill "
                        "is called, is its result kept? It returns a new tensor: scores = scores.masked_fill(...))"),
    (dict(mask="lower"), "the mask blocks the keys BELOW the diagonal (earlier tokens); block those "
                         "above it (key j > query i)"),
    # ~mask, or True read as "may attend": the last token sees nothing, and its row is nan (0 / 0)
    (dict(mask="inverted"), "the mask is inverted (~mask, or True read as 'may attend'): it blocks each token "
                            "itself and the earlier ones, and leaves the later ones open; True means BLOCKED"),
    (dict(mask="diagonal"), "the mask blocks the diagonal too (triu without diagonal=1): each token is blocked from "
                            "itself, so token 0 has no key left and is nan (0 / 0); block only keys j > i"),
    (dict(fill=0.0), "blocked scores are set to 0 instead of -inf, so blocked keys still get weight "
                     "(exp(0) = 1)"),
    (dict(after=True), "the mask is applied after the softmax without renormalising, so rows no longer "
                       "sum to 1: fill the blocked scores with -inf before the softmax"),
    (dict(mask="next_open"), "the mask leaves the next token open (triu with diagonal=2, one too many): each token "
                             "also sees the token right after it; every key j > i is blocked"),
    (dict(normaliser="log_softmax"), "the weights are log-probabilities (log_softmax): a blocked key's weight is "
                                     "log 0 = -inf, and the values are mixed by the probabilities themselves"),
    (dict(normaliser="sigmoid"), "the weights are the sigmoid of each masked score on its own: " + NOT_A_SOFTMAX),
]


# The scale of one head's scores: d_k is the keys' width (CausalAttention, CachedCausalAttention).
NOT_SCALED = "the scores are not scaled: divide them by sqrt(d_k), d_k = the width of the keys"
SCALED_BY_D_IN = "the scores are divided by sqrt(d_in); divide by sqrt(d_k), d_k = the width of the keys (d_out here)"
SCALED_BY_TOKENS = ("the scores are divided by sqrt(T), the number of tokens (keys.shape[-2]); divide by "
                    "sqrt(d_k), the keys' width (keys.shape[-1])")
SCALED_BY_BATCH = (dict(scale="first_axis"), "the scores are divided by the square root of keys.shape[0], the batch "
                   "size; d_k is the keys' width, their LAST axis (keys.shape[-1])")
# `* d_k ** 0.5` (or `/ d_k ** -0.5`): every layer's ladder has it, with d_k the width of one head's keys.
MULTIPLIED_BY_SQRT = (dict(scale="times_sqrt"), "the scores are multiplied by the square root of the keys' width "
                                                "(d_k, or head_dim in each head) instead of divided by it")
FLOOR_DIVIDED = ("the scores are divided with // (floor division), which rounds each one down to a whole number: "
                 "divide with /")
TWICE_D_K = ("the scores are divided by 2 d_k: `/ d_k ** 1 / 2` divides by d_k, then by 2 (** binds first, and / "
             "runs left to right); the divisor is sqrt(d_k)")
SCALE_MISTAKES = [
    (dict(scale="none"), NOT_SCALED),
    (dict(scale="d_in"), SCALED_BY_D_IN),
    (dict(scale="d_out_linear"), "the scores are divided by d_k instead of sqrt(d_k)"),
    (dict(scale="tokens"), SCALED_BY_TOKENS),
    (dict(scale="twice_linear"), TWICE_D_K),
    MULTIPLIED_BY_SQRT,
]


# weightsᵀ @ values: SelfAttention's ladder, and every layer built like it.
WEIGHTS_TRANSPOSED = (dict(transpose_weights=True), "the context uses weightsᵀ @ values: row i of the weights "
                                                    "belongs to query i, so use weights @ values")

# x @ W.weight: the layers' weights used untransposed, and so without their biases too where the layers have
# some (SelfAttention's ladder, and every one-head layer's).
UNTRANSPOSED = ("the inputs are multiplied by the layers' weights without transposing (x @ W.weight): call the "
                "layers, self.W_query(x), which compute x @ W.weight.T")
UNTRANSPOSED_MISTAKES = [(dict(untransposed=True), UNTRANSPOSED), (dict(untransposed="no_bias"), UNTRANSPOSED)]

# The softmax along the wrong axis, in a layer that writes its own (not the step's function).
SOFTMAX_AXIS_MISTAKES = [
    (dict(axis=-2), "the softmax runs over dim=-2, the queries: each query's weights must sum to 1 over "
                    "the keys, dim=-1"),
]

# The softmax over the queries' axis, -2, in SelfAttention, which names the axis a batch makes of dim=1: on one
# sequence (T, T) dim=1 is the keys and right, so a batch is where that code goes wrong.
SOFTMAX_OVER_BATCH_QUERIES = (dict(axis=-2), "the softmax runs over the queries' axis of the batch (B, T, T), dim=1 "
                              "(or dim=-2), so each key's column of weights sums to 1 instead of each query's row; "
                              "dim=1 is the keys only on one sequence (T, T): use dim=-1, the keys on any number of "
                              "leading axes")
SOFTMAX_OVER_QUERIES = (dict(axis=-2), "the softmax runs over the queries' axis (dim=-2, dim=0 of one sequence), so "
                        "each key's column of weights sums to 1 instead of each query's row: use dim=-1, the keys")
# x @ W.weight.T: the layers' weights used by hand, right, but without their biases (every layer with qkv_bias).
BIASES_LEFT_OUT = ("the layers' biases are left out (x @ W.weight.T has none); call the layers, self.W_query(x), "
                   "which add them when qkv_bias=True")
BIASES_LEFT_OUT_MISTAKE = (dict(biases=False), BIASES_LEFT_OUT)
# masked_softmax(torch.softmax(scores, dim=-1), mask), or torch.softmax of masked_softmax's weights: the second
# softmax runs on numbers in [0, 1], which flattens every row, and the first one's sum, or the second's exp(0) = 1 for
# a blocked key, lets the later tokens in.
TWO_SOFTMAXES = ("the weights go through two softmaxes (torch.softmax before or after masked_softmax), so each row is "
                 "normalised twice and comes out too even, and later tokens leak in: masked_softmax alone turns the "
                 "scaled scores into weights")
SOFTMAX_TWICE_MISTAKES = [(dict(softmax_twice=when), TWO_SOFTMAXES) for when in ("before", "after")]
RESIDUAL_ADDED = (dict(residual=True), "the input x is added to the output (a residual connection): the transformer "
                  "block adds x around the attention layer; the layer itself returns only the attention's output")

# Projections that serve the wrong role (SelfAttention's ladder, and every layer built like it).
ROLE_MISTAKES = [
    (dict(roles="kqv"), "queries and keys are swapped: queries come from W_query, keys from W_key"),
    (dict(roles="qkk"), "the values come from W_key: use W_value"),
    (dict(roles="qkq"), "the values come from W_query: use W_value"),
    (dict(roles="vkq"), "queries and values are swapped: queries from W_query, values from W_value"),
    (dict(roles="qvk"), "keys and values are swapped: keys from W_key, values from W_value"),
    (dict(roles="qkx"), "the context weights the raw inputs: weight the values (W_value(x))"),
    (dict(roles="qqv"), "the keys come from W_query (the scores compare queries with queries): use W_key"),
    (dict(roles="kkv"), "the queries come from W_key (the scores compare keys with keys): use W_query"),
    (dict(roles="qqq"), "the queries, keys and values all come from W_query (one line copied for all three roles?): "
                        "the keys come from W_key, the values from W_value"),
    # the grader loads W_query, W_key, then W_value: into one shared layer, the last load is what all three hold
    (dict(roles="vvv"), "the queries, keys and values all come from one layer, W_value: each needs an nn.Linear of "
                        "its own (a chained assignment, W_query = W_key = W_value = nn.Linear(...), makes one "
                        "layer, not three)"),
]


def check_stored_outputs(impl, step, apply, what, symptoms_of, where=None):
    """check_stored (of the records `where` selects), with a hint where the output holds nan."""
    try:
        check_stored(impl, step, apply, what, symptoms=symptoms_of, where=where)
    except CaseFailure as failure:
        if str(failure).endswith("contains nan"):
            raise CaseFailure(f"{failure}: {NAN_HINT}") from None
        raise


# --- a forward that raised, named by a run where the shapes fit -----------------------------

# keys.T on the 3-D keys (batch, T, d_k) of a one-head layer reverses all three axes, and a transpose that moves
# the batch raises too, except where batch == T == d_k, where every order fits (the model's head axis, 1, stays);
# x @ W.weight raises wherever d_in != d_out.
ONE_HEAD_PROBE_MISTAKES = keys_axes_mistakes({0: "batch", 2: "T", 3: "d_k"}) + UNTRANSPOSED_MISTAKES + [RESIDUAL_ADDED]


def explains_one_head_keys_axes(class_name, seed):
    """Register the explainer of a one-head layer's forward that raised (CausalAttention, the cached layer: args
    d_in, d_out, context_length, dropout, qkv_bias): it runs again, without a cache, where batch, T, d_in and d_out
    are all 2, so that keys with their axes in another order (keys.T on 3-D keys), and weights used untransposed
    (x @ W.weight), fit and are named, as is x added to the output, on a layer
    with a longer context_length, so a mask not sliced to T fails there too and is not misnamed. The layer is
    built inside the probe: one that cannot be built there explains nothing."""
    @explains_forward(class_name)
    def explain(impl, what, error):
        r = rng(seed)
        linears = random_projections(r, 2, 2, False)
        x = r.normal(size=(2, 2, 2))
        explain_by_probe(what, error,
                         lambda: loaded_module(impl, class_name, (2, 2, 3, 0.0, False), linears, explained=False)(tensor(x)),
                         lambda **kw: attention(x, linears, **kw), ONE_HEAD_PROBE_MISTAKES,
                         "batch, T, d_in and d_out are all 2")
    return explain


def explain_by_probe(what, error, run, model, mistakes, where):
    """A forward that raised (`error`) is run again by `run()` on a layer `where` the shapes of the known
    `mistakes` fit; an output that matches model(**switches) of one names it, else nothing is said."""
    try:
        out = checks.to_array(run(), what)
    except (RemoteError, CaseFailure):
        return
    found = checks.named_mistake(out, symptoms(model, mistakes))
    if found is not None:
        raise CaseFailure(f"{what} raised {error.type_name}; on a layer where {where}, so that the shapes fit, "
                          f"it shows why: {found}") from None
