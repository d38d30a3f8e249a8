"""Hidden suite of `dot_product` (assignment 01)."""

import numpy as np

from autograder.error_causes import error_cause
from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import cases, checks
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng

STEP = "dot_product"
test_notes = notes_cases(STEP, replayed=lambda record, k: stored_symptoms(record, k),
                         confirmed=lambda impl, ladder: _confirmed(impl, ladder))


def stored_inputs():
    r = rng(101)
    records = [dict(label=f"two random {n}-d vectors", a=r.normal(size=n), b=r.normal(size=n))
               for n in (1, 3, 64, 1000)]
    records.append(dict(label="two float32 vectors", a=r.normal(size=16).astype(np.float32),
                        b=r.normal(size=16).astype(np.float32), atol=1e-4))
    records.append(dict(label="vectors with entries near 1e3", a=1e3 * r.normal(size=8),
                        b=1e3 * r.normal(size=8)))
    return records


def apply(impl, record):
    a, b = record["a"], record["b"]
    try:
        return impl.dot_product(a, b)
    except RemoteError as error:
        if error.type_name != "NotImplementedError" and len(a) == 1 and error_cause(str(error)) is None \
                and _works_on_longer(impl):
            raise CaseFailure(f"dot_product raised {error.type_name} on two vectors of a single entry, though it "
                              "works on longer ones: a vector of one entry is still a 1-D array of length 1; "
                              "code that needs two entries, or a squeeze that makes it a 0-d scalar with no "
                              "length or index, fails there") from None
        raise


def _works_on_longer(impl):
    try:
        impl.dot_product(np.array([0.5, -1.0]), np.array([2.0, 3.0]))
    except RemoteError:  # only asks whether longer vectors go through
        return False
    return True


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples."""
    a, b = record["a"], record["b"]
    shorter = [(lambda: np.sum(a[:-1] * b[:-1]), "leaves out the last pair of entries (a loop over "
                                                  "range(len(a) - 1) stops one short)"),
               (lambda: np.sum(a[1:] * b[1:]), "leaves out the first pair of entries (a loop that starts at 1; "
                                                "indices start at 0)"),
               *[(lambda: a[-1] * b[-1], LAST_ONLY)] * (len(a) > 1),  # one pair: the last product is right
               *[(lambda: a[0] * b[0], FIRST_ONLY)] * (len(a) > 1)]  # and so is the first
    in_integers = [(np.sum(np.asarray(a).astype(int) * np.asarray(b).astype(int)), "the entries to integers first"),
                   (int(np.sum(np.asarray(a) * np.asarray(b))), "the sum to an integer (int())")]
    truncated = [(value, f"converts {what}, which drops the fractional part") for value, what in in_integers]
    return [(lambda: np.sum(a * a), "looks like a·a, not a·b"),
            *[(candidate, f"returns {name}, not the sum of the products a_i b_i: {why}")
              for candidate, name, why in _other_quantities(a, b)],
            (lambda: np.sum(a) * np.sum(b), "multiplies the sum of a by the sum of b, which pairs every entry "
                                            "of a with every entry of b; the dot product pairs entry i with "
                                            "entry i only"),
            (lambda: np.sum(np.abs(a * b)), "adds the absolute values of the products: a negative product "
                                            "must lower the sum"),
            (lambda: np.sum(a + b), "adds the vectors instead of multiplying them elementwise"),
            (lambda: a * b, PRODUCTS),
            (lambda: np.cumsum(a * b), RUNNING),
            (lambda: np.sum(a * b) / len(a), "divides by the length: that is a mean, not a sum"),
            (lambda: np.sum(a * b) + 1, "starts the total at 1 instead of 0, so it comes out 1 too large: a sum "
                                        "starts from 0 (a product from 1)"),
            *[(lambda: np.sum(a * b[::-1]), "pairs a with b reversed (b[::-1], as np.convolve does): the dot product "
                                            "pairs entry i of a with entry i of b")] * (len(a) > 1),
            (lambda: np.outer(a, b), OUTER),
            (lambda: np.cross(a, b), CROSS),  # raises on vectors of other lengths than 2 and 3: named by its error
            *shorter, *truncated, *cases.rounded(np.sum(np.asarray(a) * np.asarray(b)))]


OUTER = ("returns the outer product, a table of every a_i b_j (np.outer, or a column times a row): the dot product "
         "pairs entry i of a with entry i of b only, and adds those products into one number")
CROSS = ("returns the cross product (np.cross), a vector perpendicular to a and b, defined for 3-d vectors (2-d "
         "ones give one number of it): the dot product adds the products a_i b_i into one number")


LAST_ONLY = ("keeps only the last product a_i b_i: a loop that assigns each product (=) replaces the total at "
             "every step instead of adding to it (+=)")
FIRST_ONLY = ("keeps only the first product, a[0] * b[0]: the products of the other positions are never added "
              "(a `return` inside the loop ends it after its first pass; return the total after the loop)")
RUNNING = ("returns the running totals of the products (np.cumsum keeps every partial sum, one per entry), not "
           "one number: the dot product is the single sum of all the products")
PRODUCTS = "returns the products of the entries, one per pair: the dot product adds them up into one number"
# On short or small vectors these coincide with other mistakes (the last product is the sum without the first of
# two, the first product the sum without the last; the products of one pair are its running sum; a loop that
# leaves the only pair out gives 0, as integers of entries below 1 do; the length of one product is its absolute
# value), so each is kept only where the same code shows it on longer vectors too.
LARGEST_NAME = "the largest product a_i b_i (np.max)"
LARGEST = f"returns {LARGEST_NAME}, not the sum of the products a_i b_i: it is one of the terms; add them all"
_COINCIDING = (LAST_ONLY, FIRST_ONLY, PRODUCTS, RUNNING, LARGEST)


def _confirmed(impl, ladder):
    """`ladder` with the mistakes that coincide on short vectors confirmed on two vectors of 4 entries, whose
    largest product is neither the first nor the last."""
    a, b = np.array([0.5, 2.0, 1.25, -1.5]), np.array([1.5, 3.5, -2.5, 0.5])
    return cases.confirmed(ladder, lambda: impl.dot_product(a.copy(), b.copy()),
                           lambda: stored_symptoms(dict(a=a, b=b), 0),
                           only=lambda symptom: symptom in _COINCIDING or symptom.startswith(
                               ("leaves out the", "converts", "returns |a * b|", "adds the absolute values")))


def _other_quantities(a, b):
    """(candidate, its name, why it is no dot product) of other quantities of two vectors returned for it."""
    return [(lambda: np.linalg.norm(a) * np.linalg.norm(b), "|a|·|b|, the product of the two lengths",
             "that is the largest a·b can be, reached only when a and b point the same way"),
            (lambda: np.sqrt(np.sum(a * b)), "the square root of the sum of products",
             "a root turns a·a into the length |a|; a·b itself has none"),
            (lambda: np.sum((a - b) ** 2), "|a - b|², the squared distance between a and b",
             "that measures how far apart they are"),
            (lambda: np.linalg.norm(a * b), "|a * b|, the length of the vector of products",
             "a length squares the products, which drops their signs"),
            (lambda: np.sum((a * b) ** 2), "the sum of the squared products",
             "squaring drops each product's sign and changes its size; add the products as they are"),
            (lambda: np.max(a * b), LARGEST_NAME, "it is one of the terms; add them all")]


def _number(impl, value, what, a, b):
    """`value` as one float; a value of another size is named by the ladder first (products never summed)."""
    array = checks.to_array(value, what)
    symptom = None if array.size == 1 else checks.named_mistake(array, _confirmed(impl, stored_symptoms(dict(a=a, b=b), 0)))
    if symptom is not None:
        raise CaseFailure(f"{what}: {symptom}")
    return checks.to_float(array, what)


@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """matches the reference on random vectors (lengths 1 to 1000, float32, large entries)"""

    check_stored(impl, STEP, apply, "dot_product(a, b)",
                 symptoms=lambda record, k: _confirmed(impl, stored_symptoms(record, k)))


@case(STEP, "oracle")
def test_matches_numpy_dot(impl):
    """agrees with numpy's own dot product"""
    r = rng(102)
    for n in (2, 5, 50):
        a, b = r.normal(size=n), r.normal(size=n)
        checks.expect_close(_number(impl, impl.dot_product(a, b), "dot_product(a, b)", a, b),
                            float(np.dot(a, b)), f"dot_product of two {n}-d vectors",
                            symptoms=_confirmed(impl, stored_symptoms(dict(a=a, b=b), 0)))


@case(STEP, "property")
def test_returns_a_number_and_is_symmetric(impl):
    """returns one number, also for Python lists; a·b equals b·a, and a·(-b) is -(a·b)"""
    r = rng(103)
    a, b = r.normal(size=7), r.normal(size=7)
    ab = _number(impl, impl.dot_product(a, b), "dot_product(a, b)", a, b)
    try:
        impl.dot_product(list(a), list(b))  # the value is checked on arrays; lists only have to go through
    except RemoteError as error:
        if error.type_name == "NotImplementedError":
            raise
        raise CaseFailure(f"dot_product raised {error.type_name} on two Python lists, though it works on arrays: "
                          "the docstring allows lists, and a list has no elementwise * or @ (list * list is an "
                          "error, list + list joins them): make arrays of them first") from None
    ba = checks.to_float(impl.dot_product(b, a), "dot_product(b, a)")
    if abs(ab - ba) > 1e-9 * max(1.0, abs(ab)):
        raise CaseFailure("dot_product(a, b) and dot_product(b, a) differ; the dot product is symmetric")
    flipped = checks.to_float(impl.dot_product(a, -b), "dot_product(a, -b)")
    if abs(flipped + ab) > 1e-9 * max(1.0, abs(ab)):
        symptom = checks.named_mistake(np.asarray(ab), _confirmed(impl, stored_symptoms(dict(a=a, b=b), 0)))
        raise CaseFailure("dot_product(a, -b) is not -dot_product(a, b): flipping the sign of b flips every "
                          "product a_i b_i, so it must flip their sum"
                          + (f"; dot_product(a, b) {symptom}" if symptom else ""))


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves its inputs unchanged"""
    r = rng(104)
    a, b = r.normal(size=6), r.normal(size=6)
    checks.expect_inputs_unchanged(impl, "dot_product", [a, b], ["a", "b"])
