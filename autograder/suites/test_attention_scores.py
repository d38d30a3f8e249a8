"""Hidden suite of `attention_scores` (assignment 01)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import batches, cases, checks, reshapes
from autograder.suites.toolkit.cases import (
    check_stored,
    explain_batch_error,
    named_on_a_square,
    notes_cases,
    rng,
)
from autograder.suites.toolkit.model import truncation_mistakes

STEP = "attention_scores"
test_notes = notes_cases(STEP, replayed=lambda record, k: [*stored_symptoms(record, k), _cut_to_zeros(record)],
                         confirmed=lambda impl, ladder: _confirmed(impl, ladder),
                         probe=lambda impl: apply(impl, dict(X=rng(504).normal(size=(5, 3)), label="5 tokens")))


def stored_inputs():
    r = rng(501)
    return [
        dict(label="5 tokens of width 3", X=r.normal(size=(5, 3))),
        dict(label="a single token", X=r.normal(size=(1, 4))),
        dict(label="a batch of shape (2, 4, 3)", X=r.normal(size=(2, 4, 3))),
        dict(label="a batch of shape (2, 3, 6, 5)", X=r.normal(size=(2, 3, 6, 5))),
        dict(label="float32 tokens", X=r.normal(size=(6, 4)).astype(np.float32), atol=1e-4),
        dict(label="128 tokens", X=r.normal(size=(128, 16))),
    ]


X_T_ON_A_BATCH = "uses X.T, which reverses every axis of a batch; swap only the last two"


FIXED_AXES = ("its transpose names the axes of a 3-d array (batch, n, d); X may be one (n, d) matrix or "
              "have any number of batch axes: swap only the last two")


def apply(impl, record):
    X = record["X"]
    try:
        return impl.attention_scores(X)
    except RemoteError as error:
        if X.ndim != 3 and _right_on_a_3d_batch(impl, X):  # a transpose written for (batch, n, d): X.transpose(0, 2, 1)
            raise CaseFailure(f"attention_scores(X) raised {error.type_name} on {record['label']}, but works "
                              f"on a 3-d batch: {FIXED_AXES}") from None
        if X.ndim >= 3:  # the same tokens as one matrix: if that works, only the batch axes are the trouble
            item = X[(0,) * (X.ndim - 2)]
            reshapes.name_on_one_item("attention_scores(X)", error, record["label"],
                                      lambda A, _: impl.attention_scores(A), item, item)
            explain_batch_error("attention_scores(X)", error, record["label"],
                                lambda: impl.attention_scores(X[(0,) * (X.ndim - 2)]))
        named_on_a_square("attention_scores(X)", error, record["label"], X, impl.attention_scores,
                          lambda square: stored_symptoms({"X": square}, 0))
        raise


# X.astype(int) on tokens whose every entry lies within (-1, 1), as the notes' small examples do: each becomes 0,
# and so does every score. All zeros is no evidence on its own (an array never filled), so the probe, whose tokens
# are larger, must show the same cut.
INTEGER_TOKENS_ZEROS = ("converts the tokens to integers first (an int dtype): every entry of these tokens lies within "
                        "(-1, 1), so each is cut to 0 and so is every score; keep floats (no astype(int), dtype=int)")


def _cut_to_zeros(record, zeros_only=True):
    """(candidate, INTEGER_TOKENS_ZEROS) of the scores of the tokens of `record` converted to integers; with
    `zeros_only`, a candidate only where every token is cut to 0 (elsewhere the truncation's own rung names it)."""
    X = np.trunc(np.asarray(record["X"], dtype=float))

    def cut():
        if zeros_only and X.any():
            raise LookupError(INTEGER_TOKENS_ZEROS)  # does not apply: checks.named_mistake skips it
        return X @ np.swapaxes(X, -1, -2)
    return (cut, INTEGER_TOKENS_ZEROS)


def _confirmed(impl, ladder):
    """`ladder` with the tokens cut to zeros kept only where the code cuts larger tokens (3 times a normal draw) to
    integers too, which leaves most of them whole numbers other than 0."""
    X = 3 * rng(505).normal(size=(4, 3))
    return cases.confirmed(ladder, lambda: impl.attention_scores(X.copy()), lambda: [_cut_to_zeros(dict(X=X), zeros_only=False)],
                           only=lambda symptom: symptom == INTEGER_TOKENS_ZEROS)


def _right_on_a_3d_batch(impl, X):
    """Whether the code gives the right scores of X's tokens laid out as a 3-d batch: merely running there is no
    evidence of a transpose written for (batch, n, d), as X * X.T broadcasts a batch of one item into something."""
    batch = X.reshape(-1, *X.shape[-2:])
    try:
        out = checks.to_array(impl.attention_scores(batch), "attention_scores(X)")
    except (RemoteError, CaseFailure):
        return False
    return checks.named_mistake(out, [(batch @ np.swapaxes(batch, -1, -2), "right")]) is not None


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _unit(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    X = record["X"]
    truncated = truncation_mistakes(X @ np.swapaxes(X, -1, -2), np.trunc(X) @ np.swapaxes(np.trunc(X), -1, -2),
                                    "the tokens", "scores", divides=False)
    return [*truncated, (lambda: np.outer(X, X), OUTER),
            (lambda: np.swapaxes(X, -1, -2) @ X, "computes Xᵀ X (features by features); the scores are X Xᵀ (tokens by tokens)"),
            (lambda: X @ X.T, X_T_ON_A_BATCH),
            (lambda: X @ X, "multiplies X by X itself: the scores pair every token with every token, so the "
                            "second factor is X transposed"),
            (lambda: X * np.swapaxes(X, -1, -2), ENTRY_BY_ENTRY), *reshapes.reshape_mistakes(X, X),
            (lambda: _softmax_rows(X @ np.swapaxes(X, -1, -2)),
             "applies the softmax: this step returns the raw scores, and attention_weights normalises them"),
            (lambda: _unit(X) @ np.swapaxes(_unit(X), -1, -2),
             "divides by the tokens' lengths: these are cosine similarities; the scores are the plain dot "
             "products X Xᵀ"),
            (lambda: X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1]), SCALED_AHEAD),
            (lambda: np.sum(X * X, axis=-1), EACH_WITH_ITSELF),
            (lambda: X @ np.swapaxes(X, -1, -2) * (1 - np.eye(X.shape[-2])), ZERO_DIAGONAL),
            *_loop_stops_short(X @ np.swapaxes(X, -1, -2)),
            (lambda: np.tril(X @ np.swapaxes(X, -1, -2)), LOWER_TRIANGLE),
            (lambda: np.triu(X @ np.swapaxes(X, -1, -2)), UPPER_TRIANGLE),
            *batches.np_dot_mistakes(X, np.swapaxes(X, -1, -2), "the result"),  # np.dot(X, Xᵀ), np.inner(X, X)
            *[(lambda: (X[:, None] * X[None, :]).sum(-1), PAIRS_ALONG_FIRST_AXIS)] * (X.ndim > 2),
            *[(lambda: _flattened(X) @ _flattened(X).T, BATCH_FLATTENED)] * (X.ndim > 2),
            *[(lambda i=i: X @ X[i], ONE_QUERY) for i in range(len(X))] * (X.ndim == 2),
            *_statistics_for_products(X)]


def _statistics_for_products(X):
    """(candidate, diagnosis) of scores made a statistic of the tokens: their covariance (np.cov: each token's own
    mean removed, divided by d - 1), the products of tokens less the mean token, or their squared distances."""
    n, d = X.shape[-2], X.shape[-1]
    if n < 2:  # one token's mean is itself and its distance 0: those statistics are all 0, which names nothing
        return []
    rows_centred = X - X.mean(axis=-1, keepdims=True)
    mean_removed = X - X.mean(axis=-2, keepdims=True)
    distances = np.sum((X[..., :, None, :] - X[..., None, :, :]) ** 2, axis=-1)
    return [*[(lambda: rows_centred @ np.swapaxes(rows_centred, -1, -2) / (d - 1), COVARIANCE)] * (d > 1),
            (lambda: mean_removed @ np.swapaxes(mean_removed, -1, -2), MEAN_TOKEN_REMOVED),
            *[(lambda sign=sign: sign * distances, DISTANCES) for sign in (1, -1)]]


COVARIANCE = ("gives the covariance of the tokens (np.cov: each token's mean over its features removed, then divided "
              "by d - 1): the scores are the plain dot products of the tokens as they are")
MEAN_TOKEN_REMOVED = ("subtracts the mean token from every token before the products: the scores are the dot "
                      "products of the tokens as they are")
DISTANCES = ("scores each pair by the squared distance between the tokens, |x_i - x_j|² (or its negative): a score "
             "is a dot product, which grows as two tokens point the same way, not as they lie close")


# query = X[1]; X @ query: the notes' scores of the second token copied, one score per token for that query alone
ONE_QUERY = ("gives one token's scores only (X @ X[i], as the notes' worked example does for a single query): the "
             "scores pair every token with every token, one row per query: X Xᵀ, (n, n)")


def _flattened(X):
    """X's tokens as one (n, d) matrix, its leading axes merged with the tokens' (X.reshape(-1, d))."""
    return X.reshape(-1, X.shape[-1])


BATCH_FLATTENED = ("merges the batch's axes with the tokens' (X.reshape(-1, d)) before X Xᵀ, so the tokens of "
                   "different items are paired too and the batch's axes are lost: leave the leading axes alone and "
                   "swap only the last two (np.swapaxes(X, -1, -2)), which pairs each item's tokens alone")


# np.outer flattens both arguments first, whatever their shape: one row and column per entry of X.
OUTER = ("computes np.outer(X, X), which flattens X and multiplies every entry by every entry (n·d by n·d): the "
         "scores pair whole tokens, each entry a sum over the features, the matrix product X Xᵀ")


# Two readings of "every token's dot product with every token": the next assignment's scale taken early, and
# each token with itself only (a sum over the features, one score per token).
SCALED_AHEAD = ("divides X Xᵀ by sqrt(d), the scale of scaled attention (assignment 02, for learned queries and "
                "keys): these scores are the plain dot products X Xᵀ, unscaled")
EACH_WITH_ITSELF = ("gives each token's dot product with itself only (the diagonal of X Xᵀ, as np.sum(X * X, axis=-1) "
                    "makes it): the scores pair every token with every token, an (n, n) matrix")

# X * X.T broadcasts only where X is square (apply names it there, from a rectangular X's error).
ENTRY_BY_ENTRY = ("multiplies X by its transpose entry by entry (*): the scores are the matrix product X Xᵀ (@), "
                  "each entry a sum over the features")

ZERO_DIAGONAL = ("sets each token's score with itself to 0 (a zero diagonal): X Xᵀ scores every token with every "
                 "token, itself included, and its diagonal holds each token's squared length")


# np.tril(X @ X.T): the causal mask of assignment 03 taken early, as zeros (or an inner loop over j <= i)
LOWER_TRIANGLE = ("keeps only each token's scores with itself and the tokens before it, the rest set to 0 (np.tril, or "
                  "a loop over the keys that stops at the query, range(i + 1)), as if hiding later tokens or scoring "
                  "each pair once: these scores pair every token with every token (hiding the future is the causal "
                  "mask's work, a later step's)")

# np.triu(X @ X.T): one triangle kept, as if each pair were scored once; X Xᵀ is symmetric, and each row a query's
UPPER_TRIANGLE = ("keeps only each token's scores with itself and the tokens after it, the rest set to 0 (np.triu), as "
                  "if each pair of tokens were scored once: row i holds token i's scores with every token, so both "
                  "triangles are filled, each the other's mirror")


def _loop_stops_short(scores):
    """(candidate, LOOP_STOPS_SHORT) of scores filled in loops over the queries or the keys (or both) that stop
    one short (range(n - 1)), so the last row, the last column or both keep the zeros they were made with."""
    def left_zero(rows, columns):
        out = np.array(scores, dtype=float)
        out[..., -1:, :] *= not rows
        out[..., :, -1:] *= not columns
        return out

    return [(lambda rows=rows, columns=columns: left_zero(rows, columns), LOOP_STOPS_SHORT.format(which))
            for rows, columns, which in ((True, False, "row (as a query)"), (False, True, "column (as a key)"),
                                         (True, True, "row and column")) if scores.shape[-1] > 1]


LOOP_STOPS_SHORT = ("the last token's {} of scores stays 0 while every other score is right: does a loop over the "
                    "tokens stop one short (range(n - 1), or len(X) - 1)? Every token is a query and a key")


PAIRS_ALONG_FIRST_AXIS = ("pairs entries along the first axis by broadcasting (X[:, None] * X[None, :], summed over "
                          "the features), which is written for one (n, d) matrix: on a batch the first axis holds "
                          "the batch items, so items are paired with items, not tokens with tokens; the tokens are "
                          "the second axis from the end (-2) however many batch axes come before it")


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on single tokens, batches, float32 and long sequences"""

    check_stored(impl, STEP, apply, "attention_scores(X)", symptoms=stored_symptoms)


@case(STEP, "property")
def test_symmetric(impl):
    """is symmetric: token i scores token j as j scores i"""
    X = rng(502).normal(size=(5, 4))
    S = checks.to_array(apply(impl, dict(X=X, label="5 tokens")), "attention_scores(X)")
    if S.shape != (5, 5) or not np.allclose(S, S.T, rtol=1e-4, atol=1e-5):  # the rule fails: a known cause?
        symptom = checks.named_mistake(S, stored_symptoms(dict(X=X), 0))
        if symptom is not None:
            raise CaseFailure(f"attention_scores of 5 tokens: {symptom}")
    checks.expect_shape(S, (5, 5), "attention_scores of 5 tokens")
    checks.expect_close(S, S.T, "attention_scores(X) compared with its transpose", relation=False)


@case(STEP, "property")
def test_input_unchanged(impl):
    """leaves X unchanged"""
    X = rng(503).normal(size=(4, 3))
    apply(impl, dict(X=X.copy(), label="4 tokens"))  # a mistake that raises on X is named first
    checks.expect_inputs_unchanged(impl, "attention_scores", [X], ["X"])
