"""What a softmax's shift did to large scores: why its weights came out nan; why a causal layer's did."""

import numpy as np

# Why a causal layer's output holds nan, where no known mistake's output matched it.
NAN_HINT = ("nan appears when a token has every key blocked (does the mask block the diagonal? each token "
            "must see itself), or when -inf meets 0 (dropout or a product on the masked scores), or when "
            "blocked scores are filled with +inf (float(\"inf\") for float(\"-inf\"): inf - inf is nan)")

# exp(x) of a float64 is 0 below about -745, and inf above about 709.8
UNDERFLOW = -745.0
OVERFLOW = float(np.log(np.finfo(np.float64).max))


def why_nan(scores, nan_rows):
    """Why a softmax of `scores` (..., n_q, n_k) made the rows `nan_rows` nan: exp overflows or, on rows of scores
    far below 0, underflows (0 / 0) where nothing is subtracted, while the whole array's maximum subtracted makes
    nan exactly the rows far below it, whose every exponential underflows."""
    nan_rows = np.asarray(nan_rows)
    far_below = scores.max(axis=-1) - scores.max() < UNDERFLOW
    if far_below.any() and (nan_rows == far_below).all():
        return ("in each row far below the largest score of all, every exponential underflows to 0 and the row is "
                "0 / 0: the maximum subtracted is the whole array's, not the row's")
    all_negative = scores.max(axis=-1) < UNDERFLOW
    if all_negative.any() and (nan_rows == all_negative).all():
        return "every exponential of a row of scores far below 0 underflows to 0, and the row is 0 / 0"
    return "exp overflows"


# A shift below each row's maximum (its mean, its minimum) cancels in exact arithmetic, as any shift does, but the
# exponential of a score far above it overflows, and a blocked key's -inf makes the mean (or minimum) -inf, so that
# exp(score + inf) is inf and the row is inf / inf, nan.
SHIFT_BELOW_MAX = ("the scores are shifted by less than their largest (their mean or minimum?) before exp: any shift "
                   "cancels, but exp(score - shift) overflows where a score lies far above it, and a blocked key's -inf "
                   "makes such a shift -inf and its row nan; only the largest score keeps every exponential at most 1")
# A row with one score far above the rest (where a shift by less than the maximum overflows), and a row of scores all
# far below 0 (where no shift at all, or a running maximum started at 0, underflows to 0 / 0).
_FAR_ABOVE = np.array([0.0, 0.0, 0.0, 2000.0])
_FAR_BELOW = np.array([-1000.0, -1001.0, -1000.0, -1002.0])


def shifts_below_max(softmax_of):
    """Whether a softmax, `softmax_of(scores)` (a row's weights, or None where the code raised), is not finite on a row
    with one score far above the rest, yet right on a row of scores all far below 0: it shifts the scores, by less
    than their maximum."""
    high, low = softmax_of(_FAR_ABOVE), softmax_of(_FAR_BELOW)
    if high is None or low is None or np.shape(low) != _FAR_BELOW.shape or np.isfinite(high).all():
        return False
    exps = np.exp(_FAR_BELOW - _FAR_BELOW.max())
    return bool(np.allclose(low, exps / exps.sum(), atol=1e-6))


# torch.max(scores, dim=-1, keepdim=True)[1] (or .indices, argmax) for the maximum's value: the position, a small
# whole number, is subtracted. Any shift cancels, so moderate scores come out right, but exp overflows or underflows
# as without a shift, a little later.
SHIFT_BY_POSITION = ("the scores are shifted by the position of each row's largest score (torch.max(..., dim)[1], "
                     ".indices or argmax), not by the score itself: any shift cancels, so moderate scores come out "
                     "right, but large ones overflow and very negative ones underflow to 0 / 0, as without a shift")
# exp(712) overflows a float64 and exp(712 - 3) does not: the largest score at position 3
_FAR_ABOVE_AT_3 = np.array([0.0, 0.0, 0.0, 712.0])


def shifts_by_position(softmax_of):
    """Whether a float64 softmax, `softmax_of(scores)` (a row's weights, or None where the code raised), is right on a
    row whose largest score, at position 3, overflows exp by less than 3, yet not finite on a row of scores all far
    below 0: it shifts the scores by the position of their maximum."""
    high, low = softmax_of(_FAR_ABOVE_AT_3), softmax_of(_FAR_BELOW)
    if high is None or low is None or np.shape(high) != _FAR_ABOVE_AT_3.shape or np.isfinite(low).all():
        return False
    exps = np.exp(_FAR_ABOVE_AT_3 - _FAR_ABOVE_AT_3.max())
    return bool(np.allclose(high, exps / exps.sum(), atol=1e-6))
