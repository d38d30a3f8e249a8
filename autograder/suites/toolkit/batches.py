"""Code written for one matrix, run on a batch: the mistakes only a batch shows (np.dot, which is no batched
product; a softmax's sums reshaped to a column), as candidates of a step's ladder, and the probes that name them
where the code raises: inputs on which the same code runs, and shows the mistake in what it gives."""

import functools

import numpy as np

from autograder.errors import CaseFailure
from autograder.harness import error_name
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import WRITTEN_FOR_ONE_MATRIX, rng
from autograder.suites.toolkit.model import ONE_MATRIX_SUMS, hand_written_softmax_mistakes, softmax

# Named together: on a batch of one item, np.dot(Q, Kᵀ) and np.tensordot(Q, K, axes=(-1, -1)) give one shape and one
# value, so no output tells them apart.
NP_DOT = ("np.dot, np.inner and np.tensordot are no batched products: on a batch they keep the leading axes of both "
          "arrays, so every item meets every item of the other; @ (np.matmul) multiplies the last two axes, pairing "
          "item i with item i")
RESHAPED_SUMS = ("the sums are reshaped to a column (.reshape(-1, 1)), which fits one matrix only: that merges all "
                 "other axes into one, so a vector gains an axis and a batch's sums miss their rows; keepdims=True "
                 "keeps the summed axis in its place, so the sums broadcast on any shape")


def np_dot_mistakes(a, b, what):
    """(candidate, symptom) of np.dot(a, b) where the product a @ b of batches is meant; none for matrices,
    where the two agree."""
    if max(np.ndim(a), np.ndim(b)) < 3:
        return []
    shape = (*np.shape(a)[:-1], *np.shape(b)[:-2], np.shape(b)[-1])
    return [(lambda: np.dot(a, b), f"{what} has shape {checks.fmt_shape(shape)}, as np.dot makes it: {NP_DOT}")]


def explain_np_dot(name, error, label, one_item, right, what):
    """An `error` of `name` on a batch (`label`), where the same code on a batch of ONE item, `one_item()`, gives
    `what` as `right` (its right value there) with an axis of size 1 before the last for each np.dot (or
    np.tensordot over the last axes) it takes:
    np.dot of a (1, n, m) and a (1, m, k) array is (1, n, 1, k), where @ gives (1, n, k). The CaseFailure names
    np.dot and np.tensordot; quiet otherwise (K.T, say, raises there too unless the shapes are square)."""
    try:
        out = checks.to_array(one_item(), what)
    except Exception:  # noqa: BLE001 - only asks what a batch of one item gives
        return
    right = np.asarray(right, dtype=np.float64)
    for extra in (1, 2):  # one np.dot, or two (the scores' and the context's)
        if out.shape == (*right.shape[:-1], *(1,) * extra, right.shape[-1]) and np.allclose(
                out.reshape(right.shape), right, atol=1e-5, rtol=1e-4):
            raise CaseFailure(f"{name} raised {error_name(error)} on {label}; on a batch of one item, {what} has "
                              f"shape {checks.fmt_shape(out.shape)}, an axis of size 1 too many, as a product that is not "
                              f"batched gives it: {NP_DOT}") from None


# The maximum alone reshaped: on one matrix any constant per row cancels, so only a batch, where the shapes meet
# otherwise, shows it.
RESHAPED_MAXIMA = ("the row maxima are reshaped to a column (.reshape(-1, 1)), which fits one matrix only: that merges "
                   "all other axes into one, so a batch's maxima miss their rows; keepdims=True keeps the axis taken "
                   "in its place, so the maxima broadcast on any shape")


def reshaped_sums_mistakes(s, axis=-1):
    """(candidate, symptom) of a softmax of s along `axis` whose sum, maximum, or both are reshaped to a column
    (-1, 1) where keepdims=True is meant, as such code computes it: right along the last axis of a matrix only."""
    def reshaped(sums, maxima):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            e = np.exp(s - (s.max(axis=axis).reshape(-1, 1) if maxima else s.max(axis=axis, keepdims=True)))
            return e / (e.sum(axis=axis).reshape(-1, 1) if sums else e.sum(axis=axis, keepdims=True))

    return [(lambda: reshaped(True, False), RESHAPED_SUMS), (lambda: reshaped(True, True), RESHAPED_SUMS),
            (lambda: reshaped(False, True), RESHAPED_MAXIMA)]


def explain_sums_reshaped(name, error, label, run, ladder, where):
    """An `error` of `name` on `label`, where the same code runs on other inputs (`where`): `run()` there matches
    a softmax whose sums are reshaped to a column (`ladder()`, `reshaped_sums_mistakes` of those inputs), which
    the CaseFailure names; quiet otherwise."""
    try:
        out = checks.to_array(run(), "the output")
    except Exception:  # noqa: BLE001 - only asks what these inputs give
        return
    named = checks.named_mistake(out, ladder())
    if named is not None:
        raise CaseFailure(f"{name} raised {error_name(error)} on {label}, but runs on {where}, where what it "
                          f"gives shows that {named}") from None


def explain_attention_on_batches(attend, name, error, label):
    """An `error` of `attend(Q, K, V)` (context, weights) on a batch, named where the same code runs on a smaller
    batch: one item with d_k != n_k (np.dot runs there, K.T does not), or items of one query each, where sums
    reshaped to a column broadcast instead of raising."""
    r = rng(1314)
    Q, K, V = r.normal(size=(1, 3, 4)), r.normal(size=(1, 5, 4)), r.normal(size=(1, 5, 2))
    scores = Q @ np.swapaxes(K, -1, -2) / 2.0  # d_k = 4
    explain_np_dot(name, error, label, lambda: attend(Q.copy(), K.copy(), V.copy())[0], softmax(scores) @ V,
                   "the context")
    Q, K, V = r.normal(size=(3, 1, 4)), r.normal(size=(3, 5, 4)), r.normal(size=(3, 5, 2))
    explain_sums_reshaped(name, error, label, lambda: attend(Q.copy(), K.copy(), V.copy())[1],
                          lambda: reshaped_sums_mistakes(Q @ np.swapaxes(K, -1, -2) / 2.0),
                          "items of one query each")


def sums_indexed_for_one_matrix(attend):
    """Whether `attend(Q, K, V)` (context, weights) runs on 3 queries over 5 keys and on a (2, 4, 4) batch but
    raises on a (2, 3, 5) one, as a softmax whose row sums are indexed [:, None] does (ONE_MATRIX_SUMS), and its
    weights on the (2, 4, 4) batch are those sums' (new axes indexed for one matrix elsewhere, Q[:, None, :] say,
    run on the same shapes); K.T fails on either batch, and a product in the wrong order on the single matrix."""
    r = rng(1313)
    def run(lead, n_q, n_k):
        Q, K, V = r.normal(size=(*lead, n_q, 3)), r.normal(size=(*lead, n_k, 3)), r.normal(size=(*lead, n_k, 2))
        try:
            return Q, K, attend(Q, K, V)
        except Exception:  # noqa: BLE001 - only asks which shapes go through
            return None
    square = run((2,), 4, 4)
    if run((), 3, 5) is None or square is None or run((2,), 3, 5) is not None:
        return False
    Q, K, (_, weights) = square
    sums = [(c, why) for c, why in hand_written_softmax_mistakes(Q @ np.swapaxes(K, -1, -2) / np.sqrt(3))
            if why == ONE_MATRIX_SUMS]
    try:
        return checks.named_mistake(checks.to_array(weights, "the weights"), sums) is not None
    except CaseFailure:
        return False


# axis=1 written for one matrix (n_q, n_k), where it is the keys', in NumPy's words (SelfAttention's are torch's)
SOFTMAX_OVER_BATCH_QUERIES = ("the softmax runs over the queries' axis of the batch (B, n_q, n_k), axis=1 (or axis=-2), "
                              "so each key's column sums to 1 instead of each query's row; axis=1 is the keys only on "
                              "one matrix (n_q, n_k): use axis=-1, the keys on any number of leading axes")


# Code that runs on one item of a batch but not on the batch, by the words of its error: a product whose inner sizes
# do not meet, or a transpose that lists every axis, is a transpose written for one matrix; shapes that do not
# broadcast come of an axis indexed or reshaped for one matrix.
INDEXED_FOR_ONE_MATRIX = ("the shapes do not broadcast on a batch: an axis indexed or reshaped for one matrix? New "
                          "axes at fixed places (Q[:, None, :]), or a maximum or sum made a column with [:, None] or "
                          ".reshape(-1, 1), land among a batch's axes; index from the end ([..., None]) or keep the "
                          "axis with keepdims=True, which fit any batch")


# scaled_dot_product_attention's words for it, where the scores are the step's own (scaled_attention_scores has its own)
K_TRANSPOSED_FOR_SCORES = ("with a batch, transpose only the last two axes of K for the scores Q Kᵀ "
                           "(np.swapaxes(K, -1, -2)); K.T reverses every axis")


def batch_error_cause(error, transposed):
    """The cause of an `error` on a batch where one item of it runs, as far as its words tell: `transposed` (the
    step's words for a transpose written for one matrix), INDEXED_FOR_ONE_MATRIX, or the kinds of code written for
    one matrix."""
    said = str(error)
    if "mismatch in its core dimension" in said or "axes don't match" in said:
        return transposed
    return INDEXED_FOR_ONE_MATRIX if "could not be broadcast" in said else WRITTEN_FOR_ONE_MATRIX


def told_apart_on_one_item(ladder, symptom, right_alone, symptom_if_right):
    """`ladder` [(candidate, symptom)] of a batch with each candidate of `symptom` kept only where `right_alone()`
    (the same code, run on one item of the batch alone, is right) is False, and named `symptom_if_right` where it
    is True: a divisor read from a fixed axis gives on a batch what a wrong divisor gives on any input, and only
    one item alone tells them apart. `right_alone` runs once, when a candidate is first tried; if it raises, the
    code is not right alone."""
    @functools.cache
    def alone():
        try:
            return bool(right_alone())
        except Exception:  # noqa: BLE001 - code that fails on one item is not right there
            return False

    def kept(candidate, where):
        if alone() != where:
            raise LookupError(symptom)
        return candidate() if callable(candidate) else candidate

    split = []
    for candidate, named in ladder:
        split += [(candidate, named)] if named != symptom else [
            (lambda c=candidate: kept(c, False), named), (lambda c=candidate: kept(c, True), symptom_if_right)]
    return split
