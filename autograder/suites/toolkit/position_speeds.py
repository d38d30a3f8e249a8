"""sinusoidal_positions' codes read as turning pairs: the speeds and start angles a student's own table shows,
named where they fit a known mistake (another base or exponent, positions scaled or spread, a shifted column),
for the suite's ladder (`test_sinusoidal_positions`)."""

import math

import numpy as np

from autograder.suites.toolkit import checks


def codes_table(out, min_rows):
    """`out` as finite float64 codes (positions, an even number of columns) of at least `min_rows`
    positions, or None (not numbers, or another shape: the cases say so)."""
    try:
        out = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    if out.ndim != 2 or out.shape[0] < min_rows or out.shape[1] % 2 or not np.isfinite(out).all():
        return None
    return out


def steady_speeds(out):
    """[(the codes of pairs turning at the speeds `out` shows from row 0 to row 1, the diagnosis)]."""
    out = codes_table(out, 2)
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


def phases(out):
    """[(codes whose columns turn at the right speeds from the start angles `out` shows, the diagnosis)],
    when some columns start at one same angle other than a multiple of a right angle (those are the
    swaps and signs named elsewhere): each column fitted as a sin(p w) + b cos(p w), w its pair's speed."""
    out = codes_table(out, 3)
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
