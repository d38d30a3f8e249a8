"""Rungs of SelfAttention's suite, whose own file is full: slips in a softmax or a scale written by hand.

`softmax_slips(scores, d_k)`: (weights, symptom) of the scaled `scores` (..., T, T) weighed so: the sums of the
exponentials taken without keepdim, and the divisor written keys.shape[-1] ** 1 / 2 or keys.shape[-1] ** -0.5.
`explain_on_one_sequence`: a forward that raised on a batch but runs on one sequence, where the sums taken without
keepdim show.
`explain_item_alone`: an item of a batch whose output differs from its output alone, named by either output.
"""

import numpy as np

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.model import SCALED_BY_TOKENS, softmax

# e / e.sum(dim=-1): the sums (..., T) line up with the last axis of e (..., T, T), so entry (i, j) is divided by
# row j's sum; on one sequence that runs, on a batch (B, T, T) / (B, T) fits only where B is 1 or T.
SUMS_WITHOUT_KEEPDIM = ("the softmax's sums are taken without keepdim (e / e.sum(dim=-1)): the sums, one per row, "
                        "broadcast along the last axis, so entry (i, j) is divided by row j's sum, not row i's, and "
                        "on a batch the shapes do not fit; keep the summed axis: e.sum(dim=-1, keepdim=True)")
# scores / keys.shape[0] ** 0.5: the batch size on a batch, the number of tokens on one sequence. A batch as large as
# d_k gets its right output, and only its items run alone show the tokens' divisor.
KEYS_FIRST_AXIS = ("the batch's output is right, but each item alone has its scores divided by sqrt(T), the number "
                   "of tokens: is d_k read from the keys' first axis (keys.shape[0], len(keys))? That is the batch "
                   "size on a batch (here as large as d_k) and the number of tokens on one sequence; d_k is the "
                   "keys' width, their LAST axis (keys.shape[-1])")
# scores / keys.shape[-1] ** 1 / 2: ** binds before /, and / goes left to right, so it is scores / d_k / 2.
POWER_BEFORE_DIVISION = ("the scores are divided by 2·d_k: keys.shape[-1] ** 1 / 2 is (d_k ** 1) / 2, since ** "
                         "binds before / (and scores / d_k / 2 divides twice); the square root is ** 0.5, or "
                         "** (1 / 2) with brackets")

# scores / keys.shape[-1] ** -0.5: d_k ** -0.5 is 1 / sqrt(d_k) already, so dividing by it multiplies by sqrt(d_k).
NEGATIVE_POWER = ("the scores are multiplied by sqrt(d_k), not divided: keys.shape[-1] ** -0.5 is 1 / sqrt(d_k) "
                  "already, so dividing by it multiplies; divide by keys.shape[-1] ** 0.5 (or multiply by ** -0.5)")


def softmax_slips(scores, d_k):
    """[(weights, symptom)] of the slips on the scores Q Kᵀ / sqrt(d_k); the sums without keepdim only where
    their shapes broadcast, as in the student's code."""
    with np.errstate(over="ignore", invalid="ignore"):
        exponentials = np.exp(scores)
    found = [(lambda: softmax(scores * np.sqrt(d_k) / (2 * d_k)), POWER_BEFORE_DIVISION),
             (lambda: softmax(scores * d_k), NEGATIVE_POWER)]
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


def explain_item_alone(i, batch_out, alone_out, batch_right, batch_ladder, item_ladder):
    """Item i of `batch_out` differs from `alone_out`, its output alone: named by the batch's output, where the known
    mistakes only a batch shows (a softmax over dim 0 or 1) have a model, or, where the batch's output is right
    (`batch_right()`), by the item's alone, where d_k read from the keys' first axis shows as the tokens' divisor.
    The ladders are functions, built only here; quiet where neither names it."""
    found = checks.named_mistake(batch_out, batch_ladder())
    if found is not None:
        raise CaseFailure(f"item {i} of the batch's output differs from item {i} alone: {found}")
    if (checks.named_mistake(batch_out, [(batch_right, "right")]) is not None
            and checks.named_mistake(alone_out, item_ladder()) == SCALED_BY_TOKENS):
        raise CaseFailure(f"item {i} of the batch gets another output alone: {KEYS_FIRST_AXIS}")
