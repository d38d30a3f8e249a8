"""What the shape of a wrong value says about its cause, when no known mistake of the step matches.

A wrong result of the right shape often differs from the right one in a way that names the kind of
mistake even where the step's own ladder has no model of it: every entry scaled by one constant
(a wrong scale), every row by its own (a wrong normaliser), the same numbers in other places (an
axis swapped or reshaped), only the first item of a batch right. `pattern_of` tries each relation,
most specific first, and returns its message, or None. It reads the relation between the two
values only, so it never prints an expected value; the factors it names are ratios of them.
"""

import numpy as np


def _close(a, b, atol, rtol):
    return a.shape == b.shape and bool(np.all(abs(a - b) <= atol + rtol * abs(b)))


def _fraction(c):
    """c, and 1/n beside it when it is one over a whole number (0.0625 = 1/16): a division the
    student wrote shows up as that n."""
    n = 1 / c if c else 0.0
    whole = abs(n) >= 2 and abs(n - round(n)) < 1e-3 * abs(n)
    return f"{c:.3g} (= 1/{round(n)})" if whole else f"{c:.3g}"


def _fit_scale(actual, expected, axis):
    """Per-slice least-squares factors r with actual ≈ r * expected along `axis` (None: one factor)."""
    num = np.sum(actual * expected, axis=axis, keepdims=axis is not None)
    den = np.sum(expected * expected, axis=axis, keepdims=axis is not None)
    with np.errstate(all="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), 1.0)


def _scaled(actual, expected, atol, rtol, axis):
    """The factors, when actual is expected scaled by one factor per slice along `axis`, else None."""
    factor = _fit_scale(actual, expected, axis)
    # the tolerance grows with the factor: rounded worked examples scaled by 4 are 4 times as rough
    return factor if _close(actual, factor * expected, atol * np.maximum(1, abs(factor)), rtol) else None


def _rows(array):
    return array.reshape(-1, array.shape[-1])


# Rows matched at most: each row is compared with every row, and outputs larger than this are
# rare enough that "the grader cannot name the cause" is an honest answer there.
MOST_ROWS_MATCHED = 1024


def _same_rows_reordered(actual, expected, atol, rtol):
    """Every row (last axis) of actual is a row of expected, each used once."""
    rows, wanted = _rows(actual), _rows(expected)
    if len(rows) > MOST_ROWS_MATCHED:
        return False
    free = np.ones(len(wanted), dtype=bool)
    for row in rows:
        match = free & np.all(abs(row - wanted) <= atol + rtol * abs(wanted), axis=-1)
        if not match.any():
            return False
        free[np.argmax(match)] = False
    return True


def _batch_items_right(actual, expected, atol, rtol):
    """Which items of a batch (the axes before the last two) are right, each as an index."""
    if actual.ndim < 3:
        return []
    lead = actual.shape[:-2]
    return [index for index in np.ndindex(*lead) if _close(actual[index], expected[index], atol, rtol)]


def _distributions(array, atol):
    """Whether every row (last axis) is a probability distribution: entries >= 0 summing to 1."""
    return bool((array >= -atol).all() and np.allclose(array.sum(axis=-1), 1.0, atol=1e-4))


def _softmax_temperature(actual, expected, atol, rtol):
    """c when each row of actual is softmax(c * z) where expected is softmax(z), else None. Both are
    softmaxes of rows of scores, known only through the right weights: log(expected) is z up to a
    constant per row, so the centred logs of actual are c times the centred logs of expected."""
    if actual.shape[-1] < 2 or not (_distributions(actual, atol) and _distributions(expected, atol)):
        return None
    live = expected > 1e-12
    if not np.array_equal(live, actual > 1e-12) or live.sum(axis=-1).max() < 2:
        return None
    count = np.maximum(live.sum(axis=-1, keepdims=True), 1)

    def centred_logs(weights):  # the scores behind the weights, up to a constant per row
        with np.errstate(divide="ignore"):
            logs = np.where(live, np.log(weights), 0.0)
        return np.where(live, logs - logs.sum(axis=-1, keepdims=True) / count, 0.0)

    centred_right, centred_actual = centred_logs(expected), centred_logs(actual)
    den = float(np.sum(centred_right ** 2))
    if den < 1e-12:
        return None  # uniform rows: every temperature gives them
    c = float(np.sum(centred_actual * centred_right)) / den
    exps = np.where(live, np.exp(c * centred_right - np.max(np.where(live, c * centred_right, -np.inf),
                                                            axis=-1, keepdims=True)), 0.0)
    candidate = exps / exps.sum(axis=-1, keepdims=True)
    # a temperature mistake divides by sqrt(2) or more; a factor near 1 is a small error of another kind
    return c if abs(c - 1) > 0.05 and _close(actual, candidate, atol, rtol) else None


def _patterns(actual, expected, atol, rtol, facts):
    """(test, message) pairs, most specific first. A test may record in `facts` the numbers its
    message names ({factor}, {spread}, {items}); messages are str.format templates."""
    fits = {}  # axis -> the per-slice factors, or None: two tests read the columns' fit

    def fit_along(axis):
        if axis not in fits:
            fits[axis] = _scaled(actual, expected, atol, rtol, axis)
        return fits[axis]

    def scaled_by_one_factor():
        factor = _scaled(actual, expected, atol, rtol, None)
        if factor is None or abs(float(factor)) < 1e-12:
            return False
        facts["factor"] = _fraction(float(factor))
        return True

    def scaled_per_slice(axis, signs_only=False):
        if actual.ndim < 2 or actual.shape[axis] < 2 or actual.shape[-1 if axis == -2 else -2] < 2:
            return False
        factors = fit_along(axis)
        # a factor of 0 is a slice left out, not scaled (truncated codes, a row never written)
        if factors is None or np.any(abs(factors) < 1e-6):
            return False
        facts["spread"] = f"{np.min(factors):.3g} to {np.max(factors):.3g}"
        return not signs_only or bool(np.all(abs(abs(factors) - 1) < 1e-6))

    def softmax_of_scaled_scores():
        c = _softmax_temperature(actual, expected, atol, rtol)
        if c is None:
            return False
        facts["factor"] = _fraction(c)
        return True

    def some_batch_items_right():
        items = _batch_items_right(actual, expected, atol, rtol)
        facts["items"] = ", ".join(str(i[0]) if len(i) == 1 else str(i) for i in items[:4]) + (
            ", ..." if len(items) > 4 else "")
        return bool(items)

    return [
        (lambda: not np.any(actual),
         "every entry is 0: nothing was computed into the result (an array made with zeros and never "
         "filled, or a product with a zero factor)"),
        (lambda: scaled_by_one_factor(),
         "every entry is {factor} times the right value: one constant factor of the formula is wrong (a "
         "scale, or a division that is missing, extra or by the wrong number)"),
        (lambda: softmax_of_scaled_scores(),
         "each row is the softmax of the right scores times {factor}: the scores inside the softmax are "
         "scaled by the wrong factor (a scale missing, applied twice, or by the wrong number)"),
        (lambda: some_batch_items_right(),
         "only item(s) {items} of the batch (the axes before the last two) are right: the other items "
         "are computed differently (does a step use one item's inputs, mask or length for every item, "
         "or mix items?)"),
        (lambda: scaled_per_slice(-2, signs_only=True),
         "some columns are the negative of the right ones, the rest are right: a sign is wrong in those "
         "columns (a minus too many, or a formula written for the other columns)"),
        (lambda: scaled_per_slice(-1),
         "each row is the right row times a factor of its own (from {spread}): each row's normaliser "
         "or scale is wrong (missing, or computed from the wrong numbers)"),
        (lambda: scaled_per_slice(-2),
         "each column is the right column times a factor of its own (from {spread}): each column's "
         "normaliser or scale is wrong (missing, or computed along the wrong axis)"),
        (lambda: actual.ndim >= 2 and _same_rows_reordered(actual, expected, atol, rtol),
         "it holds the right rows, in the wrong order: rows are permuted (a reversed, rolled or shuffled "
         "axis, or heads or tokens concatenated in the wrong order)"),
        (lambda: _close(np.sort(actual, axis=None), np.sort(expected, axis=None), atol, rtol),
         "it holds the right numbers, in the wrong places: an axis is swapped, or a reshape or view "
         "reorders the entries (a view only regroups entries in memory order)"),
    ]


def pattern_of(actual, expected, atol=1e-5, rtol=1e-4):
    """The message of the first relation between a wrong `actual` and the right `expected` (float
    arrays of one shape, finite) that names a kind of mistake, or None."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape or actual.size < 2 or not np.any(expected):
        return None
    if not (np.isfinite(actual).all() and np.isfinite(expected).all()):
        return None
    facts = {}
    for holds, message in _patterns(actual, expected, atol, rtol, facts):
        if holds():
            return message.format(**facts)
    return None

