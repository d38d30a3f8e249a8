"""Hidden suite of `context_vectors` (assignment 01)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import cases, checks
from autograder.suites.toolkit.cases import check_stored, explain_batch_error, notes_cases, rng

STEP = "context_vectors"
test_notes = notes_cases(STEP, replayed=lambda record, k: [*stored_symptoms(record, k), _transposed(record)],
                         confirmed=lambda impl, ladder: _confirmed(impl, ladder),
                         probe=lambda impl: _probe(impl))


def _probe(impl):
    """The step on 5 tokens of width 3, through `_call` (a mistake that raises there named), its value then
    named by the ladder: a mistake that raises on the notes' single query may run on a square matrix of
    weights (the weights transposed)."""
    w, v = _weights(rng(705), (5, 5)), rng(706).normal(size=(5, 3))
    out = _call(impl, w, v, "5 tokens of width 3")
    checks.expect_close(out, w @ v, "context_vectors on 5 tokens of width 3",
                        symptoms=lambda: _confirmed(impl, stored_symptoms(dict(weights=w, values=v), 0)))


# Where the result is whole, its shape says it (its last two axes are swapped); the notes' examples pick one
# context vector ([0]) from it, which only the value can tell.
def _transposed(record):
    """(candidate, symptom) of the context vectors returned transposed, one column per query."""
    return (lambda: np.swapaxes(record["weights"] @ record["values"], -1, -2),
            "returns the context vectors transposed, one column per query (valuesᵀ @ weightsᵀ is (weights @ "
            "values)ᵀ): each query's context vector is a row, weights @ values")


def _weights(r, shape):
    w = r.random(size=shape)
    return w / w.sum(axis=-1, keepdims=True)


def stored_inputs():
    r = rng(701)
    return [
        dict(label="5 tokens of width 3", weights=_weights(r, (5, 5)), values=r.normal(size=(5, 3))),
        dict(label="a single token", weights=np.ones((1, 1)), values=r.normal(size=(1, 4))),
        dict(label="a batch of shape (2, 4, 4) x (2, 4, 6)", weights=_weights(r, (2, 4, 4)), values=r.normal(size=(2, 4, 6))),
        dict(label="float32 inputs", weights=_weights(r, (6, 6)).astype(np.float32),
             values=r.normal(size=(6, 2)).astype(np.float32), atol=1e-4),
        dict(label="3 queries over 7 keys", weights=_weights(r, (3, 7)), values=r.normal(size=(7, 5))),
    ]


def apply(impl, record):
    return _call(impl, record["weights"], record["values"], record["label"])


def _call(impl, weights, values, label):
    """context_vectors(weights, values); a mistake that raises there but runs on square weights and
    values (n_k == d) is named by what it gives on them."""
    try:
        return impl.context_vectors(weights, values)
    except RemoteError as error:
        if np.ndim(weights) > 2:
            first = (0,) * (np.ndim(weights) - 2)
            try:
                explain_batch_error("context_vectors", error, label, lambda: impl.context_vectors(weights[first],
                                                                                                  values[first]))
            except CaseFailure:  # a loop for one matrix; its accumulator may be wrong as well
                if not _made_like_the_values(impl):
                    raise
                raise CaseFailure(f"context_vectors raised {error.type_name} on {label}, works on one item, and on "
                                  f"3 queries over 7 keys {LIKE_THE_VALUES} (and a loop for one matrix fits no "
                                  "batch)") from None
        r = rng(704)
        w, v = _weights(r, (4, 4)), r.normal(size=(4, 4))
        try:
            out = checks.to_array(impl.context_vectors(w, v), "context_vectors(weights, values)")
        except (RemoteError, CaseFailure):
            raise error from None
        symptom = checks.named_mistake(out, _square_only(w, v))
        if symptom is None:
            if checks.named_mistake(out, [(w @ v, "right")]) and _right_where_values_as_wide_as_keys(impl):
                raise CaseFailure(f"context_vectors raised {error.type_name} on {label}, but is right wherever the "
                                  f"values are as wide as there are keys: {LIKE_THE_WEIGHTS}") from None
            raise
        raise CaseFailure(f"context_vectors raised {error.type_name} on {label}, but runs when the values are "
                          f"square: it {symptom}") from None


LIKE_THE_WEIGHTS = ("its result (or the array it adds into) is made like the weights (np.zeros_like(weights)), one "
                    "column per key; a context vector has one entry per feature of the values, so the result has "
                    "one row per query and the values' width")


LIKE_THE_VALUES = ("its result is made like the values (np.zeros_like(values)), one row per key: a context vector "
                   "belongs to each query, so the result has one row per query (rows past the queries stay 0)")


def _like_the_values(w, v):
    """(candidate, symptom) of a result made like the values whose first n_q rows are filled, where n_q < n_k."""
    n_q, n_k = np.shape(w)[-2:]
    if np.ndim(w) != 2 or n_q >= n_k:
        return []
    made = np.zeros(np.shape(v))
    made[:n_q] = w @ v
    return [(made, LIKE_THE_VALUES)]


def _drawn(seed, queries, keys, width):
    """Weights (queries, keys) and values (keys, width) of one matrix, drawn from `seed`: a probe's inputs."""
    r = rng(seed)
    return _weights(r, (queries, keys)), r.normal(size=(keys, width))


def _gives_one_of(impl, seed, queries, keys, width, candidates):
    """Whether the code on `_drawn(seed, queries, keys, width)` gives one of `candidates(w, v)` [(candidate,
    symptom)]; False where it fails there."""
    w, v = _drawn(seed, queries, keys, width)
    try:
        out = checks.to_array(impl.context_vectors(w, v), "context_vectors(weights, values)")
    except (RemoteError, CaseFailure):
        return False
    return checks.named_mistake(out, candidates(w, v)) is not None


def _made_like_the_values(impl):
    """Whether the code on one matrix of 3 queries over 7 keys gives a result made like the values."""
    return _gives_one_of(impl, 707, 3, 7, 2, _like_the_values)


def _right_where_values_as_wide_as_keys(impl):
    """Code right on square weights and values that is also right on 3 queries over 4 keys with values 4 wide
    (n_k == d, n_q != n_k): its result is shaped by the weights, which only the values' width tells apart."""
    return _gives_one_of(impl, 708, 3, 4, 4, lambda w, v: [(w @ v, "right")])


ELEMENTWISE = ("multiplies entry by entry (*); each context vector is a weighted sum of the value rows, a matrix "
               "product (@)")


def _square_only(w, v):
    """The mistakes that only run when n_k == d."""
    return [(w * v, ELEMENTWISE), (np.sum(w * v, axis=0), ELEMENTWISE), (np.sum(w * v, axis=-1), ELEMENTWISE),
            (v @ w, "computes values @ weights: the weights come first, one row per query"),
            (w @ v.T, "pairs each row of the weights with each row of the values (np.inner, or the values "
                      "transposed): row i of the weights holds query i's weight of every key, and the values "
                      "hold one row per key, so the sum over the keys meets the weights' columns"),
            (v @ w.T, VALUES_TIMES_WEIGHTS_T)]


# values @ weights.T runs only where the values are as wide as there are keys; it is (weights @ values.T)ᵀ.
VALUES_TIMES_WEIGHTS_T = ("computes values @ weightsᵀ (the product turned round, the weights transposed to fit): "
                          "each entry sums a value row's features against the keys' weights; the weights come "
                          "first, as they are, weights @ values, one row per query summed over the keys")


COLUMN_SUMS = ("gives key j's value row scaled by its column sum of weights: the sum runs over the keys for each "
               "query, so row i of the context mixes all value rows by row i of the weights")
KEYS_CUT = ("sums over the first n_q keys only, as a loop over the keys bounded by len(weights), the number of "
            "queries, does: the sum runs over every key, one per column of the weights")


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    w, v = record["weights"], record["values"]
    n_q = np.shape(w)[-2]
    return [(lambda: np.swapaxes(w, -1, -2) @ v, "uses the transposed weights: row i of the weights belongs to query i"),
            *[(lambda: w[..., :n_q] @ v[..., :n_q, :], KEYS_CUT)] * (n_q < np.shape(w)[-1]),
            (lambda: w[..., :, -1:] * v[..., -1:, :], LAST_KEY_ONLY),
            (lambda: w.sum(axis=-2)[..., :, None] * v, COLUMN_SUMS), *_like_the_values(w, v),
            (lambda: _softmax_rows(w) @ v, SOFTMAX_AGAIN), (lambda: w @ v / np.shape(w)[-1], BY_THE_KEYS),
            (lambda: w @ v / np.shape(w)[-2], BY_THE_QUERIES),
            (lambda: w * np.sum(v, axis=-1)[..., None, :], SUMMED_OVER_FEATURES),
            (lambda: (w / w.sum(axis=-2, keepdims=True)) @ v, COLUMNS_RENORMALISED),
            *[(lambda: (w / w.sum(axis=0)) @ v, COLUMNS_RENORMALISED)] * (np.ndim(w) > 2),  # axis 0: the batch's
            (lambda: w[..., :, :, None] * v[..., None, :, :], NEVER_SUMMED),
            *[(lambda: np.stack([item @ v for item in w]), EVERY_ITEM_WITH_EVERY)] * (np.ndim(w) > 2),
            (lambda: np.ones_like(w) / np.shape(w)[-1] @ v, WEIGHTS_IGNORED)]


# The values averaged over the keys, every query's context the same: the weights play no part.
WEIGHTS_IGNORED = ("every query's context is the plain mean of the values: the weights play no part, where each "
                   "query mixes the values by its own row of weights")


# np.array([w @ values for w in weights]), a loop over the rows of one matrix: on a batch each item of the weights
# meets the whole batch of values, (batch, batch, n_q, d), as np.dot pairs them
EVERY_ITEM_WITH_EVERY = ("pairs every item of the weights' batch with every item of the values' (a loop over the "
                         "weights' first axis, written for the rows of one matrix, multiplies each by all the values): "
                         "item b of the weights belongs to item b of the values alone")


# weights[..., None] * values[..., None, :, :] with no sum: every term of every context vector, none added up
NEVER_SUMMED = ("multiplies each weight by its key's value row but never sums over the keys: the result keeps one "
                "weighted value row per query and key, (..., n_q, n_k, d); each context vector is the sum of its "
                "query's rows over the keys (axis -2), which weights @ values gives")


# weights / weights.sum(axis=0): each column divided by its sum, so no row of weights sums to 1 any more.
COLUMNS_RENORMALISED = ("divides the weights by their column sums (weights.sum(axis=0)) before the product: each "
                        "query's row of weights sums to 1 already, and a column's sum, over the queries, means nothing "
                        "to any one query; use the weights as they are, weights @ values")


# (weights[..., None] * values[..., None, :, :]).sum(-1): the products of query i, key j and feature k summed over
# the features, which leaves weight (i, j) times the sum of value row j, one entry per key.
SUMMED_OVER_FEATURES = ("sums the products of the weights and the values over the features (the last axis), not "
                        "over the keys: entry (i, j) is query i's weight of key j times the sum of value row j; a "
                        "context vector sums weight (i, j) times value row j over the keys j, keeping the features")


LAST_KEY_ONLY = ("keeps only the last key's term, its weight times its value row: a loop over the keys that assigns "
                 "(=) where it should add (+=) leaves the last term alone; the context vector sums the terms of every key")


BY_THE_KEYS = ("divides the weighted sum by the number of keys (a mean of the weighted value rows, np.mean for "
               "np.sum): the weights sum to 1 already, so the context vector is the weighted sum itself")
BY_THE_QUERIES = ("divides the weighted sum by the number of queries (weights.shape[-2], the rows): each context vector "
                  "is its own query's weighted sum of the values, and nothing in it depends on how many queries there are")


SOFTMAX_AGAIN = ("applies the softmax to the weights again: they are the softmax of the scores already, each row "
                 "summing to 1, so weights @ values takes them as they are")


def _softmax_rows(w):
    e = np.exp(w - np.max(w, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _confirmed(impl, ladder):
    """`ladder` with the keys cut at n_q and the column sums confirmed on 3 queries over 7 keys: on a single
    query (the notes' examples) both give key 0's value row times its weight. A division by the number of keys
    or of queries is confirmed there too, where the two differ (and differ from the values' width)."""
    w, v = _drawn(707, 3, 7, 2)
    return cases.confirmed(ladder, lambda: impl.context_vectors(w.copy(), v.copy()),
                           lambda: stored_symptoms(dict(weights=w, values=v), 0),
                           only=lambda symptom: symptom in (KEYS_CUT, COLUMN_SUMS, BY_THE_KEYS, BY_THE_QUERIES,
                                                    COLUMNS_RENORMALISED))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on single tokens, batches, float32 and non-square weights"""

    check_stored(impl, STEP, apply, "context_vectors(weights, values)",
                 symptoms=lambda record, k: _confirmed(impl, stored_symptoms(record, k)))


@case(STEP, "property")
def test_one_hot_weights_select_values(impl):
    """with one-hot weights, each context vector is exactly the chosen value row"""
    values = rng(702).normal(size=(4, 3))
    pick = np.eye(4)[[2, 0, 3, 1]]
    checks.expect_close(_call(impl, pick, values, "one-hot weights"), values[[2, 0, 3, 1]],
                        "context_vectors with one-hot weights",
                        symptoms=lambda: _confirmed(impl, stored_symptoms({"weights": pick, "values": values}, 0)))


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves weights and values unchanged"""
    r = rng(703)
    w, v = _weights(r, (3, 3)), r.normal(size=(3, 2))
    _call(impl, w.copy(), v.copy(), "3 tokens")  # a mistake that raises on them is named first
    checks.expect_inputs_unchanged(impl, "context_vectors", [w, v], ["weights", "values"])
