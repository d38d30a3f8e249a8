"""Hidden suite of `causal_mask` (assignment 03)."""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored, notes_cases, rng

STEP = "causal_mask"

_SIZES = (1, 2, 3, 6, 10)


def stored_inputs():
    return [dict(label=f"num_tokens={n}", num_tokens=np.int64(n)) for n in _SIZES]


def _not_additive(mask, what):
    """A float mask with negative entries is the additive convention (-inf or a large negative number
    added to the blocked scores, 0 elsewhere), not a 0/1 mask of the wrong dtype: named by its own cause."""
    if torch.is_tensor(mask) and mask.is_floating_point() and bool(mask.isnan().any()):
        raise CaseFailure(f"{what} holds nan: 0 * float('-inf') is nan, so a 0/1 mask multiplied by -inf has nan "
                          "where an additive mask has 0; causal_mask returns neither: a torch.bool tensor, True where "
                          "a key is blocked")
    if torch.is_tensor(mask) and mask.is_floating_point() and bool((mask < 0).any()):
        raise CaseFailure(f"{what} is an additive float mask (negative where blocked, 0 elsewhere, as "
                          "nn.Transformer's float masks are); causal_mask returns a torch.bool tensor, True "
                          "where a key is blocked")


def _extra_axes(mask):
    """The extra leading axes of a mask of shape (1, ..., 1, T, T), or () for any other shape."""
    shape = tuple(getattr(mask, "shape", ()))
    return shape[:-2] if len(shape) > 2 and shape[-1] == shape[-2] and set(shape[:-2]) == {1} else ()


def _no_extra_axes(mask, what):
    """A (1, T, T) mask has a batch axis it does not need: named by its own cause (its entries are
    graded by the other cases)."""
    if _extra_axes(mask):
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(mask.shape)}, an extra leading axis of size 1; "
                          "causal_mask returns a (T, T) mask, which broadcasts over a batch as it is")


def _not_one_axis_of_positions(mask, num_tokens, what):
    """A mask of one axis, (T,), all True or all False: T positions compared with themselves one by one
    (arange(T) > arange(T)), where one side needs an axis of its own to meet every other position. Both
    sides given the same axis, (1, T) or (T, 1), compare them one by one too (for T > 1: a (1, 1) mask
    is the right shape's single entry)."""
    shape = tuple(getattr(mask, "shape", ()))
    same_axis = num_tokens > 1 and shape in ((1, num_tokens), (num_tokens, 1))
    if (shape == (num_tokens,) or same_axis) and len(set(np.asarray(mask).ravel().tolist())) == 1:
        entry = bool(np.asarray(mask).ravel()[0])
        if same_axis:
            raise CaseFailure(f"{what} has shape {checks.fmt_shape(shape)}, every entry {entry}: {SAME_AXIS}")
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(shape)}, every entry {entry}: "
                          "the positions are compared with themselves one by one (torch.arange(T) > torch.arange(T)); "
                          "give one side an axis of its own, torch.arange(T)[None, :] > torch.arange(T)[:, None], so "
                          "that each key position meets each query position in a (T, T) mask")


SAME_AXIS = ("both sides of the comparison got the same new axis (torch.arange(T)[None, :] > torch.arange(T)[None, :]), "
             "so each position still meets only itself; the keys' positions go along the columns and the queries' "
             "down the rows, torch.arange(T)[None, :] > torch.arange(T)[:, None], for a (T, T) mask")
INDICES = ("it holds the indices of the blocked entries (torch.triu_indices, or .nonzero() of the mask), not the mask: "
           "return the (T, T) bool tensor itself, True at those entries")


def _not_indices(mask, num_tokens, what):
    """The positions of the True entries, (2, K) as triu_indices gives them or (K, 2) as nonzero() does, where
    K = T(T - 1) / 2: named by what they are (a mask of any other kind is graded by its entries)."""
    if not torch.is_tensor(mask) or mask.dtype == torch.bool or mask.is_floating_point():
        return
    blocked = torch.triu_indices(num_tokens, num_tokens, offset=1)
    if any(tuple(mask.shape) == tuple(indices.shape) and torch.equal(mask.cpu(), indices)
           for indices in (blocked, blocked.T)):
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(mask.shape)}: {INDICES}")


def _fixed_size(impl, mask, num_tokens, what):
    """A right (M, M) mask where M != T, and the same (M, M) for another number of tokens: a mask made for a
    fixed number of tokens (written in, or made once for a maximum and cut), named before the one-size-off
    rung, which a single call cannot tell from it where M = T +- 1."""
    shape = tuple(getattr(mask, "shape", ()))
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] in (0, num_tokens):
        return
    if not np.array_equal(np.asarray(mask) != 0, np.triu(np.ones(shape, dtype=bool), 1)):
        return
    other = max(num_tokens, shape[0]) + 3
    try:
        with checks.diagnosing():
            again = impl.causal_mask(other)
    except RemoteError:
        return
    if tuple(getattr(again, "shape", ())) == shape:
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(shape)}, and so has causal_mask({other}): {FIXED_SIZE}")


FIXED_SIZE = ("the mask is made for a fixed number of tokens (a number written in, or a mask made once for a maximum "
              "and cut), though it is right on those tokens; build it from num_tokens, which sets both sizes")


def _examine(mask, what):
    _not_additive(mask, what)
    _not_from_ones(mask, 6, what)
    _not_indices(mask, 6, what)
    _no_extra_axes(mask, what)
    _not_one_axis_of_positions(mask, 6, what)  # the notes' example has six tokens


def _one_size_off(mask, num_tokens, what):
    """A (T + 1, T + 1) or (T - 1, T - 1) mask: a size counted from one or to T inclusive, named as such."""
    shape = tuple(getattr(mask, "shape", ()))
    if len(shape) == 2 and shape[0] == shape[1] and abs(shape[0] - num_tokens) == 1:
        extra = "too many" if shape[0] > num_tokens else "too few"
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(shape)}: one row and one column {extra}; the "
                          "mask has a row for each of the T queries and a column for each of the T keys, (T, T)")


def _not_from_ones(mask, num_tokens, what):
    """A bool (T, T) mask True only strictly above the diagonal, but False at some entries there in no pattern a
    known mistake makes (a row, a column, a diagonal): the triangle cut from a tensor whose entries were not all
    True (torch.empty's leftover memory, torch.rand's draws)."""
    if not torch.is_tensor(mask) or mask.dtype != torch.bool or tuple(mask.shape) != (num_tokens, num_tokens):
        return
    upper = np.triu(np.ones((num_tokens, num_tokens), dtype=bool), 1)
    entries = mask.cpu().numpy()
    higher = any((entries == np.triu(upper, k)).all() for k in range(2, num_tokens + 1))  # a diagonal too high
    if (entries & ~upper).any() or (entries == upper).all() or higher or checks.named_mistake(
            entries, stored_symptoms(dict(num_tokens=num_tokens), 0), atol=0, rtol=0) is not None:
        return
    raise CaseFailure(f"{what} is True only where key j > query i, but False at {int((upper & ~entries).sum())} of "
                      f"those entries, in no pattern of rows or columns: {NOT_FROM_ONES}")


NOT_FROM_ONES = ("is the triangle cut from a tensor whose entries are not all True (torch.empty holds whatever its "
                 "memory held, torch.rand its draws)? torch.triu only sets the other entries False, never one True")


def _mask(impl, num_tokens):
    mask = impl.causal_mask(num_tokens)
    _not_additive(mask, f"causal_mask({num_tokens})")
    _not_from_ones(mask, num_tokens, f"causal_mask({num_tokens})")
    _not_indices(mask, num_tokens, f"causal_mask({num_tokens})")
    _not_one_axis_of_positions(mask, num_tokens, f"causal_mask({num_tokens})")
    _fixed_size(impl, mask, num_tokens, f"causal_mask({num_tokens})")
    _one_size_off(mask, num_tokens, f"causal_mask({num_tokens})")
    return mask


def _entries(impl, num_tokens):
    """causal_mask(num_tokens) with extra leading axes of size 1 dropped: such a mask broadcasts like
    the (T, T) one, so the cases of its entries grade the entries, and the cases of its shape (the
    notes' example and test_bool_tensor) charge the extra axis, a slip."""
    mask = _mask(impl, num_tokens)
    return mask.reshape(mask.shape[-2:]) if _extra_axes(mask) else mask


def apply(impl, record):
    return _entries(impl, int(record["num_tokens"]))


# An inner loop over the keys, range(i + 1, T - 1), that stops one short: range leaves its stop out already.
LAST_KEY_OPEN = ("the last key (column T - 1) is blocked for no query, and every other entry is right: does a loop "
                 "over the keys stop one short (range(i + 1, T - 1))? range leaves its stop out already, so "
                 "range(i + 1, T) reaches the last key")
# ~torch.eye(T): each token allowed only itself
ONLY_ITSELF = ("True everywhere but the diagonal lets each token attend only to itself: the earlier tokens (j < i) are "
               "blocked too; True belongs strictly above the diagonal (key j > query i) alone")
BLOCKS_EARLIER = ("True below the diagonal blocks the EARLIER tokens; True belongs strictly above the diagonal "
                  "(key j > query i)")


def stored_symptoms(record, k):
    """[(mask, diagnosis)] of the known mistakes for `record`'s number of tokens: the ladder of the
    stored outputs and of the notes' worked example. On one or two tokens some coincide, so the stored
    case grades the masks of three tokens and more first."""
    ones = np.ones((int(record["num_tokens"]),) * 2)
    row_0_open = np.triu(ones, 1)
    row_0_open[:1] = 0
    last_key_open = np.triu(ones, 1)
    last_key_open[:, -1:] = 0
    return [(np.triu(ones, 0), "the diagonal is True as well: a token must be allowed to attend to "
                               "itself, so only entries strictly above the diagonal are True (diagonal=1)"),
            (np.tril(ones, -1), BLOCKS_EARLIER),
            (ones - np.eye(len(ones)), ONLY_ITSELF),
            (np.tril(ones, 0), "True marks the allowed entries (the convention of "
                               "F.scaled_dot_product_attention); here True means blocked: invert it"),
            (0 * ones, "no entry is True: the entries strictly above the diagonal must be True"),
            (row_0_open, "row 0 blocks nothing, and every other row is right: query 0 must be blocked from every "
                         "later key too; does a loop over the rows start at 1 (range(1, T))? Row 0 is a query as well"),
            (last_key_open, LAST_KEY_OPEN),
            (ones, "every entry is True: only the entries strictly above the diagonal must be"),
            (np.triu(ones, 2), "True starts one diagonal too high: each token may then attend to the token "
                               "right after it; every later key (j > i) must be blocked, the next one too"),
            (np.triu(ones, -1), "True starts one diagonal too low: each token is blocked from itself and "
                                "from the token before it; only later keys (j > i) are blocked"),
            (np.tril(ones, 1), "True fills the lower triangle up to one diagonal above the main one (tril "
                               "with triu's offset): the blocked keys lie strictly above the diagonal, the "
                               "rest of the mask is False")]


test_notes = notes_cases(STEP, replayed=stored_symptoms, examine=_examine)


@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """is True exactly strictly above the diagonal, for 1 to 10 tokens"""
    # the masks of three tokens and more first: on one or two tokens several mistakes give the same mask (on one,
    # the diagonal True, every entry True and True marking the allowed entries are all [[True]])
    for few in (False, True):
        check_stored(impl, STEP, apply, "causal_mask", atol=0, rtol=0, symptoms=stored_symptoms,
                     where=lambda record, few=few: (int(record["num_tokens"]) <= 2) == few)


@case(STEP, "property")
def test_bool_tensor(impl):
    """returns a torch.bool tensor of shape (T, T)"""
    for n in (4, 1):
        out = _mask(impl, n)
        if out is None:
            raise checks.returned_none(f"causal_mask({n})")
        if not torch.is_tensor(out):
            raise CaseFailure(f"causal_mask({n}) returned a {type(out).__name__}; return a torch tensor")
        if out.dtype != torch.bool:
            raise CaseFailure(f"causal_mask({n}) has dtype {out.dtype}; return a torch.bool tensor "
                              "(e.g. build it with dtype=torch.bool, or compare with == 1)")
        _no_extra_axes(out, f"causal_mask({n})")
        checks.expect_shape(out, (n, n), f"causal_mask({n})")


@case(STEP, "oracle")
def test_matches_torch_causal_attention(impl):
    """blocks what is_causal=True blocks (F.scaled_dot_product_attention, nn.MultiheadAttention)"""
    r = rng(1201)
    n, d = 7, 4
    q, k, v = (torch.tensor(r.normal(size=(2, n, d)), dtype=torch.float32) for _ in range(3))
    mask = _entries(impl, n)
    if not torch.is_tensor(mask):
        mask = torch.as_tensor(checks.to_array(mask, f"causal_mask({n})"))
    checks.expect_shape(mask, (n, n), f"causal_mask({n})")
    blocked = mask != 0
    if bool(blocked.all(dim=-1).any()):
        # which known mask does it, where the stored outputs' ladder knows (the lower triangle read as True = keep)
        named = checks.named_mistake(blocked.numpy(), stored_symptoms(dict(num_tokens=n), 0), atol=0, rtol=0)
        raise CaseFailure(f"causal_mask({n}) blocks every key of some query; a token must always be "
                          "allowed to attend to itself" + (f": {named}" if named else ""))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    # scaled_dot_product_attention's boolean attn_mask is True where attending is ALLOWED
    got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)
    # a wrong mask is named by the stored outputs' ladder, pushed through the same attention
    ladder = [((lambda wrong=wrong: torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=~torch.as_tensor(np.asarray(wrong) != 0)).numpy()), message)
        for wrong, message in stored_symptoms(dict(num_tokens=n), 0)]
    checks.expect_close(got, want, f"F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask({n})) "
                        "compared with is_causal=True", symptoms=ladder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(d, 2, batch_first=True).eval()
    with torch.no_grad():
        got = mha(q, k, v, attn_mask=blocked, need_weights=False)[0]
        want = mha(q, k, v, attn_mask=blocked.new_ones(n, n).triu(1), need_weights=False)[0]
    checks.expect_close(got, want, f"nn.MultiheadAttention with attn_mask=causal_mask({n}) compared with "
                        "its own causal mask")


@case(STEP, "property", weight=0.5)
def test_long_sequence(impl):
    """works for long sequences: T = 256 has T(T-1)/2 True entries, all above the diagonal"""
    n = 256
    out = checks.to_array(_entries(impl, n), f"causal_mask({n})")
    checks.expect_shape(out, (n, n), f"causal_mask({n})")
    rows, cols = np.nonzero(out)
    if len(rows) != n * (n - 1) // 2 or bool((cols <= rows).any()):
        named = checks.named_mistake(out != 0, stored_symptoms(dict(num_tokens=n), 0), atol=0, rtol=0)
        cause = f": {named}" if named else ""
        raise CaseFailure(f"causal_mask({n}) should be True exactly where column > row{cause}")
