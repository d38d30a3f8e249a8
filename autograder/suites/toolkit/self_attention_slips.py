"""Rungs of SelfAttention's suite, whose own file is full: slips in a softmax or a scale written by hand.

`softmax_slips(scores, d_k)`: (weights, symptom) of the scaled `scores` (..., T, T) weighed so: the sums of the
exponentials taken without keepdim, and the divisor written keys.shape[-1] ** 1 / 2.
`explain_on_one_sequence`: a forward that raised on a batch but runs on one sequence, where the sums taken without
keepdim show.
"""

import numpy as np

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.model import softmax

# e / e.sum(dim=-1): the sums (..., T) line up with the last axis of e (..., T, T), so entry (i, j) is divided by
# row j's sum; on one sequence that runs, on a batch (B, T, T) / (B, T) fits only where B is 1 or T.
SUMS_WITHOUT_KEEPDIM = ("the softmax's sums are taken without keepdim (e / e.sum(dim=-1)): the sums, one per row, "
                        "broadcast along the last axis, so entry (i, j) is divided by row j's sum, not row i's, and "
                        "on a batch the shapes do not fit; keep the summed axis: e.sum(dim=-1, keepdim=True)")
# scores / keys.shape[-1] ** 1 / 2: ** binds before /, and / goes left to right, so it is scores / d_k / 2.
POWER_BEFORE_DIVISION = ("the scores are divided by 2·d_k: keys.shape[-1] ** 1 / 2 is (d_k ** 1) / 2, since ** "
                         "binds before / (and scores / d_k / 2 divides twice); the square root is ** 0.5, or "
                         "** (1 / 2) with brackets")


def softmax_slips(scores, d_k):
    """[(weights, symptom)] of the two slips on the scores Q Kᵀ / sqrt(d_k); the sums without keepdim only where
    their shapes broadcast, as in the student's code."""
    with np.errstate(over="ignore", invalid="ignore"):
        exponentials = np.exp(scores)
    found = [(lambda: softmax(scores * np.sqrt(d_k) / (2 * d_k)), POWER_BEFORE_DIVISION)]
    try:
        np.broadcast_shapes(exponentials.shape, exponentials.shape[:-1])
    except ValueError:
        return found
    return found + [(lambda: exponentials / exponentials.sum(axis=-1), SUMS_WITHOUT_KEEPDIM)]


def explain_on_one_sequence(out, scores, values, what, error):
    """`out`, the output of a layer on one sequence whose forward raised on a batch: its softmax's sums taken
    without keepdim, if it is what they give (scores and values of that sequence)."""
    slips = [(lambda weigh=weigh: weigh() @ values, symptom) for weigh, symptom in softmax_slips(scores, 1)
             if symptom == SUMS_WITHOUT_KEEPDIM]
    if checks.named_mistake(out, slips) is not None:
        raise CaseFailure(f"{what} raised {error.type_name} on a batch, and runs on one sequence, where it shows "
                          f"why: {SUMS_WITHOUT_KEEPDIM}") from None
