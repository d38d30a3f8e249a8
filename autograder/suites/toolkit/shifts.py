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
