"""The ladders of the `CachedCausalAttention` suite, whose file is full: the known mistakes of a layer fed its input
in chunks through a cache, and of its forward on a whole input without one. A mask slice of one new token's row
(mask[start:start + 1, :start + 1]) is 1 wide without a cache, so it blocks nothing there, as no mask does: where
a prompt after a cached prefix shows that slice, the whole input's missing mask is named as it."""

import numpy as np

from autograder.suites.toolkit import batches, cached, self_attention_slips
from autograder.suites.toolkit.model import (
    MASK_MISTAKES,
    ROLE_MISTAKES,
    SCALE_MISTAKES,
    SOFTMAX_AXIS_MISTAKES,
    attention,
    symptoms,
    told_apart,
)
from autograder.suites.toolkit.module_ladders import FILLED_WITH_PLUS_INF

FULL_MISTAKES = (MASK_MISTAKES + [FILLED_WITH_PLUS_INF] + SCALE_MISTAKES + SOFTMAX_AXIS_MISTAKES
                 + [(dict(axis=0), self_attention_slips.SOFTMAX_OVER_BATCH)] + ROLE_MISTAKES)
NO_MASK = next(message for switches, message in MASK_MISTAKES if switches == dict(mask="none"))
ONE_ROW_WITHOUT_CACHE = ("without a cache nothing is masked: the mask slice is one new token's row, 1 wide where "
                         "no key is cached yet, so it broadcasts over every query and blocks nothing"
                         f"{cached.ONE_TOKEN_ROW} (a whole input without a cache is such a call)")


def cache_symptoms(x, linears, sizes, masked_without_cache=False, context_length=None):
    """The known mistakes of a layer fed x in chunks through a cache: the cache's own, and those of
    attention itself, made on each chunk (one axis or mask or scale mistake fails every path).
    masked_without_cache: the same layer was seen right on the whole input, so nothing masked through the cache is
    a mask left out where a cache is given, not everywhere, and keys and values swapped are the cache's returns
    unpacked the other way round, not the projections (`cached.seen_right_without_cache`). context_length: the layer's, where the rows of the
    mask's end can be named."""
    mistakes = [(switches, cached.seen_right_without_cache(switches, why) if masked_without_cache else why)
                for switches, why in cached.CACHE_MISTAKES + FULL_MISTAKES]
    compute = lambda **kw: cached.model(x, linears, sizes, **kw)  # noqa: E731
    return told_apart(symptoms(compute, mistakes) + cached.from_end_mistake(compute, context_length))


def full_symptoms(x, linears, context_length=None, one_token_row=None):
    """The known mistakes of the layer's forward on the whole input x without a cache. `one_token_row()`, asked once
    where the output has no mask, says whether the layer's mask slice is one new token's row, which names it."""
    whole = lambda **kw: cached.model(x, linears, [np.shape(x)[-2]], **kw)  # noqa: E731
    ladder = told_apart(symptoms(lambda **kw: attention(x, linears, **kw), FULL_MISTAKES) + [
        ((lambda: whole(mask="inverted")), cached.INVERTED_MASK),
        *[((lambda shift=shift: whole(shift=shift)), message)
          for shift, message in ((1, cached.SEES_NEXT), (-1, cached.BLOCKS_ITSELF))],
        *cached.from_end_mistake(whole, context_length)])
    return ladder if one_token_row is None else named_one_token_row(ladder, one_token_row)


def named_one_token_row(ladder, one_token_row):
    """`ladder` of a whole input without a cache, its missing mask named as a mask slice of one new token's row
    where `one_token_row()` (asked once, when that rung is first tried) says the layer's slice is one."""
    return batches.told_apart_on_one_item(ladder, NO_MASK, one_token_row, ONE_ROW_WITHOUT_CACHE)
