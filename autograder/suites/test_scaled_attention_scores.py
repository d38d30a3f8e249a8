"""Hidden suite of `scaled_attention_scores` (assignment 02)."""

import numpy as np
import torch

from autograder.errors import CaseFailure
from autograder.harness import case
from autograder.suites.toolkit import batches, cases, checks, reshapes
from autograder.suites.toolkit.cases import check_stored, explain_batch_error, notes_cases, rng
from autograder.suites.toolkit.model import SCALED_BY_BATCH, TWICE_D_K, truncation_mistakes
from autograder.suites.toolkit.widths import FIXED_AXIS, wrong_widths

STEP = "scaled_attention_scores"
test_notes = notes_cases(STEP, replayed=lambda record, k: mistakes(record["Q"], record["K"]),
                         confirmed=lambda impl, ladder: confirmed(impl, ladder),
                         probe=lambda impl: _checked_call(impl, dict(Q=rng(1206).normal(size=(3, 4)),
                                                                     K=rng(1207).normal(size=(5, 4)),
                                                                     label="3 queries over 5 keys")))


def stored_inputs():
    r = rng(1201)

    def record(label, q_shape, k_shape, dtype=np.float64, **extra):
        return dict(label=label, Q=r.normal(size=q_shape).astype(dtype),
                    K=r.normal(size=k_shape).astype(dtype), **extra)

    return [
        record("3 queries over 5 keys of width 4", (3, 4), (5, 4)),
        record("6 tokens of width 2 (self-attention, square scores)", (6, 2), (6, 2)),
        record("a single query and key of width 9", (1, 9), (1, 9)),
        record("a batch: (2, 4, 8) queries over (2, 7, 8) keys", (2, 4, 8), (2, 7, 8)),
        record("a batch of shape (2, 3, 5, 4) over (2, 3, 6, 4)", (2, 3, 5, 4), (2, 3, 6, 4)),
        record("keys of width 1", (4, 1), (3, 1)),
        record("float32 queries and keys of width 16", (5, 16), (5, 16), dtype=np.float32, atol=1e-4),
        record("128 tokens of width 32", (128, 32), (128, 32)),
    ]


def apply(impl, record):
    # copies: the stored records are cached, and a submission may write into its inputs
    return impl.scaled_attention_scores(record["Q"].copy(), record["K"].copy())


def _works(impl, Q, K):
    try:
        impl.scaled_attention_scores(Q.copy(), K.copy())
    except Exception:  # noqa: BLE001 - only asks whether these inputs go through
        return False
    return True


def _checked_call(impl, record):
    """scaled_attention_scores on `record`, naming mistakes that change the shape."""
    Q, K, label = record["Q"], record["K"], record["label"]
    try:
        out = impl.scaled_attention_scores(Q.copy(), K.copy())
    except (CaseFailure, NotImplementedError):
        raise
    except Exception as error:
        if Q.ndim != 3 and _works(impl, Q.reshape(-1, *Q.shape[-2:]), K.reshape(-1, *K.shape[-2:])):
            raise CaseFailure(f"scaled_attention_scores raised {type(error).__name__} on {label}, but works on "
                              "a 3-d batch: its transpose of K names the axes of a 3-d array (batch, n, d_k); "
                              "Q and K may be one matrix or have any number of batch axes: swap only the last "
                              "two") from None
        if Q.ndim > 2 and "einstein sum" in str(error):  # an einsum for one matrix, not K.T
            explain_batch_error("scaled_attention_scores", error, label,
                                lambda: impl.scaled_attention_scores(Q[(0,) * (Q.ndim - 2)], K[(0,) * (K.ndim - 2)]))
        q, k = Q[(0,) * (Q.ndim - 2)], K[(0,) * (K.ndim - 2)]
        if Q.ndim > 2:  # K reshaped with one matrix's axes runs on one item only
            reshapes.name_on_one_item("scaled_attention_scores", error, label,
                                      lambda A, B: impl.scaled_attention_scores(A.copy(), B.copy()), q, k,
                                      lambda product: product / np.sqrt(k.shape[-1]))
        if Q.ndim > 2 and _works(impl, q, k):
            raise CaseFailure(f"scaled_attention_scores raised {type(error).__name__} on {label}, but not on "
                              f"one item of it: {batches.batch_error_cause(error, TRANSPOSED_FOR_ONE_MATRIX)}"
                              ) from None
        _named_on_square_keys(impl, error, label)
        raise
    got = tuple(checks.to_array(out, "the scores").shape)
    want = (*Q.shape[:-1], K.shape[-2])
    if got != want and got == (*Q.shape[:-2], K.shape[-2], Q.shape[-2]):
        raise CaseFailure(f"the scores have shape {checks.fmt_shape(got)}, keys by queries: that is K Qᵀ; "
                          f"compute Q Kᵀ, one row per query ({label})")
    if got != want and Q.ndim > 2 and got == (*Q.shape[:-1], *K.shape[:-2], K.shape[-2]):
        raise CaseFailure(f"np.dot on a batch pairs every item of Q with every item of K ({ALSO_PAIRS_EVERY_ITEM}: "
                          f"scores of shape {checks.fmt_shape(got)}); the @ operator (np.matmul) pairs item i with "
                          f"item i ({label})")
    if got != want:
        named = checks.named_mistake(checks.to_array(out, "the scores"), _products_as_many_tokens(Q, K))
        if named is not None:  # the shape's cause, from the ladder (named_diagnoses checks it there)
            shaped = f"the scores of {label} have shape {checks.fmt_shape(got)}"
            raise CaseFailure(f"{shaped}: {named}")
    checks.expect_shape(checks.to_array(out, "the scores"), want, f"the scores of {label}")
    return out


TRANSPOSED_FOR_ONE_MATRIX = ("with a batch, transpose only the last two axes of K (np.swapaxes(K, -1, -2)); K.T "
                             "reverses every axis, and K.transpose(-1, -2), torch's spelling, lists the order of every "
                             "axis in NumPy, which a batch's K does not fit")
UNTRANSPOSED_K = ("multiplies Q by K untransposed (Q @ K): the transpose is missing, or is torch's K.transpose(0, 1), "
                  "which in NumPy lists every axis in its new order, so it keeps a 2-d K as it is and refuses a "
                  "batch; swap K's last two axes, np.swapaxes(K, -1, -2)")


ALSO_PAIRS_EVERY_ITEM = "so do np.inner and np.tensordot, which sum over the last axes of both"
# Products that fit only where there are as many queries as keys: both named where they run, by their layout.
ENTRY_BY_ENTRY = ("multiplies Q and K entry by entry (Q * K), which fits only where there are as many queries as keys: "
                  "a score is the dot product of one query with one key, their products summed over the features, for "
                  "every pair: Q @ Kᵀ")
QT_K = ("computes Qᵀ K, features by features (the transpose on Q where it belongs on K), which fits only where there "
        "are as many queries as keys: the scores are Q Kᵀ, one row per query and one column per key")


def _products_as_many_tokens(Q, K):
    """(candidate, symptom) of the products that run only where n_q == n_k."""
    scale = np.sqrt(K.shape[-1])
    return [(lambda: Q * K / scale, ENTRY_BY_ENTRY), (lambda: np.swapaxes(Q, -1, -2) @ K / scale, QT_K)]


def _named_on_square_keys(impl, error, label):
    """An `error` on `label` of code that runs where the keys are as many as they are wide (n_k == d_k), the one
    shape Q @ K fits: named there if it gives Q @ K / sqrt(d_k) (K untransposed); then where the queries are as
    many as the keys too, where Q * K and Qᵀ K fit, named by the ladder's words; quiet otherwise."""
    r = rng(1210)
    Q, K = r.normal(size=(3, 4)), r.normal(size=(4, 4))
    out = _output_or_none(impl, Q, K)
    if out is not None and checks.named_mistake(out, [(Q @ K / 2, UNTRANSPOSED_K)]) is not None:
        raise CaseFailure(f"scaled_attention_scores raised {type(error).__name__} on {label}, but runs on 4 keys of "
                          f"width 4, where it {UNTRANSPOSED_K}") from None
    as_many = K[::-1]  # 4 queries
    out = _output_or_none(impl, as_many, K)
    named = None if out is None else checks.named_mistake(out, _products_as_many_tokens(as_many, K))
    if named is not None:
        raised = (f"scaled_attention_scores raised {type(error).__name__} on {label}, but runs on 4 queries and 4 keys "
                  "of width 4, where it")
        raise CaseFailure(f"{raised} {named}") from None


def _output_or_none(impl, Q, K):
    try:
        return checks.to_array(impl.scaled_attention_scores(Q.copy(), K.copy()), "the scores")
    except Exception:  # noqa: BLE001 - only asks whether these inputs go through
        return None


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mistakes(Q, K):
    """(candidate, symptom) pairs of the known mistakes, for inputs Q and K."""
    d_k = K.shape[-1]
    raw = Q @ np.swapaxes(K, -1, -2)
    truncated = truncation_mistakes(raw / np.sqrt(d_k), np.trunc(Q) @ np.swapaxes(np.trunc(K), -1, -2) / np.sqrt(d_k),
                                    "Q and K", "scores", divides=True)
    return [*truncated, *cases.rounded(raw / np.sqrt(d_k), what="the scores are"),
        (lambda: raw, "scores look unscaled: divide by sqrt(d_k)"),
        (lambda: raw / d_k, "the scores are divided by d_k: divide by sqrt(d_k) instead, once (Q and K each divided "
                            "by sqrt(d_k) divide their product by d_k)"),
        (lambda: raw / d_k / 2, TWICE_D_K),
        (lambda: raw * np.sqrt(d_k), "the scores are multiplied by sqrt(d_k): divide by it instead"),
        (lambda: raw / (d_k / 2), HALF_D_K),
        (lambda: raw / d_k ** 0.25, SQRT_TWICE),
        *[(lambda: raw / np.sqrt(2), NOTES_D_K)] * (d_k != 2),  # right on the notes' examples, whose keys are 2 wide
        *[(lambda w=w: raw / np.sqrt(w), symptom) for w, symptom in wrong_widths(Q, K)],
        *(_products_as_many_tokens(Q, K) if Q.shape[-2] == K.shape[-2] else []),
        (lambda: raw / np.floor(np.sqrt(d_k)), ROOT_ROUNDED_DOWN),
        *reshapes.reshape_mistakes(Q, K, lambda product: product / np.sqrt(d_k)),
        *[(lambda: raw / np.sqrt(K.shape[0]), FIRST_AXIS)] * (K.ndim > 2 and K.shape[0] not in (1, d_k, *K.shape[1:])),
        (lambda: np.swapaxes(raw, -1, -2) / np.sqrt(d_k), "computes K Qᵀ (row i belongs to key i): "
                                                          "the scores are Q Kᵀ, one row per query"),
        *[(lambda: raw / np.sqrt(d_k) - (raw / np.sqrt(d_k)).max(axis=-1, keepdims=True), ROW_MAX_SUBTRACTED)
          ] * (K.shape[-2] > 1),  # over one key, every row shifted is 0: no evidence
        (lambda: raw / _lengths(Q) / np.swapaxes(_lengths(K), -1, -2), COSINES),
        (lambda: _softmax(raw / np.sqrt(d_k)), "applies the softmax: this step returns the scaled scores, and "
                                               "the softmax comes after it, in scaled_dot_product_attention"),
    ]


def _lengths(a):
    return np.linalg.norm(a, axis=-1, keepdims=True)


# Q Kᵀ / (|q_i| |k_j|): the cosine similarities of 01, each pair divided by its own two lengths.
COSINES = ("divides each query's product with each key by their two lengths, |q_i|·|k_j|: those are cosine "
           "similarities, which keep only the directions; the scaled score divides every product by one number, "
           "sqrt(d_k), so that a longer query or key still scores higher")


# The softmax's stabilising shift taken here: the weights (a softmax cancels a shift per row) stay right.
ROW_MAX_SUBTRACTED = ("each row of the scores has its maximum subtracted, so that row's largest score is 0: that shift "
                      "keeps a softmax from overflowing and belongs inside the softmax, which it leaves unchanged; this "
                      "step returns the scores themselves, Q Kᵀ / sqrt(d_k)")


NOTES_D_K = ("the scores are divided by sqrt(2), the notes' d_k written in, whatever the keys' width: d_k is read from "
             "the keys, K.shape[-1]")


ROOT_ROUNDED_DOWN = ("the scores are divided by sqrt(d_k) rounded down to a whole number (int(), // or math.isqrt), "
                     "right only where d_k is a square (4, 9, 16): divide by the exact root, np.sqrt(d_k)")


HALF_D_K = ("the scores are divided by d_k / 2: `d_k ** 1/2` is (d_k ** 1) / 2, as ** binds before /; the divisor "
            "is sqrt(d_k), d_k ** 0.5")


SQRT_TWICE = ("the scores are divided by the square root of sqrt(d_k), d_k ** 0.25: the square root is taken twice "
              "(np.sqrt(np.sqrt(d_k)), or np.sqrt of a scale that is already sqrt(d_k)); divide by sqrt(d_k) once")


# d_k read as K.shape[0]: the number of keys on one matrix (named as such), the batch size on a batch.
FIRST_AXIS = SCALED_BY_BATCH[1]


def confirmed(impl, ladder):
    """`ladder`, each diagnosis of the scale (each names d_k) confirmed on queries and keys where no two
    divisors of the ladder coincide (d_k = 7, 3 queries, 5 keys): a scale that only happens to equal 1,
    sqrt(n_q) or sqrt(n_k) on small inputs is no such mistake: sqrt(d_k) // 1 is named where the probe shows a
    root rounded down, and sqrt(d_k + 1) is left to the last rung, a constant factor. d_k read from a fixed axis
    is confirmed where it is right, on one matrix, and from the first axis where that is the number of keys."""
    r = rng(1209)
    Q, K = r.normal(size=(3, 7)), r.normal(size=(5, 7))
    return cases.confirmed(ladder, lambda: impl.scaled_attention_scores(Q.copy(), K.copy()),
                           lambda: [*mistakes(Q, K), (Q @ K.T / np.sqrt(K.shape[-1]), FIXED_AXIS),
                                    (Q @ K.T / np.sqrt(K.shape[0]), FIRST_AXIS)],
                           only=lambda symptom: "d_k" in symptom)


def _check_stored_records(impl, batched):
    """The stored records whose queries have a batch axis (batched) or are one (n, d_k) sequence."""
    check_stored(impl, STEP, _checked_call, "scaled_attention_scores(Q, K)",
                 symptoms=lambda record, k: confirmed(impl, mistakes(record["Q"], record["K"])),
                 where=lambda record: (record["Q"].ndim > 2) == batched)


# One sequence and a batch are cases of their own (here and in the oracle), each half of the output
# weight: a wrong formula fails both, while a transpose that only works without a batch (K.T) keeps
# the one-sequence half.
@case(STEP, "stored", weight=1.5)
def test_stored_outputs(impl):
    """matches the reference on single sequences with n_q != n_k, width 1, float32 and long inputs"""
    _check_stored_records(impl, batched=False)


@case(STEP, "stored", weight=1.5)
def test_stored_outputs_batched(impl):
    """matches the reference on batches of queries and keys, with one and two batch axes"""
    _check_stored_records(impl, batched=True)


def _check_against_torch(impl, seed, q_shape, k_shape):
    """softmax of the scores of random queries and keys of these shapes, against torch's weights."""
    r = rng(seed)
    Q, K = r.normal(size=q_shape), r.normal(size=k_shape)
    label = f"{checks.fmt_shape(q_shape)} queries over {checks.fmt_shape(k_shape)} keys"
    scores = checks.to_array(_checked_call(impl, dict(Q=Q, K=K, label=label)), "the scores")
    checks.expect_shape(scores, (*q_shape[:-1], k_shape[-2]), f"the scores of {label}")
    checks.expect_finite(scores, f"the scores of {label}")
    q, k = torch.from_numpy(Q), torch.from_numpy(K)
    eye = torch.eye(k_shape[-2], dtype=torch.float64).expand(*k_shape[:-1], k_shape[-2])
    want = torch.nn.functional.scaled_dot_product_attention(q, k, eye).numpy()  # V = I gives the weights
    got = torch.softmax(torch.from_numpy(scores), dim=-1).numpy()
    weights_of = [(lambda f=f: torch.softmax(torch.from_numpy(np.asarray(f(), dtype=np.float64)), -1)
                   .numpy(), s) for f, s in confirmed(impl, mistakes(Q, K))]
    try:
        checks.expect_close(got, want,
                            f"softmax of the scores of {label}, compared with torch's attention weights",
                            symptoms=weights_of)
    except CaseFailure as failure:
        if checks.UNNAMED not in str(failure):
            raise
        # weights only a little off hide a wrong scale: the scores themselves show it (a constant factor)
        try:
            checks.expect_close(scores, Q @ np.swapaxes(K, -1, -2) / np.sqrt(k_shape[-1]), f"the scores of {label}")
        except CaseFailure as named:
            if checks.UNNAMED not in str(named):
                raise named from None
        raise


@case(STEP, "oracle")
def test_softmax_matches_torch_attention(impl):
    """softmax of the scores equals the attention weights of torch's scaled_dot_product_attention"""
    _check_against_torch(impl, 1202, (4, 6), (5, 6))


@case(STEP, "oracle")
def test_softmax_matches_torch_attention_batched(impl):
    """on a batch, softmax of the scores equals the attention weights of torch's attention"""
    _check_against_torch(impl, 1205, (2, 3, 16), (2, 7, 16))


@case(STEP, "property")
def test_variance_near_one(impl):
    """keeps the scores of standard-normal queries and keys near variance 1, even for width 256"""
    r = rng(1203)
    for d_k in (4, 256):
        Q, K = r.normal(size=(64, d_k)), r.normal(size=(64, d_k))
        scores = checks.to_array(_checked_call(impl, dict(Q=Q, K=K, label=f"64 tokens of width {d_k}")),
                                 "the scores")
        checks.expect_shape(scores, (64, 64), f"the scores of 64 tokens of width {d_k}")
        var = float(np.var(scores))
        if not 0.8 < var < 1.25:
            symptom = checks.named_mistake(scores, confirmed(impl, mistakes(Q, K)))
            if symptom is not None:  # a variance far from 1 with a known cause
                raise CaseFailure(f"the scores of 64 tokens of width {d_k}: {symptom}")
            raise CaseFailure(f"for standard-normal queries and keys of width {d_k} the scores have variance "
                              f"{var:.3g}, not about 1 (the notes' reason for scaling, which a divisor of sqrt(d_k) "
                              f"gives); {checks.UNNAMED}")


@case(STEP, "property")
def test_inputs_unchanged(impl):
    """leaves Q and K unchanged"""
    r = rng(1204)
    Q, K = r.normal(size=(3, 4)), r.normal(size=(5, 4))
    if not _works(impl, Q, K):  # a mistake that raises is named first
        _checked_call(impl, dict(Q=Q, K=K, label="3 queries over 5 keys"))
    checks.expect_inputs_unchanged(impl, "scaled_attention_scores", [Q, K], ["Q", "K"])
