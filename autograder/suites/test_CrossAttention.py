"""Hidden suite of `CrossAttention` (assignment 04).

While this step is graded, `split_heads` and `merge_heads` are the reference's. Weights are
copied into W_query, W_key, W_value and out_proj by attribute name (`toolkit.loaded_module`).
The cases make d_q, d_kv and d_out differ, and T_q differ from T_k, so that keys taken from the
wrong sequence fail with a shape the message can name. `cross_attention` is a NumPy model of the
layer whose switches reproduce the known mistakes, so a wrong output is named by its cause
(`MISTAKES`); every case that compares outputs runs that same ladder (the model is
`multihead.cross_attention`).

The notes work no example of cross-attention: its oracle is torch.nn.MultiheadAttention with
kdim/vdim and key_padding_mask.
"""

import numpy as np
import torch
from torch import nn

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures import stored
from autograder.harness import case, error_cause
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import checks, cross_scales, head_probes, multihead
from autograder.suites.toolkit.cases import check_stored, rng
from autograder.suites.toolkit.module_ladders import explain_cross_mask_error
from autograder.suites.toolkit.multihead import LAYERS, cross_attention, lengths_mask, record_linears

STEP = "CrossAttention"

# Where d_q == d_out, a divisor of sqrt(d_out) may be x's width: the message says both. The stored case
# grades the records where the two differ first, so there each is named apart (the oracle's d_q is d_out).
D_OUT_OR_D_Q = ("the scores are divided by sqrt(d_out), which is d_q, the width of x, here; divide by "
                "sqrt(head_dim), head_dim = d_out // num_heads")

MISTAKES = cross_scales.with_heads(multihead.CROSS_MISTAKES + [toolkit.HEADS_FEATURE_MAJOR])


def _symptoms(x, context, linears, num_heads, key_padding_mask=None):
    compute = toolkit.merging_feature_major(
        lambda **switches: cross_attention(x, context, linears, num_heads, key_padding_mask, **switches), linears, num_heads)

    either = np.shape(x)[-1] == linears["out_proj"][0].shape[0]
    d_out = linears["out_proj"][0].shape[0]
    widths = (np.shape(x)[-1], np.shape(context)[-1], num_heads)
    ladder = [(kw, cross_scales.or_tokens(kw, D_OUT_OR_D_Q if either and kw == dict(scale="d_out")
                                       else cross_scales.or_heads(kw, why, *widths, compute), compute)) for kw, why in MISTAKES]
    # the padding mask's misuses coincide where a mask blocks nothing (every key blocked, or every score nan):
    # those are named together
    found = toolkit.told_apart(toolkit.symptoms(compute, [entry for entry in ladder if "mask" in entry[0]]))
    found += toolkit.symptoms(compute, [entry for entry in ladder if "mask" not in entry[0]]
                              + multihead.fixed_heads(num_heads, d_out))
    found.append((lambda: cross_attention(x, context, head_probes.values_through_out_proj(linears), num_heads,
                                          key_padding_mask, out_proj=False), head_probes.OUT_PROJ_ON_VALUES))
    if np.shape(x)[-1] == np.shape(context)[-1]:
        # keys and values from x: only computable when the widths agree (else the shape names it)
        found.append(((lambda: cross_attention(x, x, linears, num_heads, multihead.mask_for_self(key_padding_mask, x))),
                      KEYS_FROM_X))
    return found


KEYS_FROM_X = ("the keys and values are computed from x: in cross-attention they come from `context`, "
               "W_key(context) and W_value(context); only the queries come from x")
NAN_HINT = ("nan appears when a query has every key blocked: True means blocked, and a sequence without "
            "padding has an all-False key_padding_mask; or when -inf meets 0 (dropout or a product on the "
            "masked scores)")


ONE_ROW_PER_CONTEXT_TOKEN = ": one row per CONTEXT token"
WRONG_INPUT = "a layer gets the wrong input"


@toolkit.explains_forward(STEP)
def _explain_forward(impl, what, error):
    head_probes.explain_cross_forward(impl, what, error)
    multihead.explain_cross_forward(impl, what, error)


def _explain_shape(out, x, context, d_out, what):
    """A wrong output shape, named by what it says about the roles of x and context."""
    out = checks.to_array(out, what)
    batch, t_q, t_k = x.shape[0], x.shape[1], context.shape[1]
    if out.shape == (batch, t_k, d_out) and t_k != t_q:
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(out.shape)}{ONE_ROW_PER_CONTEXT_TOKEN}; the "
                          "queries come from x (W_query(x)), keys and values from context, so the output "
                          "has one row per token of x, (batch, T_q, d_out)")
    checks.expect_shape(out, (batch, t_q, d_out), what)
    return out


def _layer(impl, d_q, d_kv, d_out, num_heads, linears, dropout=0.0, bias=False):
    what = f"CrossAttention({d_q}, {d_kv}, {d_out}, num_heads={num_heads}, dropout={dropout}, qkv_bias={bias})"
    return toolkit.loaded_module(impl, STEP, (d_q, d_kv, d_out, num_heads, dropout, bias), linears, what)


def _run(module, x, context, key_padding_mask, what, **kwargs):
    """module(x, context[, key_padding_mask]); an error that only the mask causes is named."""
    args = (x, context) if key_padding_mask is None else (x, context, key_padding_mask)
    try:
        return module(*args, **kwargs)
    except RemoteError as error:
        if x.shape[-1] != context.shape[-1] and multihead.multiplies_an_input(error, x, context):
            raise CaseFailure(f"{what} raised {error.type_name} (a matrix product of mismatched shapes) on x "
                              f"{x.shape[-1]} wide and context {context.shape[-1]} wide: {WRONG_INPUT}; W_query "
                              "takes x (d_q), W_key and W_value take context (d_kv)") from None
        if "Boolean value of Tensor" in str(error):
            raise CaseFailure(f"{what} raised {error.type_name}: does it ask for the truth of key_padding_mask "
                              "(if key_padding_mask:)? A tensor of several values has none; test `is not None`") from None
        if key_padding_mask is None or error_cause(str(error)) is not None:
            raise  # the error's own words name its cause (a mask of floats, say), not the mask's shape
        try:
            module(x, context)
        except RemoteError:
            raise error from None  # it fails without the mask too: not the mask's fault
        explain_cross_mask_error(module, x, context, what, error)
        multihead.explain_mask_sized_by_x(module, x, context, key_padding_mask, what, error)
        raise CaseFailure(f"{what} fails only when given a key_padding_mask (batch, T_k) ({error.type_name}); "
                          "the scores are (batch, num_heads, T_q, T_k): reshape the mask to (batch, 1, 1, "
                          "T_k) so it broadcasts over the heads and the queries") from None


def _check(module, x, context, key_padding_mask, linears, num_heads, what, known_only=False):
    """Output = the model's, or a CaseFailure naming why; known_only: only a named mistake or nan fails."""
    out = _run(module, x, context, key_padding_mask, what)
    out = _explain_shape(out, x, context, linears["out_proj"][0].shape[0], what)
    symptoms = _symptoms(x, context, linears, num_heads, key_padding_mask)
    if known_only and checks.named_mistake(out, symptoms) is None:  # the caller's message says more
        return checks.expect_finite(out, what, NAN_HINT)
    checks.expect_close(out, cross_attention(x, context, linears, num_heads, key_padding_mask), what,
                        symptoms=symptoms, finite_hint=NAN_HINT)


_random_layers = multihead.random_cross_layers


# --- stored outputs -----------------------------------------------------------------------

def _record(r, label, batch, t_q, t_k, d_q, d_kv, d_out, num_heads, bias, lengths=None):
    record = dict(label=label, x=r.normal(size=(batch, t_q, d_q)).astype(np.float32),
                  context=r.normal(size=(batch, t_k, d_kv)).astype(np.float32),
                  d_q=np.int64(d_q), d_kv=np.int64(d_kv), d_out=np.int64(d_out), num_heads=np.int64(num_heads),
                  qkv_bias=np.int64(bias), has_mask=np.int64(lengths is not None),
                  key_padding_mask=lengths_mask(lengths if lengths is not None else [t_k] * batch, t_k))
    return multihead.put_layers(record, _random_layers(r, d_q, d_kv, d_out, bias, out_bias=True))


def _record_mask(record):
    return torch.tensor(record["key_padding_mask"]) if int(record["has_mask"]) else None


def stored_inputs():
    r = rng(1901)
    records = [
        _record(r, "d_q=4, d_kv=6, d_out=4, 2 heads, 3 queries, 5 context tokens, batch of 2", 2, 3, 5, 4, 6, 4,
                2, False),
        _record(r, "d_q=3, d_kv=5, d_out=6, 3 heads, 4 queries, 6 context tokens, lengths [6, 2], qkv_bias=True",
                2, 4, 6, 3, 5, 6, 3, True, lengths=[6, 2]),
        _record(r, "d_q=5, d_kv=2, d_out=8, 2 heads, 1 query, 4 context tokens, lengths [1, 4, 3]",
                3, 1, 4, 5, 2, 8, 2, False, lengths=[1, 4, 3]),
        _record(r, "d_q=6, d_kv=6, d_out=6, 1 head, 5 queries, 2 context tokens, batch of 1", 1, 5, 2, 6, 6, 6, 1,
                False),
        _record(r, "d_q=4, d_kv=3, d_out=4, 4 heads (head_dim 1), 6 queries, 3 context tokens, lengths [2, 3]",
                2, 6, 3, 4, 3, 4, 4, False, lengths=[2, 3]),
        # every divisor of a width (d_q, d_kv, d_out, head_dim; whole or per head) differs from the others here
        _record(r, "d_q=4, d_kv=10, d_out=6, 2 heads, 3 queries, 5 context tokens, lengths [5, 3]", 2, 3, 5, 4, 10,
                6, 2, False, lengths=[5, 3]),
    ]
    # The one record with qkv biases, drawn again from a stream of its own (those after it keep theirs) with head_dim 7,
    # which no divisor written in (cross_scales.FIXED) and no other width of the layer matches: a fixed scale fails it
    records[1] = _record(rng(1913), "d_q=3, d_kv=5, d_out=21, 3 heads, 4 queries, 6 context tokens, lengths [6, 2], "
                         "qkv_bias=True", 2, 4, 6, 3, 5, 21, 3, True, lengths=[6, 2])
    return records


def _record_module(impl, record):
    return _layer(impl, int(record["d_q"]), int(record["d_kv"]), int(record["d_out"]), int(record["num_heads"]),
                  record_linears(record), bias=bool(record["qkv_bias"]))


def apply(impl, record):
    module = _record_module(impl, record)
    return _run(module, torch.tensor(record["x"]), torch.tensor(record["context"]), _record_mask(record),
                f"CrossAttention on {record['label']}")


def _stored_symptoms(record, k):
    mask = record["key_padding_mask"] if int(record["has_mask"]) else None
    return _symptoms(record["x"], record["context"], record_linears(record), int(record["num_heads"]), mask)


def _check_stored(impl, with_bias):
    """The stored records without (with_bias False) or with qkv biases: biases left out, a slip, fail the second
    kind only (and the oracle, whose layers have them), while a wrong attention fails both."""
    def checked(impl, record):
        out = apply(impl, record)
        return _explain_shape(out, record["x"], record["context"], int(record["d_out"]),
                              f"CrossAttention on {record['label']}")

    def blurs_widths(record):
        """d_q == d_out (their divisors coincide), or d_q // num_heads or d_kv // num_heads is 1 or head_dim (a
        divisor of it is none or the right one): a record that tells fewer scale mistakes apart is graded later."""
        d_q, d_kv, d_out, heads = (int(record[key]) for key in ("d_q", "d_kv", "d_out", "num_heads"))
        return d_q == d_out, d_q // heads in (1, d_out // heads), d_kv // heads in (1, d_out // heads)

    records = [record for record in stored.load(STEP) if bool(record["qkv_bias"]) == with_bias]
    try:
        for blurs in sorted({blurs_widths(record) for record in records}):
            check_stored(impl, STEP, checked, "CrossAttention", symptoms=_stored_symptoms,
                         where=lambda record, blurs=blurs: bool(record["qkv_bias"]) == with_bias
                         and blurs_widths(record) == blurs)
    except CaseFailure as failure:
        if WRONG_INPUT not in str(failure):
            raise
        # x and context mixed up fail on the widths first; where d_q == d_kv (and T_q != T_k) the layer runs,
        # and its output's rows say which input the queries came from
        for record in stored.load(STEP):
            if int(record["d_q"]) == int(record["d_kv"]) and record["x"].shape[1] != record["context"].shape[1]:
                try:
                    checked(impl, record)
                except CaseFailure as rows:
                    if ONE_ROW_PER_CONTEXT_TOKEN in str(rows):
                        raise rows from None
                except RemoteError:  # only some of the layers take x (the values, say): the widths' message stands
                    continue
        raise


@case(STEP, "stored", weight=4)
def test_stored_outputs(impl):
    """matches the reference for several widths, lengths, head counts, with and without a padding mask"""
    _check_stored(impl, with_bias=False)


@case(STEP, "stored", weight=1)
def test_stored_outputs_with_bias(impl):
    """matches the reference with qkv_bias=True"""
    _check_stored(impl, with_bias=True)


# --- the oracle ---------------------------------------------------------------------------

@case(STEP, "oracle", weight=3)
def test_matches_torch(impl):
    """agrees with torch.nn.MultiheadAttention(kdim=, vdim=) given the same weights and key_padding_mask"""
    r = rng(1902)
    # torch's queries are d = d_out wide; `unused` more features of x, which W_query weighs 0, make the layer's
    # d_q differ from d_out, so a width taken from d_q is seen here too
    for d, unused, d_kv, num_heads, t_q, t_k, lengths, bias in ((6, 4, 4, 2, 3, 5, [5, 3], True),
                                                                 (4, 0, 7, 4, 4, 2, None, False)):
        linears = _random_layers(r, d, d_kv, d, bias)
        x = toolkit.tensor(r.normal(size=(2, t_q, d)))
        wide_x = torch.cat([x, toolkit.tensor(rng(1911).normal(size=(2, t_q, unused)))], dim=-1)
        weight, query_bias = linears["W_query"]
        wide = dict(linears, W_query=(np.hstack([weight, np.zeros((d, unused), dtype=np.float32)]), query_bias))
        context = toolkit.tensor(r.normal(size=(2, t_k, d_kv)))
        mask = None if lengths is None else torch.tensor(lengths_mask(lengths, t_k))
        with torch.random.fork_rng(devices=[]):
            torch_mha = nn.MultiheadAttention(d, num_heads, bias=True, kdim=d_kv, vdim=d_kv, batch_first=True).eval()
        with torch.no_grad():
            for param, name in ((torch_mha.q_proj_weight, "W_query"), (torch_mha.k_proj_weight, "W_key"),
                                (torch_mha.v_proj_weight, "W_value")):
                param.copy_(torch.as_tensor(linears[name][0]))
            biases = [linears[n][1] if bias else np.zeros(d, dtype=np.float32) for n in PROJECTIONS]
            torch_mha.in_proj_bias.copy_(torch.as_tensor(np.concatenate(biases)))
            torch_mha.out_proj.weight.copy_(torch.as_tensor(linears["out_proj"][0]))
            torch_mha.out_proj.bias.copy_(torch.as_tensor(linears["out_proj"][1]))
            want = torch_mha(x, context, context, key_padding_mask=mask, need_weights=False)[0]
        what = (f"CrossAttention({d + unused}, {d_kv}, {d}, num_heads={num_heads}, qkv_bias={bias}) compared with "
                "torch.nn.MultiheadAttention (kdim=vdim=d_kv, the same weights"
                + (f", x's last {unused} features weighed 0" if unused else "")
                + (", a key_padding_mask)" if mask is not None else ")"))
        module = _layer(impl, d + unused, d_kv, d, num_heads, wide, bias=bias)
        out = _explain_shape(_run(module, wide_x, context, mask, what), wide_x.numpy(), context.numpy(), d, what)
        checks.expect_close(out, want.numpy(), what, finite_hint=NAN_HINT,
                            symptoms=_symptoms(wide_x.numpy(), context.numpy(), wide, num_heads,
                                               None if mask is None else mask.numpy()))


# --- properties -----------------------------------------------------------------------------

@case(STEP, "property", weight=0.5)
def test_attributes(impl):
    """has W_query (d_q -> d_out), W_key and W_value (d_kv -> d_out), out_proj and dropout"""
    for bias in (False, True):
        what = f"CrossAttention(3, 5, 4, num_heads=2, dropout=0.25, qkv_bias={bias})"
        module = toolkit.construct(impl, STEP, (3, 5, 4, 2, 0.25, bias), what=what)
        toolkit.check_linear(module, "W_query", 3, 4, bias, what)
        for name in ("W_key", "W_value"):
            toolkit.check_linear(module, name, 5, 4, bias, what)
        toolkit.check_linear(module, "out_proj", 4, 4, True, what)
        toolkit.check_dropout_attribute("CrossAttention(3, 5, 4, num_heads=2, dropout=0.25)", module, 0.25)


@case(STEP, "property", weight=0.25)
def test_rejects_indivisible_d_out(impl):
    """raises AssertionError or ValueError when d_out is not divisible by num_heads"""
    multihead.check_rejects_indivisible(
        lambda d_out, num_heads: (f"CrossAttention(3, 4, {d_out}, num_heads={num_heads})",
                                  lambda: impl.CrossAttention(3, 4, d_out, num_heads)),
        ((5, 2), (6, 4)))


@case(STEP, "property", weight=0.75)
def test_padded_keys_are_ignored(impl):
    """padded context tokens change nothing: each sequence gets what its unpadded context gives"""
    r = rng(1903)
    linears = _random_layers(r, 3, 5, 4, False)
    module = _layer(impl, 3, 5, 4, 2, linears)
    lengths = [4, 2, 1]
    x, context = toolkit.tensor(r.normal(size=(3, 3, 3))), toolkit.tensor(r.normal(size=(3, 4, 5)))
    mask = torch.tensor(lengths_mask(lengths, 4))
    what = "CrossAttention(3, 5, 4, num_heads=2) with key_padding_mask for context lengths [4, 2, 1]"
    out = _explain_shape(_run(module, x, context, mask, what), x.numpy(), context.numpy(), 4, what)
    for b, length in enumerate(lengths):
        alone = checks.to_array(_run(module, x[b:b + 1], context[b:b + 1, :length], None, what), what)
        if not toolkit.close(out[b:b + 1], alone):
            _check(module, x, context, mask, linears, 2, what, known_only=True)
            raise CaseFailure(f"{what}: sequence {b} gets another output than with its {length} real context "
                              "tokens alone; padded keys (mask True) must get weight exactly 0")


@case(STEP, "property", weight=0.5)
def test_not_causal(impl):
    """is not causal: the first query sees the last context token"""
    r = rng(1904)
    linears = _random_layers(r, 4, 4, 4, False)
    module = _layer(impl, 4, 4, 4, 2, linears)
    x, context = toolkit.tensor(r.normal(size=(2, 4, 4))), toolkit.tensor(r.normal(size=(2, 4, 4)))
    what = "CrossAttention(4, 4, 4, num_heads=2)"
    out = _explain_shape(module(x, context), x.numpy(), context.numpy(), 4, what)
    if toolkit.close(module(x, toolkit.tensor(r.normal(size=(2, 4, 4)))), out):
        if toolkit.close(out, cross_attention(x.numpy(), x.numpy(), linears, 2)):
            raise CaseFailure(f"{what}: the output does not depend on `context` at all; {KEYS_FROM_X}")
        raise CaseFailure(f"{what}: the output does not depend on `context` at all ({checks.UNNAMED})")
    changed = context.clone()
    changed[:, -1] += 3.0
    if toolkit.close(checks.to_array(module(x, changed), what)[:, 0], out[:, 0]):
        if toolkit.close(out, cross_attention(context.numpy(), x.numpy(), linears, 2)):
            raise CaseFailure(f"{what}: x and context swap roles (is forward's signature (self, context, x)?): the "
                              "queries come from x, the keys and values from context")
        causal = cross_attention(x.numpy(), context.numpy(), linears, 2, causal=True)
        if toolkit.close(out, causal):
            raise CaseFailure(f"{what}: a causal mask is applied; cross-attention is not causal, every query "
                              "may look at every real token of the context")
        raise CaseFailure(f"{what}: changing the last context token did not change the first query's output; "
                          "every query must attend to every (unpadded) context token")


@case(STEP, "property", weight=0.25)
def test_no_mask_equals_nothing_blocked(impl):
    """key_padding_mask=None gives what an all-False mask gives"""
    r = rng(1905)
    linears = _random_layers(r, 3, 2, 4, True)
    module = _layer(impl, 3, 2, 4, 2, linears, bias=True)
    x, context = toolkit.tensor(r.normal(size=(2, 3, 3))), toolkit.tensor(r.normal(size=(2, 5, 2)))
    what = "CrossAttention(3, 2, 4, num_heads=2, qkv_bias=True)"
    none = _explain_shape(_run(module, x, context, None, what), x.numpy(), context.numpy(), 4, what)
    nothing = _run(module, x, context, torch.zeros(2, 5, dtype=torch.bool), what)
    if not toolkit.close(none, nothing):
        _check(module, x, context, torch.zeros(2, 5, dtype=torch.bool), linears, 2,
               f"{what} with an all-False key_padding_mask")
        raise CaseFailure(f"{what}: key_padding_mask=None and an all-False mask give different outputs; "
                          "False blocks nothing")


@case(STEP, "property", weight=0.25)
def test_order_of_context_does_not_matter(impl):
    """shuffling the context tokens (with their mask) leaves the output unchanged; shuffling x shuffles it"""
    r = rng(1906)
    linears = _random_layers(r, 3, 4, 4, False)
    module = _layer(impl, 3, 4, 4, 2, linears)
    x, context = toolkit.tensor(r.normal(size=(2, 3, 3))), toolkit.tensor(r.normal(size=(2, 5, 4)))
    mask = torch.tensor(lengths_mask([5, 3], 5))
    what = "CrossAttention(3, 4, 4, num_heads=2)"
    out = _explain_shape(_run(module, x, context, mask, what), x.numpy(), context.numpy(), 4, what)
    keys = torch.tensor([4, 0, 3, 1, 2])
    if not toolkit.close(_run(module, x, context[:, keys], mask[:, keys], what), out):
        _check(module, x, context, mask, linears, 2, what)  # names the mistake if it is a known one
        raise CaseFailure(f"{what}: shuffling the context tokens together with their key_padding_mask changed "
                          "the output; attention is a weighted sum over the keys, whatever their order")
    queries = torch.tensor([2, 0, 1])
    if not toolkit.close(_run(module, x[:, queries], context, None, what),
                         checks.to_array(_run(module, x, context, None, what), what)[:, queries]):
        raise CaseFailure(f"{what}: shuffling the tokens of x should shuffle the output rows the same way; "
                          "each query is answered on its own")


def _probe_linears(num_tokens):
    return multihead.dropout_probe_linears(_random_layers(rng(1907), num_tokens, num_tokens, 4 * num_tokens, False),
                                           num_tokens)


def _dropout_probe(impl, num_tokens, p):
    layer = _layer(impl, num_tokens, num_tokens, 4 * num_tokens, 2, _probe_linears(num_tokens), dropout=p)
    return multihead.SelfView(layer)


@case(STEP, "property", weight=0.5)
def test_dropout_on_attention_weights(impl):
    """in train mode, dropout zeroes attention weights and rescales the rest by 1/(1-p); none in eval mode"""
    eye = np.eye(4)[None]
    toolkit.check_dropout("CrossAttention", lambda p: _dropout_probe(impl, 4, p), 4, 2,
                          expected=cross_attention(eye, eye, _probe_linears(4), 2))


@case(STEP, "property", weight=0.25)
def test_batch_sizes(impl):
    """works for any batch size, each item independent of the others"""
    r = rng(1908)
    module = _layer(impl, 3, 2, 4, 2, _random_layers(r, 3, 2, 4, True), bias=True)
    x, context = toolkit.tensor(r.normal(size=(4, 3, 3))), toolkit.tensor(r.normal(size=(4, 5, 2)))
    mask = torch.tensor(lengths_mask([5, 1, 3, 4], 5))
    what = "CrossAttention on a batch of 4"
    out = _explain_shape(_run(module, x, context, mask, what), x.numpy(), context.numpy(), 4, what)
    for i in range(4):
        if not toolkit.close(_run(module, x[i:i + 1], context[i:i + 1], mask[i:i + 1], what), out[i:i + 1]):
            raise CaseFailure(f"CrossAttention: item {i} of a batch of 4 gets another output than when it is run "
                              "alone (batch of 1); nothing in forward may mix batch items (does the mask line "
                              "up with the batch axis? reshape it to (batch, 1, 1, T_k))")


@case(STEP, "property", weight=0.25)
def test_inputs_unchanged(impl):
    """leaves x, context and key_padding_mask unchanged"""
    r = rng(1909)
    module = _layer(impl, 3, 2, 4, 2, _random_layers(r, 3, 2, 4, False))
    x, context = toolkit.tensor(r.normal(size=(2, 3, 3))), toolkit.tensor(r.normal(size=(2, 4, 2)))
    mask = torch.tensor(lengths_mask([4, 2], 4))
    _run(module, x, context, mask, "CrossAttention(3, 2, 4, num_heads=2)")  # names a failure to run at all
    held = impl.hold(x, context, mask)
    module(*held)
    for original, handle, label in zip((x, context, mask), held, ("x", "context", "key_padding_mask")):
        checks.expect_unchanged(original.numpy(), handle.call("clone"), f"the input {label} of CrossAttention")


@case(STEP, "property", weight=0.25)
def test_gradients_reach_every_layer(impl):
    """gradients flow back to W_query, W_key, W_value and out_proj, also in train mode with dropout > 0"""
    r = rng(1910)
    linears = _random_layers(r, 3, 2, 4, False)
    module = _layer(impl, 3, 2, 4, 2, linears)
    x, context = toolkit.tensor(r.normal(size=(2, 3, 3))), toolkit.tensor(r.normal(size=(2, 4, 2)))
    what = "CrossAttention(3, 2, 4, num_heads=2)(x, context)"
    out = _explain_shape(_run(module, x, context, None, what), x.numpy(), context.numpy(), 4, what)
    report = module.backward([x, context], rng(99).normal(size=out.shape).astype(np.float32),
                             [f"{name}.weight" for name in LAYERS])
    toolkit.explain_gradients("CrossAttention", report, [f"{name}.weight" for name in LAYERS], module)
    toolkit.check_trains_with_dropout("CrossAttention", _layer(impl, 3, 2, 4, 2, linears, dropout=0.5), [x, context], 0.5)
