"""Rungs of the multi-head layers (`MultiHeadAttention`, `CrossAttention`) that their suites and `multihead` have
no room for: probes of a forward that raised, a rung of a wrong output, and a probe of a layer that cannot be built.

`explain_values_not_split`: the values weighed whole (weights @ self.W_value(x), broadcast), or split into one head
(or into head_dim heads, one where head_dim is 1): right with one head, and with several each head's output is
d_out wide, so the merged heads are num_heads * d_out wide where out_proj takes d_out. The queries used whole are
right with one head too, and with several the scores' product meets queries d_out wide and keys head_dim wide.

`explain_heads_as_head_dim`: a forward that raises where num_heads != head_dim and is right where they are equal:
the two are mixed up somewhere (the context cut into head_dim heads, say).

`explain_cross_forward`: CrossAttention's forward that raised: the values not split, the heads mixed up with
head_dim, then its scores as keys @ queriesᵀ, (T_k, T_q), which runs only where T_q == T_k.

`values_through_out_proj` (and `explain_out_proj_on_values`, MultiHeadAttention's property case): out_proj applied
to the values before attention, not to the merged heads.

`explain_arguments_order`: a layer built with its arguments in another order than the task's signature (num_heads
before context_length, say), which raises while it is built; built with them in that order, it is right.
"""

import itertools
import math
import re

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import error_name
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.model import attention, explain_by_probe, softmax
from autograder.suites.toolkit.modules import (
    CONSTRUCTION_EXPLAINERS,
    SIGNATURES,
    loaded_module,
    random_linear,
    random_projections,
    tensor,
)
from autograder.suites.toolkit.multihead import cross_attention
from autograder.suites.toolkit.properties import close

VALUES_NOT_SPLIT = ("the values are not split into num_heads heads (weights @ self.W_value(x), or split into another "
                    "number): each head weighs all d_out features; split them as the queries and keys are")


QUERIES_NOT_SPLIT = ("the queries are not split into num_heads heads (self.W_query(x) used whole): each query is d_out "
                     "wide, but each head's keys are head_dim wide; split the queries as the keys and values are")


def _layers(r, d_q, d_kv, d_out):
    layers = {"W_query": random_linear(r, d_out, d_q, False)}
    layers |= {name: random_linear(r, d_out, d_kv, False) for name in ("W_key", "W_value")}
    layers["out_proj"] = random_linear(r, d_out, d_out, True)
    return layers


def _probes(impl, class_name):
    """(run(num_heads, d_out), model(num_heads, d_out)) of a probe layer on a batch of 1: x of 3 tokens (a mask
    broadcast onto the heads' axis makes 3 heads of it, not 2) and, for CrossAttention, a context of 4."""
    r = rng(3101)
    x, context = r.normal(size=(1, 3, 3)), r.normal(size=(1, 4, 5))
    if class_name == "CrossAttention":
        def run(num_heads, d_out):
            layer = loaded_module(impl, class_name, (3, 5, d_out, num_heads), _layers(rng(d_out), 3, 5, d_out),
                                  explained=False)
            return layer(tensor(x), tensor(context))

        return run, lambda num_heads, d_out: cross_attention(x, context, _layers(rng(d_out), 3, 5, d_out), num_heads)

    def run(num_heads, d_out):
        return loaded_module(impl, class_name, (3, d_out, 4, 0.0, num_heads), _layers(rng(d_out), 3, 3, d_out),
                             explained=False)(tensor(x))

    return run, lambda num_heads, d_out: attention(x, _layers(rng(d_out), 3, 3, d_out), num_heads)


def explain_values_not_split(impl, class_name, what, error):
    """A forward that raised, run again on a batch of 1 (where the values weighed whole broadcast over the heads):
    right with one head of 2, and with 2 heads of 1 it raises on a product of something 4 wide, num_heads * d_out,
    with a 2 x 2 matrix (out_proj's): the values are not split. out_proj given the heads before the merge raises
    there too, on something head_dim (1) wide, and is left to the one-head probe's message."""
    run, model = _probes(impl, class_name)
    try:
        if not close(run(1, 2), model(1, 2)):
            return
    except (RemoteError, CaseFailure):
        return
    try:
        run(2, 2)
    except CaseFailure:
        return
    except RemoteError as probed:
        found = re.search(r"shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", str(probed))
        if found is not None and tuple(int(n) for n in found.groups()[1:]) == (4, 2, 2):
            raise CaseFailure(f"{what} raised {error.type_name}; on a batch of 1 it is right with one head, and with 2 "
                              f"heads of 1 out_proj gets 4 features, num_heads * d_out: {VALUES_NOT_SPLIT}") from None
        # the scores' product (torch's bmm) takes queries d_out = 2 wide against keys head_dim = 1 wide
        found = re.search(r"batch2 tensor to be: \[\d+, (\d+)\] but got: \[\d+, (\d+)\]", str(probed))
        if found is not None and (int(found.group(1)), int(found.group(2))) == (2, 1):
            raise CaseFailure(f"{what} raised {error.type_name}; on a batch of 1 it is right with one head, and with 2 "
                              f"heads of 1 the scores' product meets queries 2 wide, d_out, and keys 1 wide, head_dim: "
                              f"{QUERIES_NOT_SPLIT}") from None


HEADS_AS_HEAD_DIM = ("head_dim is used where the number of heads belongs, or num_heads where head_dim belongs (a "
                     "projection cut into head_dim heads, say): the two are equal only by chance")


def explain_heads_as_head_dim(impl, class_name, what, error):
    """A forward that raised, run again on a batch of 1: right with 2 heads of 2 and with 3 heads of 3, it raises
    with 2 heads of 3. Where num_heads == head_dim a mix-up of the two cannot show, and only there is it right
    (a head_dim written in as 2 is wrong with 3 heads of 3)."""
    run, model = _probes(impl, class_name)
    try:
        if not all(close(run(n, n * n), model(n, n * n)) for n in (2, 3)):
            return
    except (RemoteError, CaseFailure):
        return
    try:
        run(2, 6)
    except CaseFailure:
        return
    except RemoteError:
        raise CaseFailure(f"{what} raised {error.type_name}; it is right with 2 heads of 2 and with 3 heads of 3, "
                          f"and raises with 2 heads of 3: {HEADS_AS_HEAD_DIM}") from None


SCORES_TRANSPOSED = ("the scores are keys @ queriesᵀ, (T_k, T_q): they are queries @ keysᵀ, (batch, num_heads, T_q, "
                     "T_k), one row per query, so that the softmax over the last axis weighs each query's keys")


def _keys_times_queries(x, context, linears, num_heads):
    """CrossAttention's output (float64) with scores keys @ queriesᵀ, where T_q == T_k, without a mask."""
    def heads(name, source):
        z = np.asarray(source, dtype=np.float64) @ np.asarray(linears[name][0], dtype=np.float64).T
        return np.swapaxes(z.reshape(*z.shape[:-1], num_heads, -1), -3, -2)

    q, k, v = heads("W_query", x), heads("W_key", context), heads("W_value", context)
    out = softmax(k @ np.swapaxes(q, -1, -2) / math.sqrt(q.shape[-1])) @ v
    merged = np.swapaxes(out, -3, -2).reshape(*np.shape(x)[:-1], -1)
    weight, bias = linears["out_proj"]
    return merged @ np.asarray(weight, dtype=np.float64).T + bias


def explain_cross_forward(impl, what, error):
    """CrossAttention's forward that raised: the values not split, then the scores transposed, run where x and the
    context have 2 tokens each, 2 heads of 2."""
    explain_values_not_split(impl, "CrossAttention", what, error)
    explain_heads_as_head_dim(impl, "CrossAttention", what, error)
    r = rng(3102)
    linears = _layers(r, 3, 5, 4)
    x, context = r.normal(size=(2, 2, 3)), r.normal(size=(2, 2, 5))
    explain_by_probe(what, error, lambda: loaded_module(impl, "CrossAttention", (3, 5, 4, 2), linears,
                                                        explained=False)(tensor(x), tensor(context)),
                     lambda: _keys_times_queries(x, context, linears, 2), [({}, SCORES_TRANSPOSED)],
                     "x and the context have 2 tokens each")


OUT_PROJ_ON_VALUES = ("out_proj is applied to the values before attention (self.out_proj(self.W_value(x))), not to "
                      "the merged heads: it mixes the heads' features, so it comes last, after merge_heads")


def values_through_out_proj(linears):
    """`linears` whose W_value is out_proj after W_value, and whose out_proj is gone: a model of the layer given
    these computes out_proj applied to the values before the heads are split."""
    weight, bias = (np.asarray(part, dtype=np.float64) for part in linears["out_proj"])
    value_weight, value_bias = linears["W_value"]
    value_bias = np.zeros(weight.shape[0]) if value_bias is None else np.asarray(value_bias, dtype=np.float64)
    layers = {name: layer for name, layer in linears.items() if name != "out_proj"}
    return layers | {"W_value": (weight @ np.asarray(value_weight, dtype=np.float64), weight @ value_bias + bias)}


def explain_out_proj_on_values(out, x, linears, num_heads, what):
    """A MultiHeadAttention output `out` on x that is what out_proj applied to the values gives: named."""
    if close(out, attention(x, values_through_out_proj(linears), num_heads, out_proj=False)):
        raise CaseFailure(f"{what}: {OUT_PROJ_ON_VALUES}")


# The positions of the arguments whose order a signature written from memory mixes up (the heads, the widths that
# split into them, dropout, context_length), and what each probe layer is built with (no bias).
_REORDERED = {"MultiHeadAttention": ((2, 3, 4), (3, 4, 5, 0.0, 2, False)),
              "CrossAttention": ((2, 3, 4), (3, 5, 4, 2, 0.0, False))}


def _order_probe(impl, class_name, args):
    """The probe layer built with `args` is right (True), wrong (False), or cannot be built or run (None)."""
    r = rng(3103)
    if class_name == "CrossAttention":
        linears, x, context = _layers(r, 3, 5, 4), r.normal(size=(2, 2, 3)), r.normal(size=(2, 3, 5))
        want = cross_attention(x, context, linears, 2)
        inputs = (tensor(x), tensor(context))
    else:
        linears, x = random_projections(r, 3, 4, False) | {"out_proj": random_linear(r, 4, 4, True)}, r.normal(size=(2, 5, 3))
        want, inputs = attention(x, linears, 2), (tensor(x),)
    try:
        return close(loaded_module(impl, class_name, args, linears, explained=False)(*inputs), want)
    except (RemoteError, CaseFailure):
        return None


ARGUMENTS_REORDERED = "its __init__ takes its arguments in another order than the task's signature; keep the task's"


def explain_arguments_order(impl, class_name, what, error):
    """A layer that raised while it was built, built again as the probe layer with the arguments at the `_REORDERED`
    positions in each other order: where it cannot be built in the task's order and is right in another, its
    __init__ takes them in that order."""
    positions, args = _REORDERED[class_name]
    if _order_probe(impl, class_name, args) is not None:
        return  # built (right or not) in the task's order: its arguments' order is not why it raised
    names = SIGNATURES[class_name].strip("()").split(", ")
    for order in itertools.permutations(positions):
        if order == positions:
            continue
        moved = list(args)
        for position, source in zip(positions, order):
            moved[position] = args[source]
        if _order_probe(impl, class_name, tuple(moved)):
            taken = list(names)
            for position, source in zip(positions, order):
                taken[position] = names[source]
            raise CaseFailure(f"{what} raised {error_name(error)} while it was built, and is right built with its "
                              f"arguments in the order ({', '.join(taken[:-1])}): {ARGUMENTS_REORDERED}") from None


for _class_name in _REORDERED:
    CONSTRUCTION_EXPLAINERS[_class_name] = explain_arguments_order
