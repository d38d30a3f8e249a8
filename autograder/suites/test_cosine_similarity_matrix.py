"""Hidden suite of `cosine_similarity_matrix` (assignment 01)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures import notes
from autograder.harness import case
from autograder.suites.toolkit import cases, checks, reshapes
from autograder.suites.toolkit.cases import check_stored, named_on_a_square, notes_cases, rng, rounded

STEP = "cosine_similarity_matrix"
test_notes = notes_cases(STEP, replayed=lambda record, k: _mistakes(record["X"]),
                         confirmed=lambda impl, ladder: _confirmed(impl, ladder),
                         unnamed=lambda actual, example, what: _explain_cut(actual, notes.expected(example), what),
                         probe=lambda impl: _call(impl, rng(304).normal(size=(4, 3)), "4 rows"))


def stored_inputs():
    r = rng(301)
    records = [dict(label=f"{n} random {d}-d rows", X=r.normal(size=(n, d))) for n, d in ((1, 3), (4, 2), (7, 16), (64, 8))]
    records.append(dict(label="float32 rows", X=r.normal(size=(5, 4)).astype(np.float32), atol=1e-4))
    records.append(dict(label="rows of very different lengths",
                        X=r.normal(size=(4, 3)) * np.array([[1e-3], [1.0], [1e3], [1e5]])))
    return records


def apply(impl, record):
    return _cut_named(_call(impl, record["X"], record["label"]), record["X"], record["label"])


def _call(impl, X, label):
    """cosine_similarity_matrix(X); a mistake that raises on rectangular X but runs on a square one
    is named by what it gives there."""
    try:
        out = impl.cosine_similarity_matrix(X)
    except RemoteError as error:
        named_on_a_square("cosine_similarity_matrix", error, label, X, impl.cosine_similarity_matrix,
                          lambda square: stored_symptoms({"X": square}, 0))
        _named_on_tall_rows(impl, error, label)
        raise
    return out


def _cut_named(out, X, label):
    """`out`, the table of X, unless it is the cosines cut toward 0, which a CaseFailure names."""
    try:
        actual = checks.to_array(out, "cosine_similarity_matrix(X)")
    except CaseFailure:  # a value of the wrong kind is for the case's own check to name
        return out
    _explain_cut(actual, _unit_rows(X) @ _unit_rows(X).T, f"cosine_similarity_matrix(X) on {label}")
    return out


# A table made with np.zeros((n, n), dtype=int) and filled in loops: each cosine is cut toward 0 as it is stored, so
# only a row's own cosine, 1, can stay (or 0, where it comes out as 0.9999999999999999).
INTEGER_TABLE = ("holds whole numbers only, each cosine cut toward 0 (every pair of rows that are not parallel gets "
                 "0): is the table an integer array (np.zeros((n, n), dtype=int))? Storing a cosine there drops its "
                 "fractional part; make the table of floats (np.zeros((n, n)))")


def _explain_cut(actual, right, what):
    """A CaseFailure naming INTEGER_TABLE where `actual` is the cosines `right` cut toward 0 entry by entry: whole
    numbers only, not all 0 (a table never filled) and not right; an entry whose cosine is within 1e-9 of a whole
    number (a row with itself) may be cut either way. Quiet otherwise."""
    actual, right = np.asarray(actual, dtype=float), np.asarray(right, dtype=float)
    if actual.shape != right.shape or not actual.any() or not np.isfinite(actual).all() or not np.isfinite(
            right).all() or np.allclose(actual, right, rtol=1e-4, atol=1e-5):
        return
    near_whole = abs(right - np.round(right)) < 1e-9
    either_cut = (actual == np.round(right)) | (actual == np.trunc(right - 1e-9 * np.sign(right)))
    if np.all(np.where(near_whole, either_cut, actual == np.trunc(right))):
        raise CaseFailure(f"{what} {INTEGER_TABLE}")


def _named_on_tall_rows(impl, error, label):
    """An `error` on `label` (rows wider than they are many) of loops that count the rows by the features: on 6
    rows of width 3 they run, filling only the first 3 rows and columns, which names them; quiet otherwise."""
    X = rng(306).normal(size=(6, 3))
    try:
        out = checks.to_array(impl.cosine_similarity_matrix(X.copy()), "cosine_similarity_matrix(X)")
    except (RemoteError, CaseFailure):
        return
    if checks.named_mistake(out, _first_rows_only(X)) is not None:
        raise CaseFailure(f"cosine_similarity_matrix raised {error.type_name} on {label}, and on 6 rows of width 3 "
                          f"it {FIRST_D_ROWS}") from None


FIRST_D_ROWS = ("fills only the first d rows and columns (d = X.shape[1], the features): its loops count the rows by "
                "the width of X, so they stop short where there are more rows than features and run past the last "
                "row where there are fewer; the rows (tokens) number X.shape[0]")


def _first_rows_only(X):
    """(candidate, symptom) of loops over range(d) for the n rows, where d < n: the first d rows and columns
    filled, the rest left at 0."""
    n, d = X.shape
    if d >= n:
        return []
    filled = np.zeros((n, n))
    filled[:d, :d] = (_unit_rows(X) @ _unit_rows(X).T)[:d, :d]
    return [(filled, FIRST_D_ROWS)]


COLUMNS = "compares columns, not rows: the rows of X are the tokens"


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples. Mistakes that give the same value on these
    inputs (rows of ±1 entries have the same L1 and squared lengths) are left out: the value tells them
    apart no more than the right one."""
    found = _mistakes(record["X"])
    return [(candidate, message) for candidate, message in found
            if not any(other != message and checks.named_mistake(_value(candidate), [(twin, other)])
                       for twin, other in found)]


def _confirmed(impl, ladder):
    """`ladder` with each mistake kept only where the same code makes it on a random square X too: on the
    notes' small tables and a single row, mistakes coincide (a zeroed diagonal is the angle arccos(1) = 0,
    column lengths are row lengths), which the probe tells apart; a square one, since some mistakes run
    only there. A diagnosis worded for a single row has no twin there, and is kept as it is."""
    X = rng(305).normal(size=(5, 5))
    # np.corrcoef of one row is one number: the same code gives Pearson's table on the probe
    pearson_table = (lambda: np.corrcoef(X), PEARSON_ONE_ROW)
    on_probe = {symptom for _, symptom in _mistakes(X)} | {PEARSON_ONE_ROW}
    return cases.confirmed(ladder, lambda: impl.cosine_similarity_matrix(X.copy()),
                           lambda: [*stored_symptoms({"X": X}, 0), pearson_table],
                           only=lambda symptom: symptom in on_probe)


def _value(candidate):
    with np.errstate(all="ignore"):
        try:
            return np.asarray(candidate() if callable(candidate) else candidate, dtype=float)
        except Exception:  # noqa: BLE001 - a model that cannot be computed matches nothing
            return np.array(np.nan)


def _mistakes(X):
    lengths = np.linalg.norm(X, axis=-1)
    unit = X / lengths[:, None]
    plain = [(lambda: X @ X.T, "these are plain dot products: divide by the two rows' lengths"),
             (lambda: (X / lengths) @ (X / lengths).T,
              "divides column j by the length of row j: the row lengths lost their axis, so they spread "
              "along the columns; keep it (keepdims=True) so each row is divided by its own length")]
    # With one row, unit * unit.T and unit.T @ unit are both the row's outer product: said as such.
    shapes = [(lambda: unit * unit.T, "multiplies entry by entry (*): the cosines of every pair of rows come "
                                      "from a matrix product (@)"),
              (lambda: unit.T @ unit, COLUMNS),
              (lambda: unit @ unit, "multiplies the unit rows by themselves untransposed (or reshaped to (d, n), "
                                    "which leaves a square table as it is): the cosines pair every row with every "
                                    "row, so the second factor is transposed"),
              *reshapes.reshape_mistakes(unit, unit)] if len(X) > 1 else [
              (lambda: unit.T @ unit, "gives a (d, d) table for a single row: pairs of features, not of rows; "
                                      "the result has one entry per pair of rows (tokens), n by n")]
    n = len(X)
    last_left_out = np.zeros((n, n))
    last_left_out[:-1, :-1] = (unit @ unit.T)[:-1, :-1]
    return plain + shapes + [
        (lambda: (X @ X.T) / np.outer(lengths ** 2, lengths ** 2),
         "divides by the product of the squared lengths: take their square roots, |x_i|·|x_j|"),
        (lambda: np.arccos(np.clip(unit @ unit.T, -1, 1)),
         "returns the angles between the rows (arccos of the cosines); the step returns the cosines"),
        *[(last_left_out, "leaves the last row and column at 0: a loop over range(n - 1) stops one short")
          ] * (n > 1),
        *_first_rows_only(X),
        (lambda: _unit_rows(np.trunc(X)) @ _unit_rows(np.trunc(X)).T, INTEGER_ROWS),
        (lambda: (X.T @ X) / np.outer(np.linalg.norm(X, axis=0), np.linalg.norm(X, axis=0)), COLUMNS),
        (lambda: (X @ X.T) / np.linalg.norm(X, axis=1)[:, None] ** 2,
         "divides each row by its own squared length only; use |x_i|·|x_j|"),
        *[(lambda scale=scale: (X / scale) @ (X / scale).T, f"divides by {name}; {OWN_LENGTH}")
          for scale, name in _wrong_lengths(X)],
        *[(lambda divisor=divisor: (X @ X.T) / divisor, f"divides X Xᵀ by {name}; {OWN_LENGTH}")
          for divisor, name in _wrong_divisors(lengths)],
        (lambda: (X @ X.T) / np.linalg.norm(X @ X.T, axis=-1, keepdims=True), GRAM_ROWS_NORMALISED),
        (lambda: np.abs(unit @ unit.T), "takes the absolute value of the cosines, so every negative one turns "
                                        "positive: rows that point apart have cosines below 0, down to -1 for "
                                        "opposite rows, and the sign is what tells them from rows that point alike"),
        (lambda: 1 - unit @ unit.T, "returns 1 - cosine, the cosine distance; the step returns the cosine itself"),
        (lambda: (X @ X.T) / X.shape[-1], PRODUCTS_AVERAGED),
        (lambda: _row_softmax(unit @ unit.T), COSINES_SOFTMAXED),
        (lambda: _unit_rows(X - X.mean(axis=-1, keepdims=True)) @ _unit_rows(X - X.mean(axis=-1, keepdims=True)).T,
         PEARSON),
        *[(lambda: np.corrcoef(X), PEARSON_ONE_ROW)] * (n == 1),
        (lambda: unit @ X.T, ONE_SIDE_NORMALISED),
        (lambda: X @ unit.T, ONE_SIDE_NORMALISED),
        *[(lambda zeroed=zeroed: zeroed, f"puts 0 in place of {part}: {why}")
          for zeroed, part, why in _zeroed_parts(unit @ unit.T)],
        *rounded(unit @ unit.T)]


def _zeroed_parts(cosines):
    """(the cosines with a part set to 0, the part, why it belongs to the table) of the known mistakes that
    leave part of the table out."""
    twice = "the cosine of rows j and i is that of rows i and j, but the table holds every pair both ways"
    return [(np.triu(cosines), "the lower triangle (np.triu keeps one half)", twice),
            (np.tril(cosines), "the upper triangle (np.tril keeps one half)", twice),
            (cosines - np.diag(np.diag(cosines)), "the diagonal",
             "entry (i, i) compares row i with itself, whose cosine is 1"),
            (np.triu(cosines, 1), "the diagonal and the lower triangle (a loop over j in range(i + 1, n) fills only "
                                  "the pairs above the diagonal)", f"{twice}, and entry (i, i), row i with itself, is 1"),
            (np.maximum(cosines, 0), "every negative cosine (a clip at 0)",
             "rows that point apart have cosines below 0, down to -1 for opposite rows"),
            ]


PEARSON = ("subtracts each row's mean first: that is Pearson's correlation, not the cosine, which compares the rows as "
           "they are (their directions from the origin)")
# np.corrcoef(X): Pearson's table, which for a single row is one number (the row with itself, 1), not a (1, 1) table
PEARSON_ONE_ROW = ("is one number for a single row, as np.corrcoef(X) gives it: that is Pearson's correlation (each row's "
                   "mean subtracted first), not the cosine, and the table of one row is (1, 1)")
# unit @ X.T (or X Xᵀ divided by the lengths along one axis only): each entry divided by one of its two rows' lengths
ONE_SIDE_NORMALISED = ("divides each dot product by the length of only one of its two rows (one factor of the product "
                       "made of unit rows, the other left as X): the cosine of rows i and j divides by both lengths, "
                       "|x_i|·|x_j|")


INTEGER_ROWS = ("converts X to integers first (an int dtype), which drops the fractional part: a row whose entries "
                "all lie between -1 and 1 becomes all zeros, whose cosines are 0 / 0 = nan; keep floats (dtype=float)")


GRAM_ROWS_NORMALISED = ("normalises the rows of X Xᵀ to length 1, not the rows of X: the cosine of rows i and j "
                        "divides their dot product by |x_i|·|x_j|, the lengths of those two rows of X; scale each row "
                        "of X to length 1 first, then multiply (unit @ unit.T)")


OWN_LENGTH = "each row is divided by its own length, along the features (axis=-1, keepdims=True)"


def _wrong_divisors(lengths):
    """(what X Xᵀ is divided by, its name) of the known mistakes in the denominator of the cosines, given the
    rows' lengths."""
    return [(lengths ** 2, "norms * norms, entry by entry, so column j is divided by |x_j|², where the pair of "
                           "rows i and j needs |x_i|·|x_j|")]


def _wrong_lengths(X):
    """(what X is divided by, its name) of the known mistakes in the rows' lengths."""
    with np.errstate(invalid="ignore"):  # a negative sum's square root is nan, which the student's code makes too
        unsquared = np.sqrt(X.sum(axis=-1, keepdims=True))
    return [(np.linalg.norm(X, axis=0), "the lengths of the columns (axis=0)"),
            (np.linalg.norm(X), "the length of the whole matrix (np.linalg.norm(X) with no axis)"),
            (np.abs(X).sum(axis=-1, keepdims=True), "each row's sum of absolute entries (an ord=1 length)"),
            (X.sum(axis=-1, keepdims=True), "each row's plain sum of entries (a length sums the squared entries, then "
                                            "takes the square root)"),
            (np.abs(X).max(axis=-1, keepdims=True), "each row's largest absolute entry"),
            (X.mean(axis=-1, keepdims=True), "each row's mean entry (a length is the square root of the sum of the "
                                             "squared entries, not their average)"),
            (unsquared, UNSQUARED_LENGTH)]


# np.sqrt(np.sum(X, axis=-1)) for the length: the squares left out of a length written by hand
UNSQUARED_LENGTH = ("the square root of each row's plain sum of entries, the squares left out (a length is the "
                    "square root of the sum of the SQUARED entries, np.sqrt(np.sum(X ** 2, axis=-1, keepdims=True)); "
                    "a row whose entries sum below 0 gets a nan length)")


# X @ X.T / d: the dot products averaged over the features, as if the scale of scaled attention made them cosines
PRODUCTS_AVERAGED = ("divides the dot products by d, the number of features: that averages them, and an average "
                     "still grows with the rows' lengths; the cosine divides the product of rows i and j by their "
                     "lengths, |x_i|·|x_j|, so that only the rows' directions count")
# softmax(unit @ unit.T): the attention weights' next step taken here, so each row sums to 1
COSINES_SOFTMAXED = ("takes the softmax of the cosines, so each row sums to 1: that makes attention weights, a later "
                     "step; the table holds the cosines themselves, 1 on the diagonal and -1 for opposite rows")


def _row_softmax(table):
    exps = np.exp(table - table.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def _unit_rows(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on random matrices, float32, and rows of very different lengths"""

    check_stored(impl, STEP, apply, "cosine_similarity_matrix(X)",
                 symptoms=lambda record, k: _confirmed(impl, _mistakes(record["X"])))


@case(STEP, "property")
def test_symmetric_with_unit_diagonal(impl):
    """is symmetric, with ones on the diagonal"""
    X = rng(302).normal(size=(6, 5))
    S = checks.to_array(_cut_named(_call(impl, X, "6 rows"), X, "6 rows"), "cosine_similarity_matrix(X)")
    # confirmed, as in the stored case: with 5 features for 6 rows, loops over range(n - 1) and over range(d) leave
    # the same row out, which the probe tells apart
    symptom = checks.named_mistake(S, _confirmed(impl, _mistakes(X)))
    holds = S.shape == (6, 6) and np.allclose(S, S.T, rtol=1e-4, atol=1e-5) and np.allclose(np.diag(S), 1)
    if symptom is not None and not holds:  # the rule fails, with a known cause
        raise CaseFailure(f"cosine_similarity_matrix of 6 rows: {symptom}")
    checks.expect_shape(S, (6, 6), "cosine_similarity_matrix of 6 rows")
    checks.expect_close(S, S.T, "cosine_similarity_matrix(X) compared with its transpose", relation=False)
    checks.expect_close(np.diag(S), np.ones(6), "the diagonal of cosine_similarity_matrix(X) (a row with itself)")


@case(STEP, "property")
def test_input_unchanged(impl):
    """leaves X unchanged"""
    X = rng(303).normal(size=(4, 3))
    _call(impl, X.copy(), "4 rows")  # a mistake that raises on X is named first
    checks.expect_inputs_unchanged(impl, "cosine_similarity_matrix", [X], ["X"])
