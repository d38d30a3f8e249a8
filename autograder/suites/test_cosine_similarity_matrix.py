"""Hidden suite of `cosine_similarity_matrix` (assignment 01)."""

import numpy as np

from autograder.harness import case
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng

STEP = "cosine_similarity_matrix"
test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k))


def stored_inputs():
    r = rng(301)
    records = [dict(label=f"{n} random {d}-d rows", X=r.normal(size=(n, d))) for n, d in ((1, 3), (4, 2), (7, 16), (64, 8))]
    records.append(dict(label="float32 rows", X=r.normal(size=(5, 4)).astype(np.float32), atol=1e-4))
    records.append(dict(label="rows of very different lengths",
                        X=r.normal(size=(4, 3)) * np.array([[1e-3], [1.0], [1e3], [1e5]])))
    return records


def apply(impl, record):
    return impl.cosine_similarity_matrix(record["X"])


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    X = record["X"]
    return [(lambda: X @ X.T, "these are plain dot products: divide by the two rows' lengths"),
            (lambda: (X.T @ X) / np.outer(np.linalg.norm(X, axis=0), np.linalg.norm(X, axis=0)),
             "compares columns, not rows: the rows of X are the tokens"),
            (lambda: (X @ X.T) / np.linalg.norm(X, axis=1)[:, None] ** 2,
             "divides each row by its own squared length only; use |x_i|·|x_j|"),
            (lambda: (X / np.linalg.norm(X, axis=0)) @ (X / np.linalg.norm(X, axis=0)).T,
             "divides by the lengths of the columns (axis=0); each row is divided by its own length, "
             "along the features (axis=-1, keepdims=True)")]


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on random matrices, float32, and rows of very different lengths"""

    check_stored(impl, STEP, apply, "cosine_similarity_matrix(X)", symptoms=stored_symptoms)


@case(STEP, "property")
def test_symmetric_with_unit_diagonal(impl):
    """is symmetric, with ones on the diagonal"""
    X = rng(302).normal(size=(6, 5))
    S = checks.to_array(impl.cosine_similarity_matrix(X), "cosine_similarity_matrix(X)")
    checks.expect_shape(S, (6, 6), "cosine_similarity_matrix of 6 rows")
    checks.expect_close(S, S.T, "cosine_similarity_matrix(X) compared with its transpose", relation=False)
    checks.expect_close(np.diag(S), np.ones(6), "the diagonal of cosine_similarity_matrix(X) (a row with itself)")


@case(STEP, "property")
def test_input_unchanged(impl):
    """leaves X unchanged"""
    X = rng(303).normal(size=(4, 3))
    checks.expect_inputs_unchanged(impl, "cosine_similarity_matrix", [X], ["X"])
