"""Hidden suite of `masked_softmax` (assignment 03)."""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import checks, differences, masked_batches, shifts
from autograder.suites.toolkit.cases import causal_blocked as _causal
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng
from autograder.suites.toolkit.model import hand_written_softmax_mistakes
from autograder.suites.toolkit.properties import backward_error_line

STEP = "masked_softmax"


def _not_log_weights(weights, what):
    """Log-probabilities hold -inf where the weights hold 0, which no ladder can match (-inf - -inf is
    nan): named by their own test, exp of each row sums to 1."""
    if not torch.is_tensor(weights) or not weights.is_floating_point():
        return
    logs = weights.detach().double()
    if bool(torch.isneginf(logs).any()) and bool(torch.allclose(logs.exp().sum(-1), torch.ones(()).double())):
        raise CaseFailure(f"{what} holds log-probabilities (log_softmax): -inf where a weight is 0 and the "
                          "logarithm of every other weight; the weights are the probabilities themselves")


test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k), examine=_not_log_weights)


def _random_mask(r, shape):
    """Random blocked entries, but never a whole row (its softmax would be 0/0)."""
    mask = r.random(size=shape) < 0.4
    first = r.integers(0, shape[-1], size=shape[:-1])
    np.put_along_axis(mask, first[..., None], False, axis=-1)
    return mask


def stored_inputs():
    r = rng(1401)
    return [
        dict(label="(6, 6) scores with a causal mask", scores=r.normal(size=(6, 6)).astype(np.float32),
             mask=_causal(6)),
        dict(label="(2, 3, 5, 5) scores with one (5, 5) causal mask for every batch item and head",
             scores=(2 * r.normal(size=(2, 3, 5, 5))).astype(np.float32), mask=_causal(5)),
        dict(label="(4, 7) scores with a random mask", scores=r.normal(size=(4, 7)).astype(np.float32),
             mask=_random_mask(r, (4, 7))),
        dict(label="(2, 4, 4) scores with a (2, 4, 4) random mask",
             scores=r.normal(size=(2, 4, 4)).astype(np.float32), mask=_random_mask(r, (2, 4, 4))),
        dict(label="float64 scores with a causal mask", scores=r.normal(size=(5, 5)), mask=_causal(5)),
        dict(label="large scores (rows near +1000 and -1000) with a causal mask",
             scores=(np.array([[1000.0], [1000.0], [-1000.0], [-1000.0]]) + 3 * r.normal(size=(4, 4)))
             .astype(np.float32), mask=_causal(4)),
        dict(label="a mask that blocks nothing", scores=r.normal(size=(3, 3)).astype(np.float32),
             mask=np.zeros((3, 3), dtype=bool)),
        dict(label="a single entry", scores=np.array([[0.7]], dtype=np.float32), mask=np.zeros((1, 1), bool)),
    ]


def _weights(impl, scores, mask, what):
    """impl.masked_softmax(scores, mask), with the mistakes that only a retry or the raw value shows
    named: code written for fewer axes than the scores have, and log-probabilities."""
    try:
        weights = impl.masked_softmax(scores, mask)
    except RemoteError as error:
        if scores.dim() <= 2:
            raise
        masked_batches.explain_batch_raise(impl, error, scores, mask, what, lambda one, one_mask: stored_symptoms(
            dict(scores=one, mask=one_mask), 0))
    _not_log_weights(weights, what)
    return weights


def apply(impl, record):
    return _weights(impl, torch.tensor(record["scores"]), torch.tensor(record["mask"]), record["label"])


def _exp(s):
    with np.errstate(over="ignore"):
        return np.exp(s)


def _softmax(s, axis=-1):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    s, m = record["scores"].astype(np.float64), np.broadcast_to(record["mask"], record["scores"].shape)
    return [*[((lambda fill=fill: _softmax(np.where(m, fill, s))), "blocked scores are filled with a finite value (0?) "
               "instead of -inf, so blocked entries still get weight") for fill in (0.0, -1.0, -10.0, -1e2, -1e3, -1e4)],
            (lambda: _softmax(np.where(m, s.min(), s)), FILLED_WITH_MIN),
            *[(lambda below=below: _softmax(np.where(m, s.min() - below, s)), FILLED_BELOW_MIN) for below in (1.0, 10.0)],
            (lambda: _softmax(s) * ~m, checks.one_or_all([AFTER_THE_SOFTMAX, SUMMED_UNMASKED])),
            (lambda: _softmax(np.where(m, 0.0, s)) * ~m, ZERO_FILL_THEN_ZEROED),
            (lambda: _softmax(s), "the mask is ignored: blocked entries must get weight 0"),
            *[(lambda numerator=numerator: numerator() / numerator().sum(axis=-1), NO_KEEPDIM)
              for numerator in (lambda: np.exp(np.where(m, -np.inf, s)), lambda: _softmax(s) * ~m,
                                lambda: np.exp(np.where(m, -np.inf, s - s.max(axis=-1, keepdims=True))))],
            # the row maximum taken without keepdim: column j is shifted by row j's maximum
            *[(lambda keep=keep: _normalised(np.exp(s - s.max(axis=-1)) * ~m, keep), NO_KEEPDIM)
              for keep in (True, False)],
            # by hand from the masked scores: their row maximum, their row sum, or both, taken without keepdim
            *[(lambda keep_max=keep_max, keep_sum=keep_sum: _by_hand(np.where(m, -np.inf, s), keep_max, keep_sum),
               NO_KEEPDIM) for keep_max, keep_sum in ((False, True), (True, False), (False, False))],
            (lambda: _softmax(np.where(~m, -np.inf, s)), "the mask is inverted: True means BLOCKED "
             "(the convention of masked_fill and nn.MultiheadAttention)"),
            # the masked softmax normalised over dim=-2, in one go or by renormalising after the mask
            *[(candidate, "the softmax runs over the wrong dimension: normalise over the last one (the keys)")
              for candidate in (lambda: _softmax(np.where(m, -np.inf, s), axis=-2),
                                lambda: _over_queries(_softmax(s) * ~m))],
            (lambda: _softmax(np.where(np.swapaxes(m, -1, -2), -np.inf, s)), TRANSPOSED),
            *[((lambda axis=axis: _softmax(np.where(m, -np.inf, s), axis=axis)), f"the softmax runs over dim "
               f"{axis}, not over the keys: normalise over the last dimension, whatever axes come before it"
               + (_implicit_dim(axis, s.ndim) if axis == (0 if s.ndim == 3 else 1) else ""))
              for axis in range(s.ndim - 2)],
            (lambda: _softmax(np.where(m, np.inf, s)), "blocked scores are filled with +inf, the largest "
             "value, so a row with a blocked entry becomes inf / inf = nan: blocked scores get -inf"),
            (lambda: _softmax(np.where(m, -np.inf, s) / np.sqrt(s.shape[-1])), SCALED_INSIDE),
            (lambda: _softmax(np.where(m, -np.inf, s) / s.shape[-1]), SCALED_INSIDE),
            # all nan: only where nothing overflows or underflows could a right fill give numbers
            *([(lambda: _softmax(s - np.where(m, np.inf, np.nan)), "subtracting mask * inf makes nan wherever "
                "the mask is False (0 * inf is nan), so every row is nan: the open scores must stay as they are")]
              if abs(s).max() < 50 else []),
            # a softmax written by hand, of the masked scores (where -inf gives weight 0 to most of them)
            *hand_written_softmax_mistakes(np.where(m, -np.inf, s)),
            (lambda: _exp(np.where(m, -np.inf, s)) / _exp(np.where(m, -np.inf, s)).sum(), "the exponentials are "
             "divided by the sum of every entry (.sum() with no dim), not each row by its own sum: sum over the "
             "last dimension with keepdim=True"),
            (lambda: np.where(m, -np.inf, s), "it returns the masked scores themselves: the softmax is never "
             "applied to them"),
            (lambda: _exp(np.where(m, -np.inf, s)), UNNORMALISED),
            # the whole tensor's maximum, of the scores or of the masked scores: right until a row lies far below it
            *[(lambda top=top: _normalised(_exp(np.where(m, -np.inf, s) - top), True), GLOBAL_MAX)
              for top in (s.max(), np.where(m, -np.inf, s).max())],
            (lambda: _softmax(np.where(np.triu(np.ones(s.shape[-2:], dtype=bool), 1), -np.inf, s)), OWN_CAUSAL_MASK),
            *_mask_axis_added(s, record["mask"]), *_mask_axis_at_1(s, record["mask"])]


AFTER_THE_SOFTMAX = ("the mask is applied after the softmax without renormalising, so rows no longer sum to 1: fill "
                     "blocked scores with -inf before the softmax")
# exp(masked scores) / exp(scores).sum(-1): the same weights, each row divided by the sum of all its exponentials
SUMMED_UNMASKED = ("the exponentials of the masked scores are divided by the sum of the unmasked scores' "
                   "exponentials, blocked ones included, so rows no longer sum to 1: both come from the masked scores")

# masked_fill(mask, 0) before the softmax, masked_fill(mask, 0) again after it: the open weights keep the share
# the blocked keys' exp(0) took from them
ZERO_FILL_THEN_ZEROED = ("blocked scores are filled with 0 before the softmax (a score of 0 still gets weight) and "
                         "their weights zeroed after it, without renormalising: the open keys keep only what the "
                         "blocked ones left them, so rows sum to less than 1; -inf before the softmax does both")


MASK_AXIS_ADDED = ("the weights have an axis more than the scores: the mask got an extra leading axis (mask[None], "
                   "unsqueeze(0)) and broadcasting adds it to the result; a (T, T) mask already broadcasts over the "
                   "leading axes of a batch, so use it as given")


def _mask_axis_added(s, mask):
    """(candidate, symptom) of the mask given a leading axis of size 1, where that adds an axis to the weights:
    the right weights with that axis (a mask with fewer axes than the scores broadcasts as before)."""
    shape = np.broadcast_shapes(s.shape, (1, *np.shape(mask)))
    if shape == s.shape:
        return []
    return [(lambda: np.broadcast_to(_softmax(np.where(np.broadcast_to(mask, s.shape), -np.inf, s)), shape),
             MASK_AXIS_ADDED)]


def _implicit_dim(axis, ndim):
    """What the dim a softmax given no dim falls back on adds to the wrong dim's message: torch picks dim 0 of 3-d
    input and dim 1 of 4-d input (right only for 2-d scores, as most of the notes' are)."""
    return (f" (dim={axis}, or no dim at all: F.softmax and nn.Softmax given none pick dim {axis} for {ndim}-d "
            "scores, with only a warning, and dim 1, the last, for one matrix; give dim=-1)")


MASK_AXIS_AT_1 = ("the weights have an axis more than the scores: the mask got a new axis of size 1 at dim 1 "
                  "(mask.unsqueeze(1), mask[:, None]), the place of the heads' axis in a batch of heads, so each of "
                  "its rows blocks every query of a score matrix; the mask lines up with the scores' last axes as it "
                  "is, so use it as given")


def _mask_axis_at_1(s, mask):
    """(candidate, symptom) of the mask given an axis of size 1 at dim 1, where that broadcasts against the scores
    into more axes than they have (where it does not broadcast, the code raises, and a retry on one matrix of the
    scores shows this)."""
    mask = np.expand_dims(mask, 1)
    try:
        shape = np.broadcast_shapes(s.shape, mask.shape)
    except ValueError:
        return []
    if len(shape) == s.ndim:
        return []
    return [(lambda: _softmax(np.where(np.broadcast_to(mask, shape), -np.inf, np.broadcast_to(s, shape))),
             MASK_AXIS_AT_1)]


# The smallest score is a finite fill like 0 or -1e3, but one the scores choose: named apart, since it looks like -inf.
FILLED_WITH_MIN = ("blocked scores are filled with the smallest score (scores.min()), which is finite, so blocked "
                   "entries still get weight: fill them with float('-inf'), whose exponential is exactly 0")
FILLED_BELOW_MIN = ("blocked scores are filled with a number a little below the smallest score (scores.min() - 1, "
                    "say), which is finite, so blocked entries still get weight: only -inf gives them exactly 0")
GLOBAL_MAX = ("the maximum subtracted is the whole tensor's (.max() with no dim), not each row's: a row whose scores "
              "lie far below the largest one underflows to 0 / 0 = nan; shift each row by its own maximum "
              "(dim=-1, keepdim=True), or let torch.softmax do it")
UNNORMALISED = ("the weights are the exponentials of the masked scores, never divided by their row's sum: blocked "
                "entries are 0 as they should be, but each row must then be normalised to sum to 1 (torch.softmax "
                "does both)")
NO_KEEPDIM = ("the maximum or the sum taken along each row loses its axis (no keepdim=True), so it lines up with "
              "the last axis instead: entry (i, j) gets row j's value, not row i's (and a batch does not fit)")


def _over_queries(weights):
    return weights / weights.sum(axis=-2, keepdims=True)


def _normalised(e, keepdims):
    return e / e.sum(axis=-1, keepdims=keepdims)


def _by_hand(masked, keep_max, keep_sum):
    """exp(masked - row max) / row sum, each taken with or without keepdims."""
    return _normalised(_exp(masked - masked.max(axis=-1, keepdims=keep_max)), keep_sum)
SCALED_INSIDE = ("the scores are scaled again inside masked_softmax: it takes scores already scaled, and only "
                 "masks and normalises them")


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference for causal, random and broadcast masks, float64 and large scores"""

    try:
        check_stored(impl, STEP, apply, "masked_softmax(scores, mask)", symptoms=stored_symptoms)
    except CaseFailure as failure:
        if str(failure).endswith("contains nan"):
            raise CaseFailure(f"{failure}: {_nan_hint(impl)}") from None
        raise


# Right wherever the mask given is causal, as in most of the course: only another mask shows it.
OWN_CAUSAL_MASK = ("the weights block every later key (a causal mask of its own) instead of the entries the "
                   "mask argument blocks: apply the mask it is given, which may block any entries")
TRANSPOSED = ("the mask is used transposed: mask[i, j] blocks query i from key j, and the scores "
              "are (queries, keys), so apply it as given")
FINITE_FILL_LEAK = 0.01  # the most weight a finite fill value below the row's scores lets through here


_NAN_HINT = ("nan means a row had every entry blocked (0/0; is the mask inverted? True means BLOCKED) "
             "or exp overflowed (use torch.softmax, or subtract the row maximum)")


def _nan_hint(impl):
    """Why the weights hold nan: the position of the row maximum subtracted, where a probe shows it, else _NAN_HINT."""
    def softmax_of(row):
        try:
            out = impl.masked_softmax(torch.tensor(row[None]), torch.zeros(1, len(row), dtype=torch.bool))
            return checks.to_array(out, "masked_softmax")[0]
        except Exception:  # noqa: BLE001 - a probe asks only what these scores give
            return None
    return shifts.SHIFT_BY_POSITION if shifts.shifts_by_position(softmax_of) else _NAN_HINT


@case(STEP, "property")
def test_blocked_entries_exactly_zero(impl):
    """blocked entries get weight exactly 0 and rows sum to 1, also for very large or very negative scores"""
    r = rng(1402)
    mask = torch.tensor(_causal(5))
    # near -950 a finite fill of -1e3 lies only ~50 below the scores: its weight is tiny but not 0
    for shift, label in ((0.0, "scores near 0"), (-500.0, "scores near -500"), (1e4, "scores near 1e4"),
                         (-950.0, "scores near -950")):
        scores = torch.tensor(shift + r.normal(size=(2, 5, 5)), dtype=torch.float32)
        what = f"masked_softmax of {label}"
        out = _weights(impl, scores, mask, what)
        out = checks.to_array(out, what)
        checks.expect_shape(out, (2, 5, 5), what)
        sums = out.sum(axis=-1)
        wrong = not np.isfinite(out).all() or bool((out[..., _causal(5)] != 0).any()) or bool(
            (abs(sums - 1) > 1e-5).any())
        # some mistakes are harmless on some of these scores (a fill of 0 near 1e4): only a wrong output is named,
        # and only by a mistake whose output is not within this tolerance of the right one (a tiny epsilon is)
        right = _softmax(np.where(_causal(5), -np.inf, scores.numpy().astype(np.float64)))
        known = [(candidate, why) for candidate, why in stored_symptoms(dict(scores=scores.numpy(), mask=_causal(5)), 0)
                 if checks.named_mistake(right, [(candidate, why)], atol=1e-4) is None]
        named = wrong and checks.named_mistake(out, known, atol=1e-4)
        if named:
            raise CaseFailure(f"{what}: {named}")
        checks.expect_finite(out, what, _nan_hint(impl))
        if bool((out[..., _causal(5)] != 0).any()):
            largest = float(abs(out[..., _causal(5)]).max())
            if largest > FINITE_FILL_LEAK:  # more than a finite fill far below the scores lets through
                checks.expect_close(out, right, what, atol=1e-4)  # the kind of mistake the value shows, if any
                raise CaseFailure(f"{what}: blocked entries get weight up to {largest:.3g}, and {checks.UNNAMED}")
            raise CaseFailure(f"{what}: blocked entries get weight {largest:.3g}, "
                              "not exactly 0; fill them with float('-inf') (a finite fill value like "
                              "-1e3 fails when the scores are that small too)")
        checks.expect_rows_sum_to_one(out, what)


@case(STEP, "oracle")
def test_matches_scaled_dot_product_attention(impl):
    """weights @ V agrees with F.scaled_dot_product_attention (attn_mask = ~mask), also over fewer keys"""
    r = rng(1403)
    q, k, v = (torch.tensor(r.normal(size=(2, 3, 6, 4)), dtype=torch.float32) for _ in range(3))
    mask = torch.tensor(_random_mask(r, (6, 6)))
    halved = q @ k.transpose(-2, -1) / 2.0
    weights = _weights(impl, halved, mask, "(2, 3, 6, 6) scores with one (6, 6) mask")
    if weights is None:
        raise checks.returned_none("masked_softmax of (2, 3, 6, 6) scores")
    if not torch.is_tensor(weights):
        raise CaseFailure(f"masked_softmax returned a {type(weights).__name__}; return a torch tensor")
    if weights.dtype != halved.dtype:
        raise CaseFailure(f"masked_softmax returns {weights.dtype} weights for {halved.dtype} scores: keep the "
                          "scores' dtype")
    checks.expect_shape(weights, (2, 3, 6, 6), "masked_softmax of (2, 3, 6, 6) scores with a (6, 6) mask")
    # its attn_mask's True means attend, the opposite of ours
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
    known = stored_symptoms({"scores": halved.numpy(), "mask": mask.numpy()}, 0)  # the kernel got a copy
    # the weights first: a wrong value's kind shows on them, and a product with v hides it
    checks.expect_close(weights, torch.softmax(halved.masked_fill(mask, float("-inf")), dim=-1),
                        "masked_softmax(q kᵀ / 2, mask)", symptoms=known)
    checks.expect_close(weights @ v, want, "masked_softmax(q kᵀ / 2, mask) @ v compared with "
                        "F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)",
                        symptoms=[(lambda candidate=candidate: candidate() @ v.numpy(), why)
                                  for candidate, why in known])
    # in float64, as the notebook's check asks: the weights keep the scores' dtype there too
    scores = (q @ k.transpose(-2, -1)).double()
    got = impl.masked_softmax(scores, torch.zeros(6, 6, dtype=torch.bool))
    if torch.is_tensor(got) and got.dtype != scores.dtype:
        raise CaseFailure(f"masked_softmax returns {got.dtype} weights for float64 scores: the weights take the "
                          "dtype of the scores (make no tensor of a fixed dtype, and give torch.softmax no dtype)")
    checks.expect_close(got, torch.softmax(scores, dim=-1),
                        "masked_softmax of float64 scores with nothing blocked compared with torch.softmax")
    _check_more_queries_than_keys(impl, r)


def _check_more_queries_than_keys(impl, r):
    """Scores of 7 queries over 5 keys (queries over a shorter memory, as in cross-attention) with a (7, 5)
    mask: code that cuts the mask as the chapter cuts its buffer, to [:T_k, :T_k] (or [:T, :T] with T the
    keys' count), drops the last queries' rows and raises; it is named where it is right, on as many
    queries as keys."""
    scores = torch.tensor(r.normal(size=(2, 7, 5)), dtype=torch.float32)
    mask = torch.tensor(_random_mask(r, (7, 5)))
    what = "(2, 7, 5) scores (7 queries over 5 keys) with a (7, 5) mask"
    right = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    try:
        weights = impl.masked_softmax(scores.clone(), mask.clone())
    except RemoteError as error:
        try:
            square = impl.masked_softmax(scores[:, :5].clone(), mask[:5].clone())
            fits = np.allclose(checks.to_array(square, "masked_softmax"), right[:, :5].numpy(), atol=1e-5)
        except Exception:  # noqa: BLE001 - only asks whether as many queries as keys work
            fits = False
        if fits:
            raise CaseFailure(f"masked_softmax raised {error.type_name} on {what}, and is right on 5 queries over "
                              "the same 5 keys: is the mask cut to the keys' count on both axes (as the chapter "
                              "cuts its (context_length, context_length) buffer)? Rows are queries, columns "
                              "keys, and they need not be as many") from None
        raise
    checks.expect_close(weights, right, f"masked_softmax of {what}",
                        symptoms=stored_symptoms({"scores": scores.numpy(), "mask": mask.numpy()}, 0))


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves scores and mask unchanged (no in-place masked_fill_)"""
    r = rng(1404)
    scores = torch.tensor(r.normal(size=(5, 5)), dtype=torch.float32)
    mask = torch.tensor(_causal(5))
    checks.expect_inputs_unchanged(impl, "masked_softmax", [scores, mask], ["scores", "mask"],
                                   hints={"scores": lambda after: "use masked_fill, not the in-place masked_fill_"
                                          if np.isneginf(after).any() else None})  # what masked_fill_ leaves


# The layers of 03-05 train through these weights, so autograd must reach the scores; values alone cannot show it.
GRADIENT_CUT = ("no gradient reaches the scores: the weights are cut off from autograd (.detach(), .data, "
                "torch.no_grad() or values rebuilt from NumPy), so a layer built on masked_softmax could not train its projections; "
                "stay with torch operations from the scores to the weights")
THROUGH_NUMPY = ("masked_softmax raises when the scores need gradients, as they do inside a layer being "
                 "trained: it converts them to NumPy, which autograd cannot follow; stay with torch "
                 "operations from the scores to the weights")
SCORES_CHANGED_IN_PLACE = ("backpropagating through masked_softmax failed: the scores, or a step made from them before "
                           "the softmax (the masked scores, a shift), were changed in place (-=, masked_fill_) after "
                           "autograd kept them to compute a gradient; make each change out of place")
WEIGHTS_CHANGED_IN_PLACE = ("backpropagating through masked_softmax failed: the softmax's output, which autograd "
                            "keeps to compute the gradient, was changed in place afterwards; make each change "
                            "out of place, or mask before the softmax")


@case(STEP, "property")
def test_gradients_reach_scores(impl):
    """gradients flow from the weights back to the scores (the layers built on it train through it)"""
    r = rng(1405)
    scores = torch.tensor(r.normal(size=(2, 5, 5)), dtype=torch.float32)
    mask = torch.tensor(_causal(5))
    weights = _weights(impl, scores.clone(), mask, "(2, 5, 5) scores with one (5, 5) causal mask")
    if not torch.is_tensor(weights):
        raise CaseFailure(f"masked_softmax returned a {type(weights).__name__}, which carries no gradient; "
                          "return a torch tensor")
    cotangent = r.normal(size=(2, 5, 5)).astype(np.float32)
    try:
        report = impl.masked_softmax.backward([scores, mask], cotangent, ["0"])
    except RemoteError as error:
        if "numpy()" in str(error) and "requires grad" in str(error):  # torch's words for it
            raise CaseFailure(THROUGH_NUMPY) from None
        raise
    if not report.get("differentiable") or report.get("grads", {}).get("0") is None and "backward_error" not in report:
        raise CaseFailure(GRADIENT_CUT)
    if "backward_error" in report:
        said = str(report["backward_error"])
        if "inplace" in said or "in-place operation" in said:  # autograd's words for a saved tensor changed in place
            # which one: autograd names the operation that made it, the softmax (or exp) for the weights' side
            weights_side = any(f"output 0 of {op}" in said for op in ("Softmax", "Exp"))
            raise CaseFailure(WEIGHTS_CHANGED_IN_PLACE if weights_side else SCORES_CHANGED_IN_PLACE)
        first = backward_error_line(report["backward_error"])
        raise CaseFailure(f"backpropagating through masked_softmax failed ({first}), and {checks.UNNAMED}")
    leaf = scores.clone().requires_grad_()
    (torch.softmax(leaf.masked_fill(mask, float("-inf")), dim=-1) * torch.from_numpy(cotangent)).sum().backward()
    what = "the gradient of masked_softmax's weights with respect to (2, 5, 5) scores"
    try:
        checks.expect_close(report["grads"]["0"], leaf.grad, what)
    except CaseFailure as failure:
        if checks.UNNAMED not in str(failure):
            raise
        # a wrong gradient of wrong weights: what is wrong with the weights is the cause
        actual = checks.to_array(weights, "masked_softmax")
        right = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1).double().numpy()
        symptom = None if actual.shape != right.shape or np.allclose(actual, right, atol=1e-5) else (
            checks.named_mistake(actual, stored_symptoms(dict(scores=scores.numpy(), mask=mask.numpy()), 0))
            or differences.pattern_of(actual, right, 1e-5, 1e-4))
        if symptom is None:
            raise
        raise CaseFailure(f"{what} is wrong, as the weights themselves are: {symptom}") from None
