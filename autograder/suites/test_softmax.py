"""Hidden suite of `softmax` (assignment 01)."""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import batches, cases, checks
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng, rounded
from autograder.suites.toolkit.model import (
    BASE_TWO,
    hand_written_softmax_mistakes,
    truncation_mistakes,
    without_keepdims_mistakes,
)

STEP = "softmax"
# The notes' examples are single rows, where no axis can be wrong: they weigh little, and the
# stored outputs (matrices, batches, every axis) carry the step.
test_notes = notes_cases(STEP, weight=0.5, replayed=lambda record, k: stored_symptoms(record, k),
                         probe=lambda impl: _probe(impl), confirmed=lambda impl, ladder: _confirmed(impl, ladder))


def _confirmed(impl, ladder):
    """`ladder` with base 2 and a scale by sqrt(n) confirmed on five entries: on the notes' rows of two, 2 ** x
    is a softmax of 0.693 x and x / sqrt(2) one of 0.707 x, which their rounding cannot tell apart."""
    x = np.array([0.5, -1.0, 2.0, 1.5, 0.0])
    return cases.confirmed(ladder, lambda: impl.softmax(x.copy()), lambda: stored_symptoms(dict(x=x, axis=-1), 0),
                           only=lambda symptom: symptom in (BASE_TWO, SCALED_BY_COUNT))


def _probe(impl):
    """The step on a matrix, then on a vector, through `_call`, which names a mistake that raises on either."""
    _call(impl, rng(407).normal(size=(3, 4)), -1, "a (3, 4) matrix")
    _call(impl, rng(407).normal(size=5), -1, "a 1-d vector")


def _exp_normalise(x, axis):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _shifted_then_normalised(x, shift_axis, sum_axis):
    e = np.exp(x - x.max(axis=shift_axis, keepdims=True))
    return e / e.sum(axis=sum_axis, keepdims=True)


def stored_inputs():
    r = rng(401)
    records = [
        dict(label="a 1-d vector", x=r.normal(size=5), axis=np.int64(-1)),
        dict(label="a (4, 6) matrix, last axis", x=r.normal(size=(4, 6)), axis=np.int64(-1)),
        dict(label="a (4, 6) matrix, axis=0", x=r.normal(size=(4, 6)), axis=np.int64(0)),
        dict(label="a (2, 3, 5) batch, axis=1", x=r.normal(size=(2, 3, 5)), axis=np.int64(1)),
        dict(label="a single entry", x=np.array([3.7]), axis=np.int64(-1)),
        dict(label="float32 input", x=r.normal(size=(3, 8)).astype(np.float32), axis=np.int64(-1), atol=1e-4),
        dict(label="large inputs like [1000, 1001]", x=np.array([[1000.0, 1001.0, 1002.5], [-1000.0, -1001.0, -999.0]]),
             axis=np.int64(-1)),
        # exactly representable in float32, so a float32 softmax meets the float32 tolerance
        dict(label="inputs near 1e4", x=(1e4 + r.normal(size=(3, 4))).astype(np.float32).astype(np.float64),
             axis=np.int64(-1), atol=1e-4),
    ]
    return records


def apply(impl, record):
    return _call(impl, record["x"], int(record["axis"]), record["label"])


NEW_LAST_AXIS = ("the maximum or the sum along `axis` is given a new LAST axis ([..., None], np.expand_dims(s, -1)), "
                 "which puts it back in line only when `axis` is the last: along another axis it must come back "
                 "where the summed axis was, as keepdims=True keeps it")


def _new_last_axis_mistakes(x, axis):
    """(candidate, NEW_LAST_AXIS) of a softmax along `axis` whose maximum, sum or both get a new last axis
    ([..., None]) where keepdims=True is meant: right along the last axis only; on a square matrix along axis 0
    row i meets column i's maximum or sum, and other shapes raise."""
    def new_last(which):
        back = {True: lambda v: v[..., None], False: lambda v: np.expand_dims(v, axis)}
        e = np.exp(x - back[which != "sum"](x.max(axis=axis)))
        return e / back[which != "max"](e.sum(axis=axis))

    return [(lambda which=which: new_last(which), NEW_LAST_AXIS) for which in ("sum", "max", "both")]


def _call(impl, x, axis, label):
    """softmax(x, axis=axis), or softmax(x) for axis None; a mistake that raises on x but runs on a
    square matrix is named by what it gives there."""
    try:
        return impl.softmax(x) if axis is None else impl.softmax(x, axis=axis)
    except RemoteError as error:
        if np.ndim(x) < 2:
            _explain_fixed_axis(impl, error, label)
            raise
        square = rng(406).normal(size=(4, 4))
        if axis is not None and axis % np.ndim(x) != np.ndim(x) - 1:  # sums given a new last axis fit the last only
            try:
                out = checks.to_array(impl.softmax(square, axis=0), "softmax")
            except (RemoteError, CaseFailure):
                raise error from None
            if checks.named_mistake(out, _new_last_axis_mistakes(square, 0)) is not None:
                raise CaseFailure(f"softmax(x, axis={axis}) raised {error.type_name} on {label}, but runs on a "
                                  f"square matrix along axis 0, where what it gives shows that {NEW_LAST_AXIS}"
                                  ) from None
        try:
            out = checks.to_array(impl.softmax(square, axis=-1), "softmax")
        except (RemoteError, CaseFailure):
            raise error from None
        symptom = checks.named_mistake(out, without_keepdims_mistakes(square))
        if symptom is None:  # sums reshaped to a column fit a square matrix, and give a vector an axis more
            vector = rng(408).normal(size=5)
            batches.explain_sums_reshaped("softmax", error, label, lambda: impl.softmax(vector),
                                          lambda: batches.reshaped_sums_mistakes(vector), "a 1-d vector")
            raise
        raise CaseFailure(f"softmax raised {error.type_name} on {label}, but runs on a square matrix: it "
                          f"{symptom}") from None


FIXED_AXIS = ("normalises along one fixed axis (axis 1 here) whatever `axis` says: an axis written into np.max "
              "or np.sum (axis=1 for a matrix's rows) is the wrong one on more axes, and a vector has no axis 1; "
              "pass `axis` on")
EXP_MINUS_MAX = ("subtracts the maximum after exponentiating (np.exp(x) - max): the shift belongs inside, "
                 "np.exp(x - max), where it cancels in the ratio; outside it changes every weight, can make some "
                 "negative, and does not keep exp from overflowing")


def _explain_fixed_axis(impl, error, label):
    """A raise on a vector named where the code normalises along axis 1 whatever `axis` is: the vector has no
    axis 1 (AxisError), and a batch along its last axis shows where the code normalises instead."""
    if error.type_name != "AxisError":
        return
    batch = rng(409).normal(size=(2, 3, 4))
    try:
        out = checks.to_array(impl.softmax(batch, axis=-1), "softmax")
    except (RemoteError, CaseFailure):
        return  # the batch raises too: nothing to say what the vector's AxisError is
    # an axis written into the sum alone (axis=-2 for a matrix's columns) raises on a vector too
    named = checks.named_mistake(out, [(_exp_normalise(batch, 1), FIXED_AXIS), *_split_axes_mistakes(batch, -1)])
    if named is not None:
        raise CaseFailure(f"softmax raised AxisError on {label}, and along the last axis of a (2, 3, 4) batch it "
                          f"{named}") from None

# The shift applied to the sum only: the numerator is exp(x), so each slice comes out exp(its maximum) times
# too large (the overflow the shift was for happens in the numerator anyway).
SHIFTED_SUM_ONLY = ("shifts the exponentials in the sum but not the numerator (np.exp(x) / sum(np.exp(x - max))): "
                    "each slice comes out exp(its maximum) times too large; the ratio is right only when both "
                    "exponentials are shifted by the same maximum")


def _shifted_sum_only(x, axis):
    x = np.asarray(x, dtype=float)
    return np.exp(x) / np.exp(x - x.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=True)


# softmax(x / sqrt(n)), n the count along the axis: the scale of scaled attention, which divides the scores, not
# the softmax's inputs by their count (and by sqrt(d_k), the keys' width, in a later step).
SCALED_BY_COUNT = ("divides the inputs by the square root of their count along the axis before exponentiating, a "
                   "scale like scaled attention's: the softmax itself takes x as it is, and a scale belongs to the "
                   "scores, by the keys' width, in a later step")
# A loop over x's first axis (for i in range(len(x))) normalising each item as a whole: right on a matrix's rows,
# but on a vector each entry is divided by itself, and on a batch each matrix by its whole sum.
ITEMS_NORMALISED = ("normalises each item along the first axis as a whole (a loop over x's rows, written for a "
                    "matrix), not the slices along `axis`: on a vector every entry is divided by itself and comes "
                    "out 1, and on a batch each matrix is divided by its whole sum")


def _centred(x, axis):
    x = np.asarray(x, dtype=float)
    return x - x.max(axis=axis, keepdims=True)


def _items_normalised(x, axis):
    e = np.exp(_centred(x, axis))
    return e / e.sum(axis=tuple(range(1, e.ndim)), keepdims=True)


ARGMAX_SHIFT = ("it subtracts the position of the maximum (np.argmax) instead of its value (np.max): that keeps the "
                "ratios, so small inputs come out right, but exp still overflows where the largest entry is far above "
                "its index")


def _argmax_shift_hint(impl):
    """ARGMAX_SHIFT where the code is shifted by the maximum's index: 730 at index 30 of zeros (exp(700)) goes
    through and 730 at index 0 overflows; no shift and a shift by the minimum overflow on both, one by the mean on
    neither. "" otherwise."""
    late, early = np.r_[np.zeros(30), 730.0], np.r_[730.0, np.zeros(30)]
    try:
        at_late, at_early = (checks.to_array(impl.softmax(x), "softmax") for x in (late, early))
    except (RemoteError, CaseFailure):
        return ""
    shifted_by_index = checks.named_mistake(at_late, [(_exp_normalise(late - 30, -1), ARGMAX_SHIFT)])
    return shifted_by_index if shifted_by_index and not np.isfinite(at_early).all() else ""


def _exp_minus_max(x, axis):
    e = np.exp(x) - x.max(axis=axis, keepdims=True)
    return e / e.sum(axis=axis, keepdims=True)


def stored_symptoms(record, k, rounding=True):
    """[(candidate, diagnosis)] of the known mistakes on the inputs of `record` (output k): the ladder of
    the stored outputs and of the notes' worked examples; with `rounding`, a result rounded for display too
    (no mistake of the formula, which is what the properties' small input is asked for)."""
    x, axis = record["x"], int(record["axis"])
    right = _shifted_then_normalised(np.asarray(x, dtype=float), axis, axis)
    # a mistake that gives the right value on this input (the whole array's sum of a vector, say) is
    # no evidence: where the case's tolerance is loose, it would name a close but wrong output
    return [(candidate, symptom) for candidate, symptom in [*_mistakes(x, axis), *(rounded(right) if rounding else ())]
            if checks.named_mistake(right, [(candidate, symptom)]) is None]


FLATTENED = "the result is flattened to one axis (ravel, flatten or reshape(-1)): return it in x's shape"


def _shaped_like(out, x, what):
    """`out` as an array of x's shape, or a CaseFailure: a flattened result is named, any other shape said."""
    out = checks.to_array(out, what)
    if out.ndim == 1 < np.ndim(x) and out.size == np.size(x):
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(out.shape)}: {FLATTENED}")
    checks.expect_shape(out, np.shape(x), what)
    return out


def _mistakes(x, axis):
    other = 0 if axis in (-1, x.ndim - 1) and x.ndim > 1 else -1
    return [(lambda: _exp_normalise(x, other), f"normalises along axis {other}, not along axis={axis}"),
            *[(lambda: _shifted_then_normalised(np.asarray(x, dtype=float), axis, axis).ravel(), FLATTENED)
              ] * (np.ndim(x) > 1),
            (lambda: np.exp(x) / np.exp(x).sum(), "divides by the sum over the whole array, not along the axis"),
            (lambda: _exp_minus_max(x, axis), EXP_MINUS_MAX),
            (lambda: _shifted_sum_only(x, axis), SHIFTED_SUM_ONLY),
            (lambda: _exp_normalise(_centred(x, axis) / np.sqrt(np.shape(x)[axis]), axis), SCALED_BY_COUNT),
            *[(lambda: _items_normalised(x, axis), ITEMS_NORMALISED)] * (np.ndim(x) != 2),
            # axis=1 (or -2) fixed where `axis` is meant: a vector raises (_explain_fixed_axis), a matrix is right
            # along the last axis
            *[(lambda: _exp_normalise(x, 1), FIXED_AXIS)] * (np.ndim(x) > 2 and axis % np.ndim(x) != 1),
            (lambda: x / x.sum(axis=axis, keepdims=True), "divides by the sum without exponentiating first"),
            (lambda: _exp_normalise(-(x - x.min(axis=axis, keepdims=True)), axis),
             "exponentiates -x, which gives the smallest entry the most weight; softmax gives the largest "
             "entry the most"),
            *_split_axes_mistakes(x, axis),
            *_whole_array_shifts(np.asarray(x, dtype=float), axis),
            *hand_written_softmax_mistakes(np.asarray(x, dtype=float), axis),
            *batches.reshaped_sums_mistakes(np.asarray(x, dtype=float), axis),
            *_new_last_axis_mistakes(np.asarray(x, dtype=float), axis),
            # np.asarray(x, dtype=int): the softmax of the truncated inputs, or the weights cut (all but the ones 0)
            *truncation_mistakes(_shifted_then_normalised(np.asarray(x, dtype=float), axis, axis),
                                 _shifted_then_normalised(np.trunc(np.asarray(x, dtype=float)), axis, axis),
                                 "x", "weights", divides=True)]


def _split_axes_mistakes(x, axis):
    """(candidate, symptom) of a softmax whose maximum runs along `axis` or the last axis and whose sum runs along
    another axis: `axis` left out of one of them, or an axis written in (-2 for a matrix's columns, say)."""
    ndim = np.ndim(x)
    along, last = axis % ndim, ndim - 1
    names = {a: f"axis {a} (or {a - ndim})" for a in range(ndim)} | {last: "the last axis", along: "`axis`"}
    return [(lambda shift=shift, total=total: _shifted_then_normalised(x, shift, total),
             f"subtracts the maximum along {names[shift]} but sums along {names[total]}: both must run along `axis`")
            for shift in dict.fromkeys((along, last)) for total in range(ndim) if total != shift]


WHOLE_MAX = ("subtracts the maximum of the whole array, not of each slice along the axis: a row far below it "
             "underflows to 0 / 0 (take the maximum along axis, with keepdims=True)")
# np.max(np.abs(x)): one shift for the whole array, and larger than its maximum wherever an entry is more negative
# than the largest is positive, so a row of large negative entries underflows even on its own.
ABS_MAX = ("subtracts the largest magnitude of the whole array (np.max(np.abs(x))), not each slice's maximum of x "
           "itself: a shift above a row's own maximum pushes all its exponentials down, so a row of large negative "
           "entries underflows to 0 / 0; take np.max(x, axis=axis, keepdims=True)")


def _whole_array_shifts(x, axis):
    """(candidate, symptom) of a softmax along `axis` shifted by one number for the whole array: its maximum, or its
    largest magnitude. Where the two are one number (the largest magnitude is positive), one symptom names both."""
    def by_max():
        return _exp_normalise(x - x.max(), axis)

    def by_magnitude():
        return _exp_normalise(x - np.abs(x).max(), axis)

    if x.size and x.max() == np.abs(x).max():
        return [(by_max, checks.one_or_all([WHOLE_MAX, ABS_MAX]))]
    return [(by_max, WHOLE_MAX), (by_magnitude, ABS_MAX)]


# One row far below 0: shifted by the largest magnitude (801) both rows underflow; by the whole array's maximum (4)
# only the second does; by each row's maximum neither.
MAGNITUDE_PROBE = np.array([[1.0, 2.0, 4.0], [-800.0, -801.0, -799.0]])


def _abs_shift_hint(impl):
    """ABS_MAX where the code on MAGNITUDE_PROBE gives what a shift by the largest magnitude gives; "" otherwise."""
    try:
        out = checks.to_array(impl.softmax(MAGNITUDE_PROBE.copy()), "softmax")
    except (RemoteError, CaseFailure):
        return ""
    with np.errstate(all="ignore"):
        return checks.named_mistake(out, [(_exp_normalise(MAGNITUDE_PROBE - 801.0, -1), ABS_MAX)]) or ""


SMALL = np.array([1.0, 2.0, 4.0])


def _right_on_small(impl):
    """Whether softmax([1.0, 2.0, 4.0]), where nothing overflows, is right."""
    try:
        got = checks.to_array(impl.softmax(SMALL.copy()), "softmax")
    except (RemoteError, CaseFailure):
        return False
    return checks.named_mistake(got, [(_exp_normalise(SMALL, -1), "right")]) is not None


def _named_on_small(impl):
    """The known mistake softmax([1.0, 2.0, 4.0]) shows, or None (when it is right, or unnamed): a property
    that fails is explained by the formula where one is wrong."""
    got = checks.to_array(_call(impl, SMALL, None, "softmax([1.0, 2.0, 4.0])"), "softmax([1.0, 2.0, 4.0])")
    if checks.named_mistake(got, [(_exp_normalise(SMALL, -1), "right")]) is not None:
        return None
    return checks.named_mistake(got, stored_symptoms(dict(x=SMALL, axis=-1), 0, rounding=False))


def _explained(impl, check):
    """check(), with a failure's message followed by the known mistake a small input shows."""
    try:
        return check()
    except CaseFailure as failure:
        symptom = _named_on_small(impl)
        if symptom is None:
            raise
        raise CaseFailure(f"{failure}; softmax([1.0, 2.0, 4.0]) shows why: it {symptom}") from None


def _along_last(record):
    return int(record["axis"]) % np.ndim(record["x"]) == np.ndim(record["x"]) - 1


# Split by axis: attention takes the softmax along the last axis, where a sum or maximum along a fixed
# last axis is right; a slip that breaks only `axis` keeps the last axis's share, a wrong formula fails both.
@case(STEP, "stored", weight=4)
def test_stored_outputs(impl):
    """matches the reference along the last axis: vectors, matrices, float32 and large inputs"""

    check_stored(impl, STEP, apply, "softmax", symptoms=stored_symptoms, where=_along_last,
                 finite_hint=lambda record: _argmax_shift_hint(impl) or _abs_shift_hint(impl)
                 or OVERFLOWS * bool(np.abs(record["x"]).max() > LARGEST_EXP_INPUT))


# exp(x) of a float64 overflows above about 709.8 (and of -x underflows to 0): only inputs past it can make a
# right formula's exponentials leave the floats, which a shift by the maximum prevents.
LARGEST_EXP_INPUT = float(np.log(np.finfo(np.float64).max))
OVERFLOWS = "the exponentials overflow or underflow: subtract the maximum first"


@case(STEP, "stored", weight=2)
def test_stored_outputs_other_axes(impl):
    """matches the reference along another axis than the last: a matrix along axis 0, a batch along axis 1"""

    check_stored(impl, STEP, apply, "softmax", symptoms=stored_symptoms, where=lambda record: not _along_last(record))


@case(STEP, "property", weight=1)
def test_large_inputs_stay_finite(impl):
    """stays finite for inputs like [1000, 1001], [-1000, -1001] and [0, 1000]"""
    # [0, 1000]: a shift by anything but the maximum (the minimum, say) still overflows
    for x in ([1000.0, 1001.0], [-1000.0, -1001.0], [0.0, 1000.0]):
        out = checks.to_array(_call(impl, np.array(x), None, f"softmax({x})"), f"softmax({x})")
        if not np.isfinite(out).all():  # a known mistake on small inputs is the cause, not the shift
            symptom = _named_on_small(impl)
            if symptom is not None:
                raise CaseFailure(f"softmax({x}) is not finite, and softmax([1.0, 2.0, 4.0]) {symptom}")
        if not np.isfinite(out).all():  # the probes of a shift by the maximum's index run only where it can matter
            checks.expect_finite(out, f"softmax({x})", _argmax_shift_hint(impl) or _abs_shift_hint(impl)
                                 or OVERFLOWS)
        try:
            _explained(impl, lambda out=out, x=x: checks.expect_rows_sum_to_one(out, f"softmax({x})"))
        except CaseFailure as failure:
            if not _right_on_small(impl):
                raise
            # right where nothing overflows, wrong only here: the exponentials left the floats
            raise CaseFailure(f"{failure}, though softmax([1.0, 2.0, 4.0]) is right: {OVERFLOWS}") from None


@case(STEP, "oracle")
def test_matches_torch_softmax(impl):
    """agrees with torch.softmax on random batches, along every axis"""
    x = rng(402).normal(size=(3, 4, 5)) * 4
    for axis in (-1, 0, 1):
        want = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
        checks.expect_close(_call(impl, x, axis, "a (3, 4, 5) array"), want,
                            f"softmax of a (3, 4, 5) array along axis {axis}",
                            symptoms=stored_symptoms(dict(x=x, axis=axis), 0))


@case(STEP, "property", weight=0.5)
def test_probabilities_and_shift_invariance(impl):
    """gives non-negative entries summing to 1, unchanged when a constant is added"""
    x = rng(403).normal(size=(5, 7))
    out = _explained(impl, lambda: checks.expect_rows_sum_to_one(
        _shaped_like(_call(impl, x, None, "a (5, 7) array"), x, "softmax(x)"), "softmax(x)"))
    checks.expect_close(impl.softmax(x + 10.0), out, "softmax(x + 10) compared with softmax(x)", relation=False)


@case(STEP, "property", weight=0.5)
def test_default_axis_is_last(impl):
    """uses the last axis when no axis is given"""
    x = rng(404).normal(size=(3, 4))
    out = _shaped_like(_call(impl, x, None, "a (3, 4) array"), x, "softmax(x)")
    sums = out.sum(axis=-1)
    if not np.allclose(sums, 1, atol=1e-6):
        # no axis sums to 1: a wrong formula, which a small input names, not the default axis
        columns = np.allclose(out.sum(axis=0), 1, atol=1e-6)
        symptom = None if columns else _named_on_small(impl)
        if symptom is not None:
            raise CaseFailure(f"rows of softmax(x) with no axis do not sum to 1, and softmax([1.0, 2.0, 4.0]) "
                              f"{symptom}")
        # no axis sums to 1, and the small input names no formula's mistake: nor is the axis one; and columns that
        # sum to 1 with axis=-1 given too come of the formula (a sum along a fixed axis), not of the default
        if not columns or not np.allclose(checks.to_array(_call(impl, x, -1, "a (3, 4) array"), "softmax(x, "
                                                          "axis=-1)").sum(axis=-1), 1, atol=1e-6):
            checks.expect_close(out, _exp_normalise(x, -1), "softmax(x) with no axis given",
                                symptoms=lambda: stored_symptoms(dict(x=x, axis=-1), 0))
            return
        raise CaseFailure("with no axis given, rows of softmax(x) should sum to 1 (axis=-1 is the default)")


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves x unchanged"""
    x = rng(405).normal(size=(3, 4))
    _call(impl, x.copy(), None, "a (3, 4) array")  # a mistake that raises on x is named first
    checks.expect_inputs_unchanged(impl, "softmax", [x], ["x"])
