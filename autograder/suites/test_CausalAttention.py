"""Hidden suite of `CausalAttention` (assignment 03).

Weights are always copied into the student's module by attribute name (`notes_causal.build`),
so the order in which a submission creates its layers does not matter. The helpers whose names
start with `_` (a NumPy model of causal attention with known mistakes switched on, and the
property checks every attention module shares) are also used by the suites of
`MultiHeadAttentionWrapper` and `MultiHeadAttention`.
"""

import math

import numpy as np
import torch
from torch import nn

from autograder import checks
from autograder.errors import CaseFailure
from autograder.fixtures.notes_causal import build
from autograder.harness import case
from autograder.suites._shared import add_notes_cases, check_stored, rng

STEP = "CausalAttention"
add_notes_cases(globals(), STEP)

PROJECTIONS = ("W_query", "W_key", "W_value")
_BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}


# --- a NumPy model of (multi-head) causal attention, with known mistakes as switches ----------

def _np_softmax(s):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _np_attention(x, wq, wk, wv, num_heads=1, out=None, *, scale="head", mask="causal",
                  fill=-np.inf, after=False, split="ok", merge="ok"):
    """Causal attention of x (B, T, d_in) in float64; each w is (weight (out, in), bias or None).

    The keyword switches reproduce a known mistake each; the defaults are the correct model.
    """
    x = np.asarray(x, dtype=np.float64)
    batch, num_tokens, d_in = x.shape

    def project(wb):
        weight, bias = wb
        y = x @ np.asarray(weight, dtype=np.float64).T
        return y if bias is None else y + np.asarray(bias, dtype=np.float64)

    q, k, v = project(wq), project(wk), project(wv)
    d_out = q.shape[-1]
    head_dim = d_out // num_heads

    def split_(z):
        if split == "no_transpose":
            return z.reshape(batch, num_heads, num_tokens, head_dim)
        if split == "interleaved":
            return z.reshape(batch, num_tokens, head_dim, num_heads).transpose(0, 3, 1, 2)
        return z.reshape(batch, num_tokens, num_heads, head_dim).transpose(0, 2, 1, 3)

    q, k, v = split_(q), split_(k), split_(v)
    divisor = {"head": math.sqrt(head_dim), "none": 1.0, "d_in": math.sqrt(d_in),
               "d_out": math.sqrt(d_out), "head_linear": head_dim, "d_out_linear": d_out}[scale]
    scores = q @ np.swapaxes(k, -1, -2) / divisor
    ones = np.ones((num_tokens, num_tokens))
    blocked = {"causal": np.triu(ones, 1), "diagonal": np.triu(ones, 0), "lower": np.tril(ones, -1),
               "none": 0 * ones}[mask].astype(bool)
    if after:
        weights = _np_softmax(scores) * ~blocked
    else:
        weights = _np_softmax(np.where(blocked, fill, scores))
    context = weights @ v  # (B, heads, T, head_dim)
    if merge == "reversed":
        context = context[:, ::-1]
    if merge == "no_transpose":
        context = context.reshape(batch, num_tokens, d_out)
    else:
        context = context.transpose(0, 2, 1, 3).reshape(batch, num_tokens, d_out)
    if out is not None:
        context = context @ np.asarray(out[0], dtype=np.float64).T + np.asarray(out[1], dtype=np.float64)
    return context


_MASK_MISTAKES = [
    (dict(mask="none"), "no causal mask is applied: every token also attends to the tokens after it"),
    (dict(mask="lower"), "the mask blocks the keys BELOW the diagonal (earlier tokens); block those "
                         "above it (key j > query i)"),
    (dict(fill=0.0), "blocked scores are set to 0 instead of -inf, so blocked keys still get weight "
                     "(exp(0) = 1)"),
    (dict(after=True), "the mask is applied after the softmax without renormalising, so rows no longer "
                       "sum to 1: fill the blocked scores with -inf before the softmax"),
]
_SCALE_MISTAKES = [
    (dict(scale="none"), "the scores are not scaled: divide them by sqrt(d_k), d_k = the width of the keys"),
    (dict(scale="d_in"), "the scores are divided by sqrt(d_in); divide by sqrt(d_k), d_k = the width of "
                         "the keys (d_out here)"),
    (dict(scale="d_out_linear"), "the scores are divided by d_k instead of sqrt(d_k)"),
]


NAN_HINT = ("nan appears when a token has every key blocked (does the mask block the diagonal? each token "
            "must see itself), or when -inf meets 0 (dropout or a product on the masked scores)")


def _check_stored(impl, step, apply, what, symptoms):
    """check_stored, with a hint where the output holds nan."""
    try:
        check_stored(impl, step, apply, what, symptoms=symptoms)
    except CaseFailure as failure:
        if str(failure).endswith("contains nan"):
            raise CaseFailure(f"{failure}: {NAN_HINT}") from None
        raise


def _symptoms(compute, mistakes):
    return [((lambda kw=kw: compute(**kw)), message) for kw, message in mistakes]


# --- random weights, and the properties every causal attention module shares ------------------

def _random_linear(r, d_out, d_in, bias):
    weight = (r.normal(size=(d_out, d_in)) / math.sqrt(d_in)).astype(np.float32)
    return weight, (0.3 * r.normal(size=d_out)).astype(np.float32) if bias else None


def _tensor(a):
    return torch.tensor(np.asarray(a), dtype=torch.float32)


def _run(module, x):
    with torch.no_grad():
        return module(x)


def _close(a, b, atol=1e-5, rtol=1e-4):
    """a ≈ b elementwise; nan matches nan only (so a nan mistake costs in the cases that name it)."""
    a, b = checks.to_array(a, "output"), checks.to_array(b, "output")
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(((abs(a - b) <= atol + rtol * abs(b)) | both_nan).all())


def _check_finite_and_causal(name, module, d_in, num_tokens, seed):
    """Outputs finite; replacing the tokens from position t on never changes outputs before t."""
    r = rng(seed)
    x = _tensor(r.normal(size=(2, num_tokens, d_in)))
    out = checks.to_array(_run(module, x), f"{name}(x)")
    checks.expect_shape(out, (2, num_tokens, out.shape[-1]), f"{name}(x)")
    checks.expect_finite(out, f"{name}(x)", NAN_HINT)
    for t in sorted({1, num_tokens // 2, num_tokens - 1}):
        changed = x.clone()
        changed[:, t:] = _tensor(r.normal(size=(2, num_tokens - t, d_in)))
        after = checks.to_array(_run(module, changed), f"{name}(x)")
        if not _close(after[:, :t], out[:, :t]):
            raise CaseFailure(f"{name} is not causal: changing the tokens from position {t} on changed the "
                              f"outputs of earlier tokens; token i may only attend to tokens 0..i")


def _check_last_token(name, module, x, unmasked):
    """The last token's causal output equals its unmasked (plain self-attention) output."""
    out = checks.to_array(_run(module, x), f"{name}(x)")
    checks.expect_shape(out, unmasked.shape, f"{name}(x)")
    if not _close(out[:, -1], unmasked[:, -1]):
        raise CaseFailure(f"the last token's output of {name} differs from plain (unmasked) self-attention "
                          "with the same weights; the last token sees every token including itself, so "
                          "nothing of its row may be blocked or changed by the mask")


def _check_short_input(name, make, d_in, context_length, lengths, seed):
    """T < context_length works and equals a module built for exactly T tokens."""
    r = rng(seed)
    long_module = make(context_length)
    for num_tokens in lengths:
        x = _tensor(r.normal(size=(2, num_tokens, d_in)))
        try:
            out = _run(long_module, x)
        except Exception as error:  # noqa: BLE001 - the usual symptom is a shape error
            text = str(error).strip().splitlines()
            raise CaseFailure(
                f"{name} with context_length={context_length} failed on an input of {num_tokens} tokens "
                f"({type(error).__name__}: {text[0][:120] if text else ''}); inputs may be shorter than "
                "context_length: slice the mask to the input's length, mask[:T, :T]") from None
        want = _run(make(num_tokens), x)
        if not _close(out, want):
            raise CaseFailure(f"{name} with context_length={context_length} gives other outputs on "
                              f"{num_tokens} tokens than a module built with context_length={num_tokens}: "
                              "use the top-left T x T corner of the mask, mask[:T, :T]")


def _check_batches(name, module, d_in, num_tokens, seed):
    x = _tensor(rng(seed).normal(size=(4, num_tokens, d_in)))
    out = checks.to_array(_run(module, x), f"{name} on a batch of 4")
    checks.expect_shape(out, (4, num_tokens, out.shape[-1]), f"{name} on a batch of 4")
    for i in range(4):
        one = _run(module, x[i:i + 1])
        if not _close(one, out[i:i + 1]):
            raise CaseFailure(f"{name}: item {i} of a batch of 4 gets another output than when it is run "
                              "alone (batch of 1); nothing in forward may depend on the batch size "
                              "or mix batch items")


def _check_input_unchanged(name, module, x):
    before = x.clone()
    _run(module, x)
    checks.expect_unchanged(before.numpy(), x, f"the input x of {name}")


def _check_gradients(name, module, x, paths):
    module.train()
    for p in module.parameters():
        p.grad = None
    out = module(x)
    if not torch.is_tensor(out) or not out.requires_grad:
        raise CaseFailure(f"{name}'s output does not depend on its parameters in a differentiable way "
                          "(no autograd graph): do not use torch.no_grad(), .detach() or NumPy in forward")
    cotangent = _tensor(rng(99).normal(size=tuple(out.shape)))
    try:
        (out * cotangent).sum().backward()
    except RuntimeError as error:
        text = str(error).strip().splitlines()
        first = text[0][:150] if text else "RuntimeError"
        raise CaseFailure(f"backpropagating through {name} failed ({first}); "
                          "an in-place operation (x.mul_(), +=, masked_fill_ on x ...) probably changed a "
                          "tensor autograd needs: use the out-of-place version") from None
    for path in paths:
        layer = module
        for part in path.split("."):
            layer = layer[int(part)] if part.isdigit() else getattr(layer, part)
        grad = layer.weight.grad
        if grad is None or not bool((grad != 0).any()):
            raise CaseFailure(f"no gradient reaches {path}.weight of {name}: its output must be computed "
                              "from that layer with torch operations (no .detach(), .data or NumPy)")


def _check_dropout_attribute(name, module, p):
    dropout = getattr(module, "dropout", None)
    if not isinstance(dropout, nn.Dropout):
        raise CaseFailure(f"{name} should have an attribute `dropout` = nn.Dropout({p}); found "
                          f"{type(dropout).__name__}")
    if abs(float(dropout.p) - p) > 1e-12:
        raise CaseFailure(f"{name}(..., dropout={p}).dropout has p={dropout.p}; pass the dropout "
                          "argument to nn.Dropout")


def _check_dropout(name, make, num_tokens, num_heads, p=0.5, seed=0,
                   not_applied="apply self.dropout to the attention weights in forward"):
    """make(p) -> a module whose output on x = eye(T) (batch 1) is, per head h, [w_h, 2 w_h] with
    w_h that head's (dropped) attention weights (W_value = [I; 2I] per head, out_proj = I).

    Eval mode: dropout is off. Train mode: each weight entry is 0 or w / (1 - p), and the two
    halves of every head agree, which holds only if dropout acts on the weights."""
    x = torch.eye(num_tokens).unsqueeze(0)
    module, plain = make(p), make(0.0)

    def blocks(out, what):
        out = checks.to_array(out, what)
        checks.expect_shape(out, (1, num_tokens, num_heads * 2 * num_tokens), what)
        out = out[0].reshape(num_tokens, num_heads, 2, num_tokens)
        return out[:, :, 0], out[:, :, 1]

    module.eval()
    first, second = _run(module, x), _run(module, x)
    if not _close(first, second, 0, 0) or not _close(first, _run(plain, x)):
        raise CaseFailure(f"{name} in eval mode (after .eval()) gives other outputs with dropout={p} than "
                          "with dropout=0.0: dropout must be off in eval mode (use the nn.Dropout module, "
                          "which follows .train()/.eval(), not F.dropout(..., training=True))")
    clean, clean_doubled = blocks(first, f"{name}(x)")
    if not np.isfinite(clean).all():
        raise CaseFailure(f"{name} gives nan even in eval mode (a row with every key blocked?), so its "
                          "dropout cannot be checked")
    if not (_close(clean_doubled, 2 * clean) and _close(clean.sum(axis=-1), np.ones(clean.shape[:-1]))):
        raise CaseFailure(f"{name} in eval mode does not compute attention correctly (see the other cases), "
                          "so where its dropout acts cannot be checked")
    module.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        runs = [_run(module, x), _run(module, x)]
    if _close(runs[0], runs[1], 0, 0):
        raise CaseFailure(f"{name} in train mode with dropout={p} gives the same output twice: dropout "
                          f"is not applied ({not_applied})")
    kept_any = dropped_any = False
    for run in runs:
        checks.expect_finite(checks.to_array(run, f"{name}(x) in train mode"), f"{name}(x) in train mode",
                             "dropout on the masked scores turns -inf into nan (-inf * 0); apply dropout to "
                             "the attention weights after the softmax")
        weights, doubled = blocks(run, f"{name}(x) in train mode")
        if not _close(doubled, 2 * weights, 1e-5, 1e-4):
            raise CaseFailure(f"{name} in train mode: the outputs are not (dropped attention weights) @ "
                              "values; apply dropout to the attention weights after the softmax, not to "
                              "the values, the projections or the output")
        tol = 1e-5 + 1e-4 * abs(clean)
        kept = abs(weights - clean / (1 - p)) <= tol
        dropped = abs(weights) <= 1e-6
        if not (kept | dropped).all():
            if (dropped | (abs(weights - clean) <= tol)).all():
                raise CaseFailure(f"{name} in train mode: the kept attention weights are not rescaled by "
                                  f"1/(1-p); use nn.Dropout, which does that")
            raise CaseFailure(f"{name} in train mode: the attention weights are not the eval-mode weights "
                              "with some entries zeroed and the rest scaled by 1/(1-p); is dropout applied "
                              "to the scores before the softmax? Apply it to the weights after the softmax")
        live = clean > 1e-4
        kept_any |= bool((kept & ~dropped & live).any())
        dropped_any |= bool((dropped & live).any())
    if not (kept_any and dropped_any):
        raise CaseFailure(f"{name} in train mode with dropout={p} should zero some attention weights "
                          "and keep others")


# --- CausalAttention ---------------------------------------------------------------------------

def _causal(impl, d_in, d_out, context_length, linears, dropout=0.0, bias=False):
    """CausalAttention with the given {name: (weight, bias)} loaded, in eval mode."""
    return build(impl.CausalAttention, (d_in, d_out, context_length, dropout, bias),
                 linears=[(name, *linears[name]) for name in PROJECTIONS],
                 what=f"CausalAttention({d_in}, {d_out}, {context_length}, {dropout}, qkv_bias={bias})")


def _random_projections(r, d_in, d_out, bias):
    return {name: _random_linear(r, d_out, d_in, bias) for name in PROJECTIONS}


def _record(r, label, batch, num_tokens, d_in, d_out, bias):
    record = dict(label=label, x=r.normal(size=(batch, num_tokens, d_in)).astype(np.float32),
                  d_in=np.int64(d_in), d_out=np.int64(d_out), context_length=np.int64(num_tokens),
                  qkv_bias=np.int64(bias))
    for name, (weight, b) in _random_projections(r, d_in, d_out, bias).items():
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
    return _run(module, torch.tensor(record["x"]))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference for several widths, lengths, batch sizes, with and without bias"""

    def symptoms(record, k):
        linears = _record_linears(record)

        def compute(**kw):
            return _np_attention(record["x"], *(linears[n] for n in PROJECTIONS), **kw)

        return _symptoms(compute, _MASK_MISTAKES + _SCALE_MISTAKES)

    _check_stored(impl, STEP, apply, "CausalAttention", symptoms)


@case(STEP, "property", weight=0.5)
def test_attributes(impl):
    """has W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias)"""
    r = rng(1302)
    for bias in (False, True):
        _causal(impl, 3, 5, 4, _random_projections(r, 3, 5, bias), bias=bias)


@case(STEP, "oracle")
def test_matches_torch(impl):
    """agrees with nn.MultiheadAttention (one head, causal attn_mask) and F.scaled_dot_product_attention"""
    r = rng(1303)
    d, num_tokens = 4, 5
    linears = _random_projections(r, d, d, True)
    x = _tensor(r.normal(size=(2, num_tokens, d)))
    torch_mha = nn.MultiheadAttention(d, 1, bias=True, batch_first=True)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(torch.cat([torch.as_tensor(linears[n][0]) for n in PROJECTIONS]))
        torch_mha.in_proj_bias.copy_(torch.cat([torch.as_tensor(linears[n][1]) for n in PROJECTIONS]))
        torch_mha.out_proj.weight.copy_(torch.eye(d))
        torch_mha.out_proj.bias.zero_()
        blocked = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
        want = torch_mha.eval()(x, x, x, attn_mask=blocked, need_weights=False)[0]
    module = _causal(impl, d, d, num_tokens, linears, bias=True)

    def compute(**kw):
        return _np_attention(x.numpy(), *(linears[n] for n in PROJECTIONS), **kw)

    checks.expect_close(_run(module, x), want.numpy(),
                        "CausalAttention(4, 4, 5, 0.0, qkv_bias=True) compared with "
                        "torch.nn.MultiheadAttention "
                        "(one head, the same weights, a causal attn_mask)",
                        symptoms=_symptoms(compute, _MASK_MISTAKES + _SCALE_MISTAKES))

    d_in, d_out, num_tokens = 3, 5, 6
    linears = _random_projections(r, d_in, d_out, False)
    x = _tensor(r.normal(size=(3, num_tokens, d_in)))
    q, k, v = (x @ torch.as_tensor(linears[n][0]).T for n in PROJECTIONS)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    module = _causal(impl, d_in, d_out, num_tokens, linears)

    def compute(**kw):
        return _np_attention(x.numpy(), *(linears[n] for n in PROJECTIONS), **kw)

    checks.expect_close(_run(module, x), want.numpy(),
                        "CausalAttention(3, 5, 6, 0.0) compared with "
                        "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                        symptoms=_symptoms(compute, _MASK_MISTAKES + _SCALE_MISTAKES))


@case(STEP, "property")
def test_causal(impl):
    """is causal: changing later tokens never changes the outputs of earlier ones; outputs are finite"""
    r = rng(1304)
    module = _causal(impl, 4, 3, 7, _random_projections(r, 4, 3, False))
    _check_finite_and_causal("CausalAttention", module, 4, 7, 1305)


@case(STEP, "property", weight=0.5)
def test_last_token_is_self_attention(impl):
    """the last token's output equals its unmasked self-attention output (notes 003)"""
    r = rng(1306)
    linears = _random_projections(r, 3, 4, True)
    x = _tensor(r.normal(size=(2, 5, 3)))
    module = _causal(impl, 3, 4, 5, linears, bias=True)
    unmasked = _np_attention(x.numpy(), *(linears[n] for n in PROJECTIONS), mask="none")
    _check_last_token("CausalAttention", module, x, unmasked)


@case(STEP, "property")
def test_shorter_than_context_length(impl):
    """accepts inputs shorter than context_length (the mask is sliced to T x T)"""
    r = rng(1307)
    linears = _random_projections(r, 3, 2, False)
    _check_short_input("CausalAttention", lambda ctx: _causal(impl, 3, 2, ctx, linears), 3, 8, (5, 1), 1308)


@case(STEP, "property")
def test_dropout_off_in_eval_mode(impl):
    """has dropout = nn.Dropout(p), and no dropout happens in eval mode"""
    r = rng(1309)
    linears = _random_projections(r, 3, 2, False)
    module = _causal(impl, 3, 2, 4, linears, dropout=0.5)
    _check_dropout_attribute("CausalAttention(3, 2, 4, dropout=0.5)", module, 0.5)
    x = _tensor(r.normal(size=(2, 4, 3)))
    if not _close(_run(module, x), _run(module, x), 0, 0) or not _close(
            _run(module, x), _run(_causal(impl, 3, 2, 4, linears), x)):
        raise CaseFailure("CausalAttention in eval mode (after .eval()) gives other outputs with dropout=0.5 "
                          "than with dropout=0.0: dropout must be off in eval mode (use nn.Dropout)")


def _dropout_probe(impl, num_tokens, p):
    r = rng(1310)
    linears = _random_projections(r, num_tokens, 2 * num_tokens, False)
    eye = np.eye(num_tokens, dtype=np.float32)
    linears["W_value"] = (np.vstack([eye, 2 * eye]), None)
    return _causal(impl, num_tokens, 2 * num_tokens, num_tokens, linears, dropout=p)


@case(STEP, "property")
def test_dropout_on_attention_weights(impl):
    """in train mode, dropout zeroes attention weights and rescales the rest by 1/(1-p)"""
    _check_dropout("CausalAttention", lambda p: _dropout_probe(impl, 6, p), 6, 1)


@case(STEP, "property", weight=0.5)
def test_batch_sizes(impl):
    """works for any batch size, each item independent of the others"""
    module = _causal(impl, 3, 4, 5, _random_projections(rng(1311), 3, 4, True), bias=True)
    _check_batches("CausalAttention", module, 3, 5, 1312)


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves its input x unchanged"""
    r = rng(1313)
    module = _causal(impl, 3, 2, 4, _random_projections(r, 3, 2, False))
    _check_input_unchanged("CausalAttention", module, _tensor(r.normal(size=(2, 4, 3))))


@case(STEP, "property", weight=0.5)
def test_gradients_reach_projections(impl):
    """gradients flow back to W_query, W_key and W_value"""
    r = rng(1314)
    module = _causal(impl, 3, 4, 5, _random_projections(r, 3, 4, False))
    _check_gradients("CausalAttention", module, _tensor(r.normal(size=(2, 5, 3))), PROJECTIONS)
