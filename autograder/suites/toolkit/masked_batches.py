"""A masked softmax that raises on a batch of scores, explained from what the same code gives on one matrix of
them: boolean indexing that does not broadcast, a known mistake shown on the matrix, or code right on the matrix
that reads a size from a fixed axis (scores.shape[1], the tokens of a matrix or a batch, the heads of a batch of
heads), which a batch of heads as many as the tokens shows."""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks

# Right on one matrix, wrong on more axes: where no known mistake is shown there, the code's shape of scores is the cause.
WRITTEN_FOR_FEWER_AXES = ("is right on one matrix of its scores: it is written for fewer axes than these scores have (a "
                          "size or a dim read from a fixed place counted from the front); the queries and keys are the "
                          "last two axes, whatever comes before them")
SIZE_FROM_AXIS_1 = ("is right on one matrix, and on a batch of heads as many as the tokens: it reads a size from axis 1 "
                    "of the scores (scores.shape[1]), the tokens of a matrix or of a batch (batch, T, T), but the heads "
                    "of a batch of heads (batch, heads, T, T): the tokens are the scores' last axes, and a mask given "
                    "for them needs no cutting")


def _right(scores, mask):
    return torch.softmax(scores.double().masked_fill(mask, float("-inf")), dim=-1).numpy()


def _is_right(impl, scores, mask):
    """Whether impl.masked_softmax(scores, mask) runs and gives the right weights."""
    try:
        out = checks.to_array(impl.masked_softmax(scores.clone(), mask.clone()), "masked_softmax")
    except Exception:  # noqa: BLE001 - only asks whether these scores work
        return False
    return out.shape == tuple(scores.shape) and np.allclose(out, _right(scores, mask), atol=1e-5)


def explain_batch_raise(impl, error, scores, mask, what, ladder):
    """A CaseFailure naming why impl.masked_softmax raised `error` on the batch `scores` (`what`), from the same code
    on one matrix of them: `ladder(one_scores, one_mask)` is the suite's known mistakes there. Re-raises `error`
    where the matrix shows nothing."""
    one = scores[(0,) * (scores.dim() - 2)].clone()  # one matrix of scores, and of the mask where it has more
    one_mask = mask[(0,) * (mask.dim() - 2)].clone() if mask.dim() > 2 else mask
    try:
        single = impl.masked_softmax(one, one_mask)
    except RemoteError:
        raise error from None
    if "does not match the shape of the indexed tensor" in str(error):  # only boolean indexing says so
        raise CaseFailure(f"masked_softmax works when the mask has the scores' shape but raised {error.type_name} "
                          f"on {what}: boolean indexing (scores[mask]) does not broadcast the mask over the "
                          "leading axes; one (T, T) mask must serve a whole batch") from None
    single = checks.to_array(single, "masked_softmax")
    if single.shape == tuple(one.shape) and np.allclose(single, _right(one, one_mask), atol=1e-5):
        # a right matrix matches every mistake that coincides with it there (a fill of -1e4, say): none is named
        tokens = one.shape[-1]
        heads = torch.randn(2, tokens, *one.shape, generator=torch.Generator().manual_seed(1406), dtype=one.dtype)
        if tuple(one_mask.shape) == tuple(one.shape) and _is_right(impl, heads, one_mask):
            raise CaseFailure(f"masked_softmax raised {error.type_name} on {what}, but {SIZE_FROM_AXIS_1}") from None
        raise CaseFailure(f"masked_softmax raised {error.type_name} on {what}, but {WRITTEN_FOR_FEWER_AXES}") from None
    named = checks.named_mistake(single, ladder(one.numpy(), one_mask.numpy()))
    if named is None:
        raise error from None
    raise CaseFailure(f"masked_softmax raised {error.type_name} on {what} but runs on one matrix of its "
                      f"scores, where it shows why: {named}") from None
