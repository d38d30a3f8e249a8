"""The attention toolkit every class suite shares: load a module, model it, check its properties.

- **Building.** `construct` calls `impl.ClassName(*args)` and checks that a module came back;
  `load_linear` copies known weights into the `nn.Linear` at an attribute path by name, so the
  order in which a submission creates its layers, or how its forward pass combines them, never
  matters. One rule for an unwanted bias: it is zeroed while loading, so it costs points once, in
  the step's attribute case (`check_linear`), and nowhere else. A missing bias that the weights
  need cannot be loaded, and fails the case. `loaded_module` does both and switches to eval mode.
- **A NumPy model** (`softmax`, `attention`, `heads_side_by_side`) of (multi-head, causal)
  attention in float64, whose keyword switches each reproduce one known mistake, so a wrong
  output can be named by its symptom (`symptoms`).
- **Property checks** several suites share: causality, the last token, inputs shorter than
  `context_length`, batches, the input left unchanged, gradients, dropout.

Modules are reached only through `seam.Handle`s: called (as data, under no_grad), described,
loaded with `set_linear`, switched between train and eval. Messages name symptoms and never
print an expected value.
"""

import math

import numpy as np
import torch

from autograder import checks
from autograder.errors import CaseFailure, RemoteError
from autograder.seam import Handle
from autograder.steps import PROJECTIONS
from autograder.suites._shared import check_stored, rng

SIGNATURES = {
    "SelfAttention": "(d_in, d_out, qkv_bias=False)",
    "CausalAttention": "(d_in, d_out, context_length, dropout, qkv_bias=False)",
    "CachedCausalAttention": "(d_in, d_out, context_length, dropout, qkv_bias=False)",
    "MultiHeadAttentionWrapper": "(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)",
    "MultiHeadAttention": "(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)",
    "CrossAttention": "(d_q, d_kv, d_out, num_heads, dropout=0.0, qkv_bias=False)",
}

NAN_HINT = ("nan appears when a token has every key blocked (does the mask block the diagonal? each token "
            "must see itself), or when -inf meets 0 (dropout or a product on the masked scores)")


# --- building modules ---------------------------------------------------------------------

def _first_line(error, limit=160):
    text = str(error).strip().splitlines()
    return text[0][:limit] if text else type(error).__name__


def _is_signature_error(error):
    text = str(error)
    return isinstance(error, TypeError) and "__init__()" in text and "argument" in text


def construct(impl, class_name, args, kwargs=None, what=None):
    """impl.<class_name>(*args, **kwargs), checked to be an nn.Module: its Handle."""
    what = what or f"{class_name}{tuple(args)}"
    try:
        module = getattr(impl, class_name)(*args, **(kwargs or {}))
    except RemoteError as error:
        # A call that does not fit the signature fails before any of the submission's code runs.
        if _is_signature_error(error):
            raise CaseFailure(f"{what} cannot be created ({_first_line(error)}); keep the signature of the "
                              f"task: {class_name}{SIGNATURES.get(class_name, '(...)')}") from None
        raise
    if not isinstance(module, Handle) or not module.is_module:
        kind = module.type_name if isinstance(module, Handle) else type(module).__name__
        raise CaseFailure(f"{what} is a {kind}, not a torch.nn.Module: subclass nn.Module (and call "
                          "super().__init__() first)")
    return module


def linear_info(module, path, what):
    """describe() of the nn.Linear at `path`, or a CaseFailure naming what is missing."""
    info = module.describe(path)
    if not info.get("exists"):
        if any(part.isdigit() for part in path.split(".")):
            raise CaseFailure(f"{what}: `{path}` does not exist (is `heads` an nn.ModuleList with one "
                              "module per head, each with W_query, W_key and W_value?)")
        raise CaseFailure(f"{what} has no attribute `{path}`; keep the attribute names of the task "
                          "(W_query, W_key, W_value, and out_proj or heads where the task has them)")
    if "weight_shape" not in info:
        raise CaseFailure(f"{what}: `{path}` is a {info.get('type', 'object')}, expected an nn.Linear "
                          "(nn.Linear(d_in, d_out, bias=qkv_bias) for the projections)")
    return info


def load_linear(module, path, weight, bias, what):
    """Copy (weight (out, in), bias or None) into the nn.Linear at `path` (e.g. "heads.1.W_key").

    The one rule for biases: a bias the weights do not have is zeroed (the attribute case marks
    it down, once); a bias they have but the layer lacks fails here."""
    info = linear_info(module, path, what)
    weight = np.asarray(weight, dtype=np.float32)
    if tuple(info["weight_shape"]) != weight.shape:
        raise CaseFailure(f"{what}: `{path}.weight` has shape {checks.fmt_shape(info['weight_shape'])}, "
                          f"expected {checks.fmt_shape(weight.shape)} (nn.Linear(in_features="
                          f"{weight.shape[1]}, out_features={weight.shape[0]}))")
    if bias is not None and not info.get("bias"):
        why = ("out_proj always has one" if path.endswith("out_proj")
               else "qkv_bias=True: pass bias=qkv_bias to nn.Linear")
        raise CaseFailure(f"{what}: `{path}` has no bias, but it should have one ({why})")
    module.set_linear(path, weight, None if bias is None else np.asarray(bias, dtype=np.float32))


def loaded_module(impl, class_name, args, linears, what=None, dtype=None):
    """impl.<class_name>(*args) holding `linears` {attribute path: (weight, bias or None)}, in
    eval mode (and converted to `dtype` if given)."""
    what = what or f"{class_name}{tuple(args)}"
    module = construct(impl, class_name, args, what=what)
    for path, (weight, bias) in linears.items():
        load_linear(module, path, weight, bias, what)
    if dtype is not None:
        module.to(dtype)
    return module.eval()


def check_linear(module, path, d_in, d_out, bias, what):
    """The attribute at `path` is nn.Linear(d_in, d_out, bias=bias), as the task asks."""
    info = module.describe(path)
    if not info.get("exists"):
        raise CaseFailure(f"{what} has no attribute `{path}`")
    if "weight_shape" not in info:
        raise CaseFailure(f"{what}.{path} is a {info.get('type', 'object')}, expected "
                          "nn.Linear(d_in, d_out, bias=qkv_bias)")
    out_features, in_features = info["weight_shape"]
    if (in_features, out_features) != (d_in, d_out):
        raise CaseFailure(f"{what}.{path} is nn.Linear({in_features}, {out_features}), expected "
                          f"nn.Linear({d_in}, {d_out})")
    if bool(info.get("bias")) != bias:
        has = "has a" if info.get("bias") else "has no"
        hint = ("out_proj is nn.Linear(d_out, d_out), with a bias" if path.endswith("out_proj")
                else "pass bias=qkv_bias to nn.Linear")
        raise CaseFailure(f"{what}.{path} {has} bias: {hint}")


def check_dropout_attribute(name, module, p):
    """`module.dropout` is nn.Dropout(p)."""
    info = module.describe("dropout")
    if "p" not in info:
        found = info.get("type", "nothing") if info.get("exists") else "nothing"
        raise CaseFailure(f"{name} should have an attribute `dropout` = nn.Dropout({p}); found {found}")
    if abs(float(info["p"]) - p) > 1e-12:
        raise CaseFailure(f"{name}(..., dropout={p}).dropout has p={info['p']}; pass the dropout "
                          "argument to nn.Dropout")


# --- weights and inputs -------------------------------------------------------------------

def random_linear(r, d_out, d_in, bias):
    """(weight (d_out, d_in), bias or None) in float32."""
    weight = (r.normal(size=(d_out, d_in)) / math.sqrt(d_in)).astype(np.float32)
    return weight, (0.3 * r.normal(size=d_out)).astype(np.float32) if bias else None


def random_projections(r, d_in, d_out, bias):
    return {name: random_linear(r, d_out, d_in, bias) for name in PROJECTIONS}


def tensor(a):
    return torch.tensor(np.asarray(a), dtype=torch.float32)


# --- a NumPy model of attention, with known mistakes as switches ----------------------------

def softmax(s, axis=-1):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def attention(x, linears, num_heads=1, *, mask="causal", fill=-np.inf, after=False, scale="head",
              axis=-1, transpose_weights=False, roles="qkv", untransposed=False, split="ok", merge="ok",
              out_proj=True):
    """(Multi-head, causal) self-attention of x (..., T, d_in) in float64.

    `linears`: {"W_query", "W_key", "W_value" and optionally "out_proj": (weight (out, in), bias
    or None)}. The defaults are the correct model; each switch reproduces a known mistake:
    mask "none" | "lower" | "diagonal"; `fill` for blocked scores; `after`: mask the weights after
    the softmax; scale "none" | "d_in" | "d_out" | "head_linear" | "d_out_linear"; the softmax
    `axis`; `transpose_weights` (weightsᵀ @ values); `roles` (which projections serve as queries,
    keys, values: "kqv", "qkk", "qkx" with x the raw input ...); `untransposed` (x @ W.weight);
    split "no_transpose" | "interleaved"; merge "no_transpose" | "reversed"; `out_proj` False.
    """
    x = np.asarray(x, dtype=np.float64)
    lead, num_tokens, d_in = x.shape[:-2], x.shape[-2], x.shape[-1]

    def project(name):
        weight, bias = linears[name]
        weight = np.asarray(weight, dtype=np.float64)
        y = x @ (weight if untransposed else weight.T)
        return y if bias is None else y + np.asarray(bias, dtype=np.float64)

    made = {"q": project("W_query"), "k": project("W_key"), "v": project("W_value"), "x": x}
    q, k, v = (made[role] for role in roles)
    d_out = made["q"].shape[-1]
    head_dim = d_out // num_heads

    def split_(z):
        width = z.shape[-1] // num_heads
        if split == "no_transpose":
            return z.reshape(*lead, num_heads, num_tokens, width)
        if split == "interleaved":
            return np.moveaxis(z.reshape(*lead, num_tokens, width, num_heads), -1, -3)
        return np.swapaxes(z.reshape(*lead, num_tokens, num_heads, width), -3, -2)

    q, k, v = split_(q), split_(k), split_(v)  # (..., heads, T, width)
    divisor = {"head": math.sqrt(head_dim), "none": 1.0, "d_in": math.sqrt(d_in), "d_out": math.sqrt(d_out),
               "head_linear": head_dim, "d_out_linear": d_out}[scale]
    scores = q @ np.swapaxes(k, -1, -2) / divisor
    ones = np.ones((num_tokens, num_tokens))
    blocked = {"causal": np.triu(ones, 1), "diagonal": np.triu(ones, 0), "lower": np.tril(ones, -1),
               "none": 0 * ones}[mask].astype(bool)
    if after:
        weights = softmax(scores, axis) * ~blocked
    else:
        weights = softmax(np.where(blocked, fill, scores), axis)
    if transpose_weights:
        weights = np.swapaxes(weights, -1, -2)
    context = weights @ v  # (..., heads, T, width)
    if merge == "reversed":
        context = context[..., ::-1, :, :]
    if merge == "no_transpose":
        context = context.reshape(*lead, num_tokens, -1)
    else:
        context = np.swapaxes(context, -3, -2).reshape(*lead, num_tokens, -1)
    if out_proj and "out_proj" in linears:
        weight, bias = linears["out_proj"]
        context = context @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, dtype=np.float64)
    return context


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


MASK_MISTAKES = [
    (dict(mask="none"), "no causal mask is applied: every token also attends to the tokens after it"),
    (dict(mask="lower"), "the mask blocks the keys BELOW the diagonal (earlier tokens); block those "
                         "above it (key j > query i)"),
    (dict(fill=0.0), "blocked scores are set to 0 instead of -inf, so blocked keys still get weight "
                     "(exp(0) = 1)"),
    (dict(after=True), "the mask is applied after the softmax without renormalising, so rows no longer "
                       "sum to 1: fill the blocked scores with -inf before the softmax"),
]


def check_stored_outputs(impl, step, apply, what, symptoms_of):
    """check_stored, with a hint where the output holds nan."""
    try:
        check_stored(impl, step, apply, what, symptoms=symptoms_of)
    except CaseFailure as failure:
        if str(failure).endswith("contains nan"):
            raise CaseFailure(f"{failure}: {NAN_HINT}") from None
        raise


# --- properties ---------------------------------------------------------------------------

def close(a, b, atol=1e-5, rtol=1e-4):
    """a ≈ b elementwise; nan matches nan only (so a nan mistake costs in the cases that name it)."""
    a, b = checks.to_array(a, "output"), checks.to_array(b, "output")
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(((abs(a - b) <= atol + rtol * abs(b)) | both_nan).all())


def check_finite_and_causal(name, module, d_in, num_tokens, seed):
    """Outputs finite; replacing the tokens from position t on never changes outputs before t."""
    r = rng(seed)
    x = tensor(r.normal(size=(2, num_tokens, d_in)))
    out = checks.to_array(module(x), f"{name}(x)")
    checks.expect_shape(out, (2, num_tokens, out.shape[-1]), f"{name}(x)")
    checks.expect_finite(out, f"{name}(x)", NAN_HINT)
    for t in sorted({1, num_tokens // 2, num_tokens - 1}):
        changed = x.clone()
        changed[:, t:] = tensor(r.normal(size=(2, num_tokens - t, d_in)))
        after = checks.to_array(module(changed), f"{name}(x)")
        if not close(after[:, :t], out[:, :t]):
            raise CaseFailure(f"{name} is not causal: changing the tokens from position {t} on changed the "
                              f"outputs of earlier tokens; token i may only attend to tokens 0..i")


def check_last_token(name, module, x, unmasked, expected, mistakes):
    """The last token's causal output equals its unmasked (plain self-attention) output.

    When it does not, the whole output is compared with the correct one (`expected`) through the
    known `mistakes`, so the message names the mistake that changed the last row (the mask only
    when the output matches a mask mistake) or says that the grader cannot name it."""
    out = checks.to_array(module(x), f"{name}(x)")
    checks.expect_shape(out, unmasked.shape, f"{name}(x)")
    if close(out[:, -1], unmasked[:, -1]):
        return
    what = f"the last token's output of {name} (which must equal unmasked self-attention's)"
    checks.expect_close(out, expected, what, symptoms=mistakes)
    raise CaseFailure(f"{what}; the other tokens' outputs are right, so the last row is changed by "
                      "something that depends on its position: nothing of its row may be blocked")


def check_short_input(name, make, d_in, context_length, lengths, seed):
    """T < context_length works and equals a module built for exactly T tokens."""
    r = rng(seed)
    long_module = make(context_length)
    for num_tokens in lengths:
        x = tensor(r.normal(size=(2, num_tokens, d_in)))
        try:
            out = long_module(x)
        except RemoteError as error:  # the usual symptom is a shape error
            raise CaseFailure(
                f"{name} with context_length={context_length} failed on an input of {num_tokens} tokens "
                f"({error.type_name}: {_first_line(error, 120)}); inputs may be shorter than "
                "context_length: slice the mask to the input's length, mask[:T, :T]") from None
        if not close(out, make(num_tokens)(x)):
            raise CaseFailure(f"{name} with context_length={context_length} gives other outputs on "
                              f"{num_tokens} tokens than a module built with context_length={num_tokens}: "
                              "use the top-left T x T corner of the mask, mask[:T, :T]")


def check_batches(name, module, d_in, num_tokens, seed):
    """Each item of a batch of 4 gets the output it gets alone."""
    x = tensor(rng(seed).normal(size=(4, num_tokens, d_in)))
    out = checks.to_array(module(x), f"{name} on a batch of 4")
    checks.expect_shape(out, (4, num_tokens, out.shape[-1]), f"{name} on a batch of 4")
    for i in range(4):
        if not close(module(x[i:i + 1]), out[i:i + 1]):
            raise CaseFailure(f"{name}: item {i} of a batch of 4 gets another output than when it is run "
                              "alone (batch of 1); nothing in forward may depend on the batch size "
                              "or mix batch items")


def run_on_held(impl, module, x):
    """(module(x), x as it is afterwards): x stays with the code under test for the call, so an
    in-place change to it shows."""
    (held,) = impl.hold(x)
    out = module(held)
    return out, held.call("clone")


def check_input_unchanged(impl, name, module, x):
    before = x.clone()
    _, after = run_on_held(impl, module, x)
    checks.expect_unchanged(before.numpy(), after, f"the input x of {name}")


def check_gradients(name, module, x, paths, seed=99):
    """Backpropagating a random cotangent reaches every parameter at `paths` (e.g. "W_key.weight")."""
    out = checks.to_array(module(x), f"{name}(x)")
    cotangent = rng(seed).normal(size=out.shape).astype(np.float32)
    explain_gradients(name, module.backward([x], cotangent, paths), paths)


def explain_gradients(name, report, paths):
    """A Handle.backward report: every parameter at `paths` got a non-zero gradient, or a message
    that tells the causes apart (no graph at all, a failed backward, one layer left out)."""
    if not report.get("differentiable"):
        raise CaseFailure(f"{name}'s output does not depend on its parameters in a differentiable way "
                          "(no autograd graph): do not use torch.no_grad(), .detach() or NumPy in forward")
    if "backward_error" in report:
        first = (str(report["backward_error"]).strip().splitlines() or ["RuntimeError"])[0][:150]
        raise CaseFailure(f"backpropagating through {name} failed ({first}); "
                          "an in-place operation (x.mul_(), +=, masked_fill_ on x ...) probably changed a "
                          "tensor autograd needs: use the out-of-place version")
    for path in paths:
        grad = report["grads"].get(path)
        layer = path.rsplit(".", 1)[0]
        if grad is None:
            # The output has a graph, so the layer was left out of it: never called, or cut off.
            raise CaseFailure(f"no gradient reaches {path} of {name}: forward never uses `{layer}` (is it "
                              "called?), or uses its output through .detach(), .data or NumPy")
        if not bool((checks.to_array(grad, path) != 0).any()):
            raise CaseFailure(f"the gradient of {path} of {name} is zero everywhere: `{layer}`'s output does "
                              "not reach the module's output (is it overwritten, or multiplied by zero?)")


def check_dropout(name, make, num_tokens, num_heads, p=0.5, seed=0,
                  not_applied="apply self.dropout to the attention weights in forward", expected=None):
    """make(p) -> a module whose output on x = eye(T) (batch 1) is, per head h, [w_h, 2 w_h] with
    w_h that head's (dropped) attention weights (W_value = [I; 2I] per head, out_proj = I).

    Eval mode: dropout is off, and the output is `expected` (the probe's correct output) when given:
    otherwise the module's own mistake, not its dropout, would be blamed. Train mode: each weight
    entry is 0 or w / (1 - p), and the two halves of every head agree, which holds only if dropout
    acts on the weights."""
    x = torch.eye(num_tokens).unsqueeze(0)
    module, plain = make(p), make(0.0)

    def blocks(out, what):
        out = checks.to_array(out, what)
        checks.expect_shape(out, (1, num_tokens, num_heads * 2 * num_tokens), what)
        out = out[0].reshape(num_tokens, num_heads, 2, num_tokens)
        return out[:, :, 0], out[:, :, 1]

    module.eval()
    first, second = module(x), module(x)
    if not close(first, second, 0, 0) or not close(first, plain(x)):
        raise CaseFailure(f"{name} in eval mode (after .eval()) gives other outputs with dropout={p} than "
                          "with dropout=0.0: dropout must be off in eval mode (use the nn.Dropout module, "
                          "which follows .train()/.eval(), not F.dropout(..., training=True))")
    clean, clean_doubled = blocks(first, f"{name}(x)")
    if not np.isfinite(clean).all():
        raise CaseFailure(f"{name} gives nan even in eval mode (a row with every key blocked?), so its "
                          "dropout cannot be checked")
    right = expected is None or close(first, expected)  # the probe's correct eval output, when given
    if not (right and close(clean_doubled, 2 * clean) and close(clean.sum(axis=-1), np.ones(clean.shape[:-1]))):
        raise CaseFailure(f"{name} in eval mode does not compute attention correctly (see the other cases), "
                          "so where its dropout acts cannot be checked")
    module.train()
    runs = [module(x, _seed=seed), module(x)]
    if close(runs[0], runs[1], 0, 0):
        raise CaseFailure(f"{name} in train mode with dropout={p} gives the same output twice: dropout "
                          f"is not applied ({not_applied})")
    kept_any = dropped_any = False
    for run in runs:
        checks.expect_finite(checks.to_array(run, f"{name}(x) in train mode"), f"{name}(x) in train mode",
                             "dropout on the masked scores turns -inf into nan (-inf * 0); apply dropout to "
                             "the attention weights after the softmax")
        weights, doubled = blocks(run, f"{name}(x) in train mode")
        if not close(doubled, 2 * weights, 1e-5, 1e-4):
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
            if close(weights.sum(axis=-1), np.ones(weights.shape[:-1])):
                # rows still sum to 1 although entries changed: the softmax ran after the dropout
                raise CaseFailure(f"{name} in train mode: the attention weights still sum to 1 but are not the "
                                  "eval-mode weights with entries zeroed: dropout acts on the scores before the "
                                  "softmax; apply it to the weights after the softmax")
            raise CaseFailure(f"{name} in train mode: the attention weights are not the eval-mode weights with "
                              "some entries zeroed and the rest scaled by 1/(1-p), and the grader cannot name why")
        live = clean > 1e-4
        kept_any |= bool((kept & ~dropped & live).any())
        dropped_any |= bool((dropped & live).any())
    if not (kept_any and dropped_any):
        raise CaseFailure(f"{name} in train mode with dropout={p} should zero some attention weights "
                          "and keep others")


def check_eval_mode_without_dropout(name, make, x, p=0.5):
    """make(p) in eval mode gives the same output twice, and that of make(0.0)."""
    module = make(p)
    first = module(x)
    if not close(first, module(x), 0, 0) or not close(first, make(0.0)(x)):
        raise CaseFailure(f"{name} in eval mode (after .eval()) gives other outputs with dropout={p} "
                          "than with dropout=0.0: dropout must be off in eval mode (use nn.Dropout)")
