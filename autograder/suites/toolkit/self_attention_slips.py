"""Rungs of SelfAttention's suite, whose own file is full: slips in a softmax or a scale written by hand.

`softmax_slips(scores, d_k)`: (weights, symptom) of the scaled `scores` (..., T, T) weighed so: the sums of the
exponentials taken without keepdim, and the divisor written keys.shape[-1] ** 1 / 2 or keys.shape[-1] ** -0.5.
`explain_on_one_sequence`: a forward that raised on a batch but runs on one sequence, where the sums taken without
keepdim show.
`explain_item_alone`: an item of a batch whose output differs from its output alone, named by either output.
`explain_square_only`: a forward that raises unless d_out = d_in, named by a square layer's output.
`keys_reshaped(x, linears)`: the output with the keys reshaped to the shape of their transpose.
`SOFTMAX_OVER_BATCH`: the message of a softmax over a batch's first axis, written or implicit.
`name_unshifted(output, scores, values, what)`: a softmax by hand that subtracts no maximum, named where it overflows.
`counted_for_a_batch(error)`: what a forward that runs on a batch of one but not on one sequence got wrong, as far
as its error's words tell.
"""

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks, reshapes
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.model import SCALED_BY_TOKENS, attention, softmax
from autograder.suites.toolkit.modules import loaded_module, random_projections, tensor
from autograder.suites.toolkit.properties import close

# e / e.sum(dim=-1): the sums (..., T) line up with the last axis of e (..., T, T), so entry (i, j) is divided by
# row j's sum; on one sequence that runs, on a batch (B, T, T) / (B, T) fits only where B is 1 or T.
SUMS_WITHOUT_KEEPDIM = ("the softmax's sums are taken without keepdim (e / e.sum(dim=-1)): the sums, one per row, "
                        "broadcast along the last axis, so entry (i, j) is divided by row j's sum, not row i's, and "
                        "on a batch the shapes do not fit; keep the summed axis: e.sum(dim=-1, keepdim=True)")
# e / e.sum(): one sum over every entry, every query's row and every batch item's, for each row's own sum
SUMMED_OVER_EVERYTHING = ("the softmax divides each exponential by the sum of every entry (.sum() with no dim: every "
                          "query's row, and every item of a batch), so no row of weights sums to 1; each row is "
                          "divided by its own sum, over the keys")
# scores / keys.shape[0] ** 0.5: the batch size on a batch, the number of tokens on one sequence. A batch as large as
# d_k gets its right output, and only its items run alone show the tokens' divisor.
KEYS_FIRST_AXIS = ("the batch's output is right, but each item alone has its scores divided by sqrt(T), the number "
                   "of tokens: is d_k read from the keys' first axis (keys.shape[0], len(keys))? That is the batch "
                   "size on a batch (here as large as d_k) and the number of tokens on one sequence; d_k is the "
                   "keys' width, their LAST axis (keys.shape[-1])")
# torch.nn.functional.softmax(scores) with no dim picks dim 1 on two axes (the keys: right on one sequence) and dim 0
# on three (the batch), as dim=0 written does on a batch: the message gives both readings
SOFTMAX_OVER_BATCH = ("the softmax runs over dim=0, the batch (dim=0 written, or F.softmax or nn.Softmax() given no "
                      "dim, which picks dim 0 on three axes): use dim=-1")
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
             (lambda: softmax(scores * d_k), NEGATIVE_POWER),
             (lambda: exponentials / exponentials.sum(), SUMMED_OVER_EVERYTHING)]
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


# queries @ x.transpose(-2, -1): the raw inputs for the keys fit the scores' product only where d_out = d_in, as
# x @ self.W_query.weight (the layers' weights multiplied untransposed) does; a square layer's output tells them apart.
KEYS_ARE_INPUTS = ("the keys are the raw inputs x, not self.W_key(x): the scores compare the queries with x itself, "
                   "which fits only where d_out = d_in; the keys are W_key's projection of x")


def explain_square_only(impl, detail):
    """A forward that raised (`detail`) where d_out != d_in, and runs where d_out = d_in: the raw inputs taken for the
    keys, where a square layer's output (4 tokens, d_in = d_out = 3) is theirs, else the layers' weights multiplied
    untransposed."""
    r = rng(1561)
    linears, x = random_projections(r, 3, 3, False), r.normal(size=(4, 3))
    try:
        out = loaded_module(impl, "SelfAttention", (3, 3, False), linears, explained=False)(tensor(x))
        keys_are_inputs = close(out, attention(x, linears, mask="none", roles="qxv"))
    except (RemoteError, CaseFailure):
        keys_are_inputs = False
    if keys_are_inputs:
        raise CaseFailure(f"{detail}, and runs where d_out = d_in, which shows why: {KEYS_ARE_INPUTS}") from None
    raise CaseFailure(f"{detail}, but not when d_out = d_in: call the layers (self.W_query(x)); nn.Linear stores its "
                      "weight as (d_out, d_in), so x @ self.W_query.weight does not fit") from None


# keys.reshape(d_out, T) (or .view) where keys.transpose(-2, -1) belongs: the product fits, and only its values show
# that row i of the reshaped keys is not column i of the keys.
KEYS_RESHAPED = ("the keys are reshaped to the transposed shape where the transpose belongs (keys.reshape(d_out, T) or "
                 ".view for keys.T): a reshape keeps the entries in their order and only cuts them into new rows, so "
                 "row i of the result is not column i of the keys; transpose them: keys.transpose(-2, -1)")


def keys_reshaped(x, linears):
    """[(output, KEYS_RESHAPED)] of one-head attention without a mask on x, its keys reshaped to (..., d_out, T);
    none where the keys are square or one row or column (`reshapes.reshape_mistakes`)."""
    def project(name):
        weight, bias = (None if p is None else np.asarray(p, dtype=np.float64) for p in linears[name])
        return np.asarray(x, dtype=np.float64) @ weight.T + (0 if bias is None else bias)

    queries, keys, values = project("W_query"), project("W_key"), project("W_value")
    return [(lambda candidate=candidate: candidate(), KEYS_RESHAPED) for candidate, _ in reshapes.reshape_mistakes(
        queries, keys, lambda product: softmax(product / np.sqrt(keys.shape[-1])) @ values)]


# torch words axis 2 of one sequence alike wherever it is asked for (keys.transpose(1, 2), a softmax over dim=2), and a
# permute of three axes in words of its own: only those words tell which part of the forward counts from the front.
AXIS_2_OF_A_BATCH = ("axis 2 of a batch (batch, T, d) does not exist on one sequence (T, d): is it the keys' "
                     "transpose(1, 2), or a softmax (or sum) over dim=2? Count the axes from the end, transpose(-2, -1) "
                     "and dim=-1, which fit both")
PERMUTED_FOR_A_BATCH = ("a permute of three axes (keys.permute(0, 2, 1)) fits a batch only; transpose the keys with "
                        "transpose(-2, -1), which works for both")
# torch.einsum("bqd,bkd->bqk", ...): one letter per axis, so one sequence has an axis too few, in einsum's own words
EINSUM_FOR_A_BATCH = ("an einsum whose subscripts name a batch axis ('bqd,bkd->bqk') fits a batch only: its equation "
                      "gives each operand one letter per axis, and one sequence has an axis fewer; '...' in place of "
                      "the batch's letter stands for any leading axes, or @ multiplies the last two axes of either")
NEEDS_A_BATCH = "and the grader cannot name the part of it that needs a batch"


def counted_for_a_batch(error):
    """The message of a forward that raised `error` on one sequence but runs on a batch of one."""
    said = str(error)
    if "Dimension out of range" in said:
        return AXIS_2_OF_A_BATCH
    if "permute" in said:
        return PERMUTED_FOR_A_BATCH
    if "einsum()" in said:
        return EINSUM_FOR_A_BATCH
    return NEEDS_A_BATCH


# exp of a float32 overflows above about 88: scores that large make inf / inf = nan where the maximum is not subtracted
UNSHIFTED = ("the softmax is written by hand without subtracting each row's maximum: exp overflows to inf on scores "
             "this large, and inf / inf is nan; subtract each row's maximum first (which leaves the softmax as it is), "
             "or use torch.softmax")


def name_unshifted(output, scores, values, what):
    """Raise the CaseFailure naming a softmax by hand without its shift where `output`, which holds nan or inf, is the
    context of the scaled `scores` and `values` (float64) weighed by such a softmax, in float32 as the layer computes;
    quiet otherwise (where nothing overflows that softmax is right)."""
    def weights():
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.exp(scores.astype(np.float32))
            return (e / e.sum(axis=-1, keepdims=True)).astype(np.float64)
    named = None if np.isfinite(output).all() else checks.named_mistake(output, [(lambda: weights() @ values, UNSHIFTED)])
    if named is not None:
        raise CaseFailure(f"{what}: {named}")
