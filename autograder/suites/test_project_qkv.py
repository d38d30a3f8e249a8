"""Hidden suite of `project_qkv` (assignment 02)."""

import numpy as np
import torch

from autograder.errors import CaseFailure
from autograder.harness import case
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored, explain_batch_error, notes_cases, rng, rounded
from autograder.suites.toolkit.projections import explain_stacked

STEP = "project_qkv"
ROLES = ("Q", "K", "V")
WEIGHTS = ("W_q", "W_k", "W_v")


def stored_symptoms(record, k):
    """[(candidate, diagnosis)] of the known mistakes for item k of the tuple on the inputs of
    `record`: the ladder of the stored outputs and of the notes' worked examples."""
    X, Ws = record["X"], [record[w] for w in WEIGHTS]
    found = [(lambda: X @ Ws[k].T,
              f"{ROLES[k]} uses the transposed weights (W·x per token, or X @ {WEIGHTS[k]}.T): "
              f"tokens are rows, so {ROLES[k]} = X @ {WEIGHTS[k]}")]
    found.append((lambda: X, f"{ROLES[k]} is X itself, not projected: {ROLES[k]} = X @ {WEIGHTS[k]}, as the other "
                             "two are projected by theirs"))
    found.append((lambda: X * Ws[k], f"multiplies X and {WEIGHTS[k]} entry by entry (*): a projection is a "
                                     "matrix product (@)"))
    if k < 2:  # the scale of the scores taken into a projection: a score of Q and K cannot tell which one
        found.append((lambda: X @ Ws[k] / np.sqrt(np.shape(Ws[k])[-1]),
                      "Q or K is divided by sqrt(d_out): a projection only multiplies; the division by sqrt(d_k) "
                      "belongs to the attention scores, a later step"))
    truncated = np.trunc(X)
    if np.any(truncated != X):  # an X of whole numbers is the same cast
        found.append((lambda: truncated @ Ws[k], INT_CAST if np.any(truncated) else ALL_CAST_TO_ZERO))
    # After X's own cast: where both leave every entry 0, that message names both.
    found.append((lambda: np.trunc(X @ Ws[k]), f"{ROLES[k]} holds whole numbers, each entry of X @ {WEIGHTS[k]} "
                                               f"{PRODUCT_INTO_INTEGERS}"))
    found += rounded(X @ Ws[k], what=f"{ROLES[k]} is")  # printed as the notes print it, to 4 decimals
    for j, W in enumerate(Ws):
        if j != k:
            found.append((lambda W=W: X @ W, f"item {k} of the tuple looks like X @ {WEIGHTS[j]}; {ROLES[k]} = "
                                             f"X @ {WEIGHTS[k]}: return (X @ W_q, X @ W_k, X @ W_v) in that order"))
    return found


INT_CAST = ("X was cast to whole numbers (dtype=int, .astype(int)), which cuts each entry toward 0: keep X's float "
            "values")
# where every entry of X lies in (-1, 1) the cast leaves all 0, as an array made with zeros and never filled is,
# and one of integers filled with products in (-1, 1)
ALL_CAST_TO_ZERO = ("every entry is 0, as when X was cast to whole numbers (dtype=int, .astype(int)), which cuts "
                    "each of its entries, all in (-1, 1) here, to 0 (keep X's float values), or as when an array "
                    "made with zeros is never filled, or is made of integers (dtype=int) and filled with products "
                    "that all lie in (-1, 1) here")
# a loop that writes each token's projection into np.zeros((n, d_out), dtype=int)
PRODUCT_INTO_INTEGERS = ("cut toward 0: the array the projection was written into holds integers "
                         "(np.zeros(..., dtype=int)), and a float written into it is truncated; make it a float "
                         "array, or compute X @ W at once")


def _model(record):
    """(Q, K, V) on the inputs of `record`: the items a mistake of another item leaves right."""
    return tuple(record["X"] @ record[w] for w in WEIGHTS)


# Six worked examples (the notes' Bank Q, K, V and the chapter's query_2 and its scores).
test_notes = notes_cases(STEP, weight=0.5, replayed=stored_symptoms, correct=_model,
                         probe=lambda impl: _checked_call(impl, dict(label="6 tokens of width 3 projected to width 2",
                                                                     X=rng(1106).normal(size=(6, 3)),
                                                                     **{w: rng(1107 + i).normal(size=(3, 2))
                                                                        for i, w in enumerate(WEIGHTS)})))


def stored_inputs():
    r = rng(1101)

    def record(label, n, d_in, d_out, batch=(), d_v=None, dtype=np.float64, **extra):
        X = r.normal(size=(*batch, n, d_in))
        Ws = [r.normal(size=(d_in, d_out)), r.normal(size=(d_in, d_out)), r.normal(size=(d_in, d_v or d_out))]
        return dict(label=label, X=X.astype(dtype), W_q=Ws[0].astype(dtype), W_k=Ws[1].astype(dtype),
                    W_v=Ws[2].astype(dtype), **extra)

    return [
        record("6 tokens of width 3 projected to width 2", 6, 3, 2),
        record("5 tokens with square (4, 4) weights", 5, 4, 4),
        record("a single token of width 5 projected to width 3", 1, 5, 3),
        record("a batch of shape (2, 4, 3) projected to width 6", 4, 3, 6, batch=(2,)),
        record("a batch of shape (2, 3, 5, 4) projected to width 2", 5, 4, 2, batch=(2, 3)),
        record("values wider than queries and keys (W_v of shape (3, 5))", 4, 3, 2, d_v=5),
        record("float32 tokens and weights", 7, 8, 4, dtype=np.float32, atol=1e-4),
        record("128 tokens of width 16 projected to width 8", 128, 16, 8),
    ]


def apply(impl, record):
    # copies: the stored records are cached, and a submission may write into its inputs
    return impl.project_qkv(*(record[k].copy() for k in ("X", *WEIGHTS)))


def _works(impl, *args):
    try:
        impl.project_qkv(*(a.copy() for a in args))
    except Exception:  # noqa: BLE001 - only asks whether these inputs go through
        return False
    return True


def _transposes_square_weights(impl, X):
    """Whether, with square random weights, some item comes out as X @ Wᵀ: the evidence that the weights'
    orientation, not another slip that square weights hide (K = Q @ W_k, say), broke the shapes."""
    r = rng(1108)
    Ws = [r.normal(size=(X.shape[-1],) * 2) for _ in WEIGHTS]
    try:
        out = impl.project_qkv(X.copy(), *(W.copy() for W in Ws))
    except Exception:  # noqa: BLE001 - only asks what square weights give
        return False
    return any(checks.named_mistake(checks.to_array(item, "the item"), [(X @ W.T, "transposed")]) is not None
               for item, W in zip(out, Ws))


def _named_on_squares(impl):
    """What a mistake that only runs on square X and weights gives there (W @ X, X * W), or None."""
    r = rng(1105)
    X, Ws = r.normal(size=(4, 4)), [r.normal(size=(4, 4)) for _ in range(3)]
    try:
        out = impl.project_qkv(X.copy(), *(W.copy() for W in Ws))
        Q = checks.to_array(out[0], "Q")
    except Exception:  # noqa: BLE001 - only asks whether square inputs go through
        return None
    if _chained(out, X, Ws):
        return CHAINED
    return checks.named_mistake(Q, [(Ws[0] @ X, "computes W_q @ X: tokens are the rows of X, so each row "
                                                "is projected as X @ W_q"),
                                    (X * Ws[0], "multiplies X and W_q entry by entry (*): a projection is a "
                                                "matrix product (@)"),
                                    (X.T @ Ws[0], "computes X.T @ W_q, the tokens transposed: X holds one token "
                                                  "per row, (n, d_in), and W_q (d_in, d_out) projects each row, so "
                                                  "X is used as it is"),
                                    (X @ Ws[0], RIGHT_ONLY_ON_SQUARES)])


# Last of the square-input ladder: right there, so only a shape taken from the wrong side can break the rest.
RIGHT_ONLY_ON_SQUARES = ("is right, so an array is made d_in wide, sized from X (np.zeros_like(X), say), where each "
                         "projection is d_out wide: fill np.zeros((n, W.shape[1])), or compute X @ W at once")


CHAINED = ("projects K or V from another projection (Q @ W_k, K @ W_v), not from X: each of Q, K and V projects the "
           "tokens X by its own weights, so the shapes fit only where d_in == d_out")


def _chained(out, X, Ws):
    """Whether Q of `out` is X @ W_q and K or V is a projection of another projection (K = Q @ W_k, V = K @ W_v)."""
    W_q, W_k, W_v = Ws
    try:
        Q, K, V = (checks.to_array(item, role) for item, role in zip(out, ROLES))
    except Exception:  # noqa: BLE001 - not three arrays: another mistake
        return False
    right_q = checks.named_mistake(Q, [(X @ W_q, "right")]) is not None
    return right_q and (checks.named_mistake(K, [(X @ W_q @ W_k, CHAINED)]) is not None or checks.named_mistake(
        V, [(X @ W_q @ W_k @ W_v, CHAINED), (X @ W_q @ W_v, CHAINED), (X @ W_k @ W_v, CHAINED)]) is not None)


ALL_AXES_REVERSED = ("a product transposed back with .T, right on one matrix, but on a batch .T reverses every axis, "
                     "so the batch axes end up last; tokens are the rows of X on any number of batch axes, and a "
                     "product with X first needs no transpose")


def _all_axes_reversed(value, right):
    """Whether `value` is `right` (..., n, d_out) with its batch axes reversed and moved after the last two, as
    (W.T @ np.swapaxes(X, -1, -2)).T makes it: each item's product transposed, then .T of the whole batch."""
    order = (right.ndim - 2, right.ndim - 1, *range(right.ndim - 3, -1, -1))
    return value.shape == tuple(right.shape[i] for i in order) and np.allclose(value, np.transpose(right, order),
                                                                             atol=1e-5, rtol=1e-4)


def _checked_call(impl, record):
    """project_qkv on `record`, with known mistakes that break shapes named before comparing."""
    X, Ws = record["X"], [record[w] for w in WEIGHTS]
    label = record["label"]
    try:
        out = impl.project_qkv(X.copy(), *(W.copy() for W in Ws))
    except (CaseFailure, NotImplementedError):
        raise
    except Exception as error:
        if X.ndim > 2:
            explain_batch_error("project_qkv", error, label,
                                lambda: impl.project_qkv(X[(0,) * (X.ndim - 2)].copy(), *(W.copy() for W in Ws)))
        if Ws[0].shape[0] != Ws[0].shape[1] and _works(impl, X, *(np.eye(X.shape[-1]),) * 3) and \
                _transposes_square_weights(impl, X):
            raise CaseFailure(
                f"project_qkv raised {type(error).__name__} on {label} (each W of shape "
                f"{checks.fmt_shape(Ws[0].shape)}), but not with square weights: tokens are the rows of X "
                "and W is (d_in, d_out), so Q = X @ W_q, not W_q @ X or X @ W_q.T") from None
        symptom = _named_on_squares(impl)
        if symptom is not None:
            raise CaseFailure(f"project_qkv raised {type(error).__name__} on {label}, but runs when X and the "
                              f"weights are square: there it {symptom}") from None
        raise
    if out is None:
        raise checks.returned_none(f"project_qkv of {label}")
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        explain_stacked(out, X, Ws, f"project_qkv of {label}")
        raise CaseFailure(f"project_qkv should return a tuple (Q, K, V) of three arrays ({label})")
    for k, (value, W) in enumerate(zip(out, Ws)):
        want = (*X.shape[:-1], W.shape[-1])
        got = tuple(checks.to_array(value, ROLES[k]).shape)
        transposed = (*X.shape[:-2], W.shape[-1], X.shape[-2])
        if got != want and got == X.shape and np.array_equal(checks.to_array(value, ROLES[k]), X):
            raise CaseFailure(f"{ROLES[k]} is X itself, not projected: {ROLES[k]} = X @ {WEIGHTS[k]}, as the other "
                              f"two are projected by theirs ({label})")
        if got != want and X.ndim > 2 and _all_axes_reversed(checks.to_array(value, ROLES[k]), X @ W):
            raise CaseFailure(f"{ROLES[k]} has shape {checks.fmt_shape(got)}: {ALL_AXES_REVERSED} ({label})")
        # Qᵀ's shape is no proof of Qᵀ: a third of a fused projection cut across its rows can have it too
        if got != want and got == transposed and _looks_like(value, np.swapaxes(X @ W, -1, -2)):
            raise CaseFailure(f"{ROLES[k]} has shape {checks.fmt_shape(got)}: one column per token, that "
                              f"is {ROLES[k]}ᵀ (W·x per token); tokens are rows, so "
                              f"{ROLES[k]} = X @ {WEIGHTS[k]} ({label})")
        if got != want and X.ndim > 2 and got == (int(np.prod(X.shape[:-1])), W.shape[-1]) and _looks_like(
                value, (X @ W).reshape(got)):
            raise CaseFailure(f"{ROLES[k]} has shape {checks.fmt_shape(got)}: {BATCH_FLATTENED} ({label})")
        if got != want and any(_looks_like(value, third) for third in _fused_thirds_cut_across_rows(X, Ws, k)):
            raise CaseFailure(f"{ROLES[k]} has shape {checks.fmt_shape(got)}: {FUSED_CUT_ACROSS_ROWS} ({label})")
        checks.expect_shape(checks.to_array(value, ROLES[k]), want, f"{ROLES[k]} on {label}")
    return out


def _looks_like(value, candidate):
    """Whether an item equals `candidate` (an array, or a function that computes it) as a rung of the ladder would."""
    return checks.named_mistake(checks.to_array(value, "the item"), [(candidate, "it")]) is not None


# X.reshape(-1, d_in) @ W: right rows, but the batch's axes are merged into the tokens' and left so.
BATCH_FLATTENED = ("the batch's leading axes are merged with the tokens' (X.reshape(-1, d_in)) and never "
                   "restored: reshape the product back to X.shape[:-1] + (d_out,), or multiply X as it is, since @ "
                   "broadcasts over the leading axes")


FUSED_CUT_ACROSS_ROWS = ("a third of the fused projection X @ [W_q W_k W_v] cut across its rows (the tokens, or a "
                         "batch's first axis): Q, K and V are its blocks of columns, so split the last axis "
                         "(np.split(..., 3, axis=-1))")


def _fused_thirds_cut_across_rows(X, Ws, k):
    """Item k of X @ [W_q W_k W_v] split in three along axis 0 or the tokens' axis (-2), where the fused
    projection's columns are Q, K and V side by side: the row-wise cut a fused projection is mistaken for.
    A shape (n/3, 3 d_out) can equal Qᵀ's (d_out, n), so the transposed shape alone does not tell them apart."""
    fused = X @ np.concatenate(Ws, axis=-1)
    return [lambda axis=axis: np.split(fused, 3, axis=axis)[k] for axis in {0, X.ndim - 2}]


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference on non-square and square weights, batches, float32 and long inputs"""
    check_stored(impl, STEP, _checked_call, "project_qkv(X, W_q, W_k, W_v)", symptoms=stored_symptoms)


@case(STEP, "oracle", weight=2)
def test_matches_torch_linear(impl):
    """agrees with torch.nn.functional.linear (a layer with weight Wᵀ) on a batch"""
    r = rng(1102)
    X = r.normal(size=(3, 5, 4))
    Ws = [r.normal(size=(4, 3)) for _ in range(3)]
    out = _checked_call(impl, dict(label="a (3, 5, 4) batch projected to width 3", X=X, W_q=Ws[0],
                                   W_k=Ws[1], W_v=Ws[2]))
    x = torch.from_numpy(X)
    for k, W in enumerate(Ws):
        want = torch.nn.functional.linear(x, torch.from_numpy(W.T.copy())).numpy()
        checks.expect_close(out[k], want,
                            f"{ROLES[k]} of a (3, 5, 4) batch compared with torch's linear layer",
                            symptoms=[(lambda W=W: X @ W.T, f"{ROLES[k]} uses the transposed weights"),
                                      *stored_symptoms(dict(X=X, W_q=Ws[0], W_k=Ws[1], W_v=Ws[2]), k)[1:]])


@case(STEP, "property")
def test_tokens_projected_independently(impl):
    """reordering the tokens reorders Q, K and V the same way"""
    r = rng(1103)
    X = r.normal(size=(6, 3))
    Ws = [r.normal(size=(3, 4)) for _ in range(3)]
    order = np.array([4, 2, 0, 5, 1, 3])
    out = _checked_call(impl, dict(label="6 tokens", X=X, W_q=Ws[0], W_k=Ws[1], W_v=Ws[2]))
    out_perm = _checked_call(impl, dict(label="6 reordered tokens", X=X[order], W_q=Ws[0], W_k=Ws[1],
                                        W_v=Ws[2]))
    for k in range(3):
        checks.expect_close(out_perm[k], checks.to_array(out[k], ROLES[k])[order],
                            f"{ROLES[k]} of reordered tokens (each token is projected on its own)", relation=False)


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves X and the three weight matrices unchanged"""
    r = rng(1104)
    X = r.normal(size=(4, 3))
    Ws = [r.normal(size=(3, 2)) for _ in range(3)]
    if not _works(impl, X, *Ws):  # a mistake that raises is named first
        _checked_call(impl, dict(label="4 tokens", X=X, W_q=Ws[0], W_k=Ws[1], W_v=Ws[2]))
    checks.expect_inputs_unchanged(impl, "project_qkv", [X, *Ws], ["X", *WEIGHTS])
