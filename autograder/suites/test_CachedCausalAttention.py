"""Hidden suite of `CachedCausalAttention` (assignment 05).

Worked examples: the chapter's `CausalAttention(3, 2, 6, 0.0)` context vectors (section 3.5.3),
without a cache and with the six tokens fed one at a time through a `KVCache`
(`fixtures/notes_efficient.py`). Oracle: `F.scaled_dot_product_attention`, with `is_causal=True`
on a whole sequence and with an explicit mask (its True = attend) for new tokens after a cached
prefix. Properties (eval mode): generation one token (or several) at a time equals causal attention
(the layer's own full forward); the cache grows by exactly the new tokens; seed 003's claim that the
last token's causal output is plain self-attention, through the cache; the cache refusing to grow past
context_length (ValueError); the attributes of `CausalAttention`; in train mode, dropout on the
attention weights (`toolkit.check_dropout`'s probe, as CausalAttention's). The reference `KVCache` stands in
for the student's (`depends_on`), so a wrong cache costs points at its own step only. Weights are
copied in by attribute name (`toolkit.loaded_module`). A NumPy model of cached attention, with
attention's own mistakes made on each chunk, names the known mistakes (a mask that ignores the
cache's offset, a cache filled but never read, a mask slice of the wrong size, the position read
after the cache grew, ...: `toolkit.cached`).
"""

import numpy as np
import torch
import torch.nn.functional as F

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures.notes import chapter_linear_weights, journey_batch
from autograder.harness import SHAPE_MISMATCH, case
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import (
    cached,
    cached_ladders,
    cached_length_checks,
    cached_positions,
    checks,
)
from autograder.suites.toolkit.cases import notes_cases, rng

STEP = "CachedCausalAttention"

_BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}


def _module(impl, d_in, d_out, context_length, linears, dropout=0.0, bias=False):
    layer = toolkit.loaded_module(impl, STEP, (d_in, d_out, context_length, dropout, bias), linears,
                                  f"CachedCausalAttention({d_in}, {d_out}, {context_length}, {dropout}, qkv_bias={bias})")
    layer = cached.WholeInputs.of(layer, layer.what, layer.explain)
    layer.fits, layer.width = context_length, d_out
    return layer


_explain_one_head_forward = toolkit.explains_one_head_forward(STEP, 1542)


@toolkit.explains_forward(STEP)
def _explain_forward(impl, what, error):
    """A forward that raised: its position read from the batch axis, shown through a cache, before the one-head
    layers' probes (which run without one)."""
    cached_positions.explain_position_from_batch(impl, what, error)
    _explain_one_head_forward(impl, what, error)


def _forward(module, x, cache, start, size, call):
    """module(x[:, start:start + size], cache=cache); a forward that raises is explained by what the cache
    held (`cached.explain_failed_forward`)."""
    try:
        return module(x[:, start:start + size], cache=cache)
    except RemoteError as error:
        whole_said = ""
        if any(phrase in str(error) for phrase in SHAPE_MISMATCH):
            # A shape mistake of the layer itself (the tokens read from the batch axis, ...) fails through a
            # cache too: the whole input's forward, which `Layer` retries, names it before the cache is blamed.
            # A batch of one hides it (one token's mask broadcasts against any scores): the whole input is also
            # tried as a batch of several sequences, other than its number of tokens.
            whole = x[:, :start + size]
            for batch in {whole.shape[0], 3 if start + size == 2 else 2}:
                try:
                    module(whole[:1].expand(batch, *whole.shape[1:]).clone() if batch != whole.shape[0] else whole)
                except RemoteError as whole_error:
                    whole_said = str(whole_error)
        cached.explain_failed_forward(error, cache, start, size, call, whole_said)
        raise


def _generate(impl, module, x, sizes, what):
    """Feed x (batch, T, d_in) in chunks of `sizes` tokens through one new KVCache; the outputs
    side by side (batch, T, d_out), and len(cache) after each chunk."""
    cache = impl.KVCache()
    outs, lengths, start = [], [], 0
    for size in sizes:
        call = f"{what}: forward(x[:, {start}:{start + size}], cache=cache)"
        out = checks.to_array(_forward(module, x, cache, start, size, call), call)
        cached.expect_grown(cache, start, size, call, module.width)
        cached.expect_rows(out, size, call, start, module.fits)
        if out.ndim != 3 or out.shape[:2] != (x.shape[0], size):
            raise CaseFailure(f"{call} has shape {checks.fmt_shape(out.shape)}, expected (batch, {size}, d_out): "
                              "one output row per NEW token")
        outs.append(out)
        lengths.append(len(cache))
        start += size
    return np.concatenate(outs, axis=1), lengths


_cache_symptoms = cached_ladders.cache_symptoms


def _full_symptoms(x, linears, context_length=None, impl=None):
    """The whole input's ladder; with `impl`, a missing mask is named as a mask slice of one new token's row where
    a prompt through a cache shows that slice."""
    return cached_ladders.full_symptoms(x, linears, context_length, impl and (lambda: _mask_one_token_row(impl)))


def _mask_one_token_row(impl):
    """Whether a prompt of 3 tokens after 2 cached ones raises as a mask slice of one new token's row does."""
    linears = toolkit.random_projections(rng(1547), 3, 4, False)
    try:
        _generate(impl, _module(impl, 3, 4, 8, linears), toolkit.tensor(rng(1548).normal(size=(2, 5, 3))), [2, 3],
                  "a probe")
    except CaseFailure as failure:
        return cached.ONE_TOKEN_ROW in str(failure)
    except RemoteError:
        return False
    return False


def _chapter():
    """The chapter's batch and layers (seed 123) as the worked examples give them: (x, linears)."""
    layers = chapter_linear_weights(123, [(3, 2, False)] * 3)
    return journey_batch().numpy(), {name: (weight.numpy(), None) for name, (weight, _) in zip(PROJECTIONS, layers)}


def _notes_symptoms(example):
    """The known mistakes on the chapter's batch with the chapter's layers (seed 123): of the
    full forward, or of the six tokens fed one at a time."""
    x, linears = _chapter()
    if example.key == "journey_cached_full":
        return _full_symptoms(x, linears)
    return _cache_symptoms(x, linears, [1] * 6)


def _notes_probe(impl):
    """A worked example that raised is explained by the same layer fed the suite's own tokens, a few at a time
    through a cache, then all at once without one."""
    _check_generation(impl, [2, 1, 1], 1533, True, with_full_forward=False)
    r = rng(1544)
    _module(impl, 3, 2, 4, toolkit.random_projections(r, 3, 2, False))(toolkit.tensor(r.normal(size=(2, 4, 3))))


def _notes_confirmed(impl, ladder):
    """The cached example's ladder, its mistakes that a cache alone can make named so where the same layer is right
    on the chapter's whole batch without a cache (`cached.seen_right_without_cache`), as the other cases name them."""
    x, linears = _chapter()
    ladder = cached.through_cache_where_right_without(ladder, cached.CACHE_MISTAKES + cached_ladders.FULL_MISTAKES,
                                                      lambda: checks.named_mistake(
        checks.to_array(_module(impl, 3, 2, 6, linears)(toolkit.tensor(x)), "the output"),
        [(cached.model(x, linears, [6]), "right")]))
    return cached_ladders.named_one_token_row(ladder, lambda: _mask_one_token_row(impl))


test_notes = notes_cases(STEP, symptoms=_notes_symptoms, probe=_notes_probe, confirmed=_notes_confirmed)


def _sizes_text(sizes):
    return "chunks of " + ", ".join(map(str, sizes)) + " tokens"


# --- stored outputs ---------------------------------------------------------------------------

def _record(r, label, batch, d_in, d_out, context_length, sizes, bias):
    record = dict(label=label, x=r.normal(size=(batch, sum(sizes), d_in)).astype(np.float32),
                  d_in=np.int64(d_in), d_out=np.int64(d_out), context_length=np.int64(context_length),
                  sizes=np.array(sizes, dtype=np.int64), qkv_bias=np.int64(bias))
    for name, (weight, b) in toolkit.random_projections(r, d_in, d_out, bias).items():
        record[name] = weight
        record[_BIAS[name]] = b if bias else np.zeros(d_out, dtype=np.float32)
    return record


def _record_linears(record):
    bias = bool(record["qkv_bias"])
    return {name: (record[name], record[_BIAS[name]] if bias else None) for name in PROJECTIONS}


def stored_inputs():
    r = rng(1531)
    return [
        _record(r, "d_in=3, d_out=2, 6 tokens one at a time, batch of 2", 2, 3, 2, 6, [1] * 6, False),
        _record(r, "a prompt of 4, then 1, 1, 1 (d_in=4, d_out=5, qkv_bias=True, context_length=10)",
                1, 4, 5, 10, [4, 1, 1, 1], True),
        _record(r, "chunks of 2, 3 and 2 tokens, batch of 3", 3, 4, 4, 8, [2, 3, 2], False),
        _record(r, "a prompt that fills the context (5 of 5)", 2, 3, 3, 5, [5], True),
        _record(r, "16 tokens: a prompt of 5 and 11 single tokens, d_in=d_out=8", 2, 8, 8, 16, [5] + [1] * 11, True),
    ]


def apply(impl, record):
    linears = _record_linears(record)
    module = _module(impl, int(record["d_in"]), int(record["d_out"]), int(record["context_length"]), linears,
                     bias=bool(record["qkv_bias"]))
    x = torch.tensor(record["x"])
    full = checks.to_array(module(x), "CachedCausalAttention(x) without a cache")
    cached, _ = _generate(impl, module, x, [int(s) for s in record["sizes"]], record["label"])
    return full, cached


def _check_stored_records(impl, one_token_at_a_time):
    """The outputs through a cache of the records fed one token at a time (one_token_at_a_time), or
    the rest: every record's output without a cache, and through a cache where a chunk holds a prompt
    of several tokens."""
    from autograder.fixtures import stored

    for record in stored.load(STEP):
        linears, sizes, label = _record_linears(record), [int(s) for s in record["sizes"]], record["label"]
        full, cached = apply(impl, record)
        if not one_token_at_a_time:
            checks.expect_close(full, record["expected_0"], f"CachedCausalAttention without a cache on {label}",
                                finite_hint=toolkit.NAN_HINT,
                                symptoms=_full_symptoms(record["x"], linears, int(record["context_length"]), impl))
        if (max(sizes) == 1) == one_token_at_a_time:
            checks.expect_close(cached, record["expected_1"],
                                f"CachedCausalAttention through a cache, {_sizes_text(sizes)} ({label})",
                                finite_hint=toolkit.NAN_HINT,
                                symptoms=_cache_symptoms(record["x"], linears, sizes, toolkit.close(
                                    full, record["expected_0"]), int(record["context_length"])))


# One new token at a time (the cache's main use, where a single query needs no mask) and prompts of
# several tokens (the whole sequence without a cache, chunks after a cached prefix) are cases of
# their own, here and in the properties: a mask that ignores the cache's offset, or a cache never
# read, fails both, while a layer that forgets the causal mask keeps the first.
@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """matches the reference without a cache, and fed through a cache in chunks that hold a prompt"""
    _check_stored_records(impl, one_token_at_a_time=False)


@case(STEP, "stored")
def test_stored_outputs_one_token_at_a_time(impl):
    """matches the reference fed through a cache one token at a time"""
    _check_stored_records(impl, one_token_at_a_time=True)


# --- PyTorch as an oracle ---------------------------------------------------------------------

def _projections(x, linears):
    def project(name):
        weight, bias = linears[name]
        y = x @ torch.as_tensor(weight).T
        return y if bias is None else y + torch.as_tensor(bias)

    return [project(name) for name in PROJECTIONS]


@case(STEP, "oracle")
def test_matches_torch(impl):
    """agrees with F.scaled_dot_product_attention: is_causal=True on whole inputs, and an explicit mask
    (True = attend) for new tokens after a cached prefix"""
    r = rng(1532)
    d_in, d_out, num_tokens = 4, 6, 9
    linears = toolkit.random_projections(r, d_in, d_out, True)
    x = toolkit.tensor(r.normal(size=(2, num_tokens, d_in)))
    q, k, v = _projections(x, linears)
    module = _module(impl, d_in, d_out, 12, linears, bias=True)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    checks.expect_close(module(x), want.numpy(), "CachedCausalAttention(4, 6, 12, 0.0, qkv_bias=True)(x) compared "
                        "with F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                        finite_hint=toolkit.NAN_HINT, symptoms=_full_symptoms(x.numpy(), linears, 12, impl))
    sizes = [4, 3, 2]
    cached, _ = _generate(impl, module, x, sizes, "CachedCausalAttention(4, 6, 12, 0.0, qkv_bias=True)")
    start, known = 0, _cache_symptoms(x.numpy(), linears, sizes, True, 12)  # module(x) was right
    for size in sizes:
        stop = start + size
        attend = torch.arange(stop)[None, :] <= torch.arange(start, stop)[:, None]  # key j <= query position
        want = F.scaled_dot_product_attention(q[:, start:stop], k[:, :stop], v[:, :stop], attn_mask=attend)
        checks.expect_close(cached[:, start:stop], want.numpy(),
                            f"the outputs of new tokens {start}..{stop - 1} after {start} cached tokens, compared "
                            "with F.scaled_dot_product_attention(q_new, k_all, v_all, attn_mask=allowed)",
                            finite_hint=toolkit.NAN_HINT,
                            symptoms=[(value[:, start:stop], message) for value, message in known])
        start = stop


# --- properties -------------------------------------------------------------------------------

def _check_generation(impl, sizes, seed, bias, with_full_forward=True):
    """x fed in chunks of `sizes` through a cache gives causal attention's outputs and grows the cache
    by the new tokens. with_full_forward: they must equal the layer's own output on the whole
    sequence, which must be right too; without, they are compared with causal attention computed
    here, so only the cache is judged (one token at a time, no prompt)."""
    r = rng(seed)
    d_in, d_out, total = 5, 4, sum(sizes)
    linears = toolkit.random_projections(r, d_in, d_out, bias)
    x = toolkit.tensor(r.normal(size=(2, total, d_in)))
    what = f"CachedCausalAttention({d_in}, {d_out}, {total}, 0.0, qkv_bias={bias})"
    module = _module(impl, d_in, d_out, total, linears, bias=bias)
    causal = toolkit.attention(x.numpy(), linears)
    full = checks.to_array(module(x), f"{what}(x)") if with_full_forward else causal
    cached, lengths = _generate(impl, module, x, sizes, what)
    if not any(lengths):
        raise CaseFailure(f"{what} fed {_sizes_text(sizes)}: the cache stays empty (len 0 after every call), "
                          "so nothing is remembered. An empty cache is falsy (len 0): test `cache is not None`, "
                          "not `if cache:`, and call cache.update with the new keys and values")
    compared = ("its own output on the whole sequence (eval mode)" if with_full_forward
                else "causal attention on the whole sequence")
    checks.expect_close(cached, full, f"{what} fed {_sizes_text(sizes)} through a cache, compared with {compared}",
                        finite_hint=toolkit.NAN_HINT,
                        symptoms=_cache_symptoms(x.numpy(), linears, sizes, toolkit.close(full, causal) if with_full_forward
                                                 else module.right_without_cache(x, causal), total),
                        relation=not with_full_forward)  # its own full output is no right value
    if with_full_forward:
        checks.expect_close(full, causal, f"{what}(x) without a cache",
                            finite_hint=toolkit.NAN_HINT, symptoms=_full_symptoms(x.numpy(), linears, total, impl))


@case(STEP, "property", weight=2)
def test_one_token_at_a_time_equals_full_forward(impl):
    """generating one token at a time through the cache gives causal attention's outputs on the whole sequence"""
    _check_generation(impl, [1] * 8, 1533, True, with_full_forward=False)


@case(STEP, "property", weight=2)
def test_several_tokens_at_a_time(impl):
    """chunks of several new tokens (3, 1, 4, 2) after a cached prefix give the full forward's outputs"""
    _check_generation(impl, [3, 1, 4, 2], 1534, False)


@case(STEP, "property")
def test_last_token_through_cache_is_self_attention(impl):
    """the last token, fed alone after a cached prompt, gets plain unmasked self-attention (seed 003)"""
    r = rng(1535)
    linears = toolkit.random_projections(r, 3, 4, True)
    x = toolkit.tensor(r.normal(size=(2, 6, 3)))
    module = _module(impl, 3, 4, 6, linears, bias=True)
    cache = impl.KVCache()
    _forward(module, x, cache, 0, 5, "forward(x[:, :5], cache=KVCache())")
    cached.expect_grown(cache, 0, 5, "forward(x[:, :5], cache=KVCache())", module.width)
    last = checks.to_array(_forward(module, x, cache, 5, 1, "forward(x[:, 5:], cache=cache)"),
                           "forward(x[:, 5:], cache=cache)")
    cached.expect_rows(last, 1, "forward(x[:, 5:], cache=cache)", 5, module.fits)
    checks.expect_shape(last, (2, 1, 4), "forward(x[:, 5:], cache=cache)")
    unmasked = toolkit.attention(x.numpy(), linears, mask="none")[:, -1:]
    if not toolkit.close(last, unmasked):
        wrong = "the last token, fed alone after 5 cached tokens, does not get plain (unmasked) self-attention over all 6 tokens"
        right_whole = module.right_without_cache(x, toolkit.attention(x.numpy(), linears))
        fits = list(dict.fromkeys(symptom for candidate, symptom in _cache_symptoms(x.numpy(), linears, [5, 1], right_whole)
                                  if toolkit.close(last, candidate[:, -1:])))  # the last row alone may fit several
        if fits:  # the cause is named, which need not be the mask (a scale, a projection): no rule of the mask's
            raise CaseFailure(f"{wrong}, as named by its row: {checks.one_or_all(fits)}")
        raise CaseFailure(f"{wrong} (it sees every token including itself, so none of its keys is blocked), and "
                          f"{checks.UNNAMED}")


@case(STEP, "property")
def test_refuses_to_grow_past_context_length(impl):
    """raises ValueError when cached and new tokens would exceed context_length (not before), the cache unchanged"""
    r = rng(1536)
    linears = toolkit.random_projections(r, 3, 2, False)
    module = _module(impl, 3, 2, 5, linears)
    x = toolkit.tensor(r.normal(size=(1, 7, 3)))
    what = "CachedCausalAttention(3, 2, 5, 0.0)"
    cache = impl.KVCache()
    _forward(module, x, cache, 0, 3, f"{what}: forward(x[:, 0:3], cache=cache)")
    _forward(module, x, cache, 3, 2, f"{what}: forward(x[:, 3:5], cache=cache)")  # exactly context_length: allowed
    cached_length_checks.expect_value_error(lambda: module(x[:, 5:6], cache=cache), f"{what} with 5 cached tokens and 1 more",
                        lambda: module(x[:, :6], cache=impl.KVCache()))
    cached_length_checks.expect_value_error(lambda: module(x[:, :6], cache=impl.KVCache()), f"{what} given 6 tokens and an empty cache")
    cache = impl.KVCache()
    module(x[:, :4], cache=cache)
    cached_length_checks.expect_value_error(lambda: module(x[:, 4:6], cache=cache), f"{what} with 4 cached tokens and 2 more",
                        lambda: module(x[:, :6], cache=impl.KVCache()))
    if len(cache) != 4:  # the refused tokens' keys went in: every later call would attend to them
        raise CaseFailure(f"{what}: a refused forward left {len(cache)} tokens in the cache that held 4; check the "
                          "length before cache.update, so that a refused call changes nothing")


@case(STEP, "property", weight=0.5)
def test_attributes(impl):
    """has W_query, W_key, W_value = nn.Linear(d_in, d_out, bias=qkv_bias), dropout = nn.Dropout(p); keeps its mask as a buffer"""
    for bias in (False, True):
        what = f"CachedCausalAttention(3, 5, 4, 0.25, qkv_bias={bias})"
        module = toolkit.construct(impl, STEP, (3, 5, 4, 0.25, bias), what=what)
        for name in PROJECTIONS:
            toolkit.check_linear(module, name, 3, 5, bias, what)
        toolkit.check_dropout_attribute(what, module, 0.25)
        toolkit.check_mask_is_buffer(what, module)


@case(STEP, "property", weight=0.5)
def test_causal_without_cache(impl):
    """without a cache it is causal attention: later tokens never change earlier outputs"""
    linears = toolkit.random_projections(rng(1537), 4, 3, False)
    toolkit.check_finite_and_causal("CachedCausalAttention", _module(impl, 4, 3, 7, linears), 4, 7, 1538,
                                    lambda x: _full_symptoms(x, linears, impl=impl))  # a leak need not be a missing mask


@case(STEP, "property", weight=0.5)
def test_dropout_off_in_eval_mode(impl):
    """in eval mode, dropout=0.5 changes nothing, with or without a cache"""
    r = rng(1539)
    linears = toolkit.random_projections(r, 3, 2, False)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_eval_mode_without_dropout("CachedCausalAttention", lambda p: _module(impl, 3, 2, 5, linears, p), x)
    plain, _ = _generate(impl, _module(impl, 3, 2, 5, linears), x, [2, 1, 2], "dropout=0.0")
    dropped, _ = _generate(impl, _module(impl, 3, 2, 5, linears, 0.5), x, [2, 1, 2], "dropout=0.5, eval mode")
    if not toolkit.close(plain, dropped):
        raise CaseFailure("CachedCausalAttention in eval mode with a cache gives other outputs with dropout=0.5 "
                          "than with dropout=0.0: use self.dropout (nn.Dropout), which is off in eval mode")


def _dropout_probe_linears(num_tokens):
    """`toolkit.check_dropout`'s probe, as CausalAttention's: W_value = [I; 2I], so on x = eye(T) each output
    row is [w, 2 w] with w that token's (dropped) attention weights."""
    linears = toolkit.random_projections(rng(1543), num_tokens, 2 * num_tokens, False)
    eye = np.eye(num_tokens, dtype=np.float32)
    linears["W_value"] = (np.vstack([eye, 2 * eye]), None)
    return linears


# Eval mode hides where dropout acts (it is off there), so dropout on the values instead of the
# weights passes every other case: train mode, seeded, shows it. Its weight is small: a layer right
# without a cache passes it, and a cache never read must still keep at most a third.
@case(STEP, "property", weight=0.25)
def test_dropout_on_attention_weights(impl):
    """in train mode, dropout zeroes attention weights and rescales the rest by 1/(1-p)"""
    linears = _dropout_probe_linears(6)
    toolkit.check_dropout("CachedCausalAttention", lambda p: _module(impl, 6, 12, 6, linears, p), 6, 1,
                          expected=toolkit.attention(np.eye(6)[None], linears))


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves its input x unchanged"""
    r = rng(1540)
    module = _module(impl, 3, 2, 4, toolkit.random_projections(r, 3, 2, False))
    toolkit.check_input_unchanged(impl, "CachedCausalAttention", module, toolkit.tensor(r.normal(size=(2, 4, 3))))


@case(STEP, "property", weight=0.5)
def test_gradients_reach_projections(impl):
    """without a cache it trains like CausalAttention: gradients reach W_query, W_key and W_value, with dropout too"""
    r = rng(1541)
    linears = toolkit.random_projections(r, 3, 4, False)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_gradients("CachedCausalAttention", _module(impl, 3, 4, 5, linears), x,
                            [f"{name}.weight" for name in PROJECTIONS])
    # in-place dropout (nn.Dropout(p, inplace=True)) on the softmax's output breaks only a backward with dropout on
    toolkit.check_trains_with_dropout("CachedCausalAttention", _module(impl, 3, 4, 5, linears, dropout=0.5), [x], 0.5)
