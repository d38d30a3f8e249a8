"""Hidden suite of `sinusoidal_positions` (assignment 05).

No worked example: the notes print no position code (seed 003 asks "Why do need Positional
Encoding?" and leaves the answer empty; the chapter stops before positions), so this step is
graded by stored outputs, an independent PyTorch construction, and properties. A NumPy model
with switches names the usual mistakes: sin and cos swapped, the exponent i/d instead of 2i/d,
the cosine column using its own index, integer division, sines and cosines in two halves, the
power applied to p / 10000; and codes whose pairs turn steadily at wrong speeds (another base,
another width in the exponent, an exponent off by one, log10 for the natural log) are named from
the speeds the student's own rows show, and columns shifted by a constant angle from the start
angles they show.
"""

import math
import re

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import rng

STEP = "sinusoidal_positions"
NAME = "sinusoidal_positions"


def _model(num_tokens, d_model, *, swap=False, exponent="2i", layout="interleaved", first=0, divide=True,
           brackets=False, unit=1.0):
    """The position codes in float64; each keyword reproduces one known mistake (`unit`: the angles
    multiplied by it, a degree/radian conversion; exponent "2i alone": p / 10000**2i / d_model, no brackets)."""
    p = np.arange(first, first + num_tokens, dtype=np.float64)[:, None]
    i = np.arange(d_model // 2, dtype=np.float64)[None, :]
    power = {"2i": 2 * i / d_model, "i": i / d_model, "int": (2 * i) // d_model, "2i alone": 2 * i}[exponent]
    speed = (10000.0 ** -power if divide else 10000.0 ** power) / (d_model if exponent == "2i alone" else 1)
    angles = unit * ((p / 10000.0) ** power if brackets else p * speed)
    sin, cos = np.sin(angles), np.cos(angles)
    if swap:
        sin, cos = cos, sin
    if layout == "halves":
        return np.concatenate([sin, cos], axis=1)
    out = np.empty((num_tokens, d_model))
    out[:, 0::2], out[:, 1::2] = sin, cos
    return out


def _own_column(num_tokens, d_model):
    """Every column j uses the exponent j / d_model: the cosine of pair i turns at (2i+1)/d."""
    p = np.arange(num_tokens, dtype=np.float64)[:, None]
    j = np.arange(d_model, dtype=np.float64)[None, :]
    angles = p / 10000.0 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


INTEGER_DIVISION = ("every pair turns at the same speed: 2i / d_model was computed with integer division (//), "
                    "which gives 0; use true division (/)")
DEGREES = ("the angles are converted between degrees and radians (np.radians or np.degrees): p / 10000**(2i / "
           "d_model) is already the angle in radians, as np.sin and np.cos take it")
MISTAKES = [
    (dict(swap=True), "sin and cos are swapped: the even columns (2i) hold the sines, the odd columns "
                      "(2i+1) the cosines"),
    (dict(exponent="i"), "the exponent is i / d_model; it is 2i / d_model (2i is the column of pair i's "
                         "sine), so the pairs turn more slowly than they should"),
    (dict(exponent="int"), INTEGER_DIVISION),
    (dict(layout="halves"), "the sines fill the first half of the columns and the cosines the second: "
                            "interleave them (sine of pair i in column 2i, its cosine in column 2i+1)"),
    (dict(first=1), "the positions start at 1; they start at 0 (row 0 is sin 0 = 0, cos 0 = 1)"),
    (dict(exponent="2i alone"), "the angle is p / 10000**2i / d_model: without brackets the power is 2i alone, and "
                                "d_model divides the angle afterwards; the exponent is the whole 2i / d_model (mind "
                                "the brackets)"),
    (dict(divide=False), "the angle is p * 10000**(2i/d_model); divide instead: p / 10000**(2i/d_model)"),
    (dict(swap=True, exponent="i"), "sin and cos are swapped, and the exponent is i / d_model instead of "
                                    "2i / d_model"),
    (dict(unit=np.pi / 180), DEGREES),
    (dict(unit=180 / np.pi), DEGREES),
    (dict(brackets=True), "the angle is (p / 10000) ** (2i / d_model): the power belongs to 10000 alone, "
                          "p / 10000**(2i / d_model) (mind the brackets)"),
]
OWN_COLUMN = ("the cosine in column 2i+1 uses the exponent (2i+1) / d_model; both columns of a pair "
              "share one angle, p / 10000**(2i / d_model)")


def _symptoms(num_tokens, d_model, out=None):
    """The known mistakes; with the student's `out`, also a measured one: every pair turns at a
    steady speed, but not the right one (a wrong base, or d_model replaced in the exponent)."""
    found = [((lambda kw=kw: _model(num_tokens, d_model, **kw)), message) for kw, message in MISTAKES]
    return found + [((lambda: _own_column(num_tokens, d_model)), OWN_COLUMN)] + _steady_speeds(out) + _phases(out)


def _table(out, min_rows):
    """`out` as finite float64 codes (positions, an even number of columns) of at least `min_rows`
    positions, or None (not numbers, or another shape: the cases say so)."""
    try:
        out = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    if out.ndim != 2 or out.shape[0] < min_rows or out.shape[1] % 2 or not np.isfinite(out).all():
        return None
    return out


def _steady_speeds(out):
    """[(the codes of pairs turning at the speeds `out` shows from row 0 to row 1, the diagnosis)]."""
    out = _table(out, 2)
    if out is None:
        return []
    speeds = np.arctan2(out[1, 0::2], out[1, 1::2])  # radians per position, if each pair turns steadily
    p = np.arange(out.shape[0], dtype=np.float64)[:, None]
    steady = np.empty(out.shape)
    steady[:, 0::2], steady[:, 1::2] = np.sin(p * speeds), np.cos(p * speeds)
    right = 10000.0 ** -(np.arange(len(speeds)) * 2 / out.shape[1])
    worst = int(np.argmax(abs(speeds - right)))
    # Every speed one same fraction of the right one, 1 / num_tokens (or 1 / (num_tokens - 1)): the base and
    # exponent are right, and the positions were scaled into [0, 1] before the division.
    scaled = next((f"every speed is the right one divided by {n}: the positions p are divided by {n} (scaled into "
                   "[0, 1]), while the angle takes p itself" for n in (out.shape[0], out.shape[0] - 1)
                   if n > 1 and np.allclose(speeds * n, right, rtol=1e-4, atol=1e-9)), None) or \
        _spread(speeds, right, out.shape[0]) or _speeds_named(speeds, out.shape[1], out.shape[0])
    # Read from one step, a speed is known only up to whole turns: say so, or a pair turning by 5 radians
    # reads as turning backwards, by -1.283.
    return [(lambda: steady, f"every pair turns at a steady speed, but pair {worst} turns by "
                             f"{float(speeds[worst]):.4g} radians per position (give or take whole turns of 2π); "
                             "pair i must turn by "
                             f"1 / 10000**(2i / d_model) ({scaled})")]


def _spread(speeds, right, n):
    """Every speed the right one times n / (n - 1): n positions spread from 0 to n, np.linspace's end point kept."""
    if n > 1 and np.allclose(speeds * (n - 1) / n, right, rtol=1e-4, atol=1e-9):
        return (f"every speed is the right one times {n}/{n - 1}: " + "the positions are T/(T-1) apart, as "
                "np.linspace(0, num_tokens, num_tokens) spaces them; they are 0, 1, 2, ... (np.arange)")
    return None


DOUBLED_TWO_I = ("the exponent is 2 * 2i / d_model: 2i is doubled (two_i = np.arange(0, d_model, 2) already holds "
                 "2i, 0, 2, 4, ...); it is 2i / d_model")
EXPONENTS_TO_ONE = ("the exponents run evenly from 0 up to 1 itself (as np.linspace(0, 1, d_model // 2) spaces them, "
                    "its end point kept), so the last pair turns by 1 / 10000 per position: pair i's exponent is "
                    "2i / d_model, which stops short of 1")


def _speeds_named(speeds, d_model, num_tokens):
    """What a wrong exponent or base that steady `speeds` fit says, else where to look: the exponent 2i doubled
    (2 * two_i, two_i already being 2i) or spread evenly from 0 to 1 (np.linspace), divided by num_tokens for d_model, or odd ((2i+1) / d_model, the columns
    counted from 1), or another power of ten than 10000 as the base (10e4 is 100000), fitted from pair 1's speed."""
    two_i = np.arange(len(speeds)) * 2.0
    fits = lambda want: np.allclose(speeds, want, rtol=1e-4, atol=1e-9)  # noqa: E731
    # with two pairs, exponents 0 and 1 are both of these: the message names both
    named = [why for want, why in ((10000.0 ** -(2 * two_i / d_model), DOUBLED_TWO_I),
                                   (10000.0 ** -np.linspace(0, 1, len(speeds)), EXPONENTS_TO_ONE)) if fits(want)]
    if named:
        return checks.one_or_all(named)
    if num_tokens != d_model and fits(10000.0 ** -(two_i / num_tokens)):
        return "the exponent is 2i / num_tokens, the number of positions: it is 2i / d_model, the code's width"
    if fits(10000.0 ** -((two_i + 1) / d_model)):
        return ("the exponent is (2i+1) / d_model, the odd numbers (np.arange(1, d_model, 2)): 2i counts 0, 2, 4, "
                "..., so pair 0 turns by exactly 1 radian per position")
    named = _exponent_off_by_one(speeds, two_i, d_model)
    if named is not None:
        return named
    if np.allclose(np.angle(np.exp(1j * (speeds - 2 * np.pi * 10000.0 ** -(two_i / d_model)))), 0.0, atol=1e-6):
        return ("every pair turns 2π times too fast (pair 0 a whole turn per position): p / 10000**(2i / d_model) "
                "is in radians already, not turns; leave out 2π")
    # Only a power of ten is named a base: another width in the exponent fits some base too, seldom a round one.
    digits = -math.log10(speeds[1]) * d_model / 2 if len(speeds) > 1 and 0 < speeds[1] < 1 else 4.0
    if round(digits) != 4 and abs(digits - round(digits)) < 1e-4 and fits(10.0 ** -(round(digits) * two_i / d_model)):
        return (f"every pair turns as with the base 1e{round(digits)} = {10 ** round(digits)} in place of 10000 "
                "(1e4; 10e4 is 100000): the base is 10000")
    return "check the base, 10000, and the exponent, 2i / d_model"


# The exponential form exp(-2i * ln(10000) / d_model) with log10 for ln: log10(10000) = 4, so every pair turns as
# with the base e**4 (about 54.6).
LOG10_FOR_LN = ("every pair turns as with the base e**4 (about 54.6), which exp(-2i * log(10000) / d_model) gives "
                "with np.log10(10000) = 4 in place of the natural log, np.log(10000) = 9.21: the exponential form "
                "takes np.log (or math.log)")


def _exponent_off_by_one(speeds, two_i, d_model):
    """What steady `speeds` show, where they fit a speed off by one in the exponent (2i / d_model - 1, (2i - 1) /
    d_model, 2i / (d_model - 1)) or log10 for the natural log; None otherwise. Such speeds can exceed pi, so they
    are compared as turns: read from one position to the next, a speed is known only up to whole turns."""
    def fits(want):
        with np.errstate(over="ignore"):
            turn = np.angle(np.exp(1j * (speeds - want)))
        return bool(np.all(np.isfinite(want))) and np.allclose(turn, 0.0, atol=1e-6)

    if fits(np.exp(-two_i * 4.0 / d_model)):
        return LOG10_FOR_LN
    off = {"the exponent is 2i / d_model - 1, so pair 0 turns by 10000 radians per position, not 1":
           10000.0 ** -(two_i / d_model - 1),
           "the exponent is (2i - 1) / d_model, so pair 0 turns faster than 1 radian per position":
           10000.0 ** -((two_i - 1) / d_model),
           "the exponent is 2i / (d_model - 1), the width less one":
           10000.0 ** -(two_i / max(d_model - 1, 1))}
    return next((f"{what}: an off-by-one; the exponent is 2i / d_model, 0 for pair 0, which turns by exactly 1 "
                 "radian per position" for what, want in off.items() if len(speeds) > 1 and fits(want)), None)


def _phases(out):
    """[(codes whose columns turn at the right speeds from the start angles `out` shows, the diagnosis)],
    when some columns start at one same angle other than a multiple of a right angle (those are the
    swaps and signs named elsewhere): each column fitted as a sin(p w) + b cos(p w), w its pair's speed."""
    out = _table(out, 3)
    if out is None:
        return []
    p = np.arange(out.shape[0], dtype=np.float64)[:, None]
    angles = p * np.repeat(10000.0 ** -(np.arange(0, out.shape[1], 2) / out.shape[1]), 2)
    fitted, starts = np.empty(out.shape), np.empty(out.shape[1])
    for j in range(out.shape[1]):
        basis = np.stack([np.sin(angles[:, j]), np.cos(angles[:, j])], axis=1)
        (a, b), *_ = np.linalg.lstsq(basis, out[:, j], rcond=None)
        fitted[:, j] = basis @ (a, b)
        # sin(x + c) = cos c sin x + sin c cos x; cos(x + c) = -sin c sin x + cos c cos x
        starts[j] = np.arctan2(b, a) if j % 2 == 0 else np.arctan2(-a, b)
    quarter = np.pi / 2
    off = np.abs(starts / quarter - np.round(starts / quarter)) > 1e-3
    # One constant added to some columns' angles shifts each of them alike; positions numbered
    # otherwise (from 1, from the end) shift each pair by its own speed, and are named elsewhere.
    gaps = np.angle(np.exp(1j * (starts[off] - starts[off][:1])))
    if not off.any() or not np.allclose(gaps, 0.0, atol=1e-3):
        return []
    j = int(np.argmax(off))
    kind = "cosine" if j % 2 else "sine"
    return [(lambda: fitted, f"every column turns at the right speed, but the {kind} in column {j} is shifted by a "
                             f"constant {float(starts[j]):.3g} radians: both columns of pair i take the angle "
                             "p / 10000**(2i / d_model) itself, with nothing added to it")]


# NumPy's words for an assignment codes[...] = angles whose shapes do not fit, in two mistakes.
ONE_ANGLE_PER_COLUMN = ("the angles have a column for every column of the code (d_model of them), so they do not fit "
                        "the d_model / 2 sine columns: a (sin, cos) pair shares one angle, one per pair i, and 2i runs "
                        "over the even columns only")
ONE_COLUMN_SLICE = ("the sines (or cosines) are written into a single column, a start:stop slice (such as 1:2) where "
                    "every other column is meant: the sines and the cosines each fill d_model / 2 columns, "
                    "alternating")
ROWS_SLICED = ("codes[0::2] takes every other ROW, that is every other position; the sines and cosines alternate "
               "along the COLUMNS, so the slice belongs on the second axis")


def _positions(impl, num_tokens, d_model):
    """impl.sinusoidal_positions(num_tokens, d_model); an assignment that fails in one of two known
    ways is named, not shown as NumPy's bare words."""
    try:
        out = impl.sinusoidal_positions(num_tokens, d_model)
    except RemoteError as error:
        said = str(error).replace(" ", "")
        if f"fromshape({num_tokens},{d_model})intoshape({num_tokens},{d_model // 2})" in said:
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: {ONE_ANGLE_PER_COLUMN}") from None
        if f"intoshape({(num_tokens + 1) // 2},{d_model})" in said and num_tokens > 1:
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: {ROWS_SLICED}") from None
        # (T,) or a row (1, T): either way the positions lie along the pairs' axis, not an axis of their own
        shape = next((f"({shape})" for shape in (f"{num_tokens},", f"1,{num_tokens}")
                      if f"shapes({shape})(1,{d_model // 2})" in said), None)
        if shape:
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: the positions have no axis "
                              f"of their own, shape {shape.replace(',', ', ').replace(', )', ',)')}, so they cannot "
                              f"meet the pairs' (1, {d_model // 2}) in a table of angles: make them a column, "
                              "(num_tokens, 1)") from None
        half = d_model // 2  # a table one column per pair: its every other column holds half the pairs
        one_column = half > 1 and f"fromshape({num_tokens},{half})intoshape({num_tokens},1)" in said
        if any(f"fromshape({num_tokens},{half})intoshape({num_tokens},{width})" in said
               for width in ((half + 1) // 2, half // 2)):
            both = f"; or {ONE_COLUMN_SLICE}" if one_column else ""  # a table of 4 or 6 columns: both fail alike
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: the table of codes is made "
                              f"{half} wide, one column per pair, so its even (or odd) columns cannot take the "
                              f"{half} sines (or cosines): each pair fills two columns, a sine and a cosine, so the "
                              f"table has d_model columns{both}") from None
        if one_column:
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: {ONE_COLUMN_SLICE}") from None
        angles = re.search(rf"fromshape\((\d+),(\d+)\)intoshape\({num_tokens},{d_model // 2}\)", said)
        if angles:
            raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) raised {error.type_name}: the angles have shape "
                              f"({angles.group(1)}, {angles.group(2)}), for {d_model // 2} pairs and {num_tokens} "
                              "positions: one row per position p = 0, 1, ..., num_tokens - 1, one column per pair "
                              "i = 0, 1, ..., d_model / 2 - 1") from None
        raise
    # the right codes, turned on their side, are no known mistake's values but a layout
    if num_tokens != d_model and np.shape(out) == (d_model, num_tokens) and \
            np.allclose(checks.to_array(out, NAME).T, _model(num_tokens, d_model), atol=1e-4):
        raise CaseFailure(f"{NAME}({num_tokens}, {d_model}) has shape ({d_model}, {num_tokens}): the right codes, "
                          "transposed; the table has one row per position and one column per feature, "
                          "(num_tokens, d_model)")
    return out


def _call(impl, num_tokens, d_model):
    what = f"{NAME}({num_tokens}, {d_model})"
    out = checks.to_array(_positions(impl, num_tokens, d_model), what)
    return out, what


# --- stored outputs ---------------------------------------------------------------------------

SIZES = [(6, 4, "6 tokens, d_model=4"), (1, 2, "a single token, d_model=2"), (50, 16, "50 tokens, d_model=16"),
         (7, 10, "7 tokens, d_model=10 (5 pairs)"), (3, 512, "3 tokens, d_model=512"),
         (256, 64, "256 tokens, d_model=64"), (512, 6, "512 tokens, d_model=6 (large angles)")]


def stored_inputs():
    # Angles up to 511 radians: float32 arithmetic is allowed, so the tolerance there is wider.
    return [dict(label=label, num_tokens=np.int64(n), d_model=np.int64(d), atol=np.float64(2e-4 if n > 100 else 2e-5))
            for n, d, label in SIZES]


def apply(impl, record):
    return _positions(impl, int(record["num_tokens"]), int(record["d_model"]))


@case(STEP, "stored", weight=6)
def test_stored_outputs(impl):
    """matches the reference for short and long sequences, narrow and wide codes"""
    from autograder.fixtures import stored

    for record in stored.load(STEP):
        n, d = int(record["num_tokens"]), int(record["d_model"])
        what = f"{NAME}({n}, {d}) ({record['label']})"
        out = apply(impl, record)
        try:
            checks.expect_close(out, record["expected_0"], what, atol=float(record["atol"]),
                                rtol=0, symptoms=_symptoms(n, d, out))
        except CaseFailure as failure:
            if INTEGER_DIVISION in str(failure):
                # On 2 pairs, a table of the first pair alone broadcast over both (a range of pairs cut short)
                # is what integer division gives: code that fails on 5 pairs is named there, by its own error
                _positions(impl, 7, 10)
            raise


# --- PyTorch as an oracle ---------------------------------------------------------------------

def _torch_positions(num_tokens, d_model):
    """The construction of PyTorch's own transformer tutorial: speeds exp(-2i ln(10000) / d)."""
    position = torch.arange(num_tokens, dtype=torch.float64).unsqueeze(1)
    speed = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    codes = torch.zeros(num_tokens, d_model, dtype=torch.float64)
    codes[:, 0::2] = torch.sin(position * speed)
    codes[:, 1::2] = torch.cos(position * speed)
    return codes.numpy()


@case(STEP, "oracle")
def test_matches_torch_tutorial(impl):
    """agrees with the positional encoding of PyTorch's transformer tutorial (exp/log form)"""
    for n, d in ((20, 12), (64, 32), (9, 2)):
        out, what = _call(impl, n, d)
        checks.expect_close(out, _torch_positions(n, d), f"{what} compared with PyTorch's tutorial encoding",
                            atol=2e-5, rtol=0, symptoms=_symptoms(n, d, out))


# --- properties -------------------------------------------------------------------------------

@case(STEP, "property")
def test_unit_circle_pairs(impl):
    """row 0 is [0, 1, 0, 1, ...], every (sin, cos) pair lies on the unit circle, column 0 is sin(p)"""
    n, d = 30, 8
    out, what = _call(impl, n, d)
    checks.expect_shape(out, (n, d), what)
    checks.expect_finite(out, what)
    if not np.allclose(out[0], np.tile([0.0, 1.0], d // 2), atol=1e-6):
        raise CaseFailure(f"row 0 of {what} should be [0, 1, 0, 1, ...] (sin 0 = 0 in the even columns, "
                          "cos 0 = 1 in the odd ones)")
    if np.array_equal(out, np.round(out)):  # truncated codes would be blamed on the angles below
        raise CaseFailure(f"{what} holds whole numbers only: its sines and cosines were truncated; fill an array "
                          "of floats (np.zeros((T, d)) is float64; dtype=int is not)")
    radius = out[:, 0::2] ** 2 + out[:, 1::2] ** 2
    if not np.allclose(radius, 1.0, atol=1e-4):
        raise CaseFailure(f"{what}: sin² + cos² of columns (2i, 2i+1) is not 1 everywhere (found "
                          f"{float(radius.min()):.3g} to {float(radius.max()):.3g}): both columns of a pair "
                          "must use the same angle")
    if not np.allclose(out[:, 0], np.sin(np.arange(n)), atol=2e-5):
        raise CaseFailure(f"column 0 of {what} should be sin(p): pair 0 turns by exactly 1 radian per position "
                          "(10000**0 = 1)")


@case(STEP, "property")
def test_shift_is_a_rotation(impl):
    """moving k positions turns every (sin, cos) pair by a fixed angle, whatever the start position"""
    n, d, k = 40, 10, 3
    out, what = _call(impl, n, d)
    checks.expect_shape(out, (n, d), what)
    sin_k, cos_k = out[k, 0::2], out[k, 1::2]  # sin(k w_i), cos(k w_i), from the codes themselves
    sin_p, cos_p = out[:-k, 0::2], out[:-k, 1::2]
    want_sin = sin_p * cos_k + cos_p * sin_k  # sin((p + k) w) = sin(pw) cos(kw) + cos(pw) sin(kw)
    want_cos = cos_p * cos_k - sin_p * sin_k
    if not (np.allclose(out[k:, 0::2], want_sin, atol=1e-4) and np.allclose(out[k:, 1::2], want_cos, atol=1e-4)):
        raise CaseFailure(f"{what}: the code of position p + {k} is not the code of position p with each "
                          "(column 2i, column 2i+1) pair turned by a fixed angle; sin belongs in the even "
                          "column and cos in the odd column of each pair, both with the angle p * w_i")


@case(STEP, "property")
def test_independent_of_sequence_length(impl):
    """the code of a position does not depend on how many positions are asked for"""
    short, what_short = _call(impl, 10, 8)
    long, what_long = _call(impl, 100, 8)
    checks.expect_shape(short, (10, 8), what_short)
    checks.expect_shape(long, (100, 8), what_long)
    if not np.allclose(short, long[:10], atol=1e-6):
        raise CaseFailure(f"the first 10 rows of {what_long} differ from {what_short}: a position's code "
                          "must depend only on p and d_model, not on num_tokens")


@case(STEP, "property", weight=0.5)
def test_positions_are_distinguishable(impl):
    """no two of 200 positions get the same code"""
    out, what = _call(impl, 200, 16)
    checks.expect_shape(out, (200, 16), what)
    gaps = np.linalg.norm(out[:, None, :] - out[None, :, :], axis=-1) + np.eye(200) * 10
    if float(gaps.min()) < 1e-3:
        i, j = np.unravel_index(int(np.argmin(gaps)), gaps.shape)
        raise CaseFailure(f"{what}: positions {min(i, j)} and {max(i, j)} get the same code, so attention "
                          "could not tell them apart")


# SPEC's 05 is NumPy first: the codes are a NumPy array, as the docstring and the notebook say; torch comes after.
TORCH_TENSOR = ("returns a torch tensor: the codes are a NumPy array (the docstring's (num_tokens, d_model) array), "
                "built with NumPy's functions; torch's own come in the steps after this one")


@case(STEP, "property", weight=0.5)
def test_many_sizes(impl):
    """works for any even d_model and any number of tokens, returning a NumPy array of floats"""
    if torch.is_tensor(_positions(impl, 3, 4)):
        raise CaseFailure(f"{NAME}(3, 4) {TORCH_TENSOR}")
    r = rng(1501)
    for _ in range(4):
        n, d = int(r.integers(1, 40)), 2 * int(r.integers(1, 20))
        out, what = _call(impl, n, d)
        checks.expect_close(out, _model(n, d), what, atol=2e-5, rtol=0, symptoms=_symptoms(n, d, out))
