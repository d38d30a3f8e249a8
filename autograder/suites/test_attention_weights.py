"""Hidden suite of `attention_weights` (assignment 01)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import batches, checks, shifts
from autograder.suites.toolkit.cases import check_stored, explain_batch_error, notes_cases, rng, rounded
from autograder.suites.toolkit.model import exponentials, hand_written_softmax_mistakes

STEP = "attention_weights"
test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k))


def stored_inputs():
    r = rng(601)
    return [
        dict(label="a (5, 5) score matrix", scores=r.normal(size=(5, 5))),
        dict(label="a (1, 1) score matrix", scores=r.normal(size=(1, 1))),
        dict(label="a batch of shape (3, 4, 4)", scores=r.normal(size=(3, 4, 4))),
        dict(label="float32 scores", scores=r.normal(size=(6, 6)).astype(np.float32), atol=1e-4),
        # past ~709 exp overflows float64: a softmax written without the max shift gives nan here
        dict(label="large scores (up to about a thousand)", scores=500 * r.normal(size=(4, 4))),
    ]


def apply(impl, record):
    """attention_weights of the record's scores; an error on a batch where its first item goes through is named as
    code written for one matrix (a transpose that reverses every axis, say)."""
    scores = record["scores"]
    try:
        return impl.attention_weights(scores)
    except RemoteError as error:
        if np.ndim(scores) > 2:
            explain_batch_error(STEP, error, record["label"], lambda: impl.attention_weights(scores[0]))
        raise


def overflow_hint(record):
    """Why weights turn nan on `record`'s scores, where exp of the largest overflows (inf / inf) or every exp of
    a row underflows to 0 (0 / 0); nothing on smaller scores, where the same nan has another cause."""
    if np.abs(record["scores"]).max() < shifts.OVERFLOW:
        return ""
    return "exp overflows on scores this large: subtract each row's maximum before exponentiating"


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


COLUMNS = "normalises columns; each row (one query) must sum to 1"
TRANSPOSED = ("returns the row softmax transposed, so each column sums to 1: row i of the weights belongs to query i, "
              "as row i of the scores does")
# The transpose of the row softmax of symmetric scores (X Xᵀ, as in the notes) is their column softmax.
COLUMNS_OR_TRANSPOSED = ("normalises columns, or transposes the row softmax (on symmetric scores the two agree); "
                         "each row (one query) must sum to 1")


NO_KEEPDIMS = ("reduces each row (its maximum, or the sum it divides by) without keepdims=True: the n row results then "
               "broadcast along the last axis, so entry (i, j) meets row j's, not row i's; keep the reduced axis")


SOFTMAX_TWICE = ("applies the softmax twice: the second takes the weights (each row summing to 1 already) as scores "
                 "and pulls every row towards uniform; take the softmax of the scores once")


COLUMN_MAX = ("subtracts each column's maximum (axis=0), not each row's: a shift cancels in a row's softmax only where "
              "it is one number for the whole row; take the maximum along the last axis (axis=-1, keepdims=True)")
# On symmetric scores (the notes' X Xᵀ) row j's maximum is column j's: the two mistakes give one value.
MAX_UNKEPT_OR_COLUMN_MAX = ("takes each row's maximum without keepdims=True, or subtracts each column's maximum "
                            "(axis=0): on symmetric scores the two agree, and neither shift is one number for the "
                            "whole row, so it no longer cancels in the softmax; keep each row's maximum "
                            "(axis=-1, keepdims=True)")


# Without the division each row's weights are its exponentials, a factor of their own from the right row.
EXPONENTIALS_ONLY = ("returns the exponentials without dividing them by their row's sum: the softmax normalises "
                     "each row, so that its weights sum to 1")


def _unnormalised(s):
    """The exponentials of a softmax over the last axis never divided by their sum, with or without the shift."""
    def unshifted():
        with np.errstate(over="ignore"):
            return np.exp(s)

    return [(unshifted, EXPONENTIALS_ONLY), (lambda: exponentials(s), EXPONENTIALS_ONLY)]


# exp(s - max) / sum(exp(s)): the numerator shifted and the sum not, so each row comes out exp(-its maximum) times
# the right one (the softmax suite names the converse, the sum shifted alone).
SHIFTED_NUMERATOR_ONLY = ("shifts the exponentials in the numerator but not in the sum (np.exp(s - max) / "
                          "sum(np.exp(s))): each row comes out exp(-its maximum) times too small and no longer sums "
                          "to 1; the shift cancels only where both are shifted by the same maximum")


def _shifted_numerator_only(s):
    """(candidate, SHIFTED_NUMERATOR_ONLY): each row's maximum subtracted in the numerator alone."""
    def shifted():
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(s - s.max(axis=-1, keepdims=True)) / np.exp(s).sum(axis=-1, keepdims=True)

    return (shifted, SHIFTED_NUMERATOR_ONLY)


# e = exp(s - each row's max); e / e.sum(axis=0): the shift is right, the sum down the columns (the batch's axis on
# a batch), so no row sums to 1.
ROW_SHIFT_COLUMN_SUM = ("shifts by each row's maximum but divides by the sums down the columns (e.sum(axis=0)): "
                        "the shift and the sum both belong to one row, one query, along the last axis (axis=-1, "
                        "keepdims=True), so that each row's weights sum to 1")


def _row_shifted_column_summed(s):
    """The row-shifted exponentials divided by their sums down the columns (axis -2, and axis 0 as written, the
    batch's on a batch)."""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return [(lambda: e / e.sum(axis=-2, keepdims=True), ROW_SHIFT_COLUMN_SUM),
            (lambda: e / e.sum(axis=0, keepdims=True), ROW_SHIFT_COLUMN_SUM)]


def _shifted_by_columns(s):
    """The row softmax shifted by each column's maximum (axis 0 and axis -2, one on a single matrix)."""
    def shifted(axis):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    return [(lambda: shifted(-2), COLUMN_MAX), (lambda: shifted(0), COLUMN_MAX)]


def _without_keepdims(s, symmetric):
    """The row softmax with its max or sum taken without keepdims: it runs only where the rows are as long as
    there are rows, and there lines row j's result up with column j (on symmetric scores, the max's is a shift by
    the columns' maxima too)."""
    def shift_unkept():
        e = np.exp(s - s.max(axis=-1))
        return e / e.sum(axis=-1, keepdims=True)

    def sum_unkept():
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1)

    return [(shift_unkept, MAX_UNKEPT_OR_COLUMN_MAX if symmetric else NO_KEEPDIMS), (sum_unkept, NO_KEEPDIMS)]


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    s = np.asarray(record["scores"], dtype=float)
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    whole = np.exp(s - s.max())  # one sum for everything: `e / e.sum()`
    matrices = np.exp(s - s.max(axis=(-2, -1), keepdims=True))
    at_once = "normalises the whole score matrix at once; each row (one query) must sum to 1 on its own"
    r = np.exp(-(s - s.min(axis=-1, keepdims=True)))
    symmetric = s.shape[-1] == s.shape[-2] and np.allclose(s, np.swapaxes(s, -1, -2))
    # on a batch (B, n, n) the columns' axis is axis=1, which is the keys' only on one matrix
    columns = batches.SOFTMAX_OVER_BATCH_QUERIES if s.ndim == 3 else COLUMNS_OR_TRANSPOSED if symmetric else COLUMNS
    return [(lambda: e / e.sum(axis=-2, keepdims=True), columns),
            (lambda: np.swapaxes(_softmax_rows(s), -1, -2), TRANSPOSED),
            (lambda: _softmax_rows(s).T, TRANSPOSED),
            (lambda: s / s.sum(axis=-1, keepdims=True),
             "divides the scores by their row sums without exponentiating: softmax takes exp first, so "
             "every weight is positive"),
            (lambda: _softmax_rows(s / np.sqrt(s.shape[-1])),
             "divides the scores by the square root of their number before the softmax: this step takes "
             "the softmax of the scores as they are"),
            (lambda: r / r.sum(axis=-1, keepdims=True),
             "takes the softmax of the negated scores, which gives the lowest score the most weight; a "
             "higher score must get more"),
            *_without_keepdims(s, symmetric), *_shifted_by_columns(s),
            (lambda: _softmax_rows(_softmax_rows(s)), SOFTMAX_TWICE), *_unnormalised(s), _shifted_numerator_only(s),
            *_row_shifted_column_summed(s), (lambda: whole / whole.sum(), at_once),
            (lambda: matrices / matrices.sum(axis=(-2, -1), keepdims=True), at_once),
            *rounded(_softmax_rows(s), what="the weights are"),  # before the epsilons, which a rounding can fit
            *hand_written_softmax_mistakes(s)]


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on single matrices, batches, float32 and large scores"""

    check_stored(impl, STEP, apply, "attention_weights(scores)", symptoms=stored_symptoms, finite_hint=overflow_hint)


@case(STEP, "property")
def test_rows_are_probabilities(impl):
    """gives each row non-negative weights summing to 1"""
    # one matrix: a softmax that fits one matrix only (axis=1) loses the stored case's batch, not this rule too
    scores = rng(602).normal(size=(5, 5)) * 3
    weights = impl.attention_weights(scores)
    try:
        checks.expect_rows_sum_to_one(weights, "attention_weights(scores)")
    except CaseFailure as failure:  # a known mistake in the formula is the cause
        found = checks.named_mistake(checks.to_array(weights, "the weights"),
                                     stored_symptoms(dict(scores=scores), 0))
        raise CaseFailure(failure if found is None else f"{failure}: {found}") from None


# Rows far apart in one matrix (the SPEC's [1000, 1001] and [-1000, -1001], per row): shifted by its own maximum
# each row is finite; shifted by the whole matrix's, the rows far below it underflow to 0 / 0, and unshifted, the
# first overflows. An output case on the kind of input a slip in the shift tells apart; a wrong formula fails it
# as it fails every output case.
FAR_APART = np.array([[1000.0, 1001.0, 999.5], [-1000.0, -1001.0, -999.0], [0.5, -0.5, 0.0]])


def _named_on_small(impl):
    """The known mistake attention_weights shows on small scores, where every shift is exact, or None."""
    scores = rng(604).normal(size=(5, 5))
    try:
        weights = checks.to_array(impl.attention_weights(scores), "attention_weights(scores)")
    except (RemoteError, CaseFailure):
        return None
    if checks.named_mistake(weights, [(_softmax_rows(scores), "right")]) is not None:
        return None  # right there: a mistake within the tolerance of the right weights (an epsilon) is no cause
    return checks.named_mistake(weights, stored_symptoms(dict(scores=scores), 0))


@case(STEP, "oracle")
def test_rows_far_apart(impl):
    """matches the reference where rows lie far apart, like [1000, 1001] and [-1000, -1001] in one matrix"""
    what = "attention_weights of rows far apart (one near 1000, one near -1000)"
    weights = checks.to_array(impl.attention_weights(FAR_APART.copy()), what)
    if not np.isfinite(weights).all():
        symptom = _named_on_small(impl)  # a wrong formula is the cause, not the shift
        if symptom is not None:
            raise CaseFailure(f"the weights of rows far apart (one near 1000, one near -1000) are not finite, and "
                              f"attention_weights(scores) on small scores: {symptom}")
        if weights.shape == FAR_APART.shape:
            nan_rows = ~np.isfinite(weights).all(axis=-1)
            raise CaseFailure(f"the weights of rows far apart (one near 1000, one near -1000) are not finite: "
                              f"{shifts.why_nan(FAR_APART, nan_rows)}; subtract each row's own maximum before "
                              "exponentiating (axis=-1, keepdims=True)")
    checks.expect_close(weights, _softmax_rows(FAR_APART), what,
                        symptoms=lambda: stored_symptoms(dict(scores=FAR_APART), 0))


@case(STEP, "property")
def test_input_unchanged(impl):
    """leaves the scores unchanged"""
    s = rng(603).normal(size=(4, 4))
    checks.expect_inputs_unchanged(impl, "attention_weights", [s], ["scores"])
