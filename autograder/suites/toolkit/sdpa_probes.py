"""Mistakes of scaled_dot_product_attention told apart by probes of their own, which live here since its suite is
full: blocked scores filled with +inf (np.inf for -np.inf), told from a mask multiplied by -inf, which also makes every
row that blocks a key nan; the queries scored against themselves (Q Qᵀ), which fits only as many keys; and large
scores' nan from a maximum taken without keepdims, which does shift, by another row's maximum."""

import numpy as np

from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks, model, shifts


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


# Q Qᵀ has the weights' shape only where there are as many queries as keys: elsewhere weights @ V raises.
SELF_SCORES = ("scores the queries against themselves (Q Qᵀ, as scaled_attention_scores(Q, Q) gives): the scores pair "
               "each query with each key, Q Kᵀ")


def self_scores_mistakes(Q, mask):
    """[(candidate, symptom)] of the weights of attention whose scores are Q Qᵀ / sqrt(d_k), blocked where `mask`
    is True."""
    def weights():
        scores = Q @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])
        return model.softmax(scores if mask is None else np.where(mask, -np.inf, scores))

    return [(weights, SELF_SCORES)]


def name_self_scores(attend, Q, K, detail):
    """`detail`, an error on queries Q and keys K of different numbers, named where the code, on 4 queries and 4
    other keys, gives the weights of Q Qᵀ; quiet otherwise."""
    if Q.shape[-2] == K.shape[-2]:  # Q Qᵀ has the weights' shape here: the ladder names it from the value
        return
    r = np.random.default_rng(1316)
    Q, K, V = r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2))
    try:
        weights = checks.to_array(attend(Q, K, V, None)[1], "the weights")
    except Exception:  # noqa: BLE001 - only asks what square inputs give
        return
    if checks.named_mistake(weights, self_scores_mistakes(Q, None)) is not None:
        raise CaseFailure(f"{detail}, but runs with as many queries as keys, where it {SELF_SCORES}")


def why_nan(attend, scores, nan_rows):
    """shifts.why_nan of the scaled `scores`, unless the code's maximum is taken without keepdims=True, which a
    probe of square scores tells (elsewhere such code raises): then it does shift, by the wrong row's maximum, so
    an entry above that maximum by more than exp can take overflows."""
    r = np.random.default_rng(1317)
    Q, K, V = r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2))
    try:
        weights = checks.to_array(attend(Q, K, V, None)[1], "the weights")
    except Exception:  # noqa: BLE001 - only asks what square inputs give
        return shifts.why_nan(scores, nan_rows)
    if checks.named_mistake(weights, model.without_keepdims_mistakes(Q @ K.T / np.sqrt(3))[1:]) is None:
        return shifts.why_nan(scores, nan_rows)
    return ("the maximum it subtracts is taken without keepdims=True, so entry (i, j) is shifted by row j's maximum, "
            "not row i's, and the exponential of a score far above another row's maximum overflows")
