"""Comparisons that explain themselves in the student's terms.

Every helper raises `CaseFailure` with a message that names the symptom (a shape, a row sum,
a known mistake) and never prints an expected value of a hidden case.
"""

import contextlib
import math

import numpy as np
import torch

from autograder.errors import CaseFailure, CaseTimeout, DiagnosisTimeout, KernelStuck
from autograder.limits import SEVERAL_FIT
from autograder.suites.toolkit import differences

asarray = np.asarray


# An empty array holds no values, so nothing bounds its other sizes, and a shape is the student's to
# choose: code that had seen a case's hidden inputs returned an empty array whose sizes spelt them out,
# 18 digits a message (red-team round r63). A non-empty array's sizes are bounded by what a reply may
# carry. An empty shape is shown while its other sizes multiply to at most this, which every empty
# result a plausible mistake makes of a case's sizes fits (a slice one past the end: (4, 0), (2, 3072, 0)).
EMPTY_SHAPE_SHOWN = 2**16


def fmt_shape(shape):
    sizes = [int(n) for n in shape]
    if 0 in sizes and math.prod(n for n in sizes if n) > EMPTY_SHAPE_SHOWN:
        return f"({len(sizes)} axes, at least one of size 0)"
    return "(" + ", ".join(map(str, sizes)) + ("," if len(sizes) == 1 else "") + ")"


def returned_none(what):
    """The failure for a value that is None: the graded code ended without returning anything, the
    commonest reason of all (NumPy would make it a 0-d nan array, whose shape "()" misleads)."""
    return CaseFailure(f"{what} is None: the code returned nothing (is a `return` missing?)")


# A tuple of tensors where one is expected: most often a layer that returns its weights too.
SEVERAL_RESULTS = ("does the code return more than its one result (the attention weights beside the context, "
                   "say)? Return that result alone")


# A list (a comprehension's result) of like tensors: the parts of one result, one per head say, left
# unjoined; results returned side by side (context and weights) come as a tuple of different shapes.
PARTS_NOT_JOINED = ("the parts of the result (one per head, say) are returned as a list and never joined into "
                    "one tensor (torch.cat along the features puts heads side by side)")


def _unjoined_parts(value):
    return (isinstance(value, list) and len(value) > 1 and all(torch.is_tensor(v) for v in value)
            and len({tuple(v.shape) for v in value}) == 1)


def to_array(value, what):
    """The student's value as a float64 ndarray, or a CaseFailure saying why it is not one."""
    if value is None:
        raise returned_none(what)
    if torch.is_tensor(value):
        value = value.detach().cpu().double().numpy()
    if isinstance(value, (tuple, list)) and value and any(
        torch.is_tensor(v) for v in value
    ):
        if _unjoined_parts(value):
            raise CaseFailure(f"{what} is a list of {len(value)} tensors of one shape, "
                              f"{fmt_shape(value[0].shape)}, expected one array: {PARTS_NOT_JOINED}")
        raise CaseFailure(f"{what} is a {type(value).__name__} of tensors, expected one array: {SEVERAL_RESULTS}")
    try:
        array = asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise CaseFailure(f"{what} is a {type(value).__name__}, expected an array of numbers") from None
    return array


def to_float(value, what):
    array = to_array(value, what)
    if array.size != 1:
        raise CaseFailure(f"{what} has shape {fmt_shape(array.shape)}, expected a single number")
    return float(array.reshape(()))


def expect_shape(actual, shape, what):
    if tuple(actual.shape) != tuple(shape):
        relation = shape_relation(tuple(actual.shape), tuple(shape))
        raise CaseFailure(f"{what} has shape {fmt_shape(actual.shape)}, expected {fmt_shape(shape)}"
                          + (f": {relation}" if relation else ""))


# The right value of one entry in the wrong container: a one-entry result made a bare number, or a number
# made a one-entry array.
SQUEEZED_TO_NUMBER = ("a bare number where an array of one entry belongs: its axes of length 1 were squeezed "
                      "away (np.squeeze, .item() or float() of the result?), which an input of one entry shows")
NUMBER_IN_AN_ARRAY = ("one number wrapped in an array of one entry (np.array([...]), [x], or keepdims=True "
                      "around it?) where the docstring returns the number itself")


def shape_relation(got, want):
    """What a wrong shape has in common with the right one, as the shape-level rung of every ladder
    (`differences` is the value-level one): an axis missing or added, axes in another order, or the
    right number of entries laid out otherwise; None where none of these holds."""
    if got == () and want and all(n == 1 for n in want):
        return SQUEEZED_TO_NUMBER
    if want == () and got and all(n == 1 for n in got):
        return NUMBER_IN_AN_ARRAY
    if not got or not want:
        return None
    if got == want[1:]:
        return "its first axis is missing (one item or row taken, as [0] does, or the axis squeezed or summed away?)"
    if got == want[:-1]:
        return "its last axis is missing (summed, averaged or indexed away?)"
    if len(got) == len(want) + 1 and 1 in got and any(got[:i] + got[i + 1:] == want for i in range(len(got)) if got[i] == 1):
        return "it has an extra axis of size 1 (an unsqueeze, [None] or keepdims too many?)"
    if len(want) == len(got) + 1 and any(want[:i] + want[i + 1:] == got for i in range(len(want)) if want[i] == 1):
        return "an axis of size 1 is missing (squeezed away, or keepdims left out?)"
    if len(got) == len(want) >= 2 and got[:-2] == want[:-2] and got[-2:] == want[:-3:-1]:
        return "its last two axes are swapped (a transpose too many or too few?)"
    if len(got) == len(want) and sorted(got) == sorted(want):
        return "its axes are the right sizes in another order (a transpose or permute of the wrong axes?)"
    joined = _joined_along_tokens(got, want)
    if joined:
        return joined
    if int(np.prod(got)) == int(np.prod(want)):
        return "it has the right number of entries in another shape (a reshape or view into the wrong layout?)"
    return None


def _joined_along_tokens(got, want):
    """Several results joined along the second-to-last axis, the tokens, k times as long, where they belong side by
    side along the last one (then k times as wide), or one of them where one was wanted; None otherwise."""
    if len(got) != len(want) or len(got) < 2 or got[:-2] != want[:-2] or want[-2] < 2 or got[-2] % want[-2]:
        return None
    k = got[-2] // want[-2]
    if k < 2 or got[-1] not in (want[-1], want[-1] / k):
        return None
    return (f"its second-to-last axis (the tokens) is {k} times as long: are several results (one per head, say) "
            "joined along the tokens (torch.cat(..., dim=1), hstack) where they go side by side along the last axis?")


def expect_finite(actual, what, hint=""):
    if not np.isfinite(actual).all():
        bad = "nan" if np.isnan(actual).any() else "inf"
        raise CaseFailure(f"{what} contains {bad}" + (f" ({hint})" if hint else ""))


def _matches(actual, candidate, atol, rtol):
    """actual ≈ candidate; nan matches nan only and an infinity the same infinity only, so a mistake
    that makes nan or inf (a product with masked -inf scores, say) can be named too."""
    candidate = asarray(candidate, dtype=np.float64)
    if candidate.shape != actual.shape:
        return False
    with np.errstate(invalid="ignore"):  # an infinite candidate's tolerance is infinite too: only equality counts there
        near = np.isfinite(candidate) & (abs(actual - candidate) <= atol + rtol * abs(candidate))
    return bool((near | (actual == candidate) | (np.isnan(actual) & np.isnan(candidate))).all())


UNNAMED = "the grader cannot name the cause"

# Explanations tried where a wrong value fits no known mistake, before its shape, nan or size is reported: each
# raises a CaseFailure where its own cause shows. `modules` adds one: a layer whose forward draws something new.
BEFORE_UNNAMED = []


@contextlib.contextmanager
def diagnosing():
    """Around the diagnosis of a value already seen to be wrong, which may run the code under test
    again (a probe, a second draw) in what is left of the case's time. If that runs out, the case is
    lost for the wrong value (DiagnosisTimeout), not as code that did not finish: its own call did.
    A kernel that did not stop when interrupted (KernelStuck) still ends the step."""
    try:
        yield
    except (KernelStuck, DiagnosisTimeout):
        raise
    except CaseTimeout:
        raise DiagnosisTimeout() from None


def describe_difference(actual, expected, what, atol=1e-5, rtol=1e-4, relation=True):
    """The message for a wrong value no known mistake of the step explains: the kind of mistake its
    relation to the right value shows (`differences`; not when `relation` is False: `expected` is
    then another output of the same code, not the right value), else, saying plainly that the
    cause has no name, where the value is wrong (never what it should be)."""
    if expected.dtype.kind == "b" or (set(np.unique(expected)) <= {0.0, 1.0} and set(np.unique(actual)) <= {0.0, 1.0}):
        wrong = np.argwhere(actual != expected)
        first = f", the first at index {tuple(int(i) for i in wrong[0])}" if expected.ndim else ""
        return (f"{what} is wrong and {UNNAMED}: {len(wrong)} of its {expected.size} True/False entries "
                f"differ{first}")
    pattern = differences.pattern_of(actual, expected, atol, rtol) if relation else None
    if pattern is not None:
        return f"{what} is wrong: {pattern}"
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are no error, others count as inf
        error = np.nan_to_num(np.where(actual == expected, 0.0, abs(actual - expected)), nan=np.inf, posinf=np.inf)
    worst = np.unravel_index(int(np.argmax(error)), error.shape) if error.ndim else ()
    where = f", most at index {tuple(int(i) for i in worst)}" if worst else ""
    return f"{what} is wrong and {UNNAMED}: it is off by up to {float(error.max()):.3g}{where}"


def one_or_all(fits):
    """The message of the known mistakes an output fits: the one, or all of them where several give that output
    (the same nan, the same blocks skipped), so none is blamed alone."""
    return fits[0] if len(fits) == 1 else SEVERAL_FIT + "; or ".join(fits)


def named_mistake(actual, symptoms, atol=1e-5, rtol=1e-4):
    """The symptom of the first known mistake whose output `actual` matches, or None."""
    for candidate, symptom in symptoms:
        try:
            # A model of a mistake may overflow (that is often the mistake): no warning on the
            # grader's stderr, where an instructor reads what went wrong.
            with np.errstate(all="ignore"), diagnosing():
                value = candidate() if callable(candidate) else candidate
        except Exception:  # a diagnosis that cannot be computed just does not apply
            continue
        if _matches(actual, value, atol, rtol):
            return symptom
    return None


def expect_close(actual, expected, what, *, atol=1e-5, rtol=1e-4, symptoms=(), finite_hint="", relation=True):
    """actual ≈ expected, or a message: a known mistake's symptom if one matches (tried first, so
    a mistake that makes nan or changes the shape is named by its cause), else the shape, nan, or
    the size and place of the largest deviation, saying that the cause has no name. With
    `relation` False, `expected` is another output of the same code (a symmetry, a reordering),
    so no relation to it is called a kind of mistake. `symptoms` is [(candidate, symptom)], or a
    function that returns them."""
    actual = to_array(actual, what)
    expected_raw = asarray(expected)
    expected = asarray(expected, dtype=np.float64)
    if tuple(actual.shape) == tuple(expected.shape) and np.isfinite(actual).all() and _matches(
            actual, expected, atol, rtol):
        return actual
    if callable(symptoms):  # a ladder given as a function is built for a wrong value only: it can cost more
        with diagnosing():  # than the check itself, and most answers are right
            symptoms = symptoms()
    symptom = named_mistake(actual, symptoms, atol, rtol)
    if symptom is not None:
        raise CaseFailure(f"{what}: {symptom}")
    with diagnosing():
        for explain in BEFORE_UNNAMED:
            explain()
    expect_shape(actual, expected.shape, what)
    if np.isfinite(expected).all():
        expect_finite(actual, what, finite_hint)
    raise CaseFailure(describe_difference(actual, expected_raw if expected_raw.dtype.kind == "b" else expected,
                                          what, atol, rtol, relation))


def expect_rows_sum_to_one(weights, what, atol=1e-5):
    weights = to_array(weights, what)
    if (weights < -atol).any():
        raise CaseFailure(f"{what} has negative entries (smallest {float(weights.min()):.3g}); "
                          "attention weights are never negative")
    sums = weights.sum(axis=-1)
    worst = float(sums.flat[int(np.argmax(abs(sums - 1)))]) if sums.size else 1.0
    if abs(worst - 1) > atol:
        raise CaseFailure(f"rows of {what} sum to {worst:.4g}, not 1")
    return weights


def expect_unchanged(before, after, what):
    if not _matches(to_array(after, what), before, 0.0, 0.0):
        raise CaseFailure(f"{what} was modified in place; graded functions must not change "
                          "their inputs (work on a copy, or avoid in-place operators like -=)")


def expect_tensor(value, what):
    if value is None:
        raise returned_none(what)
    if not torch.is_tensor(value):
        several = isinstance(value, (tuple, list)) and any(torch.is_tensor(v) for v in value)
        raise CaseFailure(f"{what} is a {type(value).__name__}, expected a torch.Tensor"
                          + (f": {SEVERAL_RESULTS}" if several else ""))


def expect_inputs_unchanged(impl, name, args, labels, hints=None, more=()):
    """Call `impl.<name>(*args, *more)` with `args` held next to the code under test, then read
    them back: each must still equal the array it was made from. `hints` may add advice per label: a text, or a
    function of what the input holds afterwards that gives one where it shows that cause (None where not)."""
    held = impl.hold(*args)
    getattr(impl, name)(*held, *more)
    for original, handle, label in zip(args, held, labels):
        after = handle.call("clone" if torch.is_tensor(original) else "copy")
        before = original.numpy() if torch.is_tensor(original) else np.asarray(original)
        hint = (hints or {}).get(label)
        hint = hint(to_array(after, label)) if callable(hint) else hint
        what = f"{label} ({hint})" if hint else label
        expect_unchanged(before, after, what)
