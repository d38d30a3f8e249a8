"""Hidden suite of `SelfAttention` (assignment 02).

Every case builds the student's module, then copies known weights into `W_query`, `W_key` and
`W_value` by attribute name (`toolkit.loaded_module`), so the order in which the student creates the
layers, or how the forward pass combines them, does not matter: only the attributes are ever
used. The cases run in float32, torch's default dtype, except one that checks float64 agrees.
"""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures import stored
from autograder.fixtures.notes import JOURNEY
from autograder.fixtures.notes_trainable import self_attention_layers
from autograder.harness import case
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import batches, cases, checks
from autograder.suites.toolkit.cases import notes_cases, rng
from autograder.suites.toolkit.model import SCALED_BY_TOKENS, hand_written_softmax_mistakes
from autograder.suites.toolkit.self_attention_slips import explain_on_one_sequence, softmax_slips
from autograder.suites.toolkit.widths import FIXED_AXIS

STEP = "SelfAttention"

SHORT = {"W_query": "Wq", "W_key": "Wk", "W_value": "Wv"}


def stored_inputs():
    r = rng(1501)

    def record(label, shape, d_out, qkv_bias=False):
        d_in = shape[-1]
        rec = dict(label=label, x=r.normal(size=shape).astype(np.float32), d_out=np.int64(d_out),
                   qkv_bias=np.bool_(qkv_bias), atol=1e-4)
        bound = 1 / np.sqrt(d_in)
        for name in PROJECTIONS:
            rec[SHORT[name]] = r.uniform(-bound, bound, size=(d_out, d_in)).astype(np.float32)
            if qkv_bias:
                rec[SHORT[name] + "_bias"] = r.uniform(-bound, bound, size=d_out).astype(np.float32)
        return rec

    return [
        record("6 tokens, d_in 3, d_out 2", (6, 3), 2),
        record("5 tokens, d_in 4, d_out 4 (square weights)", (5, 4), 4),
        record("7 tokens, d_in 8, d_out 4, qkv_bias=True", (7, 8), 4, qkv_bias=True),
        record("a single token, d_in 5, d_out 3", (1, 5), 3),
        record("64 tokens, d_in 16, d_out 8", (64, 16), 8),
        record("a batch (2, 5, 4), d_in 4, d_out 6", (2, 5, 4), 6),
        record("a batch (3, 4, 5), d_out 3, qkv_bias=True", (3, 4, 5), 3, qkv_bias=True),
        record("a batch (2, 6, 6), d_out 6 (square weights), qkv_bias=True", (2, 6, 6), 6, qkv_bias=True),
    ]


def _weights(record):
    return {name: (record[SHORT[name]], record.get(SHORT[name] + "_bias")) for name in PROJECTIONS}


def _self_attention(impl, d_in, d_out, qkv_bias, weights, dtype=None, explained=True):
    """The student's SelfAttention(d_in, d_out, qkv_bias) holding `weights`, in `dtype`."""
    return toolkit.loaded_module(impl, STEP, (d_in, d_out, qkv_bias), weights,
                                 f"SelfAttention({d_in}, {d_out}, qkv_bias={qkv_bias})", dtype, explained)


VALUES_FIRST = ("the context is values @ weights: the weights come first, one row per query, so that each query's "
                "context is a weighted sum of the rows of the values")


# values @ weights fits only where T = d_out, which on a square layer is also the T = d_in where a layer reading
# the tokens from the features axis runs: a probe where T = d_out != d_in tells them apart, so it goes first
@toolkit.explains_forward(STEP, first=True)
def _explain_forward(impl, what, error):
    r = rng(1510)
    weights, x = _random_weights(r, 3, 4, False), r.normal(size=(4, 3))
    try:
        out = checks.to_array(_self_attention(impl, 3, 4, False, weights, explained=False)(toolkit.tensor(x)), what)
    except (RemoteError, CaseFailure):
        return
    scores, values = _scaled_scores_and_values(x, weights)
    explain_on_one_sequence(out, scores, values, what, error)
    if checks.named_mistake(out, [(lambda: values @ toolkit.softmax(scores, -1), VALUES_FIRST)]) is not None:
        raise CaseFailure(f"{what} raised {error.type_name}, and runs on a layer whose d_out is the number of "
                          f"tokens, where it shows why: {VALUES_FIRST}") from None


def _works(module, x):
    if module is None:
        return False
    try:
        module(x)
    except (RemoteError, CaseFailure):  # only asks whether this input goes through (or is named failing)
        return False
    return True


def _converted(module, dtype):
    try:
        return module.copy().to(dtype)
    except RemoteError:  # a module that cannot be copied gets no diagnosis
        return None


def forward(impl, module, x, label, d_in, d_out):
    """module(x) as a tensor, with errors of known mistakes explained."""
    try:
        out = module(x)
    except RemoteError as error:
        if error.type_name == "NotImplementedError":
            raise
        detail = f"SelfAttention raised {error.type_name} on {label}"
        # torch.bmm's own words name its cause (harness.ERROR_CAUSES), whatever transposes the keys
        if x.ndim == 2 and "must be a 3D tensor" not in str(error) and _works(module, x[None]):
            raise CaseFailure(f"{detail}, but not on a batch of one: forward must accept (num_tokens, d_in) "
                              f"too; {toolkit.self_attention_slips.counted_for_a_batch(error)}") from None
        if x.ndim == 3 and _works(module, x[0]):
            raise CaseFailure(f"{detail}, but not on one item of it: forward must accept (batch, num_tokens, "
                              "d_in); transpose only the last two axes of the keys (keys.transpose(-2, -1)); keys.T "
                              "reverses every axis, and keys.reshape(d_out, T) fits one sequence only") from None
        other = torch.float64 if x.dtype == torch.float32 else torch.float32
        if x.dtype in (torch.float32, torch.float64) and _works(_converted(module, other), x.to(other)):
            raise CaseFailure(f"{detail} ({str(x.dtype)[6:]} input, {str(x.dtype)[6:]} layers), but works in "
                              f"{str(other)[6:]}: compute in the input's dtype (float32 is torch's default); "
                              "do not convert x or create tensors of a fixed dtype") from None
        if d_in != d_out:
            square = toolkit.construct(impl, STEP, (d_in, d_in)).to(x.dtype)
            if _works(square, x):
                toolkit.self_attention_slips.explain_square_only(impl, detail)
        raise
    checks.expect_tensor(out, f"the output on {label}")
    if d_in != d_out and tuple(out.shape) == tuple(x.shape):
        raise CaseFailure(f"the output on {label} is {d_in} wide like x, not d_out = {d_out}: the context weights "
                          "the raw inputs: weight the values (W_value(x))")
    if d_out != x.shape[-2] and tuple(out.shape) == (*x.shape[:-1], x.shape[-2]):
        raise CaseFailure(f"the output on {label} is T by T, one entry per pair of tokens, as the attention weights "
                          "(or scores) are; the layer returns the context, the weights times the values")
    checks.expect_shape(out, (*x.shape[:-1], d_out), f"the output on {label}")
    return out


def apply(impl, record):
    x = record["x"]
    d_in, d_out, bias = x.shape[-1], int(record["d_out"]), bool(record["qkv_bias"])
    module = _self_attention(impl, d_in, d_out, bias, _weights(record))
    return forward(impl, module, torch.from_numpy(x.copy()), record["label"], d_in, d_out)


def mistakes(x, weights):
    """(candidate, symptom) pairs of the known mistakes, for input x and {name: (W, b)}."""
    x = np.asarray(x, dtype=np.float64)

    def compute(**switches):
        return toolkit.attention(x, weights, **{"mask": "none", **switches})

    found = [
        (dict(scale="none"), "scores look unscaled: divide by sqrt(d_k)"),
        (dict(scale="head_linear"), "the scores are divided by d_k: divide by sqrt(d_k)"),
        (dict(scale="d_in"), "the scores are divided by sqrt(d_in), the input width; d_k is the width of "
                             "the keys, keys.shape[-1]"),
        (dict(scale="tokens"), SCALED_BY_TOKENS),
        *[toolkit.model.SOFTMAX_OVER_BATCH_QUERIES] * (x.ndim == 3),  # named first where it is dim=1
        toolkit.model.SOFTMAX_OVER_QUERIES,
        toolkit.WEIGHTS_TRANSPOSED,
        *toolkit.UNTRANSPOSED_MISTAKES,
        (dict(mask="causal"), "a causal mask is applied: SelfAttention masks nothing, every token attends to "
                              "every token, those after it too (the causal mask belongs to CausalAttention)"),
    ] + toolkit.ROLE_MISTAKES
    if x.ndim == 3:
        found.append((dict(axis=0), toolkit.self_attention_slips.SOFTMAX_OVER_BATCH))
    d_k = np.shape(weights["W_key"][0])[0]

    # wrong divisors whatever d_k is; on a batch of 2, keys.shape[0] is the chapter's 2 too, and tells
    # neither apart
    divisors = [(2, "the chapter's d_k, whatever the keys' width")]
    if x.ndim == 3:
        divisors = [] if x.shape[0] == 2 else divisors + [
            (x.shape[0], "keys.shape[0], which is the batch size on a batch (and the tokens on one sequence)")]
    # weights / c @ values is (weights @ values) / c: the unscaled model's output, divided
    return toolkit.symptoms(compute, found) + [
        (lambda: compute(scale="none") / np.sqrt(d_k),
         "divides the weights by sqrt(d_k) after the softmax: the scaling belongs to the scores, before it"),
        *[(lambda c=c: _scores_divided_by(x, weights, np.sqrt(c)),
           f"divides the scores by sqrt({c}), {what}: d_k is keys.shape[-1]")
          for c, what in divisors],
        (lambda: np.matmul(*_scaled_scores_and_values(x, weights)),
         "mixes the values by the scaled scores themselves: apply the softmax over each row first"),
        (lambda: toolkit.model.softmax(_scaled_scores_and_values(x, weights)[0]),
         "returns the attention weights (T by T): the layer's output is the context, the weights times the values"),
        (lambda: np.matmul(*_scaled_scores_and_values(x, weights)) * np.sqrt(d_k),
         "mixes the values by the raw scores themselves: scale them and apply the softmax over each row first"),
        *_hand_written_softmax(x, weights), *toolkit.self_attention_slips.keys_reshaped(x, weights)]


def _scores_divided_by(x, weights, c):
    """The layers `weights` on x with the scores divided by c: the queries divided by c, and no scale."""
    by_c = {**weights, "W_query": tuple(None if p is None else np.asarray(p) / c for p in weights["W_query"])}
    return toolkit.attention(np.asarray(x, dtype=np.float64), by_c, mask="none", scale="none")


def _fitted_scale(actual, x, weights, atol, rtol):
    """The divisor c of the scores (between 0.05 and 200) that gives `actual`, or None where none does: a
    wrong scale no candidate names, like sqrt(d_k) // 1 or sqrt(d_k + 1). A grid over log c, then golden
    sections around its best point."""
    actual = checks.to_array(actual, "the output")

    def error(log_c):
        return float(np.max(abs(_scores_divided_by(x, weights, np.exp(log_c)) - actual), initial=0.0))

    grid = np.linspace(np.log(0.05), np.log(200), 161)
    best = int(np.argmin([error(t) for t in grid]))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    for _ in range(40):
        a, b = high - 0.618 * (high - low), low + 0.618 * (high - low)
        low, high = (low, b) if error(a) < error(b) else (a, high)
    c = float(np.exp((low + high) / 2))
    fit = _scores_divided_by(x, weights, c)
    return c if fit.shape == actual.shape and np.all(abs(actual - fit) <= atol + rtol * abs(fit)) else None


def _explain_unnamed(out, x, weights, what, atol, rtol):
    """Raise what a wrong output that no candidate names still shows, if anything: the layers' biases left
    out (x @ W.weight.T), or the divisor of a wrong scale, fitted."""
    unbiased = {name: (weight, None) for name, (weight, _) in weights.items()}
    if any(bias is not None for _, bias in weights.values()) and toolkit.close(
            out, toolkit.attention(np.asarray(x, dtype=np.float64), unbiased, mask="none"), atol, rtol):
        raise CaseFailure(f"{what}: {toolkit.BIASES_LEFT_OUT}")
    c = _fitted_scale(out, x, weights, atol, rtol)
    if c is not None:
        d_k = np.shape(weights["W_key"][0])[0]
        raise CaseFailure(f"{what}: the scores are divided by {c:.3g}, not by sqrt(d_k) = {np.sqrt(d_k):.3g}, the "
                          f"square root of the keys' width (keys.shape[-1] = {d_k})")


def _expect_output(impl, out, want, what, x, weights, atol=1e-5, rtol=1e-4):
    """expect_close with the ladder of `mistakes`, and where it cannot name the cause, a scale fitted."""
    try:
        checks.expect_close(out, want, what, atol=atol, rtol=rtol,
                            symptoms=confirmed(impl, mistakes(x, weights), np.ndim(x)))
    except CaseFailure as failure:
        if checks.UNNAMED in str(failure):
            _explain_unnamed(out, x, weights, what, atol, rtol)
        raise


def _scaled_scores_and_values(x, weights):
    """(Q Kᵀ / sqrt(d_k), V) of the layers `weights` on x, in float64."""
    def project(name):
        weight, bias = (None if p is None else np.asarray(p, dtype=np.float64) for p in weights[name])
        return x @ weight.T + (0 if bias is None else bias)
    q, k, v = project("W_query"), project("W_key"), project("W_value")
    return q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1]), v


def _hand_written_softmax(x, weights):
    """A softmax written by hand (another base, an epsilon, another normalisation), before @ values."""
    scores, values = _scaled_scores_and_values(x, weights)
    return [(lambda weigh=weigh: weigh() @ values, symptom)
            for weigh, symptom in hand_written_softmax_mistakes(scores) + softmax_slips(scores, values.shape[-1])]


def _notes_symptoms(example):
    """The known mistakes on the chapter's six tokens with the example's layers."""
    return mistakes(JOURNEY, self_attention_layers(example.key))


def confirmed(impl, ladder, ndim=2):
    """`ladder`, each mistake confirmed on a probe where no two of the ladder's divisors coincide (3 tokens,
    d_in 7, d_out 5, in a batch of 10 where the input of the ladder has ndim 3, since an axis named by number
    means another one there): a scale that only happens to equal 1 or sqrt(d_in) on small layers
    (sqrt(d_k) // 1, sqrt(d_k + 1)), or values from W_key that a single token cannot tell from keys and values
    swapped, is no such mistake, and is left to the next rung."""
    r = rng(1509)
    weights, x = _random_weights(r, 7, 5, False), r.normal(size=(10, 3, 7)[3 - ndim:]).astype(np.float32)
    layer = _self_attention(impl, 7, 5, False, weights)
    ladder = cases.confirmed(ladder, lambda: layer(toolkit.tensor(x)), lambda: mistakes(x, weights))
    return ladder if ndim != 3 else batches.told_apart_on_one_item(ladder, SCALED_BY_TOKENS, lambda: toolkit.close(
        layer(toolkit.tensor(x[0])), toolkit.attention(np.float64(x[0]), weights, mask="none")), FIXED_AXIS)


# a worked example that raises is explained by the same code on the first stored record (one sequence)
test_notes = notes_cases(STEP, weight=2, symptoms=_notes_symptoms, confirmed=confirmed,
                         unnamed=lambda actual, example, what: _explain_unnamed(
                             actual, JOURNEY, self_attention_layers(example.key), what, example.atol, 0),
                         probe=lambda impl: apply(impl, next(iter(stored.load(STEP)))))


def _check_stored_records(impl, batched):
    """The stored records whose input is (batch, T, d_in) (batched) or (T, d_in) (not)."""
    for record in stored.load(STEP):
        if (record["x"].ndim == 3) != batched:
            continue
        want = stored.expected_outputs(record)[0]
        _expect_output(impl, apply(impl, record), want, f"SelfAttention's output on {record['label']}",
                       record["x"], _weights(record), atol=float(record.get("atol", 1e-5)))


def _random_weights(r, d_in, d_out, qkv_bias):
    bound = 1 / np.sqrt(d_in)
    return {name: (r.uniform(-bound, bound, size=(d_out, d_in)).astype(np.float32),
                   r.uniform(-bound, bound, size=d_out).astype(np.float32) if qkv_bias else None)
            for name in PROJECTIONS}


def _linear(x, weight_bias):
    weight, bias = weight_bias
    return torch.nn.functional.linear(x, torch.as_tensor(weight), None if bias is None else torch.as_tensor(bias))


@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """matches the reference on (T, d_in) inputs with copied weights: d_in != d_out, bias, 64 tokens"""
    _check_stored_records(impl, batched=False)


@case(STEP, "stored")
def test_stored_outputs_batched(impl):
    """matches the reference on (batch, T, d_in) inputs with copied weights, with and without bias"""
    _check_stored_records(impl, batched=True)


@case(STEP, "property", weight=0.5)
def test_attributes(impl):
    """has W_query, W_key, W_value as nn.Linear(d_in, d_out, bias=qkv_bias)"""
    for d_in, d_out, bias in ((5, 3, False), (5, 3, True), (2, 7, False)):
        what = f"SelfAttention({d_in}, {d_out}, qkv_bias={bias})"
        module = toolkit.construct(impl, STEP, (d_in, d_out), {"qkv_bias": bias}, what)
        for name in PROJECTIONS:
            toolkit.check_linear(module, name, d_in, d_out, bias, what)


def _check_oracle(impl, with_bias):
    """The oracle's layers with (with_bias) or without a bias; every layer's inputs are drawn, in one order."""
    r = rng(1502)
    for d_in, d_out, bias, shape in ((4, 3, False, (5, 4)), (6, 2, True, (4, 6)), (3, 5, True, (7, 3))):
        weights, x = _random_weights(r, d_in, d_out, bias), toolkit.tensor(r.normal(size=shape))
        if bias != with_bias:
            continue
        module = _self_attention(impl, d_in, d_out, bias, weights)
        label = f"input {checks.fmt_shape(shape)}, d_out {d_out}, qkv_bias={bias}"
        out = forward(impl, module, x, label, d_in, d_out)
        q, k, v = (_linear(x, weights[name]) for name in PROJECTIONS)
        want = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        _expect_output(impl, out, want.numpy(), f"the output on {label}", x.numpy(), weights)


# The oracle is split by the layers' bias, a kind of input a slip tells apart (the biases left out by
# x @ W.weight.T): a wrong central computation fails both halves, the slip one.
@case(STEP, "oracle", weight=2)
def test_matches_torch_sdpa(impl):
    """agrees with torch's linear layers and scaled_dot_product_attention without a bias"""
    _check_oracle(impl, with_bias=False)


@case(STEP, "oracle", weight=2)
def test_matches_torch_sdpa_with_bias(impl):
    """agrees with torch's linear layers and scaled_dot_product_attention with a bias (qkv_bias=True)"""
    _check_oracle(impl, with_bias=True)


@case(STEP, "property", weight=0.5)
def test_gradients_reach_every_projection(impl):
    """lets gradients flow back to W_query, W_key and W_value (weights and biases)"""
    r = rng(1503)
    module = _self_attention(impl, 4, 3, True, _random_weights(r, 4, 3, True))
    x = toolkit.tensor(r.normal(size=(5, 4)))
    out = forward(impl, module, x, "5 tokens", 4, 3)
    paths = [f"{name}.{part}" for name in PROJECTIONS for part in ("weight", "bias")]
    report = module.backward([x], r.normal(size=tuple(out.shape)).astype(np.float32), paths)
    toolkit.explain_gradients("SelfAttention", report, paths)


@case(STEP, "property", weight=0.5)
def test_shapes_and_batches(impl):
    """accepts (T, d_in) and (batch, T, d_in), returns d_out wide, each batch item as if alone"""
    r = rng(1504)
    weights = _random_weights(r, 5, 3, False)
    module = _self_attention(impl, 5, 3, False, weights)
    x = toolkit.tensor(r.normal(size=(3, 4, 5)))
    out = forward(impl, module, x, "a (3, 4, 5) batch", 5, 3)
    checks.expect_shape(out, (3, 4, 3), "the output of SelfAttention(5, 3) on a (3, 4, 5) batch")
    for i in range(3):
        alone = forward(impl, module, x[i], f"item {i} alone, shape (4, 5)", 5, 3)
        checks.expect_shape(alone, (4, 3), "the output of SelfAttention(5, 3) on a (4, 5) input")
        if not toolkit.close(out[i], alone):
            toolkit.self_attention_slips.explain_item_alone(
                i, checks.to_array(out, "the output"), checks.to_array(alone, "the output"),
                lambda: toolkit.attention(x.numpy(), weights, mask="none"),
                lambda: confirmed(impl, mistakes(x.numpy(), weights), x.ndim),
                lambda item=i: confirmed(impl, mistakes(x[item].numpy(), weights), 2))
        checks.expect_close(out[i], alone.numpy(), f"item {i} of the batch's output compared with item {i} alone",
                            relation=False)


@case(STEP, "property", weight=0.5)
def test_permutation_equivariant(impl):
    """reordering the tokens reorders the output the same way"""
    r = rng(1505)
    weights = _random_weights(r, 4, 2, False)
    module = _self_attention(impl, 4, 2, False, weights)
    x = toolkit.tensor(r.normal(size=(6, 4)))
    order = torch.tensor([2, 5, 0, 3, 1, 4])
    out = forward(impl, module, x, "6 tokens", 4, 2)
    out_perm = forward(impl, module, x[order], "6 reordered tokens", 4, 2)
    if not toolkit.close(out_perm, out[order]):  # the rule fails: a known mistake (a causal mask) may say why
        found = checks.named_mistake(checks.to_array(out, "the output"),
                                     confirmed(impl, mistakes(x.numpy(), weights), x.ndim))
        if found is not None:
            raise CaseFailure(f"the output for reordered tokens is not the output reordered: {found}")
    checks.expect_close(out_perm, out[order].numpy(), "the output for reordered tokens", relation=False)


@case(STEP, "property", weight=0.5)
def test_edge_cases(impl):
    """a single token's output is its value; inputs scaled by 300 give finite outputs"""
    r = rng(1506)
    weights = _random_weights(r, 3, 4, True)
    module = _self_attention(impl, 3, 4, True, weights)
    token = toolkit.tensor(r.normal(size=(1, 3)))
    out = forward(impl, module, token, "a single token", 3, 4)
    _expect_output(impl, out, _linear(token, weights["W_value"]).numpy(),
                   "the output for a single token (it attends only to itself: its value)", token.numpy(), weights)
    x = 300 * toolkit.tensor(r.normal(size=(5, 3)))
    big = checks.to_array(forward(impl, module, x, "inputs scaled by 300", 3, 4), "the output")
    toolkit.self_attention_slips.name_unshifted(big, *_scaled_scores_and_values(x.numpy(), weights),
                                                "the output for inputs scaled by 300")
    checks.expect_finite(big, "the output for inputs scaled by 300")


@case(STEP, "property", weight=0.5)
def test_float64(impl):
    """works in float64 too (after module.double()), agreeing with float32"""
    r = rng(1508)
    weights = _random_weights(r, 3, 4, True)
    x = toolkit.tensor(r.normal(size=(5, 3)))
    out32 = forward(impl, _self_attention(impl, 3, 4, True, weights), x, "5 tokens in float32", 3, 4)
    module64 = _self_attention(impl, 3, 4, True, weights, torch.float64)
    out64 = forward(impl, module64, x.double(), "5 tokens in float64 (after module.double())", 3, 4)
    checks.expect_close(out64, out32.numpy(), "the float64 output compared with the float32 output", atol=1e-4,
                        relation=False)


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves its input unchanged"""
    r = rng(1507)
    module = _self_attention(impl, 3, 2, False, _random_weights(r, 3, 2, False))
    x = toolkit.tensor(r.normal(size=(4, 3)))
    forward(impl, module, x, "4 tokens", 3, 2)  # a wrong forward is explained here, not below
    _, after = toolkit.run_on_held(impl, module, x)
    checks.expect_unchanged(x.numpy(), after, "the input x")
