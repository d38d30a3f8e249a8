"""Hidden suite of `online_softmax_attention` (assignment 05).

Worked examples: the chapter's context vectors (sections 3.4.2 and 3.5.3), reproduced block by
block (`fixtures/notes_efficient.py`). Oracle: `F.scaled_dot_product_attention`, plain and with
`is_causal=True`, for every block size from 1 to past the number of keys. Properties: the
answer does not depend on the block size, the weights it implies sum to 1, causality, inputs
left unchanged, and the peak memory of one call on 3072 tokens, measured from outside the
process that runs it, staying far below one (n_q, n_k) array of scores, and with causal=True not
growing as the square of the tokens (a whole mask of True/False fits under that limit).

A NumPy model of the blockwise algorithm, with one switch per known mistake, names the
symptom: the running sum (or output) not rescaled when the maximum grows, a causal block mask
that ignores the block's offset or is off by one, unscaled scores, no final division.
"""

import contextlib

import numpy as np
import torch
import torch.nn.functional as F

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import SHAPE_MISMATCH, case
from autograder.suites.toolkit import block_ties, blockwise, causal_blocks, checks, model, peak_memory
from autograder.suites.toolkit.cases import notes_cases, rng
from autograder.suites.toolkit.model import MULTIPLIED_BY_SQRT, SCALED_BY_TOKENS, TWICE_D_K, told_apart
from autograder.suites.toolkit.shifts import SHIFT_BELOW_MAX

STEP = "online_softmax_attention"

NAN_HINT = ("exp overflowed (subtract the running row maximum before exponentiating), or a query was left "
            "with no key to attend to (query i sees keys 0..i, itself included: block key j only when j > i)")


_model = blockwise.model


RESCALE = ("the running sum is not rescaled when the row maximum grows: before adding a block, multiply it "
           "(and the running output) by exp(old_max - new_max)")
# Two mistakes meet the running maximum's start value, -inf, in the first block and make every output
# nan, so no output tells them apart: the message names both.
FIRST_BLOCK_NAN = ("every output is nan: in the first block the old maximum is -inf, and exp(scores - old_max) or "
                   "exp(new_max - old_max) is inf (inf * 0 and inf / inf are nan): shift each block's scores by "
                   "the new maximum, and rescale what was summed before by exp(old_max - new_max), a factor of at "
                   "most 1 that shrinks it")
DIVIDED_IN_LOOP = ("the running output is divided by the running sum inside the loop, block by block: that sum "
                   "still grows with the later blocks, so what an early block added is divided by too small a sum, "
                   "or divided again; keep the running output unnormalised and divide by the running sum once, "
                   "after the last block")
# Identical outputs: the factor left out, and one computed from a running maximum already set to the new one.
RESCALE_NEITHER = ("neither the running sum nor the running output is rescaled when the row maximum grows, or the "
                   "factor exp(old_max - new_max) is computed after the running maximum is already updated, so it is "
                   "always 1: before adding a block, multiply both by exp(old_max - new_max), old_max the maximum "
                   "from before the block")
PER_BLOCK = ("each block's values are divided by that block's own weight sum as they are added (a softmax within "
             "the block): the blocks' weights must stay on one scale, so keep the running output a sum of "
             "exp(score - max) @ V and divide it once, after the last block, by the running sum of every block's "
             "weights")
VALUES_FIRST = blockwise.VALUES_FIRST
BLOCK_MAX = ("the new maximum is the block's own, not the larger of it and the running one: a block of lower scores (or "
             "all blocked, -inf) rescales what came before by more than 1 (or inf)")
NEVER_KEPT = ("the running maximum is never updated after a block: it stays -inf, every block rescales what came before "
              "by exp(-inf) = 0, and only the last block counts")
WRONG_IN_ORDER = (BLOCK_MAX, NEVER_KEPT)  # what blocks read last first can look like (`blockwise.order_confirmed`)
MISTAKES = [
    (dict(rescale="none"), RESCALE_NEITHER),
    (dict(rescale="acc"), RESCALE),
    (dict(rescale="sum"), "the running output is not rescaled when the row maximum grows: multiply it by "
                          "exp(old_max - new_max) before adding a block, as the running sum"),
    (dict(scale="none"), "the scores are not scaled: divide Q Kᵀ by sqrt(d_k)"),
    (dict(scale="linear"), "the scores are divided by d_k instead of sqrt(d_k)"),
    MULTIPLIED_BY_SQRT,  # every layer's ladder names it so
    (dict(scale="n_k"), SCALED_BY_TOKENS),
    (dict(normalise=False), "the output is not divided by the running sum at the end"),
    (dict(normalise="loop"), DIVIDED_IN_LOOP),
    (dict(normalise="loop-block"), DIVIDED_IN_LOOP),
    (dict(normalise="block"), PER_BLOCK),
    (dict(rescale="ratio"), blockwise.RATIO),
    (dict(scale="d_v"), "the scores are divided by the square root of the values' width, d_v: the scale is "
                        "sqrt(d_k), the width of the queries and keys"),
    (dict(rescale="inverted"), FIRST_BLOCK_NAN),
    (dict(shift="old"), FIRST_BLOCK_NAN),
    (dict(keep_max=False), NEVER_KEPT),
    (dict(rescale="late"), "the running output is rescaled after the block's values are added, so they shrink "
                           "too: rescale what was summed before the block, then add the block"),
    (dict(rescale="sum_late"), "the running sum is rescaled after the block's weights are added, so they shrink too "
                               "(and the first block's, by exp(-inf) = 0): rescale what was summed before the block, "
                               "then add the block's weights"),
    (dict(rescale="new"), "the block's own values are multiplied by exp(old_max - new_max), not the running output: "
                          "that factor shrinks what was summed before the block (the running output, as the running "
                          "sum); the block's weights are already shifted by the new maximum"),
    (dict(sum_axis=0), "the running sum adds up each block's weights over axis 0 (the queries, or with a batch "
                       "the first batch axis): each query sums its own weights, over the keys (the last axis)"),
    (dict(block_max=True), BLOCK_MAX),
    (dict(values="first"), VALUES_FIRST),
    (dict(loop="queries"), "the blocks start at range(0, n_q, block_size), the number of queries: the keys are what "
                           "is cut into blocks, so with fewer queries than keys the last keys are never read"),
    (dict(tail=False), "the last block is skipped when it holds fewer than block_size keys: the blocks must "
                       "cover all n_k keys, and the last one may be shorter"),
    (dict(tail="last"), "the last block is skipped when it holds fewer than block_size keys, and even when it is "
                        "full: the loop stops one block early; the block starts must reach every key, up to n_k - 1"),
    (dict(loop="from_one"), "the blocks start at range(1, n_k, block_size), so key 0 is never read (and with "
                            "causal=True query 0 has no key left, nan): the first block starts at key 0"),
    (dict(loop="block_numbers"), "the loop runs over the blocks' numbers, range(n_k // block_size), and slices from "
                                 "them as if they were keys: block j starts at key j * block_size, so these blocks "
                                 "overlap and the later keys are never read; loop over range(0, n_k, block_size)"),
    (dict(scale="floor"), model.FLOOR_DIVIDED), (dict(exp=np.exp2), model.BASE_TWO),
    (dict(width="short"), "each block's slice of keys and values stops one key short (a slice's end is left out): "
                          "a block holds block_size keys, so one key of every block is never read"),
    # stop = min(start + block_size, n_k - 1): an off-by-one in the last block's end
    (dict(width="last_key"), "the last key is never read: the blocks' slices end at key n_k - 1 at the latest, and a "
                             "slice's end is left out, so key n_k - 1 gets no weight; the last block ends where the "
                             "keys end"),
    (dict(max_axis=-2), blockwise.MAX_OVER_QUERIES), (dict(max_axis=None), blockwise.MAX_OF_WHOLE_BLOCK),
    (dict(loop="reversed"), blockwise.REVERSED), (dict(loop="backwards"), blockwise.REVERSED),
    (dict(width=64), blockwise.FIXED_WIDTH),
    (dict(scale="twice_linear"), TWICE_D_K),
    (dict(rescale="acc_twice"), blockwise.RESCALED_TWICE),
    (dict(sum_axis=None), "the running sum adds up every weight of the block at once, one total for all queries "
                          "(and sequences): each query sums its own weights, over the keys (the last axis)"),
    (dict(shift_by=np.mean), SHIFT_BELOW_MAX), (dict(shift_by=np.min), SHIFT_BELOW_MAX),
    (dict(loop="first"), "only the first block is read: the answer is returned inside the loop, after the first block "
                         "(is the return indented into it?); the running quantities are complete only after the last"),
]


def _symptoms(Q, K, V, block_size, causal, positions=None, impl=None):
    """The known mistakes on these arguments; with `impl`, twins a probe of its code tells apart are (`order_confirmed`)."""
    found = blockwise.with_block_scale(MISTAKES, block_size, np.shape(K)[-1]) + (causal_blocks.MISTAKES if causal else [])
    # twins only where the models agree to rounding: the tolerance a student's output is named in would also join
    # models that differ in one block of tiny inputs
    ladder = told_apart([((lambda kw=kw: _model(Q, K, V, block_size, causal, positions=positions, **kw)), message)
                         for kw, message in found], same=_same_to_rounding)
    return ladder if impl is None else block_ties.ties_confirmed(impl, blockwise.shift_confirmed(
        impl, blockwise.order_confirmed(impl, ladder, WRONG_IN_ORDER)), found, _model)


def _same_to_rounding(a, b):
    return a.shape == b.shape and np.allclose(a, b, atol=1e-9, rtol=1e-7, equal_nan=True)


def _recorded_symptoms(record, k):
    """The known mistakes on the arguments of one call, as a worked example makes it."""
    return _symptoms(record["Q"], record["K"], record["V"], int(record["block_size"]), bool(record["causal"]))


# A worked example that raised is explained by a call on the suite's own inputs: a batch, with values narrower
# than the keys, so that each of `blockwise.simpler_inputs` can show its mistake; then in blocks of one key,
# which divide the keys (an empty block past the last key, the chapter's 6 keys in blocks of 2, shows there).
_PROBE = (lambda r: [r.normal(size=shape) for shape in ((2, 5, 4), (2, 5, 4), (2, 5, 3))])(rng(1520))
test_notes = notes_cases(STEP, replayed=_recorded_symptoms,
                         confirmed=lambda impl, ladder: block_ties.ties_confirmed(impl, blockwise.mask_confirmed(
                             impl, blockwise.shift_confirmed(impl, blockwise.order_confirmed(impl, ladder, WRONG_IN_ORDER)),
                             _PROBE), MISTAKES + causal_blocks.MISTAKES, _model),
                         probe=lambda impl: [_call(impl, *_PROBE, size, causal, _label((2, 5, 4), (2, 5, 4), size, causal))
                                             for size, causal in ((2, False), (2, True), (1, False))])


def _expect(out, want, what, Q, K, V, block_size, causal, atol=1e-5, rtol=1e-4, impl=None):
    """out ≈ want, or the symptom of a known mistake; one that puts nan where the model of that
    mistake does (a query left with no key) is named too (checks.named_mistake matches nan with nan)."""
    return checks.expect_close(out, want, what, atol=atol, rtol=rtol, finite_hint=NAN_HINT,
                               symptoms=lambda: _symptoms(Q, K, V, block_size, causal, impl=impl))


def _name_known(out, what, Q, K, V, block_size, causal, positions=None, impl=None):
    """Raise the symptom of the known mistake `out` (a wrong answer of a property case) matches, if any:
    such a case's own message (blocks that disagree, nan, weights that do not sum to 1) would blame
    a consequence, not the cause."""
    out = checks.to_array(out, what)
    fits = list(dict.fromkeys(message for candidate, message in _symptoms(Q, K, V, block_size, causal, positions, impl)
                              if checks.named_mistake(out, [(candidate, message)]) is not None))
    if fits:  # with V = ones, say, several mistakes give the same output
        raise CaseFailure(f"{what}: {checks.one_or_all(fits)}")


# --- a call whose shapes do not fit, run again on simpler inputs ------------------------------

def _explain_raised(impl, error, what, Q, K, V, block_size, causal):
    """Errors whose own words name their cause, whatever the inputs; a shape mismatch, by simpler inputs."""
    said = str(error)  # Python's max(a, b) on arrays: harness.ERROR_CAUSES names it, whatever the step
    if "zero-size array to reduction operation maximum" in said:
        raise CaseFailure(f"{what} raised {error.type_name}: a block held no keys (the maximum of no scores): each "
                          "block's slice holds the keys from its start up to block_size of them (the last block "
                          "fewer), and the blocks start only below n_k, the number of keys") from None
    if "boolean index did not match" in said:
        raise CaseFailure(f"{what} raised {error.type_name}: a boolean mask of the block's (n_q, b) scores indexes the "
                          "scores' FIRST axes: with a batch (..., n_q, b) those are batch axes; the mask belongs on "
                          "the last two axes (queries and keys), whatever comes before them") from None
    blockwise.name_einsum_for_one_matrix(impl, error, what, Q, K, V, block_size, causal)
    if any(phrase in str(error) for phrase in SHAPE_MISMATCH):
        blockwise.explain_shapes(impl, what, f"raised {error.type_name}", Q, K, V, block_size, causal, _model)


def _call(impl, Q, K, V, block_size, causal, what):
    """impl.online_softmax_attention(Q, K, V, ...) as an array; a shape mismatch it raises, or an answer of the
    wrong shape, is explained by `blockwise.explain_shapes` where it can."""
    try:
        out = impl.online_softmax_attention(Q, K, V, block_size=block_size, causal=causal)
    except RemoteError as error:
        _explain_raised(impl, error, what, Q, K, V, block_size, causal)
        raise
    out = checks.to_array(out, what)
    if out.shape != np.shape(Q)[:-1] + np.shape(V)[-1:]:
        blockwise.explain_shapes(impl, what, f"has shape {checks.fmt_shape(out.shape)}", Q, K, V, block_size, causal,
                                 _model)
    return out


def _attention(impl, Q, K, V, block_size, causal, what, want):
    out = _call(impl, Q, K, V, block_size, causal, what)
    blockwise.name_nan_mask(impl, out, what, Q, K, V, block_size, causal)
    return _expect(out, want, what, Q, K, V, block_size, causal, impl=impl)


def _label(shape_q, shape_k, block_size, causal):
    return (f"online_softmax_attention(Q {checks.fmt_shape(shape_q)}, K {checks.fmt_shape(shape_k)}, ..., "
            f"block_size={block_size}{', causal=True' if causal else ''})")


# --- stored outputs ---------------------------------------------------------------------------

def _record(r, label, lead, n_q, n_k, d_k, d_v, block_size, causal, scale=1.0, dtype=np.float32):
    return dict(label=label,
                Q=(scale * r.normal(size=(*lead, n_q, d_k))).astype(dtype),
                K=(scale * r.normal(size=(*lead, n_k, d_k))).astype(dtype),
                V=r.normal(size=(*lead, n_k, d_v)).astype(dtype),
                block_size=np.int64(block_size), causal=np.int64(causal))


def _increasing(r):
    """Scores that grow from key to key: every block raises the row maximum."""
    K = np.linspace(0.0, 3.0, 10)[:, None] * np.ones((10, 4))
    return dict(label="scores that grow with every key (10 keys, block_size=3)",
                Q=np.abs(r.normal(size=(4, 4))).astype(np.float32), K=K.astype(np.float32),
                V=r.normal(size=(10, 3)).astype(np.float32), block_size=np.int64(3), causal=np.int64(0))


def stored_inputs():
    r = rng(1511)
    return [
        _record(r, "5 queries and keys, d=4, block_size=2", (), 5, 5, 4, 4, 2, False),
        _record(r, "8 queries, 13 keys, d_v=5, block_size=4", (), 8, 13, 4, 5, 4, False),
        _record(r, "causal, 7 tokens, a (2, 3) batch of heads, block_size=3", (2, 3), 7, 7, 4, 4, 3, True),
        _record(r, "causal, 9 tokens, float64, block_size=1", (), 9, 9, 6, 2, 1, True, dtype=np.float64),
        _record(r, "causal, 12 tokens, batch of 2, block_size=5", (2,), 12, 12, 8, 8, 5, True),
        _record(r, "large scores (hundreds), 6 keys, block_size=2", (), 4, 6, 4, 3, 2, False, scale=25.0),
        _record(r, "causal, large scores (hundreds), 6 tokens, block_size=4", (), 6, 6, 4, 3, 4, True, scale=25.0),
        _record(r, "block_size larger than the number of keys (100 for 6)", (), 6, 6, 3, 3, 100, False),
        _record(r, "a single query and key", (), 1, 1, 3, 2, 64, True),
        _increasing(r),
    ]


def apply(impl, record):
    return impl.online_softmax_attention(record["Q"], record["K"], record["V"],
                                         block_size=int(record["block_size"]), causal=bool(record["causal"]))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference: plain and causal, batches of heads, float64, large scores, any block size"""
    from autograder.fixtures import stored

    for record in stored.load(STEP):
        Q, K, V = record["Q"], record["K"], record["V"]
        block_size, causal = int(record["block_size"]), bool(record["causal"])
        what = f"online_softmax_attention on {record['label']}"
        out = _call(impl, Q, K, V, block_size, causal, what)
        blockwise.name_nan_mask(impl, out, what, Q, K, V, block_size, causal)
        _expect(out, record["expected_0"], what, Q, K, V, block_size, causal, impl=impl)


# --- PyTorch as an oracle ---------------------------------------------------------------------

def _sdpa(Q, K, V, causal):
    q, k, v = (torch.tensor(a, dtype=torch.float64) for a in (Q, K, V))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()


@case(STEP, "oracle", weight=2)
def test_matches_torch_every_block_size(impl):
    """agrees with F.scaled_dot_product_attention (is_causal too) for every block_size from 1 to past n_k"""
    r = rng(1512)
    for causal, lead, n_q, n_k in ((False, (2,), 6, 9), (True, (2,), 9, 9)):
        Q = r.normal(size=(*lead, n_q, 4)).astype(np.float32)
        K = r.normal(size=(*lead, n_k, 4)).astype(np.float32)
        V = r.normal(size=(*lead, n_k, 3)).astype(np.float32)
        want = _sdpa(Q, K, V, causal)
        for block_size in range(1, n_k + 3):
            _attention(impl, Q, K, V, block_size, causal,
                       _label(Q.shape, K.shape, block_size, causal) + " compared with "
                       f"F.scaled_dot_product_attention(q, k, v{', is_causal=True' if causal else ''})", want)


# --- properties -------------------------------------------------------------------------------

@case(STEP, "property")
def test_same_answer_for_every_block_size(impl):
    """the block size changes how the keys are read, never the answer"""
    r = rng(1513)
    for causal in (False, True):
        Q, K, V = (r.normal(size=(11, 4)).astype(np.float32) for _ in range(3))
        one_block = _call(impl, Q, K, V, 11, causal, _label(Q.shape, K.shape, 11, causal))
        checks.expect_shape(one_block, (11, 4), _label(Q.shape, K.shape, 11, causal))
        for block_size in (1, 2, 4, 7):
            what = _label(Q.shape, K.shape, block_size, causal)
            out = _call(impl, Q, K, V, block_size, causal, what)
            if out.shape != one_block.shape or not np.allclose(out, one_block, atol=1e-5, rtol=1e-4,
                                                               equal_nan=True):
                # where this block size is right, the one-block answer is the wrong one, and what names the mistake
                right = out.shape == one_block.shape and np.allclose(out, _model(Q, K, V, block_size, causal),
                                                                     atol=1e-5, rtol=1e-4)
                _name_known(*((one_block, _label(Q.shape, K.shape, 11, causal), Q, K, V, 11) if right
                              else (out, what, Q, K, V, block_size)), causal, impl=impl)
                raise CaseFailure(f"{what} differs from the same call with block_size=11 (all keys in one "
                                  "block): the blocks must combine to exactly the one-block answer (rescale "
                                  "the running sum and output by exp(old_max - new_max) whenever the "
                                  "maximum grows)")


@case(STEP, "property")
def test_weights_sum_to_one(impl):
    """with every value 1 the output is 1 (the implied weights sum to 1), also where every score is far below 0 or one far above"""
    r = rng(1514)
    for causal, block_size, kind in ((False, 3, ""), (True, 2, ""), (False, 3, "low"), (False, 3, "high")):
        Q, K = (r.normal(size=(10, 5)).astype(np.float32) for _ in range(2))
        low = kind == "low"
        if low:  # every score near -1000: exp(score) is 0 even in float64, exp(score - its row's maximum) is not
            Q, K = (0.1 * Q - 30).astype(np.float32), (0.1 * K + 15).astype(np.float32)
        if kind == "high":  # key 8 scores near 2200, the rest near 0: a shift below each block's maximum overflows
            Q[:, 0], K, K[8] = Q[:, 0] + 50, 0.1 * K, [100, 0, 0, 0, 0]
        V = np.ones((10, 1), dtype=np.float32)
        what = _label(Q.shape, K.shape, block_size, causal) + " with V = ones" + (", every score near -1000" * low) + (
            ", key 8 scoring near 2000 above the rest" * (kind == "high"))
        out = _call(impl, Q, K, V, block_size, causal, what)
        checks.expect_shape(out, (10, 1), what)
        blockwise.name_nan_mask(impl, out, what, Q, K, V, block_size, causal)
        if low and not np.isfinite(out).all():  # right on the ordinary scores just before
            blockwise.name_rescale_ratio(impl, what, Q, K, V, block_size, causal)  # nan far above 0 too: not the start
            raise CaseFailure(f"{what} gives nan (0 / 0), though it is right on ordinary scores: every weight "
                              "exp(score - shift) underflowed to 0, so the shift was not the row's largest score; "
                              "the running maximum starts at -inf (not 0) and takes the scores' own maximum")
        atol = 1e-3 if low else 1e-5  # float32 scores near -1000 carry errors near 1e-4, but no nan
        if not np.allclose(out, 1.0, atol=atol, rtol=0):
            _name_known(out, what, Q, K, V, block_size, causal, impl=impl)
        checks.expect_finite(out, what, NAN_HINT)
        worst = float(out.flat[int(np.argmax(abs(out - 1)))])
        if abs(worst - 1) > atol:
            raise CaseFailure(f"{what} should be 1 for every query (its weights sum to 1) but reaches "
                              f"{worst:.4g}: divide by the running sum, and rescale the running sum whenever "
                              "the maximum grows")


@case(STEP, "property")
def test_causal(impl):
    """with causal=True, changing the keys and values from position t on never changes earlier outputs"""
    r = rng(1515)
    Q, K, V = (r.normal(size=(2, 10, 4)).astype(np.float32) for _ in range(3))
    what = _label(Q.shape, K.shape, 3, True)
    out = _call(impl, Q, K, V, 3, True, what)
    checks.expect_shape(out, (2, 10, 4), what)
    blockwise.name_nan_mask(impl, out, what, Q, K, V, 3, True)
    if not np.isfinite(out).all():
        _name_known(out, what, Q, K, V, 3, True, impl=impl)
    checks.expect_finite(out, what, NAN_HINT)
    for t in (1, 4, 9):
        K2, V2 = K.copy(), V.copy()
        K2[:, t:] = r.normal(size=K2[:, t:].shape)
        V2[:, t:] = r.normal(size=V2[:, t:].shape)
        after = checks.to_array(impl.online_softmax_attention(Q, K2, V2, block_size=3, causal=True), what)
        if after.shape != out.shape or not np.allclose(after[:, :t], out[:, :t], atol=1e-5):
            not_causal = CaseFailure(f"{what} is not causal: changing the keys and values from position {t} on changed "
                                     "the outputs of earlier queries; query i may only attend to keys 0..i")
            # a known mistake that breaks causality: its cause, after what was seen
            _name_known(out, str(not_causal).partition(";")[0], Q, K, V, 3, True, impl=impl)
            raise not_causal


@case(STEP, "property", weight=0.5)
def test_inputs_unchanged(impl):
    """leaves Q, K and V unchanged"""
    r = rng(1516)
    arrays = [r.normal(size=(7, 4)).astype(np.float32) for _ in range(3)]
    try:
        checks.expect_inputs_unchanged(impl, "online_softmax_attention", arrays, "QKV", more=(3, True),
                                       hints=dict.fromkeys("QKV", "use out-of-place operations"))
    except RemoteError as error:
        _explain_raised(impl, error, _label((7, 4), (7, 4), 3, True), *arrays, 3, True)
        raise


LONG = 3072  # tokens: one float32 (n, n) array of scores is 36 MiB


def _check_peak(impl, causal):
    r = rng(1517 + causal)
    Q, K, V = (r.normal(size=(LONG, 32)).astype(np.float32) for _ in range(3))
    what = _label(Q.shape, K.shape, 64, causal)
    try:
        out, peak = impl.measure_peak("online_softmax_attention", Q, K, V, 64, causal)
    except RemoteError as error:  # explained on the first 150 tokens: a shape mistake fits there as here
        _explain_raised(impl, error, what, Q[:150], K[:150], V[:150], 64, causal)
        raise
    out = checks.to_array(out, what)
    checks.expect_shape(out, (LONG, 32), what)
    # Every known mistake is modelled on the rows the checks read only: a model of all 3072 queries
    # costs about 40 ms, and a ladder of twenty of them made each mistaken notebook seconds slower.
    rows = np.array([0, 1, 777, LONG - 1])
    blockwise.name_nan_mask(impl, out, what, Q, K, V, 64, causal)
    if not np.isfinite(out).all():
        broken = np.flatnonzero(~np.isfinite(out).all(axis=-1))[:4]  # rows with nan, for the nan's cause
        seen = np.union1d(rows, broken)
        _name_known(out[seen], what, Q[seen], K, V, 64, causal, positions=seen, impl=impl)
    checks.expect_finite(out, what, NAN_HINT)
    # The reference peaks near 5 MiB here; any (n_q, n_k) array of float32 scores is 36 MiB.
    # Room for a whole (n_q, n_k) mask of True/False, but not for whole float32 scores: measured on half the tokens
    if causal and impl.peaks_are_separate and LONG * LONG < peak < LONG * LONG * 4:
        half = LONG // 2
        with contextlib.suppress(RemoteError):  # a call that fails there fails the cases that read its values
            _, half_peak = impl.measure_peak("online_softmax_attention", Q[:half], K[:half], V[:half], 64, True)
            if (failure := peak_memory.grows_as_the_square(what, peak, half_peak, LONG)) is not None:
                raise failure
    limit = LONG * LONG * 4 // 2
    if peak > limit:
        raise peak_memory.held_too_much(what, peak, LONG)
    # Spot checks against PyTorch on a few rows (the full answer is checked elsewhere).
    q, k, v = (torch.tensor(a, dtype=torch.float64) for a in (Q, K, V))
    scores = q[rows] @ k.T / np.sqrt(32.0)
    if causal:
        scores = scores.masked_fill(torch.arange(LONG)[None, :] > torch.as_tensor(rows)[:, None], float("-inf"))
    want = (torch.softmax(scores, dim=-1) @ v).numpy()
    checks.expect_close(out[rows], want, what + f", rows 0, 1, 777 and {LONG - 1},", atol=1e-4, rtol=1e-3,
                        finite_hint=NAN_HINT, symptoms=lambda: _symptoms(Q[rows], K, V, 64, causal, rows, impl))


@case(STEP, "property", weight=7, timeout=15)
def test_memory_far_below_the_score_matrix(impl):
    """on 3072 tokens, holds far less memory at once than one (n_q, n_k) array of scores"""
    _check_peak(impl, False)


@case(STEP, "property", weight=15, timeout=15)
def test_causal_memory_far_below_the_score_matrix(impl):
    """with causal=True on 3072 tokens, holds far less memory at once than one (n_q, n_k) array (no full mask)"""
    _check_peak(impl, True)
