"""Hidden suite of `MultiHeadAttention` (assignment 04).

While this step is graded, `split_heads`, `merge_heads` and the mask helpers are the
reference's. Weights are copied into W_query, W_key, W_value and out_proj by attribute name
(`toolkit.loaded_module`). Several cases make head_dim differ from both d_in and d_out, so each wrong
scale shows.
"""

import numpy as np
import torch
from torch import nn

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures.notes import chapter_linear_weights, journey_batch
from autograder.harness import case
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import checks, head_probes, multihead
from autograder.suites.toolkit.cases import notes_cases, rng
from autograder.suites.toolkit.module_ladders import VALUES_FIRST, causal_weights
from autograder.suites.toolkit.multihead import LAYERS, record_linears

STEP = "MultiHeadAttention"

# A mask with the diagonal (torch.triu(..., diagonal=0) built inline): token 0 has no key left, its row is nan.
MASK_BLOCKS_DIAGONAL = (dict(mask="diagonal"), "the mask also blocks each token's own key, the diagonal: the first "
                        "token is left no key at all, which makes nan; token i may attend to the tokens 0..i, itself "
                        "included")

# One projection's line split without its transpose, the other two right (a line copied before the fix).
ONE_ROLE_UNTRANSPOSED = ("the {} alone are split with view/reshape straight to (batch, num_heads, T, head_dim), without "
                         "the transpose the other projections get, which mixes their tokens across heads")
MISTAKES = toolkit.MASK_MISTAKES + [
    MASK_BLOCKS_DIAGONAL,
    toolkit.FILLED_WITH_PLUS_INF,
    multihead.NOT_SCALED,
    multihead.SCALED_BY_D_OUT,
    (dict(scale="d_in"), "the scores are divided by sqrt(d_in); divide by sqrt(head_dim), "
                         "head_dim = d_out // num_heads"),
    multihead.DIVIDED_BY_HEAD_DIM,
    (dict(scale="d_out_linear"), "the scores are divided by d_out; divide by sqrt(head_dim)"),
    multihead.DIVIDED_BY_TWICE_HEAD_DIM,
    multihead.SCALED_BY_HEADS,
    (dict(scale="tokens"), toolkit.SCALED_BY_TOKENS),
    (dict(scale="floor"), toolkit.FLOOR_DIVIDED),
    (dict(split="no_transpose"), "the heads are split with view/reshape to (batch, num_heads, T, head_dim) "
                                 "without a transpose, which mixes tokens across heads: view as (batch, T, "
                                 "num_heads, head_dim), then transpose(1, 2)"),
    (dict(split="no_transpose", merge="no_transpose"), "the heads are split and merged with view/reshape "
                                                       "but no transpose, which mixes tokens across heads"),
    *[(dict(split=f"no_transpose_{role[0]}"), ONE_ROLE_UNTRANSPOSED.format(role)) for role in ("queries", "keys")],
    (dict(merge="no_transpose"), "the heads are merged with view/reshape but without transposing the head "
                                 "and token dimensions back first"),
    (dict(split="interleaved"), "head i gets every num_heads-th feature; it must get the block "
                                "[i*head_dim, (i+1)*head_dim)"),
    multihead.HEADS_REVERSED,
    toolkit.HEADS_FEATURE_MAJOR,
    multihead.NO_OUT_PROJ,
    multihead.SOFTMAX_OVER_HEADS,
    toolkit.MULTIPLIED_BY_SQRT,
    toolkit.WEIGHTS_TRANSPOSED,
    multihead.HEADS_TIMES,
    multihead.HEADS_AVERAGED,
    toolkit.BIASES_LEFT_OUT_MISTAKE,
    toolkit.RESIDUAL_ADDED,
] + toolkit.SOFTMAX_AXIS_MISTAKES + toolkit.ROLE_MISTAKES + toolkit.SOFTMAX_TWICE_MISTAKES


# With 2 heads, d_out is 2 head_dim: a divisor of d_out may be either mistake, and the message says so.
D_OUT_OR_PRECEDENCE = ("the scores are divided by d_out, which is 2 head_dim here (d_out itself, or "
                       "`/ head_dim ** 1 / 2`, where ** binds first?); divide by sqrt(head_dim)")


# head_dim = d_in // num_heads, the input's width cut into heads: where that is 1, its root divides by nothing.
OR_D_IN_HEADS = (", or divided by the square root of d_in // num_heads, a head's width taken from the input's, which is "
                 "1 here and gives the same scores")


def _mistakes(x, linears, num_heads):
    unscaled_is_d_in = np.shape(x)[-1] // num_heads == 1 != linears["out_proj"][0].shape[0] // num_heads
    mistakes = [(switches, D_OUT_OR_PRECEDENCE if num_heads == 2 and switches == dict(scale="d_out_linear") else
                 why.replace(":", OR_D_IN_HEADS + ":", 1) if unscaled_is_d_in and switches == dict(scale="none") else why)
                for switches, why in MISTAKES] + multihead.fixed_heads(num_heads, linears["out_proj"][0].shape[0])
    # sqrt(T) equals head_dim where T = head_dim ** 2: mistakes whose outputs coincide are named together
    compute = toolkit.merging_feature_major(lambda **kw: toolkit.attention(x, linears, num_heads, **kw), linears, num_heads)
    return toolkit.told_apart(toolkit.symptoms(compute, mistakes) + [
        (lambda: _scaled_after_softmax(compute, linears, num_heads), SCALED_AFTER_SOFTMAX),
        (lambda: _out_proj_untransposed(compute(out_proj=False), linears), OUT_PROJ_UNTRANSPOSED),
        (lambda: toolkit.attention(x, head_probes.values_through_out_proj(linears), num_heads, out_proj=False),
         head_probes.OUT_PROJ_ON_VALUES)])


OUT_PROJ_UNTRANSPOSED = ("out_proj's weight multiplies the merged heads untransposed (merged @ out_proj.weight): "
                         "nn.Linear computes x @ weight.T + bias, so call self.out_proj(merged) itself")


def _out_proj_untransposed(merged, linears):
    weight, bias = (np.asarray(part, dtype=np.float64) for part in linears["out_proj"])
    return merged @ weight + bias


# The weights divided by sqrt(head_dim) after the softmax, the scores left unscaled: each head's context shrinks by
# that factor (and the softmax, given unscaled scores, is sharper than it should be).
SCALED_AFTER_SOFTMAX = ("the attention weights are divided by sqrt(head_dim) after the softmax, the scores before it left "
                        "unscaled: the scale belongs to the scores, inside the softmax, where it keeps the weights from "
                        "getting too sharp; after it, the weights' rows no longer sum to 1")


def _scaled_after_softmax(compute, linears, num_heads):
    merged = compute(scale="none", merge="ok", out_proj=False)
    weight, bias = (np.asarray(part, dtype=np.float64) for part in linears["out_proj"])
    return merged / np.sqrt(weight.shape[0] // num_heads) @ weight.T + bias


def _notes_symptoms(example):
    """The known mistakes on the chapter's batch with the chapter's layers (seed 123, 2 heads)."""
    layers = chapter_linear_weights(123, [(3, 2, False)] * 3 + [(2, 2, True)])
    linears = {name: (weight.numpy(), None if bias is None else bias.numpy())
               for name, (weight, bias) in zip(LAYERS, layers)}
    return _mistakes(journey_batch().numpy(), linears, 2)


# The chapter's layer has head_dim 1, where no scale shows (sqrt(1) = 1): the example weighs little, and the
# stored outputs carry the step, so a scale missing or wrong keeps at most a third of it.
test_notes = notes_cases(STEP, weight=0.5, symptoms=_notes_symptoms)


def _random_layers(r, d_in, d_out, bias, out_bias=False):
    """Random layers; out_proj's bias is zeros unless `out_bias`. Only the cases about that bias (the
    notes' example, the stored records with d_in != d_out, test_out_proj_applied_once_at_the_end)
    give it values, so out_proj built without a bias, a slip, costs those and the attribute case."""
    layers = toolkit.random_projections(r, d_in, d_out, bias)
    layers["out_proj"] = multihead.random_out_proj(r, d_out, out_bias)
    return layers


def _mha(impl, d_in, d_out, context_length, num_heads, linears, dropout=0.0, bias=False, explained=True):
    return toolkit.loaded_module(impl, STEP, (d_in, d_out, context_length, dropout, num_heads, bias), linears,
                                 f"MultiHeadAttention({d_in}, {d_out}, {context_length}, {dropout}, "
                                 f"num_heads={num_heads}, qkv_bias={bias})", explained=explained)


# The keys' axes in any order but the right one: keys.transpose(1, 2), right for CausalAttention's 3-D keys,
# raises here except where T == num_heads == head_dim, and there every order fits.
# So do the values' axes in another order (a view without the transpose, say).
AXES = {0: "batch", 1: "num_heads", 2: "T", 3: "head_dim"}
AXES_MISTAKES = toolkit.keys_axes_mistakes(AXES) + toolkit.values_axes_mistakes(tuple(AXES.values()))
# mask.unsqueeze(1), (T, 1, T): broadcast from the right, its T rows meet the heads' axis, which fits only where
# num_heads == T, and there head h blocks the keys after h for every query.
MASK_ON_HEADS = (dict(mask="heads"), "the causal mask is given an axis in the middle (mask.unsqueeze(1), (T, 1, T)): "
                 "broadcasting lines shapes up from the last axis, so the mask's rows meet the heads' axis of the "
                 "scores (batch, num_heads, T, T), not the queries'; a (T, T) mask already broadcasts over the "
                 "batch and the heads")


@toolkit.explains_forward(STEP)
def _explain_forward(impl, what, error):
    """A forward that raised, run again where batch, T, num_heads and head_dim are all 2 (`explain_by_probe`),
    then with one head, where the heads before and after the merge differ only by a size-1 axis. Both layers
    have a longer context_length than T, so a mask not sliced to T fails there too and is not misnamed."""
    head_probes.explain_values_not_split(impl, STEP, what, error)
    head_probes.explain_heads_as_head_dim(impl, STEP, what, error)
    r = rng(1817)
    linears = _random_layers(r, 3, 4, False)
    x = r.normal(size=(2, 2, 3))
    toolkit.explain_by_probe(what, error, lambda: _mha(impl, 3, 4, 3, 2, linears, explained=False)(toolkit.tensor(x)),
                             lambda values_first=False, **kw: (_values_first(x, linears, 2) if values_first
                                                               else toolkit.attention(x, linears, 2, **kw)),
                             AXES_MISTAKES + [MASK_ON_HEADS, (dict(values_first=True), VALUES_FIRST)],
                             "batch, T, num_heads and head_dim are all 2")
    toolkit.explain_mask_shorter_than_context(impl, STEP, what, error)
    # One head explains only an error that two heads raise on the same input: a layer right there raised on
    # another input, and merging is not why.
    try:
        _mha(impl, 3, 4, 3, 2, linears, explained=False)(toolkit.tensor(x))
    except (RemoteError, CaseFailure):
        toolkit.explain_by_probe(what, error, lambda: _mha(impl, 3, 4, 3, 1, linears, explained=False)(toolkit.tensor(x)),
                                 lambda: toolkit.attention(x, linears, 1), [({}, multihead.before_merge_why(error))],
                                 "there is one head")
    square, x_square = _random_layers(r, 4, 4, False), r.normal(size=(2, 2, 4))  # x's width fits the output's
    toolkit.explain_by_probe(what, error, lambda: _mha(impl, 4, 4, 3, 2, square, explained=False)(toolkit.tensor(x_square)),
                             lambda **kw: toolkit.attention(x_square, square, 2, **kw), [toolkit.RESIDUAL_ADDED],
                             "d_in equals d_out")


def _values_first(x, linears, num_heads):
    """Each head's values @ its causal weights (which fits only where head_dim == T), merged, then out_proj: the
    product in the wrong order, as CausalAttention's causal-values-times-weights."""
    head_dim = linears["W_query"][0].shape[0] // num_heads
    rows = [slice(h * head_dim, (h + 1) * head_dim) for h in range(num_heads)]
    heads = [{name: (weight[rows[h]], None if bias is None else bias[rows[h]])
              for name, (weight, bias) in linears.items() if name != "out_proj"} for h in range(num_heads)]
    merged = np.concatenate([_values(x, head) @ causal_weights(x, head) for head in heads], axis=-1)
    weight, bias = (np.asarray(part, dtype=np.float64) for part in linears["out_proj"])
    return merged @ weight.T + bias


def _values(x, head):
    weight, bias = head["W_value"]
    values = np.asarray(x, dtype=np.float64) @ np.asarray(weight, dtype=np.float64).T
    return values if bias is None else values + bias


def _record(r, label, batch, num_tokens, d_in, d_out, num_heads, bias):
    record = dict(label=label, x=r.normal(size=(batch, num_tokens, d_in)).astype(np.float32),
                  d_in=np.int64(d_in), d_out=np.int64(d_out), context_length=np.int64(num_tokens),
                  num_heads=np.int64(num_heads), qkv_bias=np.int64(bias))
    return multihead.put_layers(record, _random_layers(r, d_in, d_out, bias, out_bias=d_in != d_out))


def stored_inputs():
    r = rng(1801)
    return [
        _record(r, "d_in=5, d_out=6, 3 heads (head_dim 2), 4 tokens, batch of 2", 2, 4, 5, 6, 3, False),
        _record(r, "d_in=3, d_out=8, 2 heads (head_dim 4), 5 tokens, batch of 1, qkv_bias=True",
                1, 5, 3, 8, 2, True),
        _record(r, "d_in=4, d_out=4, 1 head, 3 tokens, batch of 3", 3, 3, 4, 4, 1, False),
        _record(r, "d_in=6, d_out=6, 6 heads (head_dim 1), 6 tokens, batch of 2", 2, 6, 6, 6, 6, False),
        _record(r, "a single token (d_in=3, d_out=2, 2 heads), batch of 2", 2, 1, 3, 2, 2, False),
    ]


def apply(impl, record):
    module = _mha(impl, int(record["d_in"]), int(record["d_out"]), int(record["context_length"]),
                  int(record["num_heads"]), record_linears(record), bias=bool(record["qkv_bias"]))
    return module(torch.tensor(record["x"]))


def _check_stored_records(impl, same_width):
    """The stored records with d_in == d_out (same_width) or d_in != d_out."""
    toolkit.check_stored_outputs(
        impl, STEP, apply, "MultiHeadAttention",
        lambda record, k: _mistakes(record["x"], record_linears(record), int(record["num_heads"])),
        where=lambda record: (int(record["d_in"]) == int(record["d_out"])) == same_width)


# Layers with d_in == d_out (most of the chapter's) and with d_in != d_out are cases of their own,
# here and in the oracle, each half of the output weight: a wrong scale or mixed heads fails both,
# while a width taken from d_in instead of d_out keeps the first. Only the second gives out_proj's bias
# values (`_random_layers`).
@case(STEP, "stored", weight=2.25)
def test_stored_outputs(impl):
    """matches the reference with d_in == d_out, for 1 and 6 heads and several batch sizes"""
    _check_stored_records(impl, same_width=True)


@case(STEP, "stored", weight=2.25)
def test_stored_outputs_other_widths(impl):
    """matches the reference with d_in != d_out, head_dim unlike both, biases and a single token"""
    _check_stored_records(impl, same_width=False)


@case(STEP, "property", weight=0.5)
def test_rejects_indivisible_d_out(impl):
    """raises AssertionError or ValueError when d_out is not divisible by num_heads"""
    multihead.check_rejects_indivisible(
        lambda d_out, num_heads: (f"MultiHeadAttention(3, {d_out}, 4, 0.0, num_heads={num_heads})",
                                  lambda: impl.MultiHeadAttention(3, d_out, 4, 0.0, num_heads)),
        ((5, 2), (4, 3)), explain=lambda what, error: head_probes.explain_arguments_order(impl, STEP, what, error))


@case(STEP, "property", weight=0.25)
def test_attributes(impl):
    """has W_query, W_key, W_value (nn.Linear(d_in, d_out, bias=qkv_bias)), out_proj, dropout; keeps its mask as a buffer"""
    for bias in (False, True):
        what = f"MultiHeadAttention(3, 4, 5, 0.25, num_heads=2, qkv_bias={bias})"
        module = toolkit.construct(impl, STEP, (3, 4, 5, 0.25, 2, bias), what=what)
        for name in PROJECTIONS:
            toolkit.check_linear(module, name, 3, 4, bias, what)
        toolkit.check_linear(module, "out_proj", 4, 4, True, what)
        toolkit.check_dropout_attribute("MultiHeadAttention(3, 4, 5, dropout=0.25, num_heads=2)", module, 0.25)
        toolkit.check_mask_is_buffer(what, module)


@case(STEP, "oracle")
def test_matches_torch(impl):
    """agrees with torch.nn.MultiheadAttention (causal attn_mask), whose layers have d_in == d_out"""
    r = rng(1803)
    for d, num_heads, num_tokens, bias in ((6, 2, 5, True), (4, 4, 4, False)):
        linears = _random_layers(r, d, d, bias)
        x = toolkit.tensor(r.normal(size=(2, num_tokens, d)))
        with torch.random.fork_rng(devices=[]):
            torch_mha = nn.MultiheadAttention(d, num_heads, bias=True, batch_first=True).eval()
        with torch.no_grad():
            torch_mha.in_proj_weight.copy_(torch.cat([torch.as_tensor(linears[n][0]) for n in PROJECTIONS]))
            if bias:
                torch_mha.in_proj_bias.copy_(torch.cat([torch.as_tensor(linears[n][1]) for n in PROJECTIONS]))
            else:
                torch_mha.in_proj_bias.zero_()
            torch_mha.out_proj.weight.copy_(torch.as_tensor(linears["out_proj"][0]))
            torch_mha.out_proj.bias.copy_(torch.as_tensor(linears["out_proj"][1]))
            blocked = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
            want = torch_mha(x, x, x, attn_mask=blocked, need_weights=False)[0]
        module = _mha(impl, d, d, num_tokens, num_heads, linears, bias=bias)
        checks.expect_close(module(x), want.numpy(),
                            f"MultiHeadAttention({d}, {d}, {num_tokens}, 0.0, num_heads={num_heads}, "
                            f"qkv_bias={bias}) "
                            "compared with torch.nn.MultiheadAttention (same weights, causal attn_mask)",
                            symptoms=_mistakes(x.numpy(), linears, num_heads))


@case(STEP, "oracle")
def test_matches_torch_sdpa_other_widths(impl):
    """with d_in != d_out, agrees with torch's scaled_dot_product_attention per head, merged, then out_proj"""
    # d_in != d_out, which nn.MultiheadAttention cannot express: per-head F.scaled_dot_product_attention
    r = rng(1816)
    d_in, d_out, num_heads, num_tokens = 3, 8, 2, 6
    linears = _random_layers(r, d_in, d_out, False)
    x = toolkit.tensor(r.normal(size=(2, num_tokens, d_in)))
    q, k, v = ((x @ torch.as_tensor(linears[n][0]).T).view(2, num_tokens, num_heads, d_out // num_heads)
               .transpose(1, 2) for n in PROJECTIONS)
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    want = context.transpose(1, 2).reshape(2, num_tokens, d_out) @ torch.as_tensor(linears["out_proj"][0]).T \
        + torch.as_tensor(linears["out_proj"][1])
    module = _mha(impl, d_in, d_out, num_tokens, num_heads, linears)
    checks.expect_close(module(x), want.numpy(),
                        "MultiHeadAttention(3, 8, 6, 0.0, num_heads=2) compared with "
                        "F.scaled_dot_product_attention(is_causal=True) per head, merged, then out_proj",
                        symptoms=_mistakes(x.numpy(), linears, num_heads))


@case(STEP, "property", weight=0.25)
def test_out_proj_applied_once_at_the_end(impl):
    """out_proj is applied once, to the merged heads: the output is linear in out_proj's weight and bias"""
    r = rng(1804)
    linears = _random_layers(r, 3, 4, False, out_bias=True)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    identity = dict(linears, out_proj=(np.eye(4, dtype=np.float32), np.zeros(4, dtype=np.float32)))
    merged = checks.to_array(_mha(impl, 3, 4, 5, 2, identity)(x), "MultiHeadAttention(x)")
    checks.expect_shape(merged, (2, 5, 4), "MultiHeadAttention(3, 4, 5, 0.0, num_heads=2)(x)")
    out = _mha(impl, 3, 4, 5, 2, linears)(x)
    weight, bias = linears["out_proj"]
    if not toolkit.close(out, merged @ weight.T.astype(np.float64) + bias):
        if toolkit.close(out, _out_proj_untransposed(merged, linears)):
            raise CaseFailure(f"MultiHeadAttention(3, 4, 5, 0.0, num_heads=2)(x): {OUT_PROJ_UNTRANSPOSED}")
        head_probes.explain_out_proj_on_values(out, x.numpy(), linears, 2, "MultiHeadAttention(3, 4, 5, 0.0, num_heads=2)(x)")
        toolkit.explain_unsteady_forward()  # an out_proj made anew in forward is not the one loaded
        raise CaseFailure("with out_proj set to the identity the output is M; with out_proj = (W, b) it "
                          "should be M @ W.T + b, and it is not: apply self.out_proj once, to the merged "
                          "heads (batch, T, d_out), as the last step")


@case(STEP, "property", weight=0.25)
def test_causal(impl):
    """is causal: changing later tokens never changes the outputs of earlier ones; outputs are finite"""
    linears = _random_layers(rng(1805), 4, 6, False)
    toolkit.check_finite_and_causal("MultiHeadAttention", _mha(impl, 4, 6, 7, 3, linears), 4, 7, 1806,
                                    lambda x: _mistakes(x, linears, 3))


@case(STEP, "property", weight=0.25)
def test_last_token_is_self_attention(impl):
    """the last token's output equals its unmasked multi-head self-attention output (notes 003)"""
    r = rng(1807)
    linears = _random_layers(r, 3, 4, True)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    unmasked = toolkit.attention(x.numpy(), linears, 2, mask="none")
    toolkit.check_last_token("MultiHeadAttention", _mha(impl, 3, 4, 5, 2, linears, bias=True), x, unmasked,
                             toolkit.attention(x.numpy(), linears, 2), _mistakes(x.numpy(), linears, 2))


@case(STEP, "property", weight=0.5)
def test_shorter_than_context_length(impl):
    """accepts inputs shorter than context_length (the mask is sliced to T x T)"""
    linears = _random_layers(rng(1808), 3, 4, False)
    toolkit.check_short_input("MultiHeadAttention", lambda ctx: _mha(impl, 3, 4, ctx, 2, linears),
                              3, 8, (5, 1), 1809)


@case(STEP, "property", weight=0.25)
def test_dropout_off_in_eval_mode(impl):
    """no dropout happens in eval mode"""
    r = rng(1810)
    linears = _random_layers(r, 3, 4, False)
    module = _mha(impl, 3, 4, 5, 2, linears, dropout=0.5)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_eval_mode_without_dropout(
        "MultiHeadAttention", lambda p: module if p else _mha(impl, 3, 4, 5, 2, linears), x)


def _probe_linears(num_tokens):
    return multihead.dropout_probe_linears(_random_layers(rng(1811), num_tokens, 4 * num_tokens, False), num_tokens)


def _dropout_probe(impl, num_tokens, p):
    return _mha(impl, num_tokens, 4 * num_tokens, num_tokens, 2, _probe_linears(num_tokens), dropout=p)


@case(STEP, "property", weight=0.5)
def test_dropout_on_attention_weights(impl):
    """in train mode, dropout zeroes attention weights and rescales the rest by 1/(1-p)"""
    toolkit.check_dropout("MultiHeadAttention", lambda p: _dropout_probe(impl, 4, p), 4, 2,
                          expected=toolkit.attention(np.eye(4)[None], _probe_linears(4), 2))


@case(STEP, "property", weight=0.25)
def test_batch_sizes(impl):
    """works for any batch size, each item independent of the others"""
    module = _mha(impl, 3, 4, 5, 2, _random_layers(rng(1812), 3, 4, True), bias=True)
    toolkit.check_batches("MultiHeadAttention", module, 3, 5, 1813)


@case(STEP, "property", weight=0.25)
def test_input_unchanged(impl):
    """leaves its input x unchanged"""
    r = rng(1814)
    module = _mha(impl, 3, 4, 5, 2, _random_layers(r, 3, 4, False))
    toolkit.check_input_unchanged(impl, "MultiHeadAttention", module, toolkit.tensor(r.normal(size=(2, 5, 3))))


@case(STEP, "property", weight=0.25)
def test_gradients_reach_every_layer(impl):
    """gradients flow back to W_query, W_key, W_value and out_proj, also in train mode with dropout > 0"""
    r = rng(1815)
    linears = _random_layers(r, 3, 4, False)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_gradients("MultiHeadAttention", _mha(impl, 3, 4, 5, 2, linears), x, [f"{name}.weight" for name in LAYERS])
    toolkit.check_trains_with_dropout("MultiHeadAttention", _mha(impl, 3, 4, 5, 2, linears, dropout=0.5), [x], 0.5)
