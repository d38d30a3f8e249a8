"""Hidden suite of `simplified_self_attention` (assignment 01)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import batches, cases, checks, shifts
from autograder.suites.toolkit.cases import (
    check_stored,
    explain_batch_error,
    named_on_a_square,
    notes_cases,
    rng,
)

STEP = "simplified_self_attention"


def stored_inputs():
    r = rng(801)
    return [
        dict(label="5 tokens of width 3", X=r.normal(size=(5, 3))),
        dict(label="a single token", X=r.normal(size=(1, 4))),
        dict(label="a batch of shape (2, 6, 3)", X=r.normal(size=(2, 6, 3))),
        dict(label="float32 tokens", X=r.normal(size=(4, 8)).astype(np.float32), atol=1e-4),
        dict(label="64 tokens", X=0.3 * r.normal(size=(64, 8))),
    ]


def apply(impl, record):
    return _call(impl, record["X"], record["label"])


def _call(impl, X, label):
    """simplified_self_attention(X); X @ weights, which raises unless n == d, is named on a square X."""
    try:
        return impl.simplified_self_attention(X)
    except RemoteError as error:
        if np.ndim(X) > 2:  # np.dot, which keeps a batch of one item's axes, before any code for one matrix
            one = rng(805).normal(size=(1, 4, 3))
            batches.explain_np_dot("simplified_self_attention", error, label,
                                   lambda: impl.simplified_self_attention(one)[0], _model(dict(X=one))[0], "the context")
            explain_batch_error("simplified_self_attention", error, label,
                                lambda: impl.simplified_self_attention(X[(0,) * (np.ndim(X) - 2)]))
        square = rng(803).normal(size=(4, 4))
        try:
            out = impl.simplified_self_attention(square)
            context = checks.to_array(out[0], "the context")
        except (RemoteError, CaseFailure, TypeError, IndexError):
            raise error from None
        def gives(candidate):
            return checks.named_mistake(context, [(candidate, "")]) is not None
        if gives(_softmax(square, -1) @ square):
            raise CaseFailure(f"simplified_self_attention raised {error.type_name} on {label}, but runs on a "
                              "square X, where its weights are the softmax of X itself: the softmax is taken of "
                              "the scores, every token's dot product with every token") from None
        if not gives(square @ _scores_and_weights(square)[1]):
            named_on_a_square(STEP, error, label, X, lambda sq: impl.simplified_self_attention(sq)[0], _square_only)
            raise
        raise CaseFailure(f"simplified_self_attention raised {error.type_name} on {label}, but runs on a square "
                          "X, where its context is X @ weights: the weights come first, weights @ X, so each "
                          "token's context is a weighted sum of the rows of X") from None


def _square_only(X):
    """[(context, symptom)] of the mistakes whose shapes fit only a square X, on that X."""
    w = _scores_and_weights(X)[1]
    return [(_softmax(X.T @ X, -1) @ X, "takes the scores as Xᵀ X, features by features: the scores pair the tokens, "
                                        "every token's dot product with every token, a row and a column per token"),
            (w * X, "multiplies the weights and X entry by entry (*): each token's context is a weighted sum of the "
                    "rows of X, a matrix product"),
            (w @ X.T, "multiplies the weights by X transposed: the weights' columns, one per token, meet the rows of "
                      "X, each token's features")]


def _softmax(s, axis):
    e = np.exp(s - s.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _unit(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def _cosines(X):
    return _unit(X) @ np.swapaxes(_unit(X), -1, -2)


def _scores_and_weights(X):
    s = X @ np.swapaxes(X, -1, -2)
    e = np.exp(s - s.max(-1, keepdims=True))
    return s, e / e.sum(-1, keepdims=True)


def _model(record):
    """(context, weights) on the inputs of `record`: the item a mistake of the other leaves right."""
    _, w = _scores_and_weights(record["X"])
    return w @ record["X"], w


def stored_symptoms(record, k, zeros_too=False):
    """[(candidate, diagnosis)] of the known mistakes for item k of (context, weights) on the inputs
    of `record`: the ladder of the stored outputs and of the notes' worked examples. A context cut to
    integers is all 0 where every entry lies in (-1, 1), which is no evidence alone: only with
    `zeros_too`, for a ladder that confirms it on a probe (`_cut_confirmed`)."""
    X = record["X"]
    s, w = _scores_and_weights(X)
    context = w @ X
    wrong_weights = [(lambda: s / s.sum(-1, keepdims=True), "divides the scores by their row sums without "
                                                             "exponentiating: the weights are a softmax"),
                     *[(lambda c=c: _softmax(s / c, -1), message) for c, message in _scales(X)],
                     (lambda: _softmax(_cosines(X), -1),
                      "takes the softmax of cosine similarities: the scores are plain dot products X Xᵀ"),
                     (lambda: _softmax(w, -1), "applies the softmax twice, to weights that are already a "
                                               "softmax of the scores: once is all, and a second flattens "
                                               "each row toward equal weights"),
                     *[(lambda d=d: np.round(w, d), f"the weights are rounded to {d} decimals, {WEIGHTS_ROUNDED}")
                       for d in (1, 2, 3)]]
    # the chapter works one query through first (x⁽²⁾, row 1): a context of one row alone. Not row 0: an
    # example that indexes the answer reads row 0 of a context returned without its tuple that way too
    one_query = [] if np.ndim(X) != 2 else [
        (lambda i=i: w[i] @ X, f"the context is one token's alone (row {i} of the weights, as the chapter's "
                               "first walk-through of one query): every token is a query, so the context has "
                               "a row per token") for i in range(1, min(len(X), 6))]
    if k == 0:
        return [(lambda: s @ X, "the context vectors use the raw scores: apply softmax first"),
                (lambda: w, "returns (weights, context) in the wrong order"),
                # X Xᵀ is symmetric, so a softmax down the columns is the transposed weights: one message
                (lambda: np.swapaxes(w, -1, -2) @ X, WEIGHTS_T_OR_COLUMN_SOFTMAX),
                (lambda: w @ X + X, "adds X to the context vectors: each context vector is the weighted sum "
                                    "of the rows alone"),
                (lambda: w @ s, "mixes the rows of the scores: each context vector is a weighted sum of the "
                                "rows of X, the tokens themselves"),
                *one_query,
                *batches.np_dot_mistakes(w, X, "the context"),
                *[(lambda f=f: f() @ X, message) for f, message in wrong_weights],
                *[(np.trunc(context), INTEGER_CONTEXT)] * bool(zeros_too or np.trunc(context).any()),
                *[(np.concatenate([context[..., :-1, :], 0 * context[..., -1:, :]], axis=-2), LAST_ROW_LEFT_OUT)
                  ] * (X.shape[-2] > 1),
                (lambda: w.sum(axis=-2)[..., None] * X, SUMMED_OVER_QUERIES),
                (lambda: _softmax(_cosines(X), -1) @ _unit(X), UNIT_ROWS)]
    return [(lambda: s, "the second item is the raw scores; return the softmax weights"), *wrong_weights]


def _scales(X):
    """(divisor, diagnosis) of the scores divided before the softmax: by sqrt(d), the next assignment's scale, or
    by the number of tokens or the width, as if averaged; where two divisors are equal, one message names both."""
    n, d = X.shape[-2], X.shape[-1]
    names = {}
    for divisor, name in ((np.sqrt(d), "sqrt(d)"), (n, "the number of tokens n"), (d, "the width d")):
        names.setdefault(float(divisor), []).append(name)
    return [(divisor, f"divides the scores by {named[0]} before the softmax"
             + "".join(f" (or by {other}, equal here)" for other in named[1:])
             + (": that is the scaled attention of the next assignment" if "sqrt(d)" in named else ", as if to average them")
             + "; the simplified version uses X Xᵀ as it is") for divisor, named in names.items() if divisor != 1.0]


# np.round(weights, 2), as the notes print them: the context mixes the tokens by the rounded weights too
WEIGHTS_ROUNDED = ("as the notes print them, before they mix the tokens and are returned: keep them as computed "
                   "(round only where they are printed)")


# The context alone cannot tell the transposed weights from weights that are a softmax down the columns: either
# both are named, and which (the weights item, or the axis of the softmax) says itself.
WEIGHTS_T_OR_COLUMN_SOFTMAX = ("the context is weightsᵀ @ X, each token mixed by a column of the weights: the weights "
                               "are transposed in the product, or taken as a softmax down the columns (axis=0, or "
                               "axis=1 on a batch, whose rows are the last axis), which on the symmetric scores X Xᵀ "
                               "is the same; row i (a softmax along the last axis, axis=-1) belongs to token i, and "
                               "it comes first: weights @ X")


# A context filled into an int array (np.zeros(X.shape, dtype=int)) in a loop: each entry cut toward 0 as it is stored.
INTEGER_CONTEXT = ("every entry of the context is cut toward 0, to a whole number: is it filled into an integer array "
                   "(np.zeros(..., dtype=int), or zeros_like of an int array)? Storing a float there drops its "
                   "fractional part; make the context of floats (np.zeros(X.shape)), or return weights @ X")
LAST_ROW_LEFT_OUT = ("the last token's context is 0 and every other token's is right: a loop over the tokens stops one "
                     "short (range(len(X) - 1)); every token is a query, range(len(X)), or weights @ X at once")
# (weights[..., None] * X[..., None, :, :]).sum(axis=-3): row j is (the sum of column j of the weights) times x_j.
SUMMED_OVER_QUERIES = ("each token's context is its own row of X times the sum of its column of the weights: the "
                       "weighted rows, weights[i, j] * x_j, are summed over the queries i (axis -3), not over the "
                       "keys j; token i's context sums over j (axis -2), which is weights @ X")
UNIT_ROWS = ("the rows of X are scaled to length 1 before the scores and the context: the weights are a softmax of "
             "cosines and the context mixes the unit rows; the scores are plain dot products X Xᵀ, and the context "
             "mixes the rows of X as they are")


def _cut_confirmed(impl, ladder):
    """`ladder` with the context cut to integers kept only where the same code cuts it on tokens of larger
    entries too (3 times standard normal), whose cut context is not all 0: on the notes' small tokens it is, as
    any array never filled is."""
    X = 3 * rng(806).normal(size=(5, 3))
    return cases.confirmed(ladder, lambda: impl.simplified_self_attention(X)[0],
                           lambda: stored_symptoms(dict(X=X), 0), only=lambda symptom: INTEGER_CONTEXT in symptom)


test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k, zeros_too=True), correct=_model,
                         confirmed=_cut_confirmed,
                         probe=lambda impl: _call(impl, rng(804).normal(size=(5, 3)), "5 tokens of width 3"))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """returns (context, weights) matching the reference on single tokens, batches, float32, long inputs"""

    check_stored(impl, STEP, apply, "simplified_self_attention(X)", symptoms=stored_symptoms)


@case(STEP, "property")
def test_permutation_equivariant(impl):
    """reordering the tokens reorders the outputs the same way"""
    X = rng(802).normal(size=(6, 4))
    order = np.array([3, 0, 5, 1, 4, 2])
    out = _call(impl, X, "6 tokens")
    out_perm = impl.simplified_self_attention(X[order])
    if out is None:
        raise checks.returned_none("simplified_self_attention of 6 tokens")
    if not isinstance(out, tuple) or len(out) != 2:
        raise CaseFailure("simplified_self_attention should return a tuple (context, weights)")
    context = checks.to_array(out[0], "context")
    if context.shape != X.shape:  # a context of another shape cannot be reordered: named where a mistake is known
        checks.expect_close(context, _model(dict(X=X))[0], "the context of 6 tokens",
                            symptoms=lambda: stored_symptoms(dict(X=X), 0))
    try:
        checks.expect_close(out_perm[0], context[order], "context of reordered tokens", relation=False)
    except CaseFailure as failure:  # a context that is no reordering: the context itself may show a known mistake
        found = checks.named_mistake(context, stored_symptoms(dict(X=X), 0)) if checks.UNNAMED in str(failure) else None
        if found is None:
            raise
        raise CaseFailure(f"context of reordered tokens is not the context reordered; the context of 6 tokens shows "
                          f"why: {found}") from None
    checks.expect_rows_sum_to_one(out[1], "the weights")


# Two tokens of large norm among four ordinary ones: their scores pass 709, where exp overflows unless each row's
# maximum is subtracted first, and the ordinary tokens' rows lie far below them, where a shift by the whole
# matrix's maximum underflows to 0 / 0. An output case on the kind of input a slip in the softmax's shift tells
# apart (the notes' tokens are small); a wrong formula fails it as it fails every output case.
LARGE_TOKENS = rng(807).normal(size=(6, 4)) * np.array([[20.0], [20.0], [1.0], [1.0], [1.0], [1.0]])


def _named_on_small(impl):
    """The known mistake simplified_self_attention's context shows on small tokens, where every shift is exact,
    or None."""
    X = rng(808).normal(size=(5, 3))
    try:
        context = checks.to_array(impl.simplified_self_attention(X)[0], "the context")
    except (RemoteError, CaseFailure, TypeError, IndexError):
        return None
    if checks.named_mistake(context, [(_model(dict(X=X))[0], "right")]) is not None:
        return None
    return checks.named_mistake(context, stored_symptoms(dict(X=X), 0))


def _finite(impl, out):
    """Nothing, where every array of `out` is finite; else why not, as a CaseFailure."""
    items = out if isinstance(out, (tuple, list)) else (out,)  # the tuple itself is the other cases' rule
    arrays = [checks.to_array(item, "the result") for item in items]
    if all(np.isfinite(array).all() for array in arrays):
        return
    symptom = _named_on_small(impl)  # a wrong formula is the cause, not the shift
    if symptom is not None:
        raise CaseFailure(f"simplified_self_attention of tokens of large norm is not finite, and its context of small "
                          f"tokens shows why: {symptom}")
    # a row of the context is nan where its row of the weights is
    rows = [~np.isfinite(array).all(axis=-1) for array in arrays if array.shape[:1] == LARGE_TOKENS.shape[:1]]
    why = shifts.why_nan(LARGE_TOKENS @ LARGE_TOKENS.T, rows[0]) if rows else "exp overflows"
    raise CaseFailure(f"simplified_self_attention of tokens of large norm (scores in the thousands) is not finite: "
                      f"{why}; subtract each row's own maximum score before exponentiating, as a softmax does "
                      "(or call your attention_weights)")


# [context, weights]: unpacked alike, but the docstring (and SPEC) return a tuple, which stays one result
A_LIST = "the docstring returns them as a tuple, (context, weights), which no caller can change by mistake"


@case(STEP, "oracle")
def test_large_tokens(impl):
    """matches the reference on tokens of large norm, whose scores pass 709, where exp overflows"""
    out = _call(impl, LARGE_TOKENS.copy(), "6 tokens, two of large norm")
    if out is None:
        raise checks.returned_none("simplified_self_attention of 6 tokens")
    _finite(impl, out)
    if isinstance(out, list) and len(out) == 2:
        raise CaseFailure(f"simplified_self_attention returns a list of its two results: {A_LIST}")
    if not isinstance(out, tuple) or len(out) != 2:
        raise CaseFailure("simplified_self_attention should return a tuple (context, weights)")
    for k, (actual, want) in enumerate(zip(out, _model(dict(X=LARGE_TOKENS)))):
        checks.expect_close(actual, want, f"simplified_self_attention(X) (item {k} of the tuple) on 6 tokens, two "
                            "of large norm", symptoms=lambda k=k: stored_symptoms(dict(X=LARGE_TOKENS), k))
