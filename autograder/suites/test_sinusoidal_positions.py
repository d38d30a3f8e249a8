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
from autograder.suites.toolkit.position_speeds import codes_table, phases, steady_speeds

STEP = "sinusoidal_positions"
NAME = "sinusoidal_positions"


def _model(num_tokens, d_model, *, swap=False, exponent="2i", layout="interleaved", first=0, divide=True,
           brackets=False, unit=1.0, floor=False):
    """The position codes in float64; each keyword reproduces one known mistake (`unit`: the angles
    multiplied by it, a degree/radian conversion; exponent "2i alone": p / 10000**2i / d_model, no brackets;
    `floor`: p // 10000**(2i / d_model), each angle rounded down)."""
    p = np.arange(first, first + num_tokens, dtype=np.float64)[:, None]
    i = np.arange(d_model // 2, dtype=np.float64)[None, :]
    power = {"2i": 2 * i / d_model, "i": i / d_model, "int": (2 * i) // d_model, "2i alone": 2 * i}[exponent]
    speed = (10000.0 ** -power if divide else 10000.0 ** power) / (d_model if exponent == "2i alone" else 1)
    angles = unit * ((p / 10000.0) ** power if brackets else p * speed)
    if floor:
        angles = p // 10000.0 ** power
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
FLOORED_ANGLES = ("each angle is rounded down to a whole number of radians (// is floor division): the slower pairs "
                  "stand still for many positions and then jump; the angle is the true quotient, / not //")
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
    (dict(floor=True), FLOORED_ANGLES),
]
OWN_COLUMN = ("the cosine in column 2i+1 uses the exponent (2i+1) / d_model; both columns of a pair "
              "share one angle, p / 10000**(2i / d_model)")


def _left_at_zero(num_tokens, d_model):
    """(candidate, symptom) of the right codes with one part never written into the table of zeros: the last
    pair's columns or the last position's row (a loop that stops one short), the cosines' or the sines' columns."""
    def zeroed(where):
        codes = _model(num_tokens, d_model)
        codes[where] = 0.0
        return codes

    return [(lambda: zeroed((slice(None), slice(-2, None))), LAST_PAIR_ZERO),
            *[(lambda: zeroed(-1), LAST_ROW_ZERO)] * (num_tokens > 1),
            (lambda: zeroed((slice(None), slice(1, None, 2))), COSINES_ZERO),
            (lambda: zeroed((slice(None), slice(0, None, 2))), SINES_ZERO)]


LAST_PAIR_ZERO = ("the last pair's two columns are all 0, as in the table before it was filled: a loop over the pairs "
                  "stops one short; pair i runs from 0 up to d_model / 2 - 1 itself")
LAST_ROW_ZERO = ("the last position's row is all 0, as in the table before it was filled: a loop over the positions "
                 "stops one short; p runs from 0 up to num_tokens - 1 itself")
COSINES_ZERO = "the odd columns are all 0: the cosines are never written into the table, only the sines"
SINES_ZERO = "the even columns are all 0: the sines are never written into the table, only the cosines"
# for i in range(d_model) with i taken for the pair's index: column j's angle is p / 10000**(2j / d_model)
COLUMN_AS_PAIR = ("every column j takes the exponent 2j / d_model, its own column index used as the pair's (a loop "
                  "over all d_model columns?): the two columns of pair i share one angle, p / 10000**(2i / d_model)")


def _column_as_pair(num_tokens, d_model):
    p = np.arange(num_tokens, dtype=np.float64)[:, None]
    j = np.arange(d_model, dtype=np.float64)[None, :]
    angles = p / 10000.0 ** (2 * j / d_model)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))


def _symptoms(num_tokens, d_model, out=None):
    """The known mistakes; with the student's `out`, also a measured one: every pair turns at a
    steady speed, but not the right one (a wrong base, or d_model replaced in the exponent)."""
    found = [((lambda kw=kw: _model(num_tokens, d_model, **kw)), message) for kw, message in MISTAKES]
    return (found + [((lambda: _own_column(num_tokens, d_model)), OWN_COLUMN),
                     ((lambda: _column_as_pair(num_tokens, d_model)), COLUMN_AS_PAIR)]
            + _left_at_zero(num_tokens, d_model) + steady_speeds(out) + phases(out))


def _explained(out, what, check):
    """check(), a property of `out`, with a failure's message followed by the known mistake `out` shows, if any."""
    try:
        check()
    except CaseFailure as failure:
        raise _failure(out, what, str(failure)) from None


def _failure(out, what, message):
    """A property's failure of `out`, `message`, followed by the known mistake `out` shows, if any."""
    symptom = _named_in(out)
    return CaseFailure(message + (f"; {what} shows why: {symptom}" if symptom else ""))


def _named_in(out):
    """The known mistake the codes `out` show, or None."""
    table = codes_table(out, 1)
    if table is None:
        return None
    return checks.named_mistake(table, _symptoms(*table.shape, table))


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
    _explained(out, what, lambda: _on_the_unit_circle(out, what, n, d))


def _on_the_unit_circle(out, what, n, d):
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
        raise _failure(out, what, f"{what}: the code of position p + {k} is not the code of position p with each "
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
