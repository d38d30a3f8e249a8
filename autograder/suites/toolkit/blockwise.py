"""A NumPy model of `online_softmax_attention` with one switch per known mistake (`model`), and why a call
whose shapes do not fit failed: it is run again on simpler inputs,
each of which a known shape mistake fits (`simpler_inputs`), and the first where the answer comes out right
names the mistake (`explain_shapes`); an einsum written for one matrix is named by its first item
(`name_einsum_for_one_matrix`). Also, where the suite is full: what a call that held too much memory held
(`held_too_much`), and the scale by sqrt(block_size) beside the mistakes it coincides with (`with_block_scale`)."""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.shifts import SHIFT_BELOW_MAX, shifts_below_max


def model(Q, K, V, block_size, causal=False, *, rescale="both", mask="ok", scale="sqrt", normalise=True,
          shift="new", keep_max=True, tail=True, sum_axis=-1, block_max=False, values="block", loop="keys",
          width="full", max_axis=-1, max_before_mask=False, positions=None, keys_first=False, exp=np.exp,
          shift_by=np.max):
    """Blockwise attention in float64. rescale "both" | "acc" (only the output) | "sum" (only the
    sum) | "none" | "inverted" (both, by exp(new_max - old_max)) | "late" (the output after adding the
    block) | "acc_twice" (the output by the factor squared, the sum right) | "new" (the block's values, not the running output) | "sum_late" (the output right, the sum after adding
    the block's weights) | "ratio" (by exp(old_max) / exp(new_max), which
    overflows or underflows to nan where the maximum is far from 0, and is nan in the first block); mask "ok" | "local" (block offset ignored) | "next" (j > i + 1) | "diagonal" (j >= i) |
    "reversed" (j < i) | "shifted_on" (j > i + 2 start: np.triu's offset k = start + 1, the block's start added to
    its diagonal where it is taken away) | "zero" (blocked scores 0, not -inf) | "additive" (scores + blocked * -inf: nan where open) | "kept" (np.where's two branches swapped: the
    later keys kept, the rest blocked) | "open_first" (every block masked but the first); scale "sqrt" | "none" |
    "linear" | "d_v" (sqrt of the values' width) | "block" (sqrt(block_size)) | "block_len" (sqrt of the keys the block holds) | "times_sqrt" | "n_k" (sqrt of the
    number of keys) | "floor" (// sqrt(d_k), each score rounded down) | "twice_linear" (2 d_k: d_k ** 1 / 2); normalise False: no final division,
    "loop": the running output divided by the running sum after each block, "loop-block": each block's values
    divided by the running sum as they are added (neither divides at the end), "block": each block's values
    divided by the block's own weight sum as they are added (and the running output by the running sum at the
    end); shift "old":
    exp(scores - the maximum before the block); keep_max False: the running maximum stays -inf;
    tail False: a last block shorter than block_size is skipped, "last": the last block is skipped, even a
    full one (range(0, n_k - block_size, block_size)); width "short": each block reads one key fewer,
    K[start:start + block_size - 1], "last_key": the blocks stop at n_k - 1, so the last key is never read, a number: each block's slice
    that many keys long whatever block_size is (the default 64 written out); sum_axis 0: the block's weights
    summed over axis 0 (the queries of one sequence), None: over every axis (one total); block_max: the new maximum is the block's own; values
    "first": every block's values are the first rows of V (V[0:b]), not its own; loop "queries": the blocks
    start at range(0, n_q, block_size), the queries' count where the keys' is meant (blocks past n_k are empty),
    "from_one": at range(1, n_k, block_size) (key 0 never read), "block_numbers": at range(n_k // block_size),
    the blocks' numbers taken for their first keys (overlapping blocks; the later keys never read), "reversed": the
    blocks of range(0, n_k, block_size) read last first, "backwards": at range(n_k - block_size, -1, -block_size), last
    first (the first n_k % block_size keys never read); max_axis -2:
    the block's maximum taken over the queries, a (..., 1, b) array that broadcasts the running ones to (..., n_q, b);
    keys_first: the block's scores taken as K_blk @ Qᵀ, a row per key (square blocks only),
    None: over the whole block (every query and sequence);
    max_before_mask: the block's maximum taken before the causal mask, over the blocked keys too; `exp` the
    exponential every weight and rescale factor takes (np.exp2: base 2, as FlashAttention's kernels, which scale the
    scores by log2(e) first).
    `positions`: the queries' positions in the sequence, when Q holds only some rows of it (the
    causal mask needs them; a long input's spot checks model only the rows they read). `shift_by`: what each block
    offers the running maximum, np.max, or np.mean or np.min (a shift below the maximum); loop "first": the answer
    returned after the first block (a return inside the loop)."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_q, n_k, d_k = Q.shape[-2], K.shape[-2], K.shape[-1]
    divisor = {"sqrt": np.sqrt(d_k), "none": 1.0, "linear": float(d_k), "d_v": np.sqrt(V.shape[-1]),
               "block": np.sqrt(block_size), "block_len": 1.0, "times_sqrt": 1 / np.sqrt(d_k),
               "n_k": np.sqrt(n_k), "floor": np.sqrt(d_k), "twice_linear": 2.0 * d_k}[scale]
    if scale == "block_len" and n_k % block_size == 0:
        raise ValueError("every block holds block_size keys: scale 'block' models this input")
    row_max = np.full(Q.shape[:-1] + (1,), -np.inf)
    row_sum = np.zeros(Q.shape[:-1] + (1,))
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        end = {True: n_q if loop == "queries" else n_k, False: n_k - block_size + 1, "last": n_k - block_size}[tail]
        starts = {"keys": range(0, end, block_size), "queries": range(0, end, block_size),
                  "from_one": range(1, end, block_size), "block_numbers": range(n_k // block_size),
                  "reversed": reversed(range(0, end, block_size)), "backwards": range(n_k - block_size, -1, -block_size),
                  "first": range(0, end, block_size)[:1]}[loop]
        for start in starts:
            reach = width if isinstance(width, int) else block_size - (width == "short")
            stop = min(start + reach, n_k - (width == "last_key"))
            if start >= stop:  # past the keys: the code under test raises here (the maximum of nothing)
                continue
            scores = Q @ np.swapaxes(K[..., start:stop, :], -1, -2)
            scores = np.swapaxes(scores, -1, -2) if keys_first else scores  # K_blk @ Qᵀ: fits where b == n_q
            scores = np.floor_divide(scores, np.sqrt(d_k)) if scale == "floor" else scores / (
                np.sqrt(stop - start) if scale == "block_len" else divisor)  # the keys this block holds
            unmasked = scores
            if causal:
                keys = np.arange(stop - start) if mask == "local" else np.arange(start, stop)
                rows = (np.arange(n_q) if positions is None else np.asarray(positions))[:, None]
                blocked = {"ok": keys > rows, "local": keys > rows, "next": keys > rows + 1,
                           "diagonal": keys >= rows, "reversed": keys < rows, "zero": keys > rows, "kept": keys <= rows,
                           "additive": keys > rows, "open_first": (keys > rows) & (start > 0),
                           "shifted_on": keys > rows + 2 * start}[mask]
                scores = scores + blocked * -np.inf if mask == "additive" else \
                    np.where(blocked, 0.0 if mask == "zero" else -np.inf, scores)
            new_max = shift_by(unmasked if max_before_mask else scores, axis=max_axis, keepdims=True)
            new_max = new_max if block_max else np.maximum(row_max, new_max)
            if rescale == "inverted":
                shrink = exp(new_max - row_max)
            elif rescale == "ratio":
                shrink = np.exp(row_max) / np.exp(new_max)
            else:
                shrink = exp(row_max - new_max)
            p = exp(scores - (new_max if shift == "new" else row_max))
            if rescale == "sum_late":
                row_sum = (row_sum + p.sum(sum_axis, keepdims=True)) * shrink
            else:
                row_sum = (row_sum if rescale in ("acc", "none") else row_sum * shrink) + p.sum(sum_axis, keepdims=True)
            V_blk = V[..., :stop - start, :] if values == "first" else V[..., start:stop, :]
            added = p @ V_blk / {"loop-block": row_sum, "block": p.sum(-1, keepdims=True)}.get(normalise, 1.0)
            if rescale == "late":
                acc = (acc + added) * shrink
            elif rescale == "acc_twice":
                acc = acc * shrink * shrink + added
            elif rescale == "new":
                acc = acc + shrink * added
            else:
                acc = (acc if rescale in ("sum", "none") else acc * shrink) + added
            acc = acc / row_sum if normalise == "loop" else acc
            row_max = new_max if keep_max else row_max
        return acc / row_sum if normalise in (True, "block") else acc


# The blocks read last first: exact where every query's first block read holds a key it may see, but with causal=True
# an early query's first block read is all blocked, its maximum -inf, and exp(-inf - (-inf)) is nan from then on. The
# starts counted down from n_k - block_size also leave keys out; one message for both, which coincide where
# block_size divides n_k.
REVERSED = ("the blocks are read from the last to the first: with causal=True an early query's first block read then "
            "holds only keys it may not see, so its running maximum is still -inf after it, and exp(-inf - (-inf)) is "
            "nan from then on; read the blocks in order, from key 0, which every query may see (starts counted down "
            "from n_k - block_size also leave out the first n_k % block_size keys)")

VALUES_FIRST = ("every block takes its values from the first rows of V, not from the rows of its own keys: a block's "
                "weights weigh the values of the same keys (positions start to start + b), whichever block it is")


def _one_sequence(Q, K, V):
    return tuple(np.asarray(a)[(0,) * (np.ndim(a) - 2)] for a in (Q, K, V))  # the first sequence, 2-D


def simpler_inputs(Q, K, V, block_size, causal):
    """(inputs, block_size, causal, failure): each simpler call on which a known shape mistake fits, and
    failure(what went wrong) naming it. A batch of sequences cut to one; values made as wide as the keys; as
    many queries as keys; one sequence cut to its first query (in blocks of two keys or more, where a causal
    mask of the wrong shape does not fit); the same call without causal=True."""
    if np.ndim(Q) > 2:
        yield _one_sequence(Q, K, V), block_size, causal, lambda said: CaseFailure(
            f"{said}: it works on one sequence (2-D Q, K, V) but not on a batch (..., n, d): a batch's axes come "
            "first, so count the axes from the end: K[..., a:b, :] not K[a:b], np.swapaxes(K, -1, -2) not K.T, @ not "
            "np.dot, and a query's running maximum or sum x[..., None] not x[:, None]")
    d_k, d_v = np.shape(K)[-1], np.shape(V)[-1]
    if d_v != d_k:
        wide = rng(1519).normal(size=np.shape(V)[:-1] + (d_k,)).astype(np.asarray(V).dtype)
        yield (Q, K, wide), block_size, causal, lambda said: CaseFailure(
            f"{said}: it works only when the values are as wide as the queries and keys (d_v == d_k): the "
            "running output, like the answer, holds a row of the values' width d_v per query, (..., n_q, d_v)")
    n = min(np.shape(Q)[-2], np.shape(K)[-2])
    if np.shape(Q)[-2] != np.shape(K)[-2]:
        yield tuple(np.asarray(a)[..., :n, :] for a in (Q, K, V)), block_size, causal, lambda said: CaseFailure(
            f"{said}: it works only where there are as many queries as keys (n_q == n_k): the running output, like "
            "the answer, holds a row per query, (..., n_q, d_v), however many keys there are")
    one_q, one_k, one_v = _one_sequence(Q, K, V)
    if one_q.shape[0] > 1 and one_k.shape[0] > 1:
        yield (one_q[:1], one_k, one_v), max(block_size, 2), causal, lambda said: CaseFailure(
            f"{said}: it works for a single query but not for several: a per-query quantity (the block's maximum "
            "or sum over the keys) lost its last axis, so an (n_q,) array meets the (n_q, 1) running ones and "
            "broadcasts to (n_q, n_q): keep the reduced axis (keepdims=True)")
    if causal:
        yield (Q, K, V), block_size, False, lambda said: CaseFailure(
            f"{said}: it works without causal=True, so the causal block mask is to blame: its shape does not fit "
            "the block's scores, (..., n_q, b), one row per query and one column per key of the block")


def _answer(impl, what, Q, K, V, block_size, causal):
    """The code's output as an array, or None where the call raised: each probe below asks only what it gives."""
    try:
        return checks.to_array(impl.online_softmax_attention(Q, K, V, block_size=block_size, causal=causal), what)
    except (RemoteError, CaseFailure):
        return None


def _same(out, want):
    """out is want, in shape and in value (nan matches nothing)."""
    return out.shape == want.shape and np.allclose(out, want, atol=1e-5, rtol=1e-4)


# acc / row_sum.squeeze(-1): the (..., n_q) sums line up with the output's last axis, the values' features, which
# fits only where d_v == n_q (or one query, where it is right).
SUMS_ALONG_FEATURES = ("the final division lines the running sums up with the output's last axis, the values' "
                       "features: a sum that lost its axis (squeeze, [..., 0]) divides feature j of every query by "
                       "query j's sum; each query's output is divided by its own sum, one per query, (..., n_q, 1)")


def _explain_sums_along_features(impl, what, went_wrong, Q, K, V, block_size, causal, model):
    """A call that raised, run again on one sequence (its first 6 queries and 12 keys, few enough to be quick) whose
    values are as wide as there are queries: its answer is the running output divided by the sums laid along the
    features, where that fits."""
    q, k, _ = _one_sequence(Q, K, V)
    q, k = q[:6], k[:12]
    if q.shape[0] < 2:
        return
    v = rng(1520).normal(size=(k.shape[0], q.shape[0]))
    out = _answer(impl, what, q, k, v, block_size, causal)
    if out is None:
        return
    sums = model(q, k, np.ones((k.shape[0], 1)), block_size, causal, normalise=False)  # (n_q, 1), as acc's shift
    if _same(out, model(q, k, v, block_size, causal, normalise=False) / sums[:, 0]):
        raise CaseFailure(f"{what} {went_wrong}; on values as wide as there are queries it runs and shows why: "
                          f"{SUMS_ALONG_FEATURES}") from None


def explain_shapes(impl, what, went_wrong, Q, K, V, block_size, causal, model):
    """A call that raised a shape mismatch or answered in the wrong shape (`went_wrong`) is run again on each
    simpler input; the first whose answer is model(...)'s (the right one) names the mistake. Otherwise return."""
    _explain_sums_along_features(impl, what, went_wrong, Q, K, V, block_size, causal, model)
    for (q, k, v), size, masked, failure in simpler_inputs(Q, K, V, block_size, causal):
        out = _answer(impl, what, q, k, v, size, masked)
        if out is not None and _same(out, model(q, k, v, size, masked)):
            raise failure(f"{what} {went_wrong}") from None
    _explain_short_last_block(impl, what, went_wrong, Q, K, V, block_size, causal, model)
    _explain_square_blocks(impl, what, went_wrong, np.shape(K)[-1], model)
    _explain_feature_slices(impl, what, went_wrong, Q, K, V, block_size, causal, model)


FEATURE_SLICES = ("a block's slice does not run along the tokens: after ..., K[..., a:b] slices the LAST axis, the "
                  "features; a block of keys is K[..., start:start + block_size, :] (V likewise)")


def _explain_feature_slices(impl, what, went_wrong, Q, K, V, block_size, causal, model):
    """A call that raised, run again in one block wider than every axis: code that slices the features for the
    keys (K[..., a:b]) then takes every feature of every key at once, and gives the right answer."""
    size = max(np.shape(K)[-2], np.shape(K)[-1], np.shape(V)[-1]) + 1
    if block_size >= size:
        return
    out = _answer(impl, what, Q, K, V, size, causal)
    if out is not None and _same(out, model(Q, K, V, size, causal)):
        raise CaseFailure(f"{what} {went_wrong}, and is right in one block of {size}, wider than every axis: "
                          f"{FEATURE_SLICES}") from None


# The block's maximum over the queries (axis -2): a (n_q, 1) running maximum meets a (1, b) one and every running
# quantity becomes (n_q, b), which fits the (n_q, d_v) running output only where b == d_v. In blocks of one key
# it is even right (any per-query shift cancels), so only a call where those sizes meet shows its values.
MAX_OVER_QUERIES = ("the block's maximum is taken over the queries (axis -2), not over each query's scores (axis "
                    "-1): a (..., 1, b) maximum broadcasts the running (..., n_q, 1) ones to (..., n_q, b), which "
                    "fits the output only where the block is as wide as the values; keep one maximum per query")
# scores.max() with no axis: one shift for every query and sequence. Exact arithmetic cancels it, but a query whose
# scores lie far below the block's largest underflows.
MAX_OF_WHOLE_BLOCK = ("the block's maximum is taken over the whole block at once (every query, and every sequence of "
                      "a batch), not over each query's own scores: a query whose scores lie far below another's gets "
                      "exp(score - max) = 0 for every key, and 0 / 0 is nan; keep one maximum per query, over its keys")


def _explain_square_blocks(impl, what, went_wrong, d_k, model):
    """A call that raised, run again where the queries, a block and the values are equally wide (so that a
    maximum over the wrong axis still fits): its answer is named if the model of that mistake gives it."""
    r, b = rng(1521), 3
    q, k, v = r.normal(size=(b, d_k)), r.normal(size=(2 * b, d_k)), r.normal(size=(2 * b, b))
    out = _answer(impl, what, q, k, v, b, False)
    found = out is not None and checks.named_mistake(out, [
        (lambda: model(q, k, v, b, False, max_axis=-2), MAX_OVER_QUERIES),
        (lambda: model(q, k, v, b, False, keys_first=True), KEYS_FIRST)])
    if found:
        raise CaseFailure(f"{what} {went_wrong}, and runs where a block has as many keys as there are queries: "
                          f"{found}") from None


# K_blk @ Qᵀ for Q @ K_blkᵀ: a (..., b, n_q) block of scores, a row per key, which meets the (..., n_q, 1) running
# maximum only where b == n_q.
KEYS_FIRST = ("the block's scores are taken as the keys times the queries (K_blk @ Qᵀ), a row per key: each query's "
              "scores against the block's keys make a row, Q @ K_blkᵀ, (..., n_q, b)")


def _explain_short_last_block(impl, what, went_wrong, Q, K, V, block_size, causal, model):
    """A call whose last block is shorter than block_size, run again in blocks that divide the keys: code that
    takes every block's values from the first rows of V (V[0:block_size]) fails only where a block is short,
    and gives model(..., values="first") where none is."""
    n_k = np.shape(K)[-2]
    if n_k < 2 or n_k % block_size == 0:
        return
    size = max(b for b in range(1, n_k) if n_k % b == 0)  # the largest that cuts the keys into equal blocks
    V = rng(1518).normal(size=np.shape(V)).astype(np.asarray(V).dtype)  # values that differ (V = ones hides it)
    out = _answer(impl, what, Q, K, V, size, causal)
    if out is None:
        return
    want = model(Q, K, V, size, causal, values="first")
    if _same(out, want) and not _same(want, model(Q, K, V, size, causal)):
        raise CaseFailure(f"{what} {went_wrong}, and in blocks that divide the {n_k} keys gives wrong values: "
                          f"{VALUES_FIRST}; "
                          "a last block shorter than block_size has fewer weights than those rows") from None


RATIO = ("the outputs are nan where the scores are far from 0: the rescale factor is computed as exp(old_max) / "
         "exp(new_max), and each exponential overflows to inf (or underflows to 0) long before their ratio does, "
         "so it is inf / inf (or 0 / 0), nan; compute exp(old_max - new_max), one exponential of the difference")


def name_rescale_ratio(impl, what, Q, K, V, block_size, causal):
    """Outputs that are nan where every score is far below 0 (0 / 0) named as a factor exp(old_max) / exp(new_max)
    where the same code, on scores as far above 0, gives that mistake's nan too: a running maximum started at 0,
    which also gives nan far below 0, is right far above it. Quiet otherwise."""
    high_Q, high_K = ((np.abs(np.asarray(a)) + 30).astype(np.asarray(a).dtype) for a in (Q, K))
    out = _answer(impl, what, high_Q, high_K, V, block_size, causal)
    if out is not None and not np.isfinite(out).all() and checks.named_mistake(
            out, [(lambda: model(high_Q, high_K, V, block_size, causal, rescale="ratio"), RATIO)]):
        raise CaseFailure(f"{what} gives nan, and so it does where every score is far above 0: {RATIO}")


RESCALED_TWICE = ("the running output is rescaled twice in each block, by exp(old_max - new_max) squared (acc *= factor, "
                  "and again in acc = acc * factor + ...): multiply what was summed by that factor once per block, as "
                  "the running sum")
MAX_BEFORE_MASK = ("the block's maximum is taken before the causal mask, over keys the query may not see: where a "
                   "blocked key's score lies far above the open ones, every open weight exp(score - max) underflows "
                   "to 0 and the output is 0 / 0, nan; take the maximum of the masked scores")
ADDITIVE_MASK = ("the causal block mask is added to the scores as blocked * -inf, and 0 * -inf is nan, so every open "
                 "key's score is nan too: set the blocked scores alone, np.where(blocked, -np.inf, scores)")


def _nan_from_the_mask(impl, what, Q, K, V, block_size):
    """Whether the code is right on Q, K, V without causal=True and all nan with it in one block of every key: a
    mask applied the wrong way round (np.where's branches swapped) also makes every output nan in blocks of one
    (the first block leaves every query without a key), but in one block only the last query has none."""
    plain = _answer(impl, what, Q, K, V, block_size, False)
    whole = None if plain is None else _answer(impl, what, Q, K, V, np.shape(K)[-2], True)
    return whole is not None and _same(plain, model(Q, K, V, block_size)) and np.isnan(whole).all()


def name_nan_mask(impl, out, what, Q, K, V, block_size, causal):
    """Every output nan with causal=True, where the same call without it is right: the causal mask made the nan,
    which no output of the causal call alone tells from a first block that divides inf by inf."""
    out = checks.to_array(out, what)
    if causal and out.size and np.isnan(out).all() and _nan_from_the_mask(impl, what, Q, K, V, block_size):
        raise CaseFailure(f"{what}: every output is nan, and right without causal=True: {ADDITIVE_MASK}")


def mask_confirmed(impl, ladder, probe):
    """A causal worked example whose every output is nan fits both the additive mask and the first block's inf / inf
    (one message names both); code that is right without causal=True on the suite's `probe` inputs has the mask
    to blame."""
    if any(ADDITIVE_MASK in message and message != ADDITIVE_MASK for _, message in ladder) and \
            _nan_from_the_mask(impl, "the probe", *probe, 2):
        return [(value, ADDITIVE_MASK if ADDITIVE_MASK in message else message) for value, message in ladder]
    return ladder


def order_confirmed(impl, ladder, wrong_in_order):
    """Blocks read last first and the block's own maximum taken as the new one (one of `wrong_in_order`) are exact but
    where a block read is all blocked, which makes both nan: one message names both (and with V = ones, a running
    maximum never kept too). A probe without causal=True whose first block scores far above the rest tells them
    apart: the block's own maximum overflows there (exp(1000 - (-1000)) rescales what came before), and a maximum
    never kept counts the last block alone, while the order of the blocks changes nothing."""
    if not any(REVERSED in message and any(w in message for w in wrong_in_order) for _, message in ladder):
        return ladder
    Q = np.tile([[30.0, 0.0]], (3, 1))
    K = np.vstack([np.tile([[30.0, 0.0]], (2, 1)), np.tile([[-30.0, 0.0]], (4, 1))])
    V = np.random.default_rng(1527).normal(size=(6, 3))
    out = _answer(impl, "the probe", Q, K, V, 2, False)
    wrong = (REVERSED,) if out is None or not _same(out, model(Q, K, V, 2)) else wrong_in_order
    return [(value, _without(message, wrong)) for value, message in ladder]


def shift_confirmed(impl, ladder):
    """A tie that names a shift below the maximum (shifts.SHIFT_BELOW_MAX: with causal=True and V = ones, a first block
    whose mean is -inf makes the nan a key never read or blocked makes) kept to that mistake where a probe of one
    block without causal=True shows it (`shifts.shifts_below_max`), and without it where the probe does not."""
    if not any(SHIFT_BELOW_MAX in message and message != SHIFT_BELOW_MAX for _, message in ladder):
        return ladder

    def softmax_of(scores):
        out = _answer(impl, "the probe", np.ones((1, 1)), scores[:, None], np.eye(len(scores)), len(scores), False)
        return None if out is None else out[0]

    shifts_below = shifts_below_max(softmax_of)
    return [(value, SHIFT_BELOW_MAX if shifts_below and SHIFT_BELOW_MAX in message else
             message if shifts_below else _without(message, (SHIFT_BELOW_MAX,))) for value, message in ladder]


def _without(message, wrong):
    """`message`, a known mistake's or several's (checks.one_or_all), without those that contain one of `wrong`."""
    if not message.startswith(checks.SEVERAL_FIT):
        return message
    fits = [fit for fit in message[len(checks.SEVERAL_FIT):].split("; or ") if not any(w in fit for w in wrong)]
    return checks.one_or_all(fits) if fits else message

BY_BLOCK = ("the scores are divided by sqrt(block_size), the number of keys in a block: the scale is sqrt(d_k), "
            "the width of the queries and keys, whatever the block size")


def with_block_scale(mistakes, block_size, d_k):
    """`mistakes` and scores divided by sqrt(block_size). Where that divisor is another mistake's (block_size
    1: no scale; d_k²: d_k), no output tells the two apart, so that mistake's message names both."""
    twin = {1: "none", d_k * d_k: "linear"}.get(block_size)
    # sqrt(K_blk.shape[-2]), the keys a block holds: sqrt(block_size) but in a short last block (the only input
    # the model runs it on, so it never doubles the twins named here)
    by_length = [(dict(scale="block_len"), BY_BLOCK)]
    if twin is None:
        return mistakes + [(dict(scale="block"), BY_BLOCK)] + by_length
    return [(kw, checks.one_or_all([message, BY_BLOCK]) if kw == dict(scale=twin) else message)
            for kw, message in mistakes] + by_length


# K[..., start:start + 64, :]: the default block size written out in the slice, while the loop steps by block_size.
FIXED_WIDTH = ("each block's slice is 64 keys long whatever block_size is (the default written out as a number): "
               "the loop steps by block_size, so smaller blocks overlap and count keys more than once; a block holds "
               "block_size keys")


FIRST_BLOCK_OPEN = ("the causal mask is applied to every block but the first, so the early queries see the later keys "
                    "of the first block: a key after its query is as much in the future in the first block as in any "
                    "other, so the same rule holds in every block")

# An einsum whose subscripts letter only the two axes of one matrix ("qk,kd->qd"): NumPy refuses a batch.
EINSUM_ONE_MATRIX = ("an einsum's subscripts give letters to the two axes of one matrix only, so a batch's leading "
                     "axes have none: the blocks' products must work on the last two axes, whatever comes before them")


def name_einsum_for_one_matrix(impl, error, what, Q, K, V, block_size, causal):
    """`error`, an einsum's complaint on a batch, named where the same code runs on the batch's first item: its
    subscripts were written for one (n, d) matrix. Quiet on one matrix, or where that item fails too."""
    if "einstein sum" not in str(error) or np.ndim(Q) < 3:
        return
    first = (0,) * (np.ndim(Q) - 2)
    try:
        impl.online_softmax_attention(Q[first], K[first], V[first], block_size=block_size, causal=causal)
    except Exception:  # noqa: BLE001 - only asks whether one item goes through
        return
    raise CaseFailure(f"{what} raised {error.type_name}, but runs on one item of the batch: {EINSUM_ONE_MATRIX}"
                      ) from None
