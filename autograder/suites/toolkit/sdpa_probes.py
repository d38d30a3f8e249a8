"""Mistakes of scaled_dot_product_attention told apart by probes of their own, which live here since its suite is
full: blocked scores filled with +inf (np.inf for -np.inf), told from a mask multiplied by -inf and from a shift below
each row's maximum (its mean), which also make every row that blocks a key nan; the queries scored against themselves (Q Qᵀ), which fits only as many keys; large
scores' nan from a maximum taken without keepdims, which does shift, by another row's maximum; the right weights
returned transposed, told from K Qᵀ (whose rows, not columns, sum to 1); a context of V @ weights or of
weights.T @ V, which run only on square inputs or one matrix; a row's maximum subtracted before its blocked
keys are, which is exact until a blocked key scores far above the open ones; and a call that raised, run where its
mistake shows (`name_error_by_other_inputs`), a batch's own masks sliced as one matrix's included."""

import numpy as np

from autograder.error_causes import error_cause
from autograder.errors import CaseFailure
from autograder.suites.toolkit import checks, model, shifts


def nan_from_mask_times_inf(attend, Q, K, V, full_mask, nan_rows, label):
    """model.nan_in_every_mixed_row, after naming a fill with +inf: that too gives nan in every row that blocks a key
    (+inf is the row's maximum, and inf - inf is nan), but leaves a row that blocks none as it should be, where
    mask * -inf makes every entry nan (0 * -inf). Told on one item of the inputs, with a mask that blocks one key
    of every query but the first."""
    if not model.nan_in_every_mixed_row(attend, Q, K, V, full_mask, nan_rows):
        return False
    if shifts.shifts_below_max(_row_softmax(attend)):  # the same nan, from a shift that a blocked key makes -inf
        raise CaseFailure(f"the weights are nan in every row that blocks a key: {shifts.SHIFT_BELOW_MAX} ({label})")
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


def _row_softmax(attend):
    """scores (n,) -> the weights `attend` gives a query whose scores they are (Q = [[1]], K = the scores as a column,
    so that Q Kᵀ / sqrt(1) is them), or None where it raised."""
    def weights(scores):
        try:
            return checks.to_array(attend(np.ones((1, 1)), scores[:, None], np.eye(len(scores)), None)[1],
                                   "the weights")[0]
        except Exception:  # noqa: BLE001 - only asks what these scores give
            return None
    return weights


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


# np.sum(Q[:, None, :] * K[None, :, :], axis=-1): the products of every query with every key on one matrix; on a
# batch the new axes land among the batch's, so where the shapes still broadcast the items meet other items.
NEW_AXES_ON_BATCH = ("the scores are products summed over new axes put at fixed places (Q[:, None, :] * K[None, :, :]), "
                     "which pair every query with every key on one matrix only: on a batch the new axes land among the "
                     "batch's, so queries meet keys of other items, and the shapes come out wrong")


def new_axes_mistakes(Q, K, masked):
    """[(candidate, symptom)] of the weights of attention whose scores are np.sum(Q[:, None, :] * K[None, :, :], -1)
    / sqrt(d_k), then `masked`: on a batch of more than one axis before the tokens, where the shapes still broadcast
    (on one matrix they are right, and a 3-d batch raises unless it is as long as it is wide)."""
    if np.ndim(Q) < 4:
        return []
    return [(lambda: model.softmax(masked(np.sum(Q[:, None, :] * K[None, :, :], axis=-1) / np.sqrt(K.shape[-1]))),
             NEW_AXES_ON_BATCH)]


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


SUBTRACT_ROW_MAX = "; subtract each row's maximum score before exponentiating"
SHIFT_BEFORE_MASK = ("the maximum subtracted is taken over the blocked keys too: where a blocked key scores far "
                     "above the open ones, every open exponential underflows to 0 and the row is 0 / 0; block the "
                     "scores first, then take each row's maximum")


def blocked_far_above():
    """Q, K, V (6 tokens) and a causal mask, where query 0's only open key scores near 0 and a blocked one near
    1400: a row's maximum taken before blocking is the blocked key's, far above every open score."""
    r = np.random.default_rng(1318)
    Q, K, V = r.normal(size=(6, 8)), r.normal(size=(6, 8)), r.normal(size=(6, 3))
    K[5] = 500 * Q[0]
    return Q, K, V, np.triu(np.ones((6, 6), dtype=bool), k=1)


# A mask read as True = open makes nan of every row it leaves open, which large scores do not excuse.
MASK_READ_INVERTED = ("the mask is read the other way round (blocking where it is False): a row it leaves open is "
                      "then blocked whole, and its weights are 0 / 0; True means blocked (this query may NOT attend "
                      "to that key)")


def name_nan_weights(attend, Q, K, V, mask, weights, label):
    """Raises the cause of nan in `weights` (of the right shape) where one is known: a mask multiplied by -inf (nan in
    every row), a mask read inverted (nan in rows nothing blocks), or, for large scores, `why_nan`."""
    rows = np.isnan(weights).any(axis=-1)
    raw = Q @ np.swapaxes(K, -1, -2)
    large = np.abs(raw).max() > 50  # exp of such scores overflows, or all of a row's underflow
    if mask is not None and not large:
        full_mask = np.broadcast_to(mask, weights.shape)
        if nan_from_mask_times_inf(attend, Q, K, V, full_mask, rows, label):
            raise CaseFailure("the weights are nan in every row, blocked keys or not: mask * -inf is 0 * -inf = nan "
                              "where a key is open; blocked scores become -inf and the others stay as they are "
                              f"({label})")
        if (rows & ~full_mask.any(axis=-1)).any():
            raise CaseFailure("the weights are nan in rows where nothing is blocked: the mask looks inverted; True "
                              f"means blocked (this query may NOT attend to that key) ({label})")
    if large:
        raise CaseFailure(f"the weights contain nan for large scores: "
                          f"{why_nan(attend, raw / np.sqrt(K.shape[-1]), rows, mask, weights)} ({label})")


def why_nan(attend, scores, nan_rows, mask=None, weights=None):
    """shifts.why_nan of the scaled `scores`, unless the code's maximum is taken without keepdims=True, which a
    probe of square scores tells (elsewhere such code raises): then it does shift, by the wrong row's maximum, so
    an entry above that maximum by more than exp can take overflows; or unless the rows that are nan are those whose
    maximum over every key, blocked ones too, is far above the open ones; or unless `weights` are those of the mask
    read the other way round. Ends with what to do."""
    if shifts.shifts_below_max(_row_softmax(attend)):
        return shifts.SHIFT_BELOW_MAX
    if mask is not None and weights is not None and checks.named_mistake(
            weights, [(lambda: model.softmax(np.where(mask, scores, -np.inf)), MASK_READ_INVERTED)]):
        return MASK_READ_INVERTED
    if mask is not None:
        blocked = np.broadcast_to(mask, scores.shape)
        open_max, row_max = np.where(blocked, -np.inf, scores).max(axis=-1), scores.max(axis=-1)
        far_above = open_max - row_max < shifts.UNDERFLOW
        if far_above.any() and (np.asarray(nan_rows) == far_above).all():
            return SHIFT_BEFORE_MASK
    r = np.random.default_rng(1317)
    Q, K, V = r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2))
    try:
        weights = checks.to_array(attend(Q, K, V, None)[1], "the weights")
    except Exception:  # noqa: BLE001 - only asks what square inputs give
        return shifts.why_nan(scores, nan_rows) + SUBTRACT_ROW_MAX
    if checks.named_mistake(weights, model.without_keepdims_mistakes(Q @ K.T / np.sqrt(3))[1:]) is None:
        return shifts.why_nan(scores, nan_rows) + SUBTRACT_ROW_MAX
    return ("the maximum it subtracts is taken without keepdims=True, so entry (i, j) is shifted by row j's maximum, "
            "not row i's, and the exponential of a score far above another row's maximum overflows" + SUBTRACT_ROW_MAX)


def square_output_named(attend, mask, ladder, k=1):
    """The symptom of the mistake of `ladder(scores, V)` that output k (1 the weights, 0 the context) matches on 4
    queries and keys (d_k 3) with `mask`, or None; V is (4, 2), and square, (4, 4), for the context."""
    r = np.random.default_rng(1310)
    Q, K, V = r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2 if k else 4))
    try:
        out = checks.to_array(attend(Q, K, V, mask)[k], "the output")
    except Exception:  # noqa: BLE001 - only asks what square inputs give
        return None
    return checks.named_mistake(out, ladder(Q @ K.T / np.sqrt(3), V))


# Softmax over the keys, then transposed: each column sums to 1. K Qᵀ, softmax over its last axis (the queries),
# has the same shape, but each row sums to 1, so the values tell them apart.
WEIGHTS_TRANSPOSED = ("the weights come back transposed, keys by queries (weights.T; on a batch .T reverses every "
                      "axis): the softmax of Q Kᵀ is already laid out as the weights are, one row per query, "
                      "(..., n_q, n_k), so return it as it is")


def transposed_weights_mistakes(weights):
    """[(candidate, symptom)] of the right `weights` returned with their last two axes swapped."""
    return [(lambda: np.swapaxes(weights, -1, -2), WEIGHTS_TRANSPOSED)]


def name_transposed_weights(weights, right, label):
    """Weights of a shape other than `right`'s named where they are `right` with its last two axes swapped, or
    with every axis reversed (.T on a batch); quiet otherwise."""
    if checks.named_mistake(weights, [*transposed_weights_mistakes(right), (right.T, WEIGHTS_TRANSPOSED)]):
        raise CaseFailure(f"{WEIGHTS_TRANSPOSED} ({label})")


VALUES_TIMES_WEIGHTS = ("the context is V @ weights, the product the wrong way round: the weights, (n_q, n_k), "
                        "come first, so that each query's row mixes the values' rows, one per key: weights @ V")
WEIGHTS_T_CONTEXT = ("the context uses weightsᵀ @ V: row i of the weights belongs to query i, so the context is "
                     "weights @ V")


def name_square_context(attend, detail):
    """`detail`, an error on inputs of other sizes, named where the context on 4 queries, 4 keys and values 4 wide
    (where V @ weights and weightsᵀ @ V run, and on one matrix, so .T is a transpose) is one of theirs, before a
    batch's error is blamed on K.T; quiet otherwise."""
    found = square_output_named(attend, None, lambda s, V: [(V @ model.softmax(s), VALUES_TIMES_WEIGHTS),
                                                            (model.softmax(s).T @ V, WEIGHTS_T_CONTEXT)], k=0)
    if found:
        raise CaseFailure(f"{detail}, but runs where the queries, the keys and the values' width are as many: {found}")


# mask[:, :n_q, :n_k]: three indices, as if every mask had a batch axis; a (n_q, n_k) mask, which broadcasts over a
# batch, has two, and NumPy raises IndexError.
MASK_INDEXED_AS_BATCHED = ("the mask is indexed as if it always had a batch axis (three indices), but a mask may have "
                           "fewer axes than the scores and broadcasts over the rest: a (n_q, n_k) mask serves every "
                           "item of a batch; count its axes from the end, or use it as it is given")


def name_error_by_other_inputs(attend, Q, K, V, mask, error, detail):
    """A call that raised, told by inputs where its mistake shows: run with its 2-d mask given a leading axis of 1, the
    right answer is a mask indexed as if batched; run on 6 plain tokens without a mask (where a single key or one
    query hid it), an error whose own words name their cause names it."""
    if mask is not None and np.ndim(mask) == 2 and "too many indices" in str(error):
        right = model.softmax(np.where(mask, -np.inf, Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]))) @ V
        try:
            context = checks.to_array(attend(Q.copy(), K.copy(), V.copy(), np.asarray(mask)[None].copy())[0], "")
        except Exception:  # noqa: BLE001 - only asks whether this mask goes through
            context = None
        if context is not None and context.size == right.size and checks.named_mistake(
                context.reshape(right.shape), [(right, "right")]) is not None:
            raise CaseFailure(f"{detail}, yet gives the right answer with the mask given a leading axis of 1, "
                              f"{checks.fmt_shape((1, *np.shape(mask)))}: {MASK_INDEXED_AS_BATCHED}") from None
    if mask is not None and np.ndim(Q) > 2 and _mask_sliced_for_one_matrix(attend, Q, K, V, mask):
        if _cut_from_the_front(attend):
            raise CaseFailure(f"{detail} only with its mask, and runs with it on one item of the batch: "
                              f"{MASK_SLICED_FROM_THE_FRONT}") from None
        raise CaseFailure(f"{detail} only with its mask, and runs with it on one item of the batch: "
                          f"{MASK_SLICED_FOR_ONE_MATRIX}") from None
    if error_cause(str(error)) is not None:
        return  # its own words already name it
    r = np.random.default_rng(1319)
    try:
        attend(r.normal(size=(6, 4)), r.normal(size=(6, 4)), r.normal(size=(6, 3)), None)
    except Exception as plain:  # noqa: BLE001 - only its words are read
        cause = error_cause(str(plain))
        if cause is not None:
            raise CaseFailure(f"{detail}; on 6 tokens without a mask it raises {type(plain).__name__}, whose words "
                              f"show why: {cause}") from None


# mask[:Q.shape[0], :K.shape[0]]: sizes read for one matrix, which on a batch are the batch's, so the slice cuts the
# wrong axes of a mask of the scores' shape, and a 2-d mask to the batch's size.
MASK_SLICED_FOR_ONE_MATRIX = ("the mask is sliced with sizes read for one matrix (Q.shape[0], K.shape[0], which on a "
                              "batch are its leading axes'): a mask's axes, like the scores', are counted from the "
                              "end, and one (n_q, n_k) mask serves every item")


def _mask_sliced_for_one_matrix(attend, Q, K, V, mask):
    """Whether a batch raises with its mask spelled out to the weights' full shape too (so no broadcast is why), but
    not without a mask, and one item runs with the mask: the mask is cut by sizes of the wrong axes."""
    first = (0,) * (np.ndim(Q) - 2)
    full = np.broadcast_to(mask, (*np.shape(Q)[:-1], np.shape(K)[-2]))
    runs = []
    for args in ((Q, K, V, full), (Q, K, V, None), (Q[first], K[first], V[first], full[first])):
        try:
            attend(*(None if a is None else np.array(a) for a in args))
            runs.append(True)
        except Exception:  # noqa: BLE001 - only asks whether these inputs go through
            runs.append(False)
    return runs == [False, True, True]


# mask[:n_q, :n_k]: the scores' own sizes, as CausalAttention slices its (context_length, context_length) mask, but
# indices cut a mask's first axes, which on a per-item (batch, n_q, n_k) mask are the batch and the queries.
MASK_SLICED_FROM_THE_FRONT = ("the mask is sliced to the scores' sizes (n_q, n_k), but indices cut a mask's first axes, "
                              "which on a mask of one (n_q, n_k) matrix per item are the batch and the queries: a "
                              "mask's axes, like the scores', are counted from the end, and a mask given at the "
                              "scores' size needs no cutting")


def _cut_from_the_front(attend):
    """Whether a mask that fits one matrix only is cut to the scores' sizes from the front (mask[:n_q, :n_k]), not by
    sizes read for one matrix (mask[:Q.shape[0], :K.shape[0]]): a per-item mask with fewer items than queries and
    fewer queries than keys goes through the first and stops the second; one with more items than queries the other
    way round."""
    r = np.random.default_rng(1320)
    runs = []
    for batch, n_q, n_k in ((2, 3, 5), (4, 2, 3)):
        Q, K, V = r.normal(size=(batch, n_q, 4)), r.normal(size=(batch, n_k, 4)), r.normal(size=(batch, n_k, 2))
        mask = r.random((batch, n_q, n_k)) < 0.3
        try:
            attend(Q, K, V, mask)
            runs.append(True)
        except Exception:  # noqa: BLE001 - only asks whether these inputs go through
            runs.append(False)
    return runs == [True, False]
