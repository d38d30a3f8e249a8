"""Blocked scores filled with +inf (np.inf for -np.inf) in scaled_dot_product_attention, told apart from a mask
multiplied by -inf, which also makes every row that blocks a key nan: its suite is full, so the probe lives here."""

import numpy as np

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks, model


def nan_from_mask_times_inf(attend, Q, K, V, full_mask, nan_rows, label):
    """model.nan_in_every_mixed_row, after naming a fill with +inf: that too gives nan in every row that blocks a key
    (+inf is the row's maximum, and inf - inf is nan), but leaves a row that blocks none as it should be, where
    mask * -inf makes every entry nan (0 * -inf). Told on one item of the inputs, with a mask that blocks one key
    of every query but the first."""
    if not model.nan_in_every_mixed_row(attend, Q, K, V, full_mask, nan_rows):
        return False
    first = (0,) * (Q.ndim - 2)
    q, k, v = Q[first], K[first], V[first]
    blocked = np.zeros((q.shape[-2], k.shape[-2]), dtype=bool)
    blocked[np.arange(1, len(blocked)), np.arange(1, len(blocked)) % k.shape[-2]] = True
    try:
        weights = checks.to_array(attend(q, k, v, blocked)[1], "the weights")
    except Exception:  # noqa: BLE001 - only asks how this mask is read
        return True
    right_first_row = model.softmax(q[:1] @ k.T / np.sqrt(k.shape[-1]))
    if weights.shape == blocked.shape and np.isnan(weights[1:]).all(axis=-1).all() and checks.named_mistake(
            weights[:1], [(right_first_row, "right")]) is not None:
        raise CaseFailure("the weights are nan in every row that blocks a key, and right in a row that blocks none: "
                          "the blocked scores are filled with +inf (np.inf), which becomes the row's maximum, and "
                          f"inf - inf is nan; fill them with -np.inf, whose exponential is 0 ({label})")
    return True
