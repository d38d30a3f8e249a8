"""Hidden suite of `cosine_similarity` (assignment 01)."""

import re

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import cases, checks
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng, rounded

STEP = "cosine_similarity"
test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k),
                         confirmed=lambda impl, ladder: _confirmed(impl, ladder),
                         probe=lambda impl: _named_call(impl, *rng(204).normal(size=(2, 5)), "two random 5-d vectors"))


def stored_inputs():
    r = rng(201)
    records = [dict(label=f"two random {n}-d vectors", a=r.normal(size=n), b=r.normal(size=n))
               for n in (2, 3, 300)]
    records.append(dict(label="two float32 vectors", a=r.normal(size=10).astype(np.float32),
                        b=r.normal(size=10).astype(np.float32), atol=1e-4))
    records.append(dict(label="vectors of very different lengths", a=1e4 * r.normal(size=5),
                        b=1e-3 * r.normal(size=5)))
    return records


def apply(impl, record):
    return _called(impl, record["a"], record["b"], "cosine_similarity(a, b)")


def _called(impl, a, b, what):
    """impl.cosine_similarity(a, b); an error that np.linalg.norm(a, b) explains is named."""
    try:
        return impl.cosine_similarity(a, b)
    except RemoteError as error:
        _explain_norm_of_two(impl, error, what)
        if re.search(r"for @: '(numpy\.)?float\d*' and '(numpy\.)?float\d*'", str(error)):
            raise CaseFailure(f"{what} raised {error.type_name}: {MATMUL_OF_NUMBERS}") from None
        if error.type_name == "IndexError" and f"with size {len(a)}" in str(error):
            _named_on_longer_vectors(impl, error, what)
        raise


def _named_on_longer_vectors(impl, error, what):
    """An IndexError on short vectors of a cosine written out for a fixed number of entries, named by what it gives
    on vectors of five, where it runs; quiet otherwise."""
    a, b = rng(207).normal(size=(2, 5))
    try:
        value = checks.to_float(impl.cosine_similarity(a.copy(), b.copy()), what)
    except (RemoteError, CaseFailure):
        return
    symptom = checks.named_mistake(np.asarray(value), _first_entries(a, b))
    if symptom is not None:
        raise CaseFailure(f"{what} raised {error.type_name}, and on vectors of 5 entries it runs: {symptom}") from None


# np.linalg.norm(a) @ np.linalg.norm(b): the lengths are numbers, and @ multiplies arrays only
MATMUL_OF_NUMBERS = ("it multiplies two single numbers (the lengths?) with @, the matrix product, which takes arrays of "
                     "at least one axis; numbers multiply with *")


NORM_OF_TWO = ("np.linalg.norm(a, b) reads b as the norm's order (ord=), not as a second vector, so it "
               "takes the length of a alone, and an order made of several numbers raises; the denominator is "
               "np.linalg.norm(a) * np.linalg.norm(b)")


def _explain_norm_of_two(impl, error, what):
    """A ValueError of an array used as one truth value (NumPy's norm testing `ord == inf` where ord is b) is
    np.linalg.norm(a, b) when a vector of one entry and a number b, a single order, give a·b / |a|: b's length
    never divides. A right cosine of them is ±1, and `if a:` and the like raise on them too."""
    if "truth value of an array" not in str(error):
        return
    a, b = np.array([3.0]), np.array(-2.0)  # cosine -1; a·b / |a| is -2
    try:
        value = float(impl.cosine_similarity(a, b))
    except (RemoteError, CaseFailure, TypeError, ValueError):
        return
    if abs(value - np.dot(a, b) / np.linalg.norm(a)) <= 1e-9:
        raise CaseFailure(f"{what} raised {error.type_name}: {NORM_OF_TWO}") from None


ANGLE = "returns the angle (arccos of the cosine); the step returns the cosine itself"


def _wrong_divisors(a, b):
    """(divisor, its name) of the known mistakes in the cosine's denominator. Where two of them are equal on these
    inputs (the plain sums' product and the ord=1 lengths' where no entry is negative, say), the first one's name
    says both."""
    plain = np.sum(a) * np.sum(b)
    absolute = np.sum(np.abs(a)) * np.sum(np.abs(b))
    # np.sqrt(np.sum(a) ** 2): the entries summed, then squared, where a length squares them first
    sums_squared = np.abs(np.sum(a)) * np.abs(np.sum(b))

    def also(divisor, other, name):
        return f" (or {name}, equal here)" * bool(np.isclose(divisor, other))

    both = " or the plain sums, sum(a)·sum(b), equal where no entry is negative," * bool(np.isclose(plain, absolute))
    squared_sums = "the square roots of the squared sums, |sum(a)|·|sum(b)|"
    products, dot = np.linalg.norm(a * b), abs(np.dot(a, b))
    return [(np.linalg.norm(a) ** 2, "|a|²"),
            (np.linalg.norm(a), "|a| alone (that makes the length of b's projection on a)"),
            (np.linalg.norm(b), "|b| alone (that makes the length of a's projection on b)"),
            (np.dot(a, a) * np.sqrt(np.dot(b, b)), "|a|²·|b| (** binds before *, so a·a * (b·b) ** 0.5 takes "
                                                   "the root of b·b only)"),
            (absolute, "the sums of absolute entries (ord=1 lengths; a length is the square root of the sum of "
                       f"squared entries){both}{also(absolute, sums_squared, squared_sums)}"),
            (plain, "the plain sums of the entries, sum(a)·sum(b) (a length is the square root of the sum of "
                    f"squared entries),{also(plain, sums_squared, squared_sums)}"),
            (np.linalg.norm(a) + np.linalg.norm(b), "|a| + |b|, the sum of the lengths,"
                                                    + also(np.linalg.norm(a) + np.linalg.norm(b),
                                                           np.linalg.norm(a + b), "|a + b|")),
            (len(a) * np.linalg.norm(a) * np.linalg.norm(b), "|a|·|b| times the number of entries"),
            (products, "the length of the products a_i b_i" + also(products, dot, "the size of a·b itself")),
            (len(a), "the number of entries (len(a)), which makes a mean of the products,"),
            (np.linalg.norm(np.stack([a, b])), "one length of a and b stacked together, sqrt(|a|² + |b|²) (as "
                                               "np.linalg.norm([a, b]) gives),"),
            (sums_squared, f"{squared_sums}: each sum is taken before squaring, where a length squares each entry "
                           "first, then sums,"),
            (np.linalg.norm(a) * np.dot(b, b), "|a|·|b|², b's sum of squares left without its square root,"),
            # a·b / (a·a * b·b) ** 1 / 2 is (a·b / (a·a * b·b)) / 2
            (2 * np.dot(a, a) * np.dot(b, b), "2(a·a)(b·b): y ** 1 / 2 is (y ** 1) / 2, since ** binds before /, so "
                                              "no square root is taken and the quotient is halved; a square root is "
                                              "** 0.5, or ** (1 / 2) with parentheses,"),
            (np.linalg.norm(a + b), "|a + b|, the length of the sum of the vectors,"),
            (dot, "the size of a·b itself (the norm of one number is its absolute value), which leaves only its "
                  "sign, ±1,")]


def _first_entries(a, b):
    """(candidate, diagnosis) of a cosine written out entry by entry for vectors of k entries (k = 2, 3: the notes'
    examples), which on longer vectors reads the first k alone, in the lengths, the dot product or both."""
    found = []
    for k in (2, 3):
        if len(a) <= k:
            continue
        def head(part, k=k):
            return (f"in {part} only the first {k} entries count (written out entry by entry, a[0] * b[0] + a[1] * b[1] "
                    f"+ ..., for vectors of {k}): the cosine sums over all d entries of a and b")

        dot, lengths = np.dot(a[:k], b[:k]), np.linalg.norm(a[:k]) * np.linalg.norm(b[:k])
        found += [(lambda dot=dot, lengths=lengths: dot / lengths, head("the dot product and the lengths")),
                  (lambda lengths=lengths: np.dot(a, b) / lengths, head("the lengths")),
                  (lambda dot=dot: dot / (np.linalg.norm(a) * np.linalg.norm(b)), head("the dot product"))]
    return found


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    a, b = record["a"], record["b"]
    cosine = _cosine(a, b)
    lengths = np.linalg.norm(a) * np.linalg.norm(b)
    return [*[(lambda eps=eps: np.dot(a, b) / (lengths + eps), EPSILON) for eps in (1e-2, 1e-3, 1e-4, 1e-5)],
            *_first_entries(a, b), (lambda: np.dot(a, b), "this is the plain dot product: divide by both lengths"),
            (lambda: cosine ** 2, SQUARED),
            (lambda: np.linalg.norm(np.asarray(a) - np.asarray(b)), EUCLIDEAN),
            (lambda: np.dot(a, b) / np.linalg.norm(a) * np.linalg.norm(b),
             "divides by |a| and then multiplies by |b|: a / x * y is (a / x) * y; the product of the "
             "lengths needs parentheses"),
            (lambda: np.dot(a, b) / (np.sqrt(np.sum(a)) * np.sqrt(np.sum(b))),
             "takes each length as the square root of the plain sum of the entries; a length sums the "
             "squared entries"),
            (lambda: np.arccos(cosine), ANGLE),
            (lambda: np.degrees(np.arccos(cosine)), ANGLE),
            (lambda: 1 - cosine, DISTANCE),
            (lambda: np.cos(np.dot(a, b)), COS_OF_DOT),
            *[(lambda divisor=divisor: np.dot(a, b) / divisor, f"divides by {name} instead of |a|·|b|")
              for divisor, name in _wrong_divisors(a, b)],
            (lambda: np.dot(a, b) / (np.sum(a * a) * np.sum(b * b)),
             "divides by the squared lengths; take their square roots"),
            (lambda: _cosine(a - np.mean(a), b - np.mean(b)), PEARSON),
            *rounded(cosine),
            (lambda: np.floor(cosine), FLOORED),
            (lambda: np.maximum(cosine, 0), "puts 0 in place of every negative cosine (a clip at 0): vectors that "
                                            "point apart have cosines below 0, down to -1 for opposite ones"),
            (lambda: abs(cosine), ABSOLUTE)]


# An epsilon against division by zero, large enough to show: parallel vectors come out a hair below 1.
EPSILON = ("adds a constant (an epsilon, against division by zero) to the lengths' product it divides by, large "
           "enough to change the cosine: parallel vectors come out a hair below 1; the docstring's vectors are "
           "never all zeros, so the product needs no epsilon")
SQUARED = ("returns the square of the cosine, which drops its sign and pulls every value toward 0: the cosine "
           "itself, a·b / (|a|·|b|), runs from -1 (opposite) to 1 (the same direction)")
EUCLIDEAN = ("returns the Euclidean distance |a - b|, how far apart the two points are: the cosine compares "
             "directions, a·b divided by both lengths, whatever the lengths are")


ABSOLUTE = ("returns the absolute value of the cosine: its sign says whether the vectors point the same way (above 0) "
            "or apart (below 0, down to -1 for opposite ones), so it must be kept")


FLOORED = ("divides with // (floor division), which rounds the quotient down to a whole number, so almost every "
           "cosine becomes 0 or -1: / keeps the fraction")


DISTANCE = "returns 1 - cosine, the cosine distance; the step returns the cosine itself"
COS_OF_DOT = ("applies np.cos to the dot product a·b: the cosine similarity is the cosine of the angle between a "
              "and b, which is a·b divided by |a|·|b|, not the cosine function of a·b")


PEARSON = ("subtracts each vector's mean first: that is Pearson's correlation, not the cosine, which compares the "
           "vectors as they are (their directions from the origin)")


def _confirmed(impl, ladder):
    """`ladder` with Pearson's correlation and a rounded cosine confirmed where no whole number is either: on
    2-d vectors the correlation is always ±1, and a rounded cosine near ±1 or 0 is a whole number too, as
    every cosine divided with // (floor division) is. The cosine distance and np.cos of a·b are confirmed
    too: on orthogonal vectors (a·b = 0) both are 1."""
    a, b = np.array([1.0, 2.0, 3.0]), np.array([3.0, 1.0, 2.0])  # cosine 11/14, correlation -1/2
    return cases.confirmed(ladder, lambda: impl.cosine_similarity(a.copy(), b.copy()),
                           lambda: stored_symptoms(dict(a=a, b=b), 0),
                           only=lambda symptom: symptom in (PEARSON, FLOORED, DISTANCE, COS_OF_DOT, SQUARED, ABSOLUTE)
                           or symptom.startswith("the result is rounded"))


def _cosine(a, b):
    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))


@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """matches the reference on random vectors, float32, and vectors of very different lengths"""

    check_stored(impl, STEP, apply, "cosine_similarity(a, b)",
                 symptoms=lambda record, k: _confirmed(impl, stored_symptoms(record, k)))


def _named_call(impl, a, b, what):
    """cosine_similarity(a, b) as a float, or the known mistake it matches named (the checks after
    it still see a wrong value no mistake explains). A nan is left to them: arccos of a cosine that
    rounding put just above 1 is nan too, like the square root of a negative sum."""
    value = checks.to_float(_called(impl, a, b, what), what)
    right = _cosine(a, b)
    symptom = checks.named_mistake(np.asarray(value), _confirmed(impl, stored_symptoms({"a": a, "b": b}, 0)))
    # within the extremes' own tolerance a value is not blamed: a right formula a hair off (an epsilon added to
    # the lengths' product) is as near to a known mistake that gives the right cosine here (|a|² where b = -a)
    if symptom is not None and np.isfinite(value) and not abs(value - right) <= EXTREMES_TOLERANCE:
        raise CaseFailure(f"{what}: {symptom}")
    return value


EXTREMES_TOLERANCE = 1e-6


@case(STEP, "property")
def test_range_and_extremes(impl):
    """is 1 for parallel vectors, -1 for opposite ones, and always within [-1, 1]"""
    r = rng(202)
    a = r.normal(size=4)
    same = _named_call(impl, a, 3.0 * a, "cosine_similarity(a, 3a)")
    if not abs(same - 1) <= EXTREMES_TOLERANCE:  # nan is not 1 either
        if np.isnan(same):  # nan names no formula: on positive entries every known one runs (roots, arccos) and shows
            _named_call(impl, *np.abs(rng(206).normal(size=(2, 4))) + 0.5,
                        "cosine_similarity(a, 3a) is nan, and cosine_similarity of two vectors of positive entries")
        raise CaseFailure(f"cosine_similarity(a, 3a) is {same:.4g}, and parallel vectors have cosine 1, whatever their "
                          f"lengths; {checks.UNNAMED}")
    opposite = _named_call(impl, a, -a, "cosine_similarity(a, -a)")
    if not abs(opposite + 1) <= EXTREMES_TOLERANCE:
        raise CaseFailure(f"cosine_similarity(a, -a) is {opposite:.4g}, and opposite vectors have cosine -1 "
                          f"(a·(-a) = -|a|², divided by |a|·|a|); {checks.UNNAMED}")
    for _ in range(20):
        value = _named_call(impl, r.normal(size=6), r.normal(size=6), "cosine_similarity")
        if not -1 - 1e-9 <= value <= 1 + 1e-9:
            raise CaseFailure(f"cosine_similarity returned {value:.4g}, outside [-1, 1]")


# The message of dot_product's suite, for the same rule: `a @ b` and `a * b` work on arrays only.
LISTS = ("the docstring allows lists, and a list has no @ or elementwise * (list @ list is an error, list * list "
         "too): make arrays of them first (np.asarray), or build on your dot_product, which does")


# An output case on the kind of input a slip tells apart: right on arrays, a raise on lists. A wrong formula fails
# it as it fails every output case.
@case(STEP, "oracle")
def test_python_lists(impl):
    """matches the reference on Python lists too, as the docstring allows"""
    a, b = rng(205).normal(size=(2, 5))
    _called(impl, a, b, "cosine_similarity(a, b)")  # an error on arrays too is no list's: named or raised here
    try:
        value = impl.cosine_similarity(list(a), list(b))
    except RemoteError as error:
        if error.type_name == "NotImplementedError":
            raise
        raise CaseFailure(f"cosine_similarity raised {error.type_name} where a and b are Python lists, though it "
                          f"works on arrays: {LISTS}") from None
    what = "cosine_similarity of two Python lists"
    checks.expect_close(checks.to_float(value, what), _cosine(a, b), what,
                        symptoms=lambda: _confirmed(impl, stored_symptoms(dict(a=a, b=b), 0)))


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves its inputs unchanged"""
    r = rng(203)
    a, b = r.normal(size=6), r.normal(size=6)
    _called(impl, a.copy(), b.copy(), "cosine_similarity(a, b)")  # an error named before the inputs are read back
    checks.expect_inputs_unchanged(impl, "cosine_similarity", [a, b], ["a", "b"])
