"""Hidden suite of `scaled_dot_product_attention` (assignment 02)."""

import numpy as np
import torch

from autograder.errors import CaseFailure
from autograder.harness import case
from autograder.suites.toolkit import batches, cases, checks, model, sdpa_probes, widths
from autograder.suites.toolkit.cases import check_stored, explain_batch_error, mixed_mask, notes_cases, rng

STEP = "scaled_dot_product_attention"
_softmax, _unnormalised, _causal = model.softmax, model.exponentials, cases.causal_blocked
BLOCKED_TOL = 1e-12
FILL_HINT = "fill the blocked scores with -inf (np.where(mask, -np.inf, scores)) before the softmax"
WRONG_AXIS = "the softmax runs over the wrong axis: each row (one query) must sum to 1, softmax over the last axis"
QUERIES_AXIS = ("the softmax runs over the wrong axis, the queries' (axis=-2, axis=0 of one matrix), so each key's "
                "column sums to 1 instead of each query's row: softmax over the last axis, the keys")
V_TRANSPOSED = ("the context multiplies the weights by V transposed (V.T): V holds one value per row, (n_k, d_v), "
                "and the weights' columns, one per key, meet those rows")
GLOBAL_SUM = ("divides by one sum over the whole array (np.sum with no axis), not by each row's own: each row "
              "(one query) must sum to 1")
MASK_TRANSPOSED = ("the mask is read transposed (mask.T): it already has the weights' layout, mask[i, j] True "
                   "blocks key j for query i, one row per query")


def stored_inputs():
    r = rng(1301)

    def record(label, n_q, n_k, d_k, d_v, batch=(), mask=None, dtype=np.float64, **extra):
        Q, K, V = (r.normal(size=(*batch, n, d)).astype(dtype) for n, d in ((n_q, d_k), (n_k, d_k), (n_k, d_v)))
        rec = dict(label=label, Q=Q, K=K, V=V, **extra)
        if mask is not None:
            rec["mask"] = mask
        return rec

    padding = np.arange(6)[None, :] >= 4  # (1, 6): the last two keys are padding
    some_rows = np.zeros((5, 5), dtype=bool)
    some_rows[1, [0, 3]] = True
    some_rows[3, 4] = True
    # Most axes first (stable): the batch of items and heads, which has no mask, heads the batches' case, so code
    # written for one matrix that runs there (new axes at fixed places) is named by what it computes.
    return sorted([
        record("6 tokens, d_k 4, d_v 3, no mask", 6, 6, 4, 3),
        record("3 queries over 5 keys, d_k 4, d_v 2, no mask", 3, 5, 4, 2),
        record("a causal mask over 5 tokens", 5, 5, 3, 4, mask=_causal(5)),
        record("4 queries over 6 keys with a mixed mask", 4, 6, 5, 3, mask=mixed_mask(r, 4, 6)),
        record("6 tokens with a mixed mask", 6, 6, 4, 4, mask=mixed_mask(r, 6, 6)),
        record("a mask that leaves rows 0, 2 and 4 fully open", 5, 5, 4, 3, mask=some_rows),
        record("a (2, 4, 3) batch with one (4, 4) causal mask for all items", 4, 4, 3, 2, batch=(2,), mask=_causal(4)),
        record("a (3, 2, 4) batch over 6 keys with a (1, 6) padding mask", 2, 6, 4, 5, batch=(3,), mask=padding),
        record("a (2, 2, 5, 4) batch, no mask", 5, 5, 4, 3, batch=(2, 2)),
        record("a single token", 1, 1, 3, 2),
        record("float32 inputs with a causal mask", 6, 6, 8, 4, mask=_causal(6), dtype=np.float32, atol=1e-4),
        record("128 tokens with a causal mask", 128, 128, 16, 8, mask=_causal(128)),
    ], key=lambda rec: -rec["Q"].ndim)


def apply(impl, record):
    # copies: the stored records are cached, and a submission may write into its inputs
    mask = record.get("mask")
    return impl.scaled_dot_product_attention(record["Q"].copy(), record["K"].copy(), record["V"].copy(),
                                             None if mask is None else mask.copy())


def _raw(Q, K):
    return Q @ np.swapaxes(K, -1, -2)


def _works(impl, Q, K, V, mask):
    try:
        impl.scaled_dot_product_attention(Q.copy(), K.copy(), V.copy(), None if mask is None else mask.copy())
    except Exception:  # noqa: BLE001 - only asks whether these inputs go through
        return False
    return True


def _square_weights_named(impl, mask, ladder, k=1):
    return sdpa_probes.square_output_named(impl.scaled_dot_product_attention, mask, ladder, k)


def _call(impl, Q, K, V, mask, label):
    """(context, weights) as float64 arrays, with mistakes that change shapes or give nan named."""
    try:
        out = impl.scaled_dot_product_attention(Q.copy(), K.copy(), V.copy(),
                                                None if mask is None else mask.copy())
    except (CaseFailure, NotImplementedError):
        raise
    except Exception as error:
        detail = f"scaled_dot_product_attention raised {type(error).__name__} on {label}"
        w_shape = (*Q.shape[:-1], K.shape[-2])
        full_mask = None if mask is None else np.broadcast_to(mask, w_shape)
        sdpa_probes.name_error_by_other_inputs(impl.scaled_dot_product_attention, Q, K, V, mask, error, detail)
        if mask is not None and np.shape(mask) != w_shape and _works(impl, Q, K, V, full_mask):
            raise CaseFailure(f"{detail}, but not with the mask spelled out to the weights' full shape: the "
                              f"mask of shape {checks.fmt_shape(np.shape(mask))} must broadcast; {FILL_HINT}"
                              ) from None
        if mask is not None and _works(impl, Q, K, V, None) and _square_weights_named(  # a causal mask read as .T
                impl, _causal(4), lambda s, V: [(_softmax(np.where(_causal(4).T, -np.inf, s)), MASK_TRANSPOSED)]):
            raise CaseFailure(f"{detail}, but not without the mask: {MASK_TRANSPOSED}") from None
        if mask is not None and "truth value of an array" in str(error):
            raise CaseFailure(f"{detail}: does it ask for the truth of `mask` (if mask:)? An array of several "
                              "values has none; test `mask is not None`") from None
        if Q.ndim > 2 and batches.sums_indexed_for_one_matrix(lambda *qkv: impl.scaled_dot_product_attention(*qkv)):
            raise CaseFailure(f"{detail}: {model.ONE_MATRIX_SUMS}") from None
        if _square_weights_named(impl, None, lambda s, V: model.without_keepdims_mistakes(s)):
            raise CaseFailure(f"{detail}, but runs on square scores: it {model.NO_KEEPDIMS}") from None
        if _square_weights_named(impl, None, lambda s, V: [(_softmax(s) @ V.T, V_TRANSPOSED)], k=0):
            raise CaseFailure(f"{detail}, but runs where V is square (n_k = d_v): {V_TRANSPOSED}") from None
        sdpa_probes.name_square_context(impl.scaled_dot_product_attention, detail)
        sdpa_probes.name_self_scores(impl.scaled_dot_product_attention, Q, K, detail)
        if Q.shape[-2] != K.shape[-2] and _works(impl, K, K, V, None if mask is None else
                                                 np.zeros((*K.shape[:-1], K.shape[-2]), dtype=bool)):
            raise CaseFailure(f"{detail}, but not with as many queries as keys: something is transposed; the "
                              "weights are (n_q, n_k), from Q Kᵀ, and the context is weights @ V") from None
        first = (0,) * (Q.ndim - 2)
        if Q.ndim > 2 and "einstein sum" in str(error):  # an einsum for one matrix, not K.T
            explain_batch_error(STEP, error, label,
                                lambda: impl.scaled_dot_product_attention(Q[first], K[first], V[first], None))
        if Q.ndim > 2:  # np.dot, or sums reshaped to a column, named on a smaller batch where the code runs
            batches.explain_attention_on_batches(impl.scaled_dot_product_attention, STEP, error, label)
        if Q.ndim > 2 and _works(impl, Q[first], K[first], V[first], None if mask is None else full_mask[first]):
            raise CaseFailure(f"{detail}, but not on one item of it: "
                              f"{batches.batch_error_cause(error, batches.K_TRANSPOSED_FOR_SCORES)}") from None
        raise
    if out is None:
        raise checks.returned_none(f"scaled_dot_product_attention of {label}")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CaseFailure(f"scaled_dot_product_attention should return a tuple (context, weights) ({label})")
    context, weights = checks.to_array(out[0], "the context"), checks.to_array(out[1], "the weights")
    w_shape, c_shape = (*Q.shape[:-1], K.shape[-2]), (*Q.shape[:-1], V.shape[-1])
    if context.shape == w_shape and weights.shape == c_shape and w_shape != c_shape:
        raise CaseFailure(f"returns (weights, context); return (context, weights) in that order ({label})")
    if weights.shape != w_shape:  # the right weights transposed, before a shape that K Qᵀ would give is blamed
        sdpa_probes.name_transposed_weights(weights, _model(dict(Q=Q, K=K, V=V, mask=mask))[1], label)
    if weights.shape == (*Q.shape[:-2], K.shape[-2], Q.shape[-2]) and weights.shape != w_shape:
        raise CaseFailure(f"the weights have shape {checks.fmt_shape(weights.shape)}, keys by queries: that "
                          f"is K Qᵀ; compute Q Kᵀ, one row per query ({label})")
    if weights.shape == w_shape and np.isnan(weights).any():
        sdpa_probes.name_nan_weights(impl.scaled_dot_product_attention, Q, K, V, mask, weights, label)
    return context, weights


def _checked_apply(impl, record):
    return _call(impl, record["Q"], record["K"], record["V"], record.get("mask"), record["label"])


def mistakes(Q, K, V, mask, k):
    """(candidate, symptom) pairs for output k (0 context, 1 weights) of the known mistakes."""
    d_k = K.shape[-1]
    raw = _raw(Q, K)
    scaled = raw / np.sqrt(d_k)

    def fill(s, m, value):
        return s if m is None else np.where(m, value, s)

    weights = _softmax(fill(scaled, mask, -np.inf))
    variants = [
        (lambda: _softmax(fill(raw, mask, -np.inf)), "scores look unscaled: divide by sqrt(d_k)"),
        (lambda: _softmax(fill(raw / d_k, mask, -np.inf)), "the scores are divided by d_k: divide by sqrt(d_k), once "
         "(scaled_attention_scores divides by it already: scores divided again are divided by d_k)"),
        (lambda: _softmax(fill(raw / d_k / 2, mask, -np.inf)), model.TWICE_D_K),
        (lambda: _softmax(fill(np.floor_divide(raw, np.sqrt(d_k)), mask, -np.inf)), model.FLOOR_DIVIDED),
        *[(lambda w=w: _softmax(fill(raw / np.sqrt(w), mask, -np.inf)), s) for w, s in widths.wrong_widths(Q, K, V)],
        (lambda: _softmax(fill(np.swapaxes(raw, -1, -2) / np.sqrt(d_k), mask, -np.inf)),
         "computes K Qᵀ (row i belongs to key i): the scores are Q Kᵀ, one row per query"),
        # the queries' axis, named, and on a batch an axis of it (axis=1 of a (batch, heads, n, n) array, say)
        *[(lambda shift=shift: _softmax(fill(scaled, mask, -np.inf), -2, shift), QUERIES_AXIS if np.ndim(scaled) != 3
           else batches.SOFTMAX_OVER_BATCH_QUERIES) for shift in (None, -1)],
        *[(lambda axis=axis, shift=shift: _softmax(fill(scaled, mask, -np.inf), axis, shift), WRONG_AXIS)
          for axis in range(np.ndim(scaled) - 2) for shift in (None, -1)],
        (lambda: _unnormalised(fill(scaled, mask, -np.inf)),
         "the weights are the exponentials, never divided by their row's sum: softmax normalises each row"),
        (lambda: _softmax(fill(raw, mask, -np.inf)) / np.sqrt(d_k),
         "divides the weights by sqrt(d_k) after the softmax: the scaling belongs to the scores, before it"),
        (lambda: _softmax(fill(scaled, mask, -np.inf), -1, -2),
         "subtracts each column's maximum (axis=-2) before exp: only a shift that is the same along a row "
         "leaves its softmax unchanged, so subtract each row's maximum"),
        *cases.rounded(weights, what="the weights are"),  # before the epsilons, which worked examples' rounding fit
        *model.hand_written_softmax_mistakes(fill(scaled, mask, -np.inf)),
        *model.without_keepdims_mistakes(fill(scaled, mask, -np.inf)),
        *batches.reshaped_sums_mistakes(fill(scaled, mask, -np.inf)),
        *sdpa_probes.self_scores_mistakes(Q, mask), *sdpa_probes.new_axes_mistakes(Q, K, lambda s: fill(s, mask, -np.inf)),
        *[(lambda shift=shift: _softmax(fill(scaled, mask, -np.inf), None, shift), GLOBAL_SUM) for shift in (-1, None)],
    ]
    if mask is not None:
        variants += [
            (lambda: _softmax(np.where(mask, scaled, -np.inf)),
             "mask semantics look inverted: True means blocked (this query may NOT attend to that key)"),
            (lambda: _softmax(fill(scaled, np.swapaxes(mask, -1, -2), -np.inf)), MASK_TRANSPOSED),
            (lambda: _softmax(fill(scaled, mask, 0.0)),
             f"the blocked scores are set to 0, which still gets weight: {FILL_HINT}"),
            (lambda: np.where(mask, 0.0, _softmax(scaled)),
             f"blocked weights are zeroed after the softmax, so rows no longer sum to 1: {FILL_HINT}"),
            (lambda: _softmax(scaled), f"the mask is ignored: {FILL_HINT}"),
            (lambda: _softmax(scaled + mask), "the mask is added to the scores (scores + mask), so a blocked score "
             f"grows by 1 (True counts as 1): a bool mask is no additive one; {FILL_HINT}"),
            (lambda: _softmax(np.where(np.triu(np.ones(scaled.shape[-2:], dtype=bool), 1), -np.inf, scaled)),
             "ignores `mask` and blocks the future keys (a causal mask of its own): block exactly the keys "
             "where `mask` is True"),
        ]
    if k == 1:
        filled = fill(scaled, mask, -np.inf)
        scores_back = "the second item is the scores, not the weights: return the softmax of the scores"
        with np.errstate(invalid="ignore"):
            return variants + [(lambda: filled, scores_back), *sdpa_probes.transposed_weights_mistakes(weights),
                               (lambda: filled - np.max(filled, axis=-1, keepdims=True), scores_back)]
    found = [(lambda f=f: f() @ V, s) for f, s in variants]
    found += [(lambda: np.swapaxes(weights, -1, -2) @ V, sdpa_probes.WEIGHTS_T_CONTEXT),
              (lambda: weights @ K, "the context weights the keys: use the values, weights @ V"),
              (lambda: weights @ Q, "the context weights the queries: use the values, weights @ V"),
              # the scores as they are, unscaled, or as the softmax takes them: filled, shifted by their maximum
              *[(lambda s=s: s @ V, "the context uses the raw scores: apply the softmax first") for s in (
                  scaled, raw, fill(scaled, mask, -np.inf) - np.max(fill(scaled, mask, -np.inf), -1, keepdims=True))],
              *batches.np_dot_mistakes(weights, V, "the context"), (lambda: weights @ V.T, V_TRANSPOSED)]
    return found


def _confirmed(impl, ladder, also=()):
    """`ladder`, its scale's diagnoses (each names d_k), its weights rounded and the symptoms `also` confirmed where no
    two divisors, a wrong axis and one sum over the whole array (equal over a single key), or rounding and an epsilon
    coincide (cases.confirmed); d_k read from a fixed axis is confirmed where it is right, on one matrix."""
    r = rng(1312)
    Q, K, V = r.normal(size=(3, 7)), r.normal(size=(5, 7)), r.normal(size=(5, 2))
    return cases.confirmed(ladder, lambda: impl.scaled_dot_product_attention(Q, K, V, None)[1],
                           lambda: [*mistakes(Q, K, V, None, 1), (_model(dict(Q=Q, K=K, V=V))[1], widths.FIXED_AXIS)],
                           only=lambda symptom: "d_k" in symptom or symptom in also or cases.ROUNDED in symptom)


def stored_symptoms(record, k):
    """The known mistakes for output k on the inputs of `record`: the stored outputs' and notes' ladder."""
    return mistakes(record["Q"], record["K"], record["V"], record.get("mask"), k)


def _model(record):
    """(context, weights) on the inputs of `record`: the item a mistake of the other leaves right."""
    Q, K, V, mask = record["Q"], record["K"], record["V"], record.get("mask")
    scores = _raw(Q, K) / np.sqrt(K.shape[-1])
    weights = _softmax(scores if mask is None else np.where(mask, -np.inf, scores))
    return weights @ V, weights


# The notes' examples have no mask, so a masking mistake passes them: they weigh little, and the
# stored outputs (masks included) carry the step, so no mask keeps at most a third of it.
test_notes = notes_cases(STEP, weight=0.5, replayed=stored_symptoms, correct=_model, confirmed=_confirmed,
                         probe=lambda impl: _call(impl, *(rng(1315).normal(size=(6, d)) for d in (4, 4, 3)), None,
                                                  "6 tokens, d_k 4, d_v 3"))


def _batch(record):
    """Whether the record is a batch (of items, or of items and heads), not one matrix."""
    return record["Q"].ndim > 2


def _check_stored_records(impl, batch):
    check_stored(impl, STEP, _checked_apply, "scaled_dot_product_attention(Q, K, V, mask)",
                 symptoms=lambda record, k: _confirmed(impl, stored_symptoms(record, k)),
                 where=lambda record: _batch(record) == batch)


# One matrix and a batch are cases of their own, here and in the oracle: code written for one matrix
# (np.dot, K.T, row sums indexed [:, None]) is a slip that keeps the first, as is masking that needs the
# mask's full shape (scores[mask] = -inf), which the batches' broadcast masks break; a wrong computation
# fails both. One matrix is most of the inputs, and weighs more.
@case(STEP, "stored", weight=4)
def test_stored_outputs(impl):
    """matches the reference on one matrix: no mask, causal and mixed masks, float32, 128 tokens"""
    _check_stored_records(impl, batch=False)


@case(STEP, "stored", weight=2)
def test_stored_outputs_batches(impl):
    """matches the reference on batches: one mask for every item, a (1, n_k) padding mask, items and heads"""
    _check_stored_records(impl, batch=True)


def _check_against_torch(impl, r, settings):
    """[(label, leading shape of Q, n_k, mask)]: random inputs of `r`, against torch's attention."""
    for label, q_lead, n_k, mask in settings:
        Q = r.normal(size=(*q_lead, 5))
        K, V = r.normal(size=(*q_lead[:-1], n_k, 5)), r.normal(size=(*q_lead[:-1], n_k, 3))
        context, weights = _call(impl, Q, K, V, mask, label)
        q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
        # torch's boolean attn_mask is True = ATTEND, the opposite of the SPEC's True = blocked.
        allowed = None if mask is None else torch.from_numpy(~mask)
        eye = torch.eye(n_k, dtype=torch.float64).expand(*q_lead[:-1], n_k, n_k)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        # the weights first: a wrong scale no diagnosis names still shows in them (a softmax of scaled scores)
        checks.expect_close(weights, sdpa(q, k, eye, attn_mask=allowed).numpy(), f"the weights of {label}",
                            symptoms=_confirmed(impl, mistakes(Q, K, V, mask, 1)))
        checks.expect_close(context, sdpa(q, k, v, attn_mask=allowed).numpy(), f"the context of {label}",
                            symptoms=_confirmed(impl, mistakes(Q, K, V, mask, 0)))


@case(STEP, "oracle")
def test_matches_torch_sdpa(impl):
    """agrees with torch.nn.functional.scaled_dot_product_attention on one matrix, without and with a mask"""
    r = rng(1302)
    _check_against_torch(impl, r, [("4 queries over 7 keys, no mask", (4,), 7, None),
                                   ("5 queries over 6 keys with a mixed (5, 6) mask", (5,), 6, mixed_mask(r, 5, 6))])


@case(STEP, "oracle")
def test_matches_torch_sdpa_batches(impl):
    """agrees with torch.nn.functional.scaled_dot_product_attention on batches, with one mask or one per item"""
    r = rng(1309)
    _check_against_torch(impl, r, [
        ("a (2, 6, 5) batch with a causal mask", (2, 6), 6, _causal(6)),
        ("a (3, 4, 5) batch over 5 keys with a mixed (4, 5) mask", (3, 4), 5, mixed_mask(r, 4, 5)),
        # a (batch, n_q, n_k) mask gives each item its own (a mask broadcasts like the scores)
        ("a (2, 4, 5) batch over 6 keys with its own mixed (4, 6) mask for each item", (2, 4), 6,
         np.stack([mixed_mask(r, 4, 6), mixed_mask(r, 4, 6)])),
        # more queries than keys: a per-item mask cut to the scores' sizes from the front, mask[:n_q, :n_k], shows
        ("a (3, 5, 5) batch over 4 keys with its own mixed (5, 4) mask for each item", (3, 5), 4,
         np.stack([mixed_mask(r, 5, 4) for _ in range(3)])),
    ])


@case(STEP, "property", weight=0.5)
def test_weights_are_probabilities(impl):
    """gives non-negative weights, rows summing to 1, and weight exactly 0 on blocked keys"""
    r = rng(1303)
    # scores near -990: a last feature of +c in every query and -c in every key adds -c² to each q·k, and
    # c² = 990 sqrt(5) makes that -990 once divided by sqrt(d_k = 5). A finite fill value like -1e3 lies
    # only ~10 below such scores, so the keys it blocks keep a little weight.
    far, c = rng(1309), np.sqrt(990 * np.sqrt(5))
    Q_far = np.hstack([far.normal(size=(6, 4)), np.full((6, 1), c)])
    K_far = np.hstack([far.normal(size=(6, 4)), np.full((6, 1), -c)])
    for label, Q, K, mask in [
        ("5 tokens, no mask", r.normal(size=(5, 4)), r.normal(size=(5, 4)), None),
        ("a causal mask over 6 tokens", r.normal(size=(6, 4)), r.normal(size=(6, 4)), _causal(6)),
        ("a (2, 3, 4) batch with a (1, 5) padding mask", r.normal(size=(2, 3, 4)), r.normal(size=(2, 5, 4)),
         np.array([[False, False, True, False, True]])),
        ("a causal mask over 6 tokens whose scores are near -990", Q_far, K_far, _causal(6)),
    ]:
        V = r.normal(size=(*K.shape[:-1], 2))
        _, weights = _call(impl, Q, K, V, mask, label)
        checks.expect_shape(weights, (*Q.shape[:-1], K.shape[-2]), f"the weights of {label}")
        try:
            checks.expect_finite(weights, f"the weights of {label}")
            checks.expect_rows_sum_to_one(weights, f"the weights of {label}")
        except CaseFailure as failure:  # a known mistake in the formula is the cause
            found = checks.named_mistake(weights, mistakes(Q, K, V, mask, 1))
            raise CaseFailure(failure if found is None else f"{failure}: {found}") from None
        if mask is not None:
            blocked = np.abs(weights[np.broadcast_to(mask, weights.shape)])
            if blocked.size and blocked.max() > BLOCKED_TOL:
                # a mask read another way gives blocked keys weight too; a mere leak (a finite fill) is not one
                right = _model(dict(Q=Q, K=K, V=V, mask=mask))[1]
                found = checks.named_mistake(weights, [(right, None)] + mistakes(Q, K, V, mask, 1))
                if found is not None:
                    raise CaseFailure(f"the weights of {label} give blocked keys weight: {found}")
                raise CaseFailure(f"blocked keys get weight up to {blocked.max():.3g}, not exactly 0 "
                                  f"({label}): {FILL_HINT}")


@case(STEP, "property", weight=0.5)
def test_permutation_equivariant(impl):
    """without a mask, reordering queries reorders the output; reordering keys with values changes nothing"""
    r = rng(1304)
    Q, K, V = r.normal(size=(5, 4)), r.normal(size=(6, 4)), r.normal(size=(6, 3))
    context, weights = _call(impl, Q, K, V, None, "5 queries over 6 keys")
    q_order, k_order = np.array([3, 0, 4, 1, 2]), np.array([5, 2, 0, 4, 1, 3])
    c2, _ = _call(impl, Q[q_order], K, V, None, "reordered queries")
    checks.expect_close(c2, context[q_order], "the context of reordered queries", relation=False)
    c3, w3 = _call(impl, Q, K[k_order], V[k_order], None, "keys and values reordered together")
    checks.expect_close(c3, context, "the context after reordering keys and values together", relation=False)
    checks.expect_close(w3, weights[:, k_order], "the weights after reordering keys and values together",
                        relation=False)


@case(STEP, "property", weight=0.5)
def test_batch_items_independent(impl):
    """each item of a batch gets the same result as when called on its own"""
    r = rng(1305)
    Q, K, V = r.normal(size=(3, 4, 5)), r.normal(size=(3, 6, 5)), r.normal(size=(3, 6, 2))
    mask = mixed_mask(r, 4, 6)
    context, weights = _call(impl, Q, K, V, mask, "a batch of 3")
    ladder = _confirmed(impl, mistakes(Q, K, V, mask, 0))
    if context.shape != (3, 4, 2):  # a mistake that changes the shape (np.dot on a batch) is named, else the shape
        checks.expect_close(context, _model(dict(Q=Q, K=K, V=V, mask=mask))[0],
                            "the context of a (3, 4, 5) batch over 6 keys with d_v 2", symptoms=ladder)
    for i in range(3):
        c, w = _call(impl, Q[i], K[i], V[i], mask, f"item {i} alone")
        checks.expect_shape(c, context[i].shape, f"the context of item {i} alone")  # before a ladder reads the batch's
        checks.expect_close(context[i], c, f"item {i} of the batch's context compared with item {i} alone",
                            symptoms=[(lambda f=f, i=i: f()[i], s) for f, s in ladder], relation=False)
        checks.expect_close(weights[i], w, f"item {i} of the batch's weights compared with item {i} alone",
                            relation=False)


@case(STEP, "property", weight=0.5)
def test_edge_cases(impl):
    """a single key gets all the weight; an all-False mask changes nothing; the last causal row is unmasked"""
    r = rng(1306)
    Q, K, V = r.normal(size=(3, 4)), r.normal(size=(1, 4)), r.normal(size=(1, 2))
    context, weights = _call(impl, Q, K, V, None, "3 queries over a single key")
    checks.expect_close(weights, np.ones((3, 1)), "the weights over a single key (it gets all the weight)",
                        symptoms=_confirmed(impl, mistakes(Q, K, V, None, 1),
                                            also=(QUERIES_AXIS, WRONG_AXIS, GLOBAL_SUM)))
    checks.expect_close(context, np.repeat(V, 3, axis=0), "the context over a single key (its value)",
                        symptoms=mistakes(Q, K, V, None, 0))
    Q, K, V = r.normal(size=(5, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 3))
    plain = _call(impl, Q, K, V, None, "5 tokens, no mask")
    open_mask = _call(impl, Q, K, V, np.zeros((5, 5), dtype=bool), "5 tokens with an all-False mask")
    checks.expect_close(open_mask[0], plain[0], "the context with an all-False mask compared with mask=None", symptoms=[
        (lambda: np.zeros_like(plain[0]), "an all-False mask should block nothing")], relation=False)
    causal = _call(impl, Q, K, V, _causal(5), "5 tokens with a causal mask")
    checks.expect_close(causal[0][-1], plain[0][-1],
                        "the last token's causal context compared with its unmasked context (they are equal)",
                        symptoms=[(lambda f=f: f()[-1], s) for f, s in mistakes(Q, K, V, _causal(5), 0)],
                        relation=False)


@case(STEP, "property", weight=0.5)
def test_large_scores_stay_finite(impl):
    """stays finite and correct for scores in the thousands, blocked ones too"""
    r = rng(1307)
    Q, K, V = 40 * r.normal(size=(6, 8)), 40 * r.normal(size=(6, 8)), r.normal(size=(6, 3))
    context, weights = _call(impl, Q, K, V, None, "scores in the thousands")
    hint = "exp overflows: subtract each row's maximum score before exponentiating"
    checks.expect_finite(weights, "the weights for scores in the thousands", hint)
    checks.expect_finite(context, "the context for scores in the thousands", hint)
    q, k, v = (torch.from_numpy(a) for a in (Q, K, V))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v).numpy()
    overflowed = (lambda: model.shift_above_only(Q @ K.T / np.sqrt(8), overflowed=0.0) @ V, model.UNSHIFTED_SUM)
    checks.expect_close(context, want, "the context for scores in the thousands, compared with torch",
                        symptoms=_confirmed(impl, [*mistakes(Q, K, V, None, 0), overflowed], (model.UNSHIFTED_SUM,)))
    Q, K, V, mask = sdpa_probes.blocked_far_above()
    context, _ = _call(impl, Q, K, V, mask, "a blocked key scoring far above the open ones")
    checks.expect_close(context, _model(dict(Q=Q, K=K, V=V, mask=mask))[0], "the context where a blocked key "
                        "scores far above the open ones", symptoms=_confirmed(impl, mistakes(Q, K, V, mask, 0)))


@case(STEP, "property", weight=0.5)
def test_inputs_unchanged(impl):
    """leaves Q, K, V and the mask unchanged"""
    r = rng(1308)
    Q, K, V, mask = r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2)), _causal(4)
    if not _works(impl, Q, K, V, mask):  # a mistake that raises is named first
        _call(impl, Q, K, V, mask, "4 tokens with a causal mask")
    checks.expect_inputs_unchanged(impl, "scaled_dot_product_attention", [Q, K, V, mask], ["Q", "K", "V", "mask"])
