"""Rungs for the causal layers' forwards that raised, where the suites' own files are full.

`explain_mask_shorter_than_context`: a causal mask built for fewer tokens than context_length (from
another of the layer's arguments: causal_mask(d_out), say) fits every input up to its own size, so
short cases pass and longer ones raise a shape mismatch that names no cause; a probe that grows the
input one token at a time finds where the mask ends.

`explain_values_first`: a one-head causal layer whose output is values @ weights, which runs only where T = d_out:
named on a probe layer where d_out = T != d_in, before the shared retry that blames the tokens read from the features
(`explains_forward(..., early=True)`).

`merging_feature_major`: a multi-head layer's model that also merges the heads feature by feature.

`FILLED_WITH_PLUS_INF`: blocked scores filled with float("inf") for float("-inf"), which makes every row that
blocks a key nan; the nan hint would otherwise blame a mask that blocks a whole row.

`causal_weights`: the attention weights returned for the context (whose message, `RETURNS_WEIGHTS`, is in
properties.py, where the dropout case names it too).

`explain_cross_mask_error`: CrossAttention's key_padding_mask used as a boolean index (scores[mask]), which does not
broadcast, or lined up with the queries (`explain_cross_mask_on_queries`), which raises wherever x and the context
differ in length.
"""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.model import attention, explains_one_head_keys_axes, softmax
from autograder.suites.toolkit.modules import (
    explains_forward,
    loaded_module,
    random_linear,
    random_projections,
    tensor,
)
from autograder.suites.toolkit.properties import close

# Sizes that differ from each other, so the length where the mask ends names the argument it came from.
D_IN, D_OUT, NUM_HEADS, CONTEXT_LENGTH = 5, 6, 3, 9
ARGUMENTS = {D_IN: "d_in", D_OUT: "d_out", NUM_HEADS: "num_heads", D_OUT // NUM_HEADS: "head_dim"}

# Each causal layer's arguments for the probe (context_length, dropout 0, no bias), and its number of heads.
PROBED_LAYERS = {
    "CausalAttention": ((D_IN, D_OUT, CONTEXT_LENGTH, 0.0, False), 1),
    "CachedCausalAttention": ((D_IN, D_OUT, CONTEXT_LENGTH, 0.0, False), 1),
    "MultiHeadAttention": ((D_IN, D_OUT, CONTEXT_LENGTH, 0.0, NUM_HEADS, False), NUM_HEADS),
}


def _runs_right(layer, x, linears, num_heads):
    """True when the layer's output on x is causal attention's; False when it is wrong; None when it raised."""
    try:
        return close(layer(tensor(x)), attention(x, linears, num_heads))
    except (RemoteError, CaseFailure):
        return None


def explain_mask_shorter_than_context(impl, class_name, what, error):
    """A forward that raised, run again without a cache on 1, 2, ... tokens of a layer built with context_length
    9: right up to some n < 9 tokens and raising on every longer input, its causal mask covers n tokens. A mask
    not sliced to T fails the other way (short inputs raise), so it is never named so."""
    args, num_heads = PROBED_LAYERS[class_name]
    r = rng(1717)
    linears = random_projections(r, D_IN, D_OUT, False)
    if num_heads > 1:
        linears["out_proj"] = random_linear(r, D_OUT, D_OUT, True)
    x = r.normal(size=(2, CONTEXT_LENGTH, D_IN))
    try:
        layer = loaded_module(impl, class_name, args, linears, explained=False)
    except (RemoteError, CaseFailure):
        return
    outcomes = [_runs_right(layer, x[:, :length], linears, num_heads) for length in range(1, CONTEXT_LENGTH + 1)]
    covered = outcomes.index(None) if None in outcomes else CONTEXT_LENGTH
    if not 0 < covered < CONTEXT_LENGTH or not all(outcomes[:covered]) or any(o is not None for o in outcomes[covered:]):
        return
    source = f" ({covered} is {ARGUMENTS[covered]})" if covered in ARGUMENTS else ""
    raise CaseFailure(f"{what} raised {error.type_name}: built with context_length {CONTEXT_LENGTH}, it runs right on "
                      f"up to {covered} tokens{source} and raises on every longer input: its causal mask is built for "
                      "fewer tokens than context_length (from another argument?); build it from context_length")


def explains_one_head_forward(class_name, seed):
    """Register the explainer of a one-head causal layer's forward that raised: the keys' axes and the other
    mistakes of `explains_one_head_keys_axes`, then a mask shorter than context_length."""
    explain_keys_axes = explains_one_head_keys_axes(class_name, seed)

    @explains_forward(class_name)
    def explain(impl, what, error):
        explain_keys_axes(impl, what, error)
        explain_mask_shorter_than_context(impl, class_name, what, error)

    # before the shared retries: where T = d_out = d_in the retry that reads the tokens from the features runs too
    explains_forward(class_name, early=True)(lambda impl, what, error: explain_values_first(impl, class_name, what, error))
    return explain


VALUES_FIRST = ("the output is values @ weights: the weights come first, one row per query, so that each query's "
                "output is a weighted sum of the rows of the values")


def explain_values_first(impl, class_name, what, error):
    """A one-head causal layer's forward that raised, run again without a cache on 4 tokens of a layer whose d_out
    is 4 and d_in 3, where values @ weights fits, and named where its output is that product."""
    r = rng(3104)
    linears = random_projections(r, 3, 4, False)
    x = r.normal(size=(2, 4, 3))
    try:
        out = checks.to_array(loaded_module(impl, class_name, (3, 4, 6, 0.0, False), linears, explained=False)(tensor(x)),
                              what)
    except (RemoteError, CaseFailure):
        return
    values = x @ linears["W_value"][0].T.astype(np.float64)
    if close(out, values @ causal_weights(x, linears)):
        raise CaseFailure(f"{what} raised {error.type_name}, and runs on a layer whose d_out is the number of tokens, "
                          f"where it shows why: {VALUES_FIRST}") from None


# The heads' outputs (batch, num_heads, T, head_dim) merged feature by feature (permute(0, 2, 3, 1) before the
# reshape): each token's features come as feature 0 of every head, then feature 1 of every head, and so on.
HEADS_FEATURE_MAJOR = (dict(merge="feature_major"), "the heads are merged feature by feature (head_dim moved in "
                       "front of the heads, permute(0, 2, 3, 1), before the reshape), so each head's features are "
                       "spread over the output: transpose(1, 2) to (batch, T, num_heads, head_dim), then reshape, "
                       "so that head 0's head_dim features come first, then head 1's")


def merging_feature_major(compute, linears, num_heads):
    """compute(**switches), a multi-head layer's NumPy model, that also takes merge="feature_major": its heads
    (the model's output without out_proj, merged the right way) taken apart and merged feature by feature, then
    out_proj."""
    def model(**switches):
        if switches.get("merge") != "feature_major":
            return compute(**switches)
        merged = compute(**{**switches, "merge": "ok", "out_proj": False})
        heads = merged.reshape(*merged.shape[:-1], num_heads, -1)  # (..., T, num_heads, head_dim)
        merged = np.swapaxes(heads, -1, -2).reshape(merged.shape)
        weight, bias = linears["out_proj"]
        return merged @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, dtype=np.float64)
    return model


# float("inf") for float("-inf"): the row's maximum is +inf, and inf - inf in the softmax is nan, so every row
# with a blocked key is nan and only rows that block nothing are right. A switch of the one-head models.
PLUS_INF_WHY = ("blocked scores are filled with +inf (float(\"inf\")), not -inf: the softmax of a row that holds "
                "+inf is nan (inf - inf), so every row with a blocked key is nan; fill with float(\"-inf\")")
FILLED_WITH_PLUS_INF = (dict(fill=np.inf), PLUS_INF_WHY)


def causal_weights(x, linears):
    """The causal attention weights (..., T, T) of one head in float64, the scores scaled by sqrt(d_k)."""
    x = np.asarray(x, dtype=np.float64)
    q, k = ((x @ np.asarray(linears[name][0], dtype=np.float64).T
             + (0.0 if linears[name][1] is None else np.asarray(linears[name][1], dtype=np.float64)))
            for name in ("W_query", "W_key"))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1])
    num_tokens = x.shape[-2]
    scores = np.where(np.triu(np.ones((num_tokens, num_tokens), dtype=bool), 1), -np.inf, scores)
    return softmax(scores)


MASK_ON_QUERIES = ("the key_padding_mask is lined up with the queries ([:, None, :, None]): it blocks whole "
                   "queries, not keys, and fits the scores (batch, heads, T_q, T_k) only where T_q is T_k; put "
                   "its T_k entries on the last axis: key_padding_mask[:, None, None, :]")


def explain_cross_mask_on_queries(module, x, context, what, error):
    """A CrossAttention forward that raised only with a mask, run again with x made as long as the context and a
    mask that blocks each sequence's last context token: a mask laid on the queries' axis gives nan for those
    queries (every score of their row filled) and, for every other query, what no mask gives. Where x and the
    context have as many tokens the mask runs, so an all-False mask (key_padding_mask=None's case) is not used."""
    t_q, t_k = x.shape[1], context.shape[1]
    if t_k < 2:
        return
    x_long = x[:, [i % t_q for i in range(t_k)]]
    blocked = torch.zeros(x.shape[0], t_k, dtype=torch.bool)
    blocked[:, -1] = True
    try:
        out = checks.to_array(module(x_long, context, blocked), what)
        plain = checks.to_array(module(x_long, context), what)
    except (RemoteError, CaseFailure):
        return
    if np.isnan(out[:, -1]).all() and np.isfinite(out[:, :-1]).all() and close(out[:, :-1], plain[:, :-1]):
        raise CaseFailure(f"{what} raised {error.type_name} only when given a key_padding_mask: {MASK_ON_QUERIES}") \
            from None


# scores[key_padding_mask] = -inf: a boolean index lays the mask's axes on the scores' first ones, (batch, num_heads),
# where they must match exactly; torch's words for that are its own.
MASK_AS_BOOLEAN_INDEX = ("the key_padding_mask is used as a boolean index (scores[key_padding_mask]), which does not "
                         "broadcast: its two axes are laid on the scores' first two, (batch, num_heads), and must "
                         "match them exactly, so no (batch, T_k) mask can serve every head and query that way, "
                         "however it is reshaped; only a mask that broadcasts can serve them all")


def explain_cross_mask_error(module, x, context, what, error):
    """A CrossAttention forward that raised only with a mask: a boolean index, by torch's words, or the mask lined
    up with the queries."""
    if "does not match the shape of the indexed tensor" in str(error):
        raise CaseFailure(f"{what} raised {error.type_name} only when given a key_padding_mask: "
                          f"{MASK_AS_BOOLEAN_INDEX}") from None
    explain_cross_mask_on_queries(module, x, context, what, error)
