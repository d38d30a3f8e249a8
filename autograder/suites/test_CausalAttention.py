"""Hidden suite of `CausalAttention` (assignment 03).

Weights are always copied into the student's module by attribute name (`toolkit.loaded_module`), so the
order in which a submission creates its layers does not matter. The NumPy model, the known
mistakes and the property checks live in `toolkit`, shared with the multi-head suites.
"""

import numpy as np
import torch
from torch import nn

from autograder.fixtures.notes import chapter_linear_weights, journey_batch
from autograder.harness import case
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import cases, checks
from autograder.suites.toolkit.cases import notes_cases, rng
from autograder.suites.toolkit.model import SCALED_BY_BATCH
from autograder.suites.toolkit.module_ladders import causal_weights
from autograder.suites.toolkit.properties import RETURNS_WEIGHTS

STEP = "CausalAttention"

_BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}

# sqrt(2) written in: right on the chapter's layers, whose keys are 2 wide (d_out=2), so confirmed where d_out is 5
NOTES_WIDTH = (dict(scale="notes"), "the scores are divided by sqrt(2), the width of the chapter's keys (d_out=2) "
               "written in: the scale follows the width of this layer's own keys, whatever d_out it is built with")
SCALES = toolkit.SCALE_MISTAKES + [SCALED_BY_BATCH, NOTES_WIDTH]
MISTAKES = (toolkit.MASK_MISTAKES + [toolkit.FILLED_WITH_PLUS_INF] + SCALES + toolkit.SOFTMAX_AXIS_MISTAKES + toolkit.ROLE_MISTAKES
            + [toolkit.WEIGHTS_TRANSPOSED, toolkit.BIASES_LEFT_OUT_MISTAKE, toolkit.RESIDUAL_ADDED]
            + toolkit.UNTRANSPOSED_MISTAKES + toolkit.SOFTMAX_TWICE_MISTAKES)
SCALE_SYMPTOMS = frozenset(message for _, message in SCALES)


def _causal(impl, d_in, d_out, context_length, linears, dropout=0.0, bias=False):
    """CausalAttention with the given {name: (weight, bias)} loaded, in eval mode."""
    return toolkit.loaded_module(impl, STEP, (d_in, d_out, context_length, dropout, bias), linears,
                                 f"CausalAttention({d_in}, {d_out}, {context_length}, {dropout}, qkv_bias={bias})")


toolkit.explains_one_head_forward(STEP, 1317)


SCALED_AFTER_SOFTMAX = ("the attention weights are divided by sqrt(d_k) after the softmax, so each row sums to "
                        "1/sqrt(d_k): the scale belongs to the scores, before the softmax")


# F.scaled_dot_product_attention given the causal mask (True = blocked) as its attn_mask, which it reads as True =
# may attend: the mask inverted, and the last token, whose every key that blocks, gets a row of 0 there, not nan.
SDPA_MASK_INVERTED = ("the mask is read the other way round, and the token whose every key it blocks gets 0, as "
                      "F.scaled_dot_product_attention gives such a row: its attn_mask reads True as MAY attend, the "
                      "opposite of masked_fill's mask; pass it ~mask, or is_causal=True")


# scores + mask * float("-inf") with a mask of 0s and 1s: every open score is nan, so every row is, the last token's
# too, which blocks nothing (a mask that blocks a whole row, or a fill of +inf, leaves that row right).
MASK_TIMES_MINUS_INF = ("every output is nan, the last token's too, though its row blocks no key: nan reached the "
                        "scores the mask leaves open, as a mask of 0s and 1s multiplied by -inf and added to the "
                        "scores makes them (0 * -inf is nan, not 0); only the blocked scores may become -inf")


def _mistakes(x, linears):
    d_k = np.shape(linears["W_key"][0])[0]
    return toolkit.symptoms(lambda **kw: toolkit.attention(x, linears, **kw), MISTAKES) + [
        (lambda: toolkit.attention(x, linears) * np.nan, MASK_TIMES_MINUS_INF),
        (lambda: np.nan_to_num(toolkit.attention(x, linears, mask="inverted"), nan=0.0), SDPA_MASK_INVERTED),
        (lambda: toolkit.attention(x, linears, scale="none") / np.sqrt(d_k), SCALED_AFTER_SOFTMAX),
        (lambda: causal_weights(x, linears), RETURNS_WEIGHTS)]


def _confirmed(impl, ladder):
    """`ladder`, each wrong scale in it named only where the same code makes it on a probe where no two divisors
    coincide (a batch of 3, d_in 2, d_out 5, 7 tokens): sqrt(keys.shape[0]) is 1 on one sequence, where it looks
    unscaled, and sqrt(d_k) on the chapter's batch of two with d_out 2, where it looks right."""
    r = rng(1318)
    linears = toolkit.random_projections(r, 2, 5, False)
    x = r.normal(size=(3, 7, 2)).astype(np.float32)
    return cases.confirmed(ladder, lambda: _causal(impl, 2, 5, 7, linears)(toolkit.tensor(x)),
                           lambda: _mistakes(x, linears), only=SCALE_SYMPTOMS.__contains__)


def _notes_symptoms(example):
    """The known mistakes on the chapter's batch with the chapter's layers (seed 123)."""
    layers = chapter_linear_weights(123, [(3, 2, False)] * 3)
    linears = {name: (weight.numpy(), None) for name, (weight, _) in zip(PROJECTIONS, layers)}
    return _mistakes(journey_batch().numpy(), linears)


test_notes = notes_cases(STEP, weight=0.5, symptoms=_notes_symptoms, confirmed=_confirmed)


def _record(r, label, batch, num_tokens, d_in, d_out, bias):
    record = dict(label=label, x=r.normal(size=(batch, num_tokens, d_in)).astype(np.float32),
                  d_in=np.int64(d_in), d_out=np.int64(d_out), context_length=np.int64(num_tokens),
                  qkv_bias=np.int64(bias))
    for name, (weight, b) in toolkit.random_projections(r, d_in, d_out, bias).items():
        record[name] = weight
        record[_BIAS[name]] = b if bias else np.zeros(d_out, dtype=np.float32)
    return record


def _record_linears(record):
    bias = bool(record["qkv_bias"])
    return {name: (record[name], record[_BIAS[name]] if bias else None) for name in PROJECTIONS}


def stored_inputs():
    r = rng(1301)
    return [
        _record(r, "d_in=3, d_out=2, 6 tokens, batch of 2", 2, 6, 3, 2, False),
        _record(r, "d_in=5, d_out=3, 4 tokens, batch of 1", 1, 4, 5, 3, False),
        _record(r, "d_in=4, d_out=6, 5 tokens, batch of 3, qkv_bias=True", 3, 5, 4, 6, True),
        _record(r, "a single token (d_in=3, d_out=4, batch of 2)", 2, 1, 3, 4, False),
        _record(r, "d_in=8, d_out=8, 7 tokens, batch of 2", 2, 7, 8, 8, True),
    ]


def apply(impl, record):
    module = _causal(impl, int(record["d_in"]), int(record["d_out"]), int(record["context_length"]),
                     _record_linears(record), bias=bool(record["qkv_bias"]))
    return module(torch.tensor(record["x"]))


def _check_stored(impl, with_bias):
    toolkit.check_stored_outputs(impl, STEP, apply, "CausalAttention",
                                 lambda record, k: _confirmed(impl, _mistakes(record["x"], _record_linears(record))),
                                 where=lambda record: bool(record["qkv_bias"]) == with_bias)


# Layers without and with biases are cases of their own: the biases left out (bias=False for qkv_bias) is a slip
# that keeps the first, while a wrong attention fails both.
@case(STEP, "stored", weight=3.5)
def test_stored_outputs(impl):
    """matches the reference for several widths, lengths, batch sizes, a single token, without bias"""
    _check_stored(impl, with_bias=False)


@case(STEP, "stored", weight=1)
def test_stored_outputs_with_bias(impl):
    """matches the reference with qkv_bias=True"""
    _check_stored(impl, with_bias=True)


@case(STEP, "property", weight=0.25)
def test_attributes(impl):
    """has W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias); keeps its mask as a buffer"""
    for bias in (False, True):
        what = f"CausalAttention(3, 5, 4, 0.0, qkv_bias={bias})"
        module = toolkit.construct(impl, STEP, (3, 5, 4, 0.0, bias), what=what)
        for name in PROJECTIONS:
            toolkit.check_linear(module, name, 3, 5, bias, what)
        toolkit.check_mask_is_buffer(what, module)


@case(STEP, "oracle", weight=2)
def test_matches_torch(impl):
    """agrees with nn.MultiheadAttention (one head, causal attn_mask) and F.scaled_dot_product_attention"""
    r = rng(1303)
    d, num_tokens = 4, 5
    linears = toolkit.random_projections(r, d, d, True)
    x = toolkit.tensor(r.normal(size=(2, num_tokens, d)))
    torch_mha = nn.MultiheadAttention(d, 1, bias=True, batch_first=True)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([torch.as_tensor(linears[n][0]) for n in PROJECTIONS]))
        torch_mha.in_proj_bias.copy_(torch.cat([torch.as_tensor(linears[n][1]) for n in PROJECTIONS]))
        torch_mha.out_proj.weight.copy_(torch.eye(d))
        torch_mha.out_proj.bias.zero_()
        blocked = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
        want = torch_mha.eval()(x, x, x, attn_mask=blocked, need_weights=False)[0]
    module = _causal(impl, d, d, num_tokens, linears, bias=True)
    checks.expect_close(module(x), want.numpy(),
                        "CausalAttention(4, 4, 5, 0.0, qkv_bias=True) compared with "
                        "torch.nn.MultiheadAttention (one head, the same weights, a causal attn_mask)",
                        symptoms=_confirmed(impl, _mistakes(x.numpy(), linears)))

    d_in, d_out, num_tokens = 3, 5, 6
    linears = toolkit.random_projections(r, d_in, d_out, False)
    x = toolkit.tensor(r.normal(size=(3, num_tokens, d_in)))
    q, k, v = (x @ torch.as_tensor(linears[n][0]).T for n in PROJECTIONS)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    module = _causal(impl, d_in, d_out, num_tokens, linears)
    checks.expect_close(module(x), want.numpy(),
                        "CausalAttention(3, 5, 6, 0.0) compared with "
                        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                        symptoms=_confirmed(impl, _mistakes(x.numpy(), linears)))


@case(STEP, "property", weight=0.5)
def test_causal(impl):
    """is causal: changing later tokens never changes the outputs of earlier ones; outputs are finite"""
    linears = toolkit.random_projections(rng(1304), 4, 3, False)
    toolkit.check_finite_and_causal("CausalAttention", _causal(impl, 4, 3, 7, linears), 4, 7, 1305,
                                    lambda x: _confirmed(impl, _mistakes(x, linears)))


@case(STEP, "property", weight=0.25)
def test_last_token_is_self_attention(impl):
    """the last token's output equals its unmasked self-attention output (notes 003)"""
    r = rng(1306)
    linears = toolkit.random_projections(r, 3, 4, True)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    unmasked = toolkit.attention(x.numpy(), linears, mask="none")
    toolkit.check_last_token("CausalAttention", _causal(impl, 3, 4, 5, linears, bias=True), x, unmasked,
                             toolkit.attention(x.numpy(), linears), _confirmed(impl, _mistakes(x.numpy(), linears)))


@case(STEP, "property", weight=0.5)
def test_shorter_than_context_length(impl):
    """accepts inputs shorter than context_length (the mask is sliced to T x T)"""
    linears = toolkit.random_projections(rng(1307), 3, 2, False)
    toolkit.check_short_input("CausalAttention", lambda ctx: _causal(impl, 3, 2, ctx, linears), 3, 8, (5, 1),
                              1308)


@case(STEP, "property", weight=0.5)
def test_dropout_off_in_eval_mode(impl):
    """has dropout = nn.Dropout(p), and no dropout happens in eval mode"""
    r = rng(1309)
    linears = toolkit.random_projections(r, 3, 2, False)
    module = _causal(impl, 3, 2, 4, linears, dropout=0.5)
    toolkit.check_dropout_attribute("CausalAttention(3, 2, 4, dropout=0.5)", module, 0.5)
    x = toolkit.tensor(r.normal(size=(2, 4, 3)))
    toolkit.check_eval_mode_without_dropout(
        "CausalAttention", lambda p: module if p else _causal(impl, 3, 2, 4, linears), x)


def _probe_linears(num_tokens):
    linears = toolkit.random_projections(rng(1310), num_tokens, 2 * num_tokens, False)
    eye = np.eye(num_tokens, dtype=np.float32)
    linears["W_value"] = (np.vstack([eye, 2 * eye]), None)
    return linears


def _dropout_probe(impl, num_tokens, p):
    return _causal(impl, num_tokens, 2 * num_tokens, num_tokens, _probe_linears(num_tokens), dropout=p)


@case(STEP, "property", weight=0.5)
def test_dropout_on_attention_weights(impl):
    """in train mode, dropout zeroes attention weights and rescales the rest by 1/(1-p)"""
    toolkit.check_dropout("CausalAttention", lambda p: _dropout_probe(impl, 6, p), 6, 1,
                          expected=toolkit.attention(np.eye(6)[None], _probe_linears(6)))


@case(STEP, "property", weight=0.25)
def test_batch_sizes(impl):
    """works for any batch size, each item independent of the others"""
    module = _causal(impl, 3, 4, 5, toolkit.random_projections(rng(1311), 3, 4, True), bias=True)
    toolkit.check_batches("CausalAttention", module, 3, 5, 1312)


@case(STEP, "property", weight=0.25)
def test_input_unchanged(impl):
    """leaves its input x unchanged"""
    r = rng(1313)
    module = _causal(impl, 3, 2, 4, toolkit.random_projections(r, 3, 2, False))
    toolkit.check_input_unchanged(impl, "CausalAttention", module, toolkit.tensor(r.normal(size=(2, 4, 3))))


@case(STEP, "property", weight=0.25)
def test_gradients_reach_projections(impl):
    """gradients flow back to W_query, W_key and W_value, also in train mode with dropout > 0"""
    r = rng(1314)
    linears = toolkit.random_projections(r, 3, 4, False)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_gradients("CausalAttention", _causal(impl, 3, 4, 5, linears), x,
                            [f"{name}.weight" for name in PROJECTIONS])
    # in-place dropout (nn.Dropout(p, inplace=True)) on the softmax's output breaks only a backward with dropout on
    toolkit.check_trains_with_dropout("CausalAttention", _causal(impl, 3, 4, 5, linears, dropout=0.5), [x], 0.5)
