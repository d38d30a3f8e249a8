"""Hidden suite of `split_heads` (assignment 04)."""

import itertools
import re

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites import toolkit
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored, rng

STEP = "split_heads"


def stored_inputs():
    r = rng(1601)
    shapes = [((2, 3, 6), 2, "a (2, 3, 6) batch into 2 heads"),
              ((1, 4, 6), 3, "a (1, 4, 6) batch into 3 heads"),
              ((3, 5, 8), 4, "a (3, 5, 8) batch into 4 heads"),
              ((2, 1, 4), 1, "a single token into 1 head"),
              ((2, 3, 4), 4, "(2, 3, 4) into 4 heads of width 1")]
    records = [dict(label=label, x=r.normal(size=shape).astype(np.float32), num_heads=np.int64(h))
               for shape, h, label in shapes]
    records.append(dict(label="float64 (2, 2, 6) into 3 heads", x=r.normal(size=(2, 2, 6)),
                        num_heads=np.int64(3)))
    return records


AXES = ("batch", "num_heads", "T", "head_dim")
TOKENS_CUT = ("cuts the tokens axis into heads, so each head gets a block of whole tokens: the heads are slices "
              "of every token's features (the last axis), and each keeps all T tokens")


def _split(impl, x, num_heads):
    """impl.split_heads(x, num_heads); an exception that a retry on an easier input explains is named
    by its cause: a size taken from T where D belongs is right only where T == D, a split of the tokens
    axis fails only where T is no multiple of num_heads, and code that assumes one sequence fails only on
    a batch of more than one."""
    try:
        split = impl.split_heads(x, num_heads)
    except RemoteError as error:
        if VIEW_AFTER_TRANSPOSE in str(error):  # x comes in contiguous: only the student's own transpose reorders it
            raise CaseFailure(f"split_heads raised {error.type_name}: it views x after transposing it, {SPLIT_FIRST}") \
                from None
        _explain_empty_slice(error, num_heads)
        batch, num_tokens, _ = x.shape
        _explain_fixed_head_width(impl, error, x, num_heads)

        def works_on(easier):
            try:
                return impl.split_heads(easier, num_heads)
            except RemoteError:
                return RAISED

        width = x.shape[-1]
        as_many_tokens_as_features = x[:, torch.arange(width) % num_tokens]  # T == D
        if num_tokens != width and _is_right_split(works_on(as_many_tokens_as_features), as_many_tokens_as_features,
                                                   num_heads):
            # a size taken from T where D belongs is right only where T == D (a cut of the tokens is not)
            raise CaseFailure(f"split_heads raised {error.type_name} on {num_tokens} tokens of {width} features but "
                              f"split {width} tokens right: {SIZED_BY_TOKENS}") from None
        if num_tokens % num_heads and works_on(torch.cat([x] * num_heads, dim=1)) is not RAISED:
            raise CaseFailure(f"split_heads raised {error.type_name} on {num_tokens} tokens into {num_heads} "
                              f"heads but not on {num_tokens * num_heads} tokens: it {TOKENS_CUT}") from None
        if batch > 1 and works_on(x[:1]) is not RAISED:
            raise CaseFailure(f"split_heads works on a batch of one sequence but raised {error.type_name} on a "
                              f"batch of {batch}: every sequence of the batch is split, and the batch axis "
                              "stays first") from None
        raise
    return split


# view(batch, T, num_heads, 1): a head width written as a number, which fits only the D its author had in mind
_VIEW_SIZES = re.compile(r"shape '\[(\d+), (\d+), (\d+), (\d+)\]' is invalid for input of size")
FIXED_HEAD_WIDTH = ("a head width written as a fixed number fits only inputs whose D is num_heads times it: each head "
                    "is head_dim = D // num_heads features wide, taken from x's own last axis")


def _explain_fixed_head_width(impl, error, x, num_heads):
    """A view that raised with the batch, T and num_heads right and a head width other than D // num_heads, which
    splits right an input of as many more tokens as heads whose D is num_heads times that width: the width does not
    come from x (a width taken from T would not fit the longer input)."""
    sizes = _VIEW_SIZES.search(str(error))
    batch, num_tokens, width = x.shape
    if sizes is None or [int(n) for n in sizes.groups()[:3]] != [batch, num_tokens, num_heads]:
        return
    head_width = int(sizes.group(4))
    fitting = torch.arange(batch * (num_tokens + num_heads) * num_heads * head_width, dtype=x.dtype)
    fitting = fitting.reshape(batch, num_tokens + num_heads, num_heads * head_width)
    try:
        split = impl.split_heads(fitting, num_heads)
    except RemoteError:
        return
    if _is_right_split(split, fitting, num_heads):
        raise CaseFailure(f"split_heads raised {error.type_name} on {num_tokens} tokens of {width} features into "
                          f"{num_heads} heads, and splits right tokens of {num_heads * head_width} features: it cuts every "
                          f"token into heads of {head_width} feature{'s' * (head_width != 1)} whatever D is: "
                          f"{FIXED_HEAD_WIDTH}") from None


def _split_to_heads(impl, x, num_heads):
    """_split, where its result is to be one array: a tuple of the heads' feature slices is named as such."""
    split = _split(impl, x, num_heads)
    if _are_the_slices(split, x, num_heads):
        raise CaseFailure(f"split_heads(x, {num_heads}) of a {checks.fmt_shape(tuple(x.shape))} tensor {SLICES_UNSTACKED}")
    return split


# torch.chunk and torch.split cut the features right but give a tuple, which the checks of one array would call
# several results returned (the weights beside a context, say): its items are what names it
SLICES_UNSTACKED = ("returns the heads' feature slices as a tuple, as torch.chunk or torch.split gives them, never "
                    "stacked on a head axis: torch.stack(slices, dim=1) makes (batch, num_heads, T, head_dim), as a "
                    "view to (batch, T, num_heads, head_dim) and transpose(1, 2) do")


def _are_the_slices(split, x, num_heads):
    """Whether `split` is a tuple or list of x's num_heads consecutive feature slices, each (batch, T, head_dim)."""
    if not isinstance(split, (tuple, list)) or len(split) != num_heads:
        return False
    slices = torch.chunk(x, num_heads, dim=-1)
    return all(torch.is_tensor(part) and part.shape == want.shape and torch.equal(part, want)
               for part, want in zip(split, slices))


VIEW_AFTER_TRANSPOSE = "view size is not compatible with input tensor's size and stride"
SPLIT_FIRST = ("and a transpose before the cut would mix features and tokens even with .reshape: view x as (batch, T, "
               "num_heads, head_dim) first, while the features are the last axis, then transpose(1, 2)")
RAISED = object()  # what a retry that raised gives: None is an answer (of the wrong kind)
SIZED_BY_TOKENS = ("a size in its view or reshape comes from the number of tokens (num_tokens // num_heads?) "
                   "where the number of features belongs: each head is head_dim = D // num_heads features wide")


def _is_right_split(split, x, num_heads):
    batch, num_tokens, width = x.shape
    want = x.reshape(batch, num_tokens, num_heads, width // num_heads).transpose(1, 2)
    return torch.is_tensor(split) and split.shape == want.shape and torch.equal(split, want)


def apply(impl, record):
    return _split_to_heads(impl, torch.tensor(record["x"]), int(record["num_heads"]))


def _mistakes(x, h):
    b, t, d = x.shape
    hd = d // h
    right = x.reshape(b, t, h, hd).transpose(0, 2, 1, 3)
    return [(lambda: x.reshape(b, h, t, hd),
             "mixes tokens across heads, as a reshape to (batch, num_heads, T, head_dim) without a transpose, "
             "or a cut along the tokens axis, does: each head keeps all T tokens and a slice of every "
             "token's features"),
            (lambda: x.reshape(b, t, hd, h).transpose(0, 3, 1, 2), "head i gets every num_heads-th feature "
             "(i, i+h, ...); it must get the contiguous block [i*D/h, (i+1)*D/h)"),
            (lambda: right[:, ::-1],
             "the heads come out in reverse order: head 0 holds the first D/h features"),
            # the right values with the axes in another order: each order named by its axes
            *[((lambda order=order: right.transpose(order)),
               f"its axes come out in the order ({', '.join(AXES[i] for i in order)}); split_heads returns "
               f"({', '.join(AXES)})" + (f" (or {TRANSPOSED_FIRST}, the same where T equals head_dim)"
                                         if order == (0, 1, 3, 2) and t == hd else ""))
              for order in itertools.permutations(range(4)) if order != (0, 1, 2, 3)],
            # where T equals head_dim, x transposed before the reshape is (batch, num_heads, head_dim, T), named above
            *[(lambda: np.swapaxes(x, 1, 2).reshape(b, h, t, hd), f"{TRANSPOSED_FIRST}: {RESHAPE_FIRST}")] * (t != hd),
            (lambda: x.reshape(b, h, hd, t).transpose(0, 1, 3, 2), HEADS_BEFORE_TOKENS),
            # torch.cat of the chunks along the batch or the tokens: the slices right, no head axis
            *[(lambda dim=dim: np.concatenate(np.split(x, h, axis=-1), axis=dim), CONCATENATED) for dim in (0, 1)],
            # x.shape unpacked as (T, batch, D): the view reads the batch's memory in the wrong sizes
            *[(lambda: x.reshape(t, b, h, hd).transpose(0, 2, 1, 3), UNPACKED_SWAPPED)] * (b != t),
            *_wrong_number_of_heads(x, h),
            (lambda: right.reshape(b * h, t, hd), FOLDED_INTO_BATCH), *_sliced_wrongly(x, h)]


def _sliced_wrongly(x, h):
    """The heads cut one slice at a time (x[..., start:stop] for each head, stacked on axis 1): each started at
    feature i where i * head_dim belongs, and a loop that stops one head short."""
    hd = x.shape[-1] // h

    def stacked(starts):
        return np.stack([x[..., start:start + hd] for start in starts], axis=1)

    t = x.shape[1]
    # a head short and a head per token are one output where T == num_heads - 1: both are named there
    fewer = [message for count, message in ((h - 1, HEAD_SHORT), (t, HEAD_PER_TOKEN)) if count == h - 1 and h > 1]
    return [*[(lambda: stacked(range(h)), SLICES_OVERLAP)] * (h > 1 and hd > 1),
            *[(lambda: stacked(range(0, (h - 1) * hd, hd)), checks.one_or_all(fewer))] * bool(fewer),
            *[(lambda: stacked(range(0, t * hd, hd)), HEAD_PER_TOKEN)] * (t < h - 1)]


SLICES_OVERLAP = ("head i's slice starts at feature i, not i * head_dim, so the heads' slices overlap and the last "
                  "features belong to no head: head i holds the block [i*D/h, (i+1)*D/h)")
HEAD_SHORT = ("makes num_heads - 1 heads, the last head's features left out: does the loop over the heads stop one "
              "short (range(num_heads - 1))? Every feature belongs to some head")
HEAD_PER_TOKEN = ("makes one head per token, T heads: does the loop over the heads run over the tokens' count "
                  "(range(num_tokens))? There are num_heads heads, whatever T is")
# torch.stack of the slices where one came out empty, a slice that starts at or past D: the first empty one is the
# last of num_heads where the slices start one head late (range(1, num_heads + 1)), and one past it where there
# are more slices than heads (a loop over the tokens' count, say)
EMPTY_SLICE = re.compile(r"stack expects each tensor to be equal size, but got \[[\d, ]*\] at entry \d+ and "
                         r"\[[\d, ]*, 0\] at entry (\d+)")
SLICE_PAST_END = "a slice of the features came out empty (0 features wide), so it starts at or past the last feature: "
ONE_HEAD_LATE = ("the last head's slice is the empty one, so each slice starts one head late (range(1, num_heads + 1)"
                 "?): head i holds the block [i*D/h, (i+1)*D/h) for i from 0 to num_heads - 1")
MORE_SLICES_THAN_HEADS = ("slice {} is empty, past the last of the num_heads = {} heads: does the loop over the heads "
                          "run over another count (the tokens', range(num_tokens))? There are num_heads slices")


def _explain_empty_slice(error, num_heads):
    """A stack of the heads' slices that raised on an empty one, named by which slice came out empty."""
    empty = EMPTY_SLICE.search(str(error))
    if empty is None:
        return
    entry = int(empty.group(1))
    why = ONE_HEAD_LATE if entry == num_heads - 1 else MORE_SLICES_THAN_HEADS.format(entry, num_heads)
    raise CaseFailure(f"split_heads raised {error.type_name}: {SLICE_PAST_END}{why}") from None


FOLDED_INTO_BATCH = ("the heads are folded into the batch axis, (batch * num_heads, T, head_dim), the layout some "
                     "libraries use; here the heads get an axis of their own: (batch, num_heads, T, head_dim)")


UNPACKED_SWAPPED = ("views x as (T, batch, num_heads, head_dim), the batch and token counts swapped (x.shape "
                    "unpacked in the wrong order?): x is (batch, T, D), so batch, num_tokens, width = x.shape")


TRANSPOSED_FIRST = "transposes x to (batch, D, T) before the reshape"
RESHAPE_FIRST = ("a reshape regroups entries in memory order, so it cuts each token's features into heads only while "
                 "the features are the last axis: reshape to (batch, T, num_heads, head_dim) first, then transpose "
                 "dims 1 and 2")


# x.view(batch, num_heads, head_dim, T).transpose(2, 3): the shape is right, but the view cuts the memory of the
# (T, D) rows as if it held each head's features before the tokens
HEADS_BEFORE_TOKENS = ("views x as (batch, num_heads, head_dim, T) and then swaps the last two axes: a view cuts the "
                       "entries in memory order, where each token's D features lie together, so no view can take the "
                       "tokens from the last axis; view as (batch, T, num_heads, head_dim) first, then transpose(1, 2)")


CONCATENATED = ("joins the heads' feature slices along an existing axis (torch.cat), so they run on after one another "
                "there; torch.stack(slices, dim=1) puts them on a new head axis, (batch, num_heads, T, head_dim)")


# view(batch, T, head_dim, num_heads).transpose(1, 2) makes head i of features [i*h, (i+1)*h), as torch.split(h) does
SIZES_SWAPPED = "a view to (batch, T, head_dim, num_heads), the two sizes swapped"


def _wrong_number_of_heads(x, h):
    """A fixed 2 heads (the chapter's), and slices h features wide (torch.split's argument is a slice's
    size, torch.chunk's a number of slices; or a view with head_dim and num_heads swapped), which makes
    d // h heads: the same output where d == 2h."""
    b, t, d = x.shape
    two = "makes 2 heads instead of num_heads"
    by_size = ("torch.split takes a slice's size, torch.chunk a number of slices: cut the features into "
               "num_heads slices")
    found = []
    if h != 2 and d % 2 == 0:
        message = (f"{two}: a fixed 2 (the chapter's number), or slices num_heads wide ({SIZES_SWAPPED}, or "
                   f"torch.split: {by_size})" if d == 2 * h else f"{two} (the chapter's number), whatever num_heads is")
        found.append(((lambda: x.reshape(b, t, 2, d // 2).transpose(0, 2, 1, 3)), message))
    if d != 2 * h and d // h != h:
        found.append(((lambda: x.reshape(b, t, d // h, h).transpose(0, 2, 1, 3)),
                      f"cuts the features into slices num_heads wide, which makes D // num_heads heads ({SIZES_SWAPPED}, or "
                      f"torch.split: {by_size})"))
    return found


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference for several batch sizes, lengths and numbers of heads"""

    def symptoms(record, k):
        return _mistakes(np.asarray(record["x"], dtype=np.float64), int(record["num_heads"]))

    check_stored(impl, STEP, apply, "split_heads(x, num_heads)", symptoms=symptoms)


@case(STEP, "property")
def test_head_holds_feature_block(impl):
    """head i holds features [i*D/h, (i+1)*D/h) of every token, in order"""
    b, t, d, h = 2, 3, 8, 4
    x = 1000 * np.arange(b)[:, None, None] + 100 * np.arange(t)[None, :, None] + np.arange(d)
    x = x.astype(np.float32)
    out = _split_to_heads(impl, torch.tensor(x), h)
    what = "split_heads of a (2, 3, 8) tensor into 4 heads"
    out = checks.to_array(out, what)
    if out.shape == (b, t, h, d // h):
        raise CaseFailure(f"{what} has shape (2, 3, 4, 2), i.e. (batch, T, num_heads, head_dim); "
                          "transpose dims 1 and 2 to get (batch, num_heads, T, head_dim)")
    checks.expect_close(out, x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3), what, atol=0, rtol=0,
                        symptoms=_mistakes(x, h))


@case(STEP, "oracle")
def test_matches_torch_multihead_attention(impl):
    """attention per head of split_heads(x) reproduces torch.nn.MultiheadAttention (identity projections)"""
    b, t, d, h = 2, 5, 6, 3
    x = torch.tensor(rng(1602).normal(size=(b, t, d)), dtype=torch.float32)
    want = toolkit.torch_identity_multihead(x, h)
    heads = _split_to_heads(impl, x, h)
    if heads is None:
        raise checks.returned_none("split_heads(x, 3) of a (2, 5, 6) tensor")
    if not torch.is_tensor(heads):
        raise CaseFailure(f"split_heads returned a {type(heads).__name__}; return a torch tensor")
    what = "split_heads(x, 3) of a (2, 5, 6) tensor"
    if tuple(heads.shape) != (b, h, t, d // h):  # a wrong shape is named by the ladder if it can be
        checks.expect_close(heads, x.view(b, t, h, d // h).transpose(1, 2).numpy(), what,
                            symptoms=_mistakes(x.numpy().astype(np.float64), h))

    def attend(split):
        split = torch.as_tensor(np.ascontiguousarray(split), dtype=torch.float32)
        context = torch.nn.functional.scaled_dot_product_attention(split, split, split)
        return context.transpose(1, 2).reshape(b, t, d).numpy()

    checks.expect_close(attend(heads.detach()), want, "attention run per head on split_heads(x, 3), merged, "
                        "compared with nn.MultiheadAttention(6, 3) with identity projections",
                        symptoms=[((lambda m=m: attend(m())), msg) for m, msg in _mistakes(x.numpy(), h)])


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves x unchanged"""
    x = torch.tensor(rng(1603).normal(size=(2, 3, 6)), dtype=torch.float32)
    _split(impl, x, 2)  # an exception is named by its cause first
    checks.expect_inputs_unchanged(impl, "split_heads", [x], ["x"], more=(2,))
