"""What the suite of `CachedCausalAttention` names a cached forward's mistakes by: a NumPy model of
attention fed in chunks through a cache, whose switches each reproduce one known mistake of the
cache's use (`model`, `CACHE_MISTAKES`), the diagnoses of a forward that raised or grew the
cache wrongly (`explain_failed_forward`, `expect_grown`), and the suite's layer handle (`WholeInputs`), which names
what a forward without a cache refused or sliced wrongly."""

import functools
import re

import numpy as np

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import SHAPE_MISMATCH
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.checks import fmt_shape, to_array
from autograder.suites.toolkit.model import NORMALISERS, NOT_SCALED, SCALED_BY_D_IN, SCALED_BY_TOKENS, softmax
from autograder.suites.toolkit.modules import Layer, first_line, loaded_module, random_projections, tensor
from autograder.suites.toolkit.properties import close

# The two numbers each of PyTorch's words for a mismatch in the mask or the weights' product quotes.
_MISMATCH = re.compile(r"tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d)")
_BATCH2 = re.compile(r"batch2 tensor to be: \[\d+, (\d+)\] but got: \[\d+, (\d+)\]")
# torch.cat's words where the tensors it joins along the tokens (dim 1) differ on another axis: the cached one's
# size there, then the new one's.
_JOINED = re.compile(r"Sizes of tensors must match except in dimension 1\. Expected size (\d+) but got size (\d+)")

EMPTY_MASK_ROWS = ("the slice of the mask it used is empty (no rows), and the new tokens' scores take their shape "
                   "from it; the new tokens' rows of the mask run from len(cache) to len(cache) + t")
MASK_ROWS_TO_END = ("the mask slice's rows run on to the end of the mask, context_length rows in all, past this "
                    "call's tokens, and the scores broadcast against them: take only the rows of the tokens this "
                    "call brings, one per token")
MASK_COLUMNS_TO_END = ("the mask slice's columns run on to the end of the mask, context_length in all, past the keys "
                       "this call has: the scores have a column per key held, len(cache) + t, and so must the mask")


def mask_to_end(context_length, num_tokens, said):
    """(in_product, why) for the error `said` of a forward of `num_tokens` < context_length tokens without a cache
    whose mask slice kept context_length rows (masked_fill's dimension 1) or columns (dimension 2, or the weights
    broadcast that wide against one token's scores, which the product with the values then refuses); else None."""
    mismatch = _MISMATCH.search(said)
    sizes = mismatch and (int(mismatch.group(1)), int(mismatch.group(2)), mismatch.group(3))
    product = _BATCH2.search(said)
    if sizes == (context_length, num_tokens, "1"):
        return False, MASK_ROWS_TO_END
    if sizes == (context_length, num_tokens, "2"):
        return False, MASK_COLUMNS_TO_END
    if num_tokens == 1 and product and (int(product.group(1)), int(product.group(2))) == (context_length, 1):
        return True, MASK_COLUMNS_TO_END
    if mismatch and _one_column_more(said, num_tokens):  # where num_tokens + 1 is context_length, the above
        return False, MASK_ONE_COLUMN_MORE
    return None


# self.mask[start:start + t, :start + t + 1]: an off-by-one in the columns' stop, which fails without a cache too.
MASK_ONE_COLUMN_MORE = ("the mask slice has one column more than there are keys (its stop one past len(cache) + t, "
                        "an off-by-one): the scores have a column per key held, len(cache) + t, and so must the "
                        "mask's slice, self.mask[start:start + t, :start + t]")


def _no_column(said, num_tokens):
    """Whether `said`, the error of a forward of `num_tokens` tokens without a cache, is a mask slice of no column:
    masked_fill's mismatch (mask, then scores) on dimension 2, or, for one token, the product of the weights that
    broadcast made of no column with the values."""
    mismatch, product = _MISMATCH.search(said), _BATCH2.search(said)
    if mismatch:
        return mismatch.groups() == ("0", str(num_tokens), "2")
    return num_tokens == 1 and bool(product) and product.groups() == ("0", "1")


def _one_column_more(said, num_tokens):
    """Whether `said`, the error of a forward of `num_tokens` tokens without a cache, is a mask slice one column
    wider than the scores: masked_fill's mismatch (mask, then scores) on dimension 2, or, for one token, whose scores
    broadcast against the mask, the product of those weights with the values."""
    mismatch, product = _MISMATCH.search(said), _BATCH2.search(said)
    if mismatch:
        return (int(mismatch.group(1)), int(mismatch.group(2)), mismatch.group(3)) == (num_tokens + 1, num_tokens, "2")
    return bool(product) and (int(product.group(1)), int(product.group(2))) == (num_tokens + 1, num_tokens)


EMPTY_CACHE = ("an empty KVCache holds no tensors yet (its keys and values are None until the first update), so "
               "nothing can be read from them: how many tokens a cache holds is what the cache itself tells, 0 when "
               "it is empty")
TRANSPOSED_KEYS = ("the keys handed to cache.update are transposed, (batch, d_out, t); the cache holds them as (batch, "
                   "tokens, d_out), and only the scores' product swaps their last two axes")
TRANSPOSED_VALUES = "the values handed to cache.update are transposed, (batch, d_out, t); the cache holds them as (batch, tokens, d_out)"
AFTER_UPDATE = ("the new tokens' position is read from len(cache) after cache.update, which already counts them: "
                "the first new token sits where the cache ended before this call")


def explain_failed_forward(error, cache, start, size, call, whole_said=""):
    """Name the cause of a forward of `size` new tokens after `start` cached ones (that fit in
    context_length) that raised `error`, if a known one: the cache grown by the wrong number, a length
    check that refuses what fits, the position read after the cache grew (a ValueError, or a mask slice
    one chunk too far on), a mask slice of the wrong width or height, one column too wide where `whole_said`, the error
    of a forward of the same tokens without a cache, shows it too. Otherwise return, for the caller to re-raise."""
    if isinstance(error, ValueError) and len(cache) == start:  # refused before the cache grew
        raise CaseFailure(f"{call} raised {error.type_name}, but {start} cached and {size} new tokens make "
                          f"{start + size}, which context_length fits: refuse only MORE than context_length "
                          "tokens") from None
    if (error.type_name == "AttributeError" and "'NoneType' object has no attribute" in str(error) or
            error.type_name == "TypeError" and "'NoneType' has no len()" in str(error)) and start == len(cache) == 0:
        raise CaseFailure(f"{call} raised {error.type_name} with a new, empty cache: {EMPTY_CACHE}") from None
    joined = _JOINED.search(str(error))
    if start and joined and (int(joined.group(1)), int(joined.group(2))) == (start, size):
        # keys (batch, d_out, t) meet along dim 1 (their features) and differ on the last axis, their tokens; the
        # reference's update stores the keys before the values, so a cache that grew was refused the values
        which = TRANSPOSED_KEYS if len(cache) != start + size else TRANSPOSED_VALUES
        raise CaseFailure(f"{call} raised {error.type_name} in cache.update, whose last axes count the tokens ({start} "
                          f"cached, {size} new): {which}") from None
    expect_grown(cache, start, size, call)
    # values (batch, d_out, t) joined along dim 1 where their last axes agree: the cache's keys count the tokens
    # held, its values' second axis counts d_out once per update
    held_values = cache.describe("values.shape.1").get("value") if start else None
    if held_values is not None and len(cache) == start + size != held_values:
        raise CaseFailure(f"{call} raised {error.type_name}; the cache holds {start + size} tokens' keys, but its "
                          f"values' second axis is {held_values}: {TRANSPOSED_VALUES}") from None
    said = str(error)
    found = _MISMATCH.search(said) or _BATCH2.search(said)
    sizes = {int(found.group(1)), int(found.group(2))} if found else set()
    if whole_said and len(cache) == start + size and _one_column_more(whole_said, start + size):  # not the position
        raise CaseFailure(f"{call} raised {error.type_name}, as the same tokens' forward without a cache does: "
                          f"{MASK_ONE_COLUMN_MORE}") from None
    if len(cache) == start + size and (isinstance(error, ValueError) or sizes == {start + size, start + 2 * size}):
        raise CaseFailure(f"{call} raised {error.type_name}: {AFTER_UPDATE}") from None
    if start and found and found.re is _BATCH2 and (int(found.group(1)), int(found.group(2))) == (start + size, size):
        raise CaseFailure(f"{call} raised {error.type_name} multiplying the weights by the values: the weights have a "
                          f"column for every key held ({start} + {size}), but the values are the {size} new tokens' "
                          "only: the values, like the keys, are all those cache.update returns") from None
    if start and size > 1 and found and found.re is _MISMATCH and found.group(3) == "2" and \
            (int(found.group(1)), int(found.group(2))) == (start + 1, start + size) and start + 1 != size:
        raise CaseFailure(f"{call} raised {error.type_name}: the mask slice is one new token's row ({start + 1} wide, "
                          f"len(cache) + 1){ONE_TOKEN_ROW}") from None
    # torch names the mask "tensor a" in masked_fill: a narrow mask (size wide, or start + size high), not
    # narrow scores (new keys only), is the mask's fault.
    if start and found and found.re is _MISMATCH and sizes == {size, start + size} and \
            int(found.group(1)) == (size if found.group(3) == "2" else start + size):
        _mask_not_wide_enough(error, start, size, call, found.group(3))
    if start and found and found.re is _MISMATCH and found.group(3) == "1" and found.group(1) == "0":
        raise CaseFailure(f"{call} raised {error.type_name} where the scores meet the mask: {EMPTY_MASK_ROWS}") from None  # a mask of no rows
    if start and found and found.re is _MISMATCH and found.group(3) == "2" and \
            (int(found.group(1)), int(found.group(2))) == (start + size, size):  # a wide mask, narrow scores
        raise CaseFailure(f"{call} raised {error.type_name}: the new tokens' scores have a column for the {size} "
                          f"new keys only, but the mask slice spans every key held ({start} + {size}): {NEW_KEYS_ONLY}"
                          ) from None
    if len(cache) == start + size and found and (int(found.group(1)), int(found.group(2))) == (start, start + size) \
            and (found.re is _BATCH2 or found.group(3) == "2"):
        # as wide as the keys before the call: a stop without the new tokens fails without a cache too (no column)
        why = MASK_COLUMNS_STOP_SHORT if whole_said else POSITION_BEFORE_UPDATE
        raise CaseFailure(f"{call} raised {error.type_name}: the mask slice it used is only as wide as the keys cached "
                          f"before this call ({start}), without the {size} new key{'s' * (size != 1)}: {why}") from None


# mask[start:start + 1, :start + 1]: one new token's row, as generation feeds them, which a call of several (a prompt
# after a cached prefix) does not fit; without a cache the (1, 1) slice broadcasts and blocks nothing.
ONE_TOKEN_ROW = (", as if every call brought one token: a call may bring several (a prompt), each new token with its "
                 "own row of the mask, as wide as every key held")
# mask[start:start + t, :start + t] with start = len(cache) - t taken before cache.update, where it is the position t
# tokens before the cache's end: the slice is as wide as the keys cached before the call, and right without a cache.
POSITION_BEFORE_UPDATE = ("the scores have a column per key held, the cached ones and the new ones, and so must the "
                          "mask: is the new tokens' position taken as len(cache) - t before cache.update has counted "
                          "them? Without a cache it is right")
# mask[start:start + t, :start]: the columns stop where the tokens before the call end, so without a cache (start 0)
# the slice has no column at all.
MASK_COLUMNS_STOP_SHORT = ("its columns stop where the tokens before this call end, even without a cache (no column "
                           "at all there): the scores have a column per key held, this call's own keys included")


def _mask_not_wide_enough(error, start, size, call, dimension):
    """The new tokens' scores (size x start + size) met a mask slice only `size` wide (CausalAttention's
    mask[:t, :t]), or one with a row per token so far. Where t is len(cache) + 1, one new token's row (ONE_TOKEN_ROW) is
    as wide, and the error's sizes cannot tell the two apart: both are named."""
    if dimension == "2" and start + 1 == size:
        raise CaseFailure(f"{call} raised {error.type_name}: the mask slice is {size} columns wide where the scores "
                          f"have {start} + {size}, one per key held: is it cut t wide (the new tokens' rows of the mask "
                          f"span every key so far), or, as wide here, one new token's row (len(cache) + 1)"
                          f"{ONE_TOKEN_ROW}?") from None
    if dimension == "2":
        raise CaseFailure(f"{call} raised {error.type_name}: the new tokens' scores have a column for every key "
                          f"held, cached ones included ({start} + {size}), but the mask slice has only {size}: "
                          "the new tokens' rows of the mask span all the keys so far (or is the slice transposed, "
                          "a row per key?)") from None
    raise CaseFailure(f"{call} raised {error.type_name}: the mask slice has a row for every token so far ({start} + "
                      f"{size}), but only the {size} new tokens have queries: take their rows alone") from None


def expect_rows(out, size, call, start=0, context_length=None):
    """The output of `size` new tokens after `start` cached ones has a row each; none at all is named (an empty
    slice of the mask), one per position up to context_length (a slice of the mask's rows to its end), and, for one
    new token, one per key held, all alike (the slice transposed; the two coincide where the counts do)."""
    rows = np.shape(out)[1] if np.ndim(out) == 3 else None
    to_end = context_length is not None and rows == context_length - start != size
    transposed = start and size == 1 and rows == start + 1 and np.allclose(out, out[:, :1], equal_nan=True)
    if to_end and transposed:
        raise CaseFailure(f"{call} has shape {fmt_shape(np.shape(out))}, as many rows as there are keys held and as "
                          f"positions from {start} to context_length={context_length}: {MASK_ROWS_TO_END}; or "
                          f"{MASK_TRANSPOSED}")
    if to_end:
        raise CaseFailure(f"{call} has shape {fmt_shape(np.shape(out))}, a row for every position from {start} to "
                          f"context_length={context_length}: {MASK_ROWS_TO_END}")
    if transposed:
        raise CaseFailure(f"{call} has shape {fmt_shape(np.shape(out))}: the new token's output, once for every key "
                          f"held ({start} + 1), all alike: {MASK_TRANSPOSED}")
    if np.ndim(out) == 3 and np.shape(out)[1] == 0 < size:  # scores (batch, t, keys) broadcast with a mask of no rows
        raise CaseFailure(f"{call} has shape {fmt_shape(np.shape(out))}, no row at all: {EMPTY_MASK_ROWS}")


# scores.masked_fill(blocked.T, ...): the new token's (1, keys) slice made (keys, 1), against which its (1, keys)
# scores broadcast into a row per key, each blocking nothing; without a cache it blocks the earlier keys.
MASK_TRANSPOSED = ("the mask slice is transposed, (keys, t) for (t, keys), so the one new token's scores broadcast "
                   "against it into a row per key held: a row of the mask belongs to a query, a column to a key")


def expect_grown(cache, start, size, call, width=None):
    """After a forward with `size` new tokens, the cache holds `start` + `size` (or nothing at all:
    a cache never filled is the caller's to name). A first update that made it hold `width` (the keys'
    width, d_out) tokens was handed keys with their last two axes swapped."""
    held = len(cache)
    if start == 0 and held == width != size:
        raise CaseFailure(f"{call}: len(cache) is {held} after it, the keys' width d_out, not the {size} new tokens: "
                          f"{TRANSPOSED_KEYS}")
    if held not in (0, start + size):
        raise CaseFailure(f"{call}: len(cache) is {held} after it, expected {start} + {size} = {start + size}: "
                          "call cache.update once per forward, with the keys and values of the new tokens only")


ROWS_ONE_ON = ("the new tokens' rows of the mask start one row too far on, at len(cache) + 1 (at 1 without a cache): "
               "each token gets the row of the token after it, so it also sees that token, and where the tokens reach "
               "context_length the slice runs off the mask's end, a row short; new token i sits at position "
               "len(cache) + i")
ROWS_ONE_BACK = ("the new tokens' rows of the mask start one row back, at len(cache) - 1: each token gets the row of the "
                 "token before it, which blocks its own key, and without a cache the slice starts at -1, the mask's "
                 "last row, and holds no row at all; new token i sits at position len(cache) + i")
SEES_NEXT = ("each token also sees the token right after it, as if its row of the mask were the next token's (are the "
             "rows sliced one on, from len(cache) + 1, or is the triangle one diagonal too high?): token i of a call "
             "sits at position len(cache) + i and sees the keys up to that position only")

BLOCKS_ITSELF = ("each token is blocked from its own key, as if its row of the mask were the previous token's (are the "
                 "rows sliced one back, from len(cache) - 1, or does the triangle take in the diagonal?): the first "
                 "token is left no key at all, which makes nan; token i of a call sits at position len(cache) + i "
                 "and sees the keys up to that position, its own included")


def explain_shifted_rows(impl, what, said):
    """A forward `what` that raised (`said`), or gave a wrong number of rows, is run again on a layer with room
    to spare, 3 new tokens after 2 cached ones (a KVCache filled here with their keys and values): a mask
    whose rows start one off fits there, and one row on or back is named."""
    r = rng(1545)
    linears = random_projections(r, 3, 4, False)
    x = r.normal(size=(2, 5, 3))
    cache = impl.KVCache()
    try:
        cache.call("update", *(tensor(x[:, :2] @ linears[name][0].T) for name in ("W_key", "W_value")))
        layer = loaded_module(impl, "CachedCausalAttention", (3, 4, 8, 0.0, False), linears, explained=False)
        out = to_array(layer(tensor(x[:, 2:]), cache=cache), what)
    except (RemoteError, CaseFailure):
        return
    for shift, why in ((1, ROWS_ONE_ON), (-1, ROWS_ONE_BACK)):
        if close(out, model(x, linears, [2, 3], shift=shift)[:, 2:]):
            raise CaseFailure(f"{what} {said}; on a layer with room to spare (context_length 8), 3 new tokens "
                              f"after 2 cached ones show why: {why}") from None


class WholeInputs(Layer):
    """The layer, whose forward without a cache names a refusal (ValueError) of tokens context_length fits, and a mask
    slice whose rows or columns run on to the mask's end: without a cache it runs as CausalAttention does."""

    def __call__(self, *args, **kwargs):
        num_tokens = getattr(args[0], "shape", (0, 0))[1] if args else 0
        try:
            out = super().__call__(*args, **kwargs)
        except RemoteError as error:
            if isinstance(error, ValueError) and kwargs.get("cache") is None and num_tokens <= self.fits:
                raise CaseFailure(f"{self.what}: forward of {num_tokens} tokens without a cache raised ValueError "
                                  f"({first_line(error)}), though they fit in context_length: with no "
                                  "cache, forward takes the whole sequence as CausalAttention does, its tokens at "
                                  "positions 0, 1, ...; refuse only more than context_length tokens") from None
            if kwargs.get("cache") is None and _no_column(str(error), num_tokens):
                raise CaseFailure(f"{self.what}: forward of {num_tokens} token{'s' * (num_tokens != 1)} without a "
                                  f"cache raised {error.type_name}: the mask slice it used has no column: "
                                  f"{MASK_COLUMNS_STOP_SHORT}") from None
            to_end = mask_to_end(self.fits, num_tokens, str(error)) if num_tokens < self.fits else None
            if kwargs.get("cache") is None and to_end is not None:
                in_product, why = to_end
                if in_product:
                    raise CaseFailure(f"{self.what}: forward of {num_tokens} token without a cache raised "
                                      f"{error.type_name} multiplying weights the mask made {self.fits} wide by "
                                      f"the values: {why}") from None
                raise CaseFailure(f"{self.what}: forward of {num_tokens} tokens without a cache raised "
                                  f"{error.type_name} masking the scores: {why}") from None
            if any(phrase in str(error) for phrase in SHAPE_MISMATCH):
                self._explain_rows(num_tokens, kwargs, f"raised {error.type_name}")
            raise
        shape = getattr(out, "shape", ())  # what is no array (a tuple, say) the caller's to_array names
        if len(shape) == 3 and 0 < num_tokens != shape[1]:  # a row per token, or a mask slice off
            self._explain_rows(num_tokens, kwargs, f"gave {shape[1]} rows")
        return out

    def right_without_cache(self, x, want):
        """Whether forward of the whole of x without a cache gives `want`: evidence for naming what a cache did, never
        graded (a forward that raises or is wrong there is the other cases' to take)."""
        try:
            out = to_array(self(x), self.what)
        except (RemoteError, CaseFailure):
            return False
        return out.shape == np.shape(want) and close(out, want)

    def _explain_rows(self, num_tokens, kwargs, said):
        """A mask slice whose rows start one off, shown on a layer where it fits (`explain_shifted_rows`)."""
        with_cache = "with" if kwargs.get("cache") is not None else "without"
        explain_shifted_rows(self._impl, f"{self.what}: forward of {num_tokens} token"
                             f"{'s' * (num_tokens != 1)} {with_cache} a cache", said)


# --- a NumPy model of cached attention, with known mistakes as switches -----------------------

def model(x, linears, sizes, *, offset=True, read=True, scale="head", mask="causal", fill=-np.inf, after=False,
          axis=-1, roles="qkv", new_keys_only=False, shift=0, from_end=None, normaliser="softmax"):
    """Outputs of feeding x in chunks through a cache, float64. offset False: the new tokens' mask is
    the top rows (mask[:t, :start + t]); read False: they attend only to themselves (causally);
    shift: their rows are taken `shift` rows on (mask[start + 1:...] for 1, one row back for -1), as if each
    token sat `shift` positions later; from_end (context_length): their rows are the mask's last t (mask[-t:]), as if
    the new tokens sat at the end of the context; new_keys_only: the scores are taken against the new keys alone while
    the values are all those held (a lone new token's one score spreads over every key; several new tokens
    after a cache do not fit). The
    other switches are `toolkit.attention`'s, on each chunk's queries and every key so far; also
    scale "tokens" (sqrt of the keys held) or "new_tokens" (sqrt of the call's new tokens), mask "inverted" (j <= i blocked: a keep-mask used as the
    blocked one) or "columns" (mask[:t, start:start + t]: the top rows, the new tokens' columns), roles "qqv" or "qvv" (the queries or the values cached as keys);
    `normaliser` "log_softmax" | "sigmoid": the masked scores made weights by another function (`model.NORMALISERS`)."""
    x = np.asarray(x, dtype=np.float64)

    def project(name):
        weight, bias = linears[name]
        y = x @ np.asarray(weight, dtype=np.float64).T
        return y if bias is None else y + np.asarray(bias, dtype=np.float64)

    made = {"q": project("W_query"), "k": project("W_key"), "v": project("W_value"), "x": x}
    q, k, v = (made[role] for role in roles)
    outs, start = [], 0
    for size in sizes:
        keys_from = 0 if read else start
        qs, ks, vs = q[:, start:start + size], k[:, keys_from:start + size], v[:, keys_from:start + size]
        divisor = {"head": np.sqrt(made["q"].shape[-1]), "none": 1.0, "d_in": np.sqrt(x.shape[-1]),
                   "d_out_linear": made["q"].shape[-1],
                   "twice_linear": 2 * made["q"].shape[-1], "tokens": np.sqrt(ks.shape[-2]), "new_tokens": np.sqrt(size)}[scale]
        scores = qs @ np.swapaxes(ks, -1, -2) / divisor
        if new_keys_only and start:
            if size > 1:
                raise ValueError("the new tokens' scores do not fit the mask")
            scores = np.broadcast_to(qs @ np.swapaxes(k[:, start:start + 1], -1, -2) / divisor, scores.shape)
        key_pos = np.arange(keys_from, start + size)[None, :]  # positions in the whole sequence
        query_pos = np.arange(size)[:, None] + ((start if offset else 0) + shift if from_end is None else from_end - size)
        blocked = {"causal": key_pos > query_pos, "none": key_pos < -1, "lower": key_pos < query_pos,
                   "diagonal": key_pos >= query_pos, "inverted": key_pos <= query_pos,
                   "columns": _columns_mask(start, size)}[mask]
        normalise = softmax if normaliser == "softmax" else NORMALISERS[normaliser]
        weights = softmax(scores, axis) * ~blocked if after else normalise(np.where(blocked, fill, scores), axis)
        outs.append(weights @ vs)
        start += size
    return np.concatenate(outs, axis=1)


def _columns_mask(start, size):
    """The causal mask's slice [:size, start:start + size]: the top rows, and the new tokens' columns only. A lone
    new token's (1, 1) slice spreads over all its scores; several new tokens after a cache do not fit them."""
    if start and size > 1:
        return np.zeros((size, 0), dtype=bool)  # no output: the code under test raises here (mask and scores differ)
    return np.arange(start, start + size)[None, :] > np.arange(size)[:, None]


# self.mask[-t:, ...]: the rows of the context's last t positions, whatever the cache holds
ROWS_FROM_END = ("the new tokens' rows of the mask are taken from its end (its last t rows, the positions at the end "
                 "of the context), not at the new tokens' own positions in the sequence, which the cache's length "
                 "tells: a prompt's tokens are masked as if they came later and see the tokens after them")


def from_end_mistake(compute, context_length):
    """[(candidate, ROWS_FROM_END)] of a layer built for `context_length`, `compute(**switches)` being `model` on the
    inputs at hand: none where context_length is not known."""
    return [] if context_length is None else [(lambda: compute(from_end=context_length), ROWS_FROM_END)]


NEW_KEYS_ONLY = ("the scores are the new queries times every key cache.update returns, the cached ones included, "
                 "not the new tokens' keys alone")
INVERTED_MASK = ("the mask blocks the keys each token may see and keeps the later ones (a True-means-keep mask, "
                 "like torch.tril, used where masked_fill wants True = blocked): the first token is left with no "
                 "key, which makes nan")
# if cache is None: masked_fill(...), the mask left out where a cache is given: right for one new token at a time,
# which sees only the past anyway, but not for a prompt of several new tokens fed through a cache.
UNMASKED_WITH_CACHE = ("through a cache nothing is masked, though the whole input without a cache is: the new tokens of "
                       "one call (a prompt of several) also see the new tokens after them; a call with a cache is "
                       "causal too, each new token seeing the keys up to its own position")
# keys, values = cache.update(...) unpacked the other way round: the keys and values swapped through a cache only, as
# projections swapped (keys from W_value) would swap them everywhere.
UNPACKED_SWAPPED = ("through a cache the keys and values are swapped, though the whole input without a cache is right: "
                    "the two tensors cache.update returns are taken in the other order (it returns the keys first)")
# A mistake's message where the same layer was right on the whole input, so that only a cache can have made it.
_RIGHT_WITHOUT_CACHE = [(dict(mask="none"), UNMASKED_WITH_CACHE), (dict(roles="qvk"), UNPACKED_SWAPPED)]


def seen_right_without_cache(switches, why):
    """`why`, or what the mistake of `switches` is through a cache alone, where it has a message of that kind."""
    return next((said for known, said in _RIGHT_WITHOUT_CACHE if known == switches), why)


def through_cache_where_right_without(ladder, full_mistakes, right_without_cache):
    """`ladder`, with each message of `full_mistakes` that has a through-a-cache form (`seen_right_without_cache`) in
    that form, where `right_without_cache()` finds the layer right on a whole input without a cache; a probe that
    raises finds nothing."""
    forms = {why: seen_right_without_cache(switches, why) for switches, why in full_mistakes}
    forms = {why: said for why, said in forms.items() if said != why}
    if not any(why in message for _, message in ladder for why in forms):
        return ladder
    try:
        right = right_without_cache()
    except Exception:  # noqa: BLE001 - a layer that fails the probe is not seen right
        right = None
    if not right:
        return ladder
    return [(candidate, functools.reduce(lambda m, pair: m.replace(*pair), forms.items(), message))
            for candidate, message in ladder]


CACHE_MISTAKES = [
    (dict(offset=False), "the mask of the new tokens ignores the cache's offset: new token i sits at position "
                         "len(cache) + i, so its row of the mask is mask[len(cache) + i], not mask[i]"),
    (dict(read=False), "the cache is filled but never read: the new tokens attend only to themselves; attend "
                       "to all the keys and values cache.update returns"),
    (dict(scale="none"), NOT_SCALED),
    (dict(offset=False, scale="none"), "the scores are not scaled, and the mask ignores the cache's offset"),
    (dict(scale="d_in"), SCALED_BY_D_IN),
    # sqrt(x.shape[1]): T without a cache, so the whole input's message; 1 for a lone new token, which no
    # output tells from no scale at all (both are named there)
    (dict(scale="new_tokens"), SCALED_BY_TOKENS),
    *[(dict(roles=f"q{role}v"), f"the cache holds the {held} in place of the keys: cache.update takes the new keys "
                                f"(W_key(x)) and values") for role, held in (("q", "queries"), ("v", "values"))],
    (dict(mask="inverted"), INVERTED_MASK),
    (dict(mask="columns"), "the new tokens' mask takes the top rows (queries 0..t-1) and only the new tokens' "
                           "columns, from len(cache): new token i sits at position len(cache) + i, and its row of "
                           "the mask spans every key held, cached ones included, from column 0"),
    (dict(shift=1), SEES_NEXT),
    (dict(shift=-1), BLOCKS_ITSELF),
    (dict(new_keys_only=True), "a lone new token's one score is spread over every key held, so it weighs every "
                               "cached token the same (its output is the mean of their values): " + NEW_KEYS_ONLY),
]
