"""Hidden suite of `merge_heads` (assignment 04)."""

import re

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.suites import toolkit
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import check_stored, rng

STEP = "merge_heads"


def stored_inputs():
    r = rng(1701)
    shapes = [((2, 2, 3, 3), "2 heads of width 3, 3 tokens, batch of 2"),
              ((1, 3, 4, 2), "3 heads of width 2, 4 tokens, batch of 1"),
              ((3, 4, 5, 2), "4 heads of width 2, 5 tokens, batch of 3"),
              ((2, 1, 3, 4), "a single head"),
              ((2, 4, 3, 1), "4 heads of width 1")]
    records = [dict(label=label, x=r.normal(size=shape).astype(np.float32)) for shape, label in shapes]
    records.append(dict(label="float64, 3 heads of width 2", x=r.normal(size=(2, 3, 2, 2))))
    return records


def apply(impl, record):
    return _merged(impl, torch.tensor(record["x"]))


def _merged(impl, x):
    """merge_heads(x); a reshape to one head's width (batch, T, head_dim), which cannot hold every head's
    features and raises, is named as such, and so is a width made of the wrong sizes of x."""
    try:
        return impl.merge_heads(x)
    except RemoteError as error:
        size = re.search(r"shape '\[(\d+), (\d+), (\d+)\]' is invalid for input of size", str(error))
        b, h, t, hd = x.shape
        if size is not None and h > 1 and tuple(int(n) for n in size.groups()) == (b, t, hd):
            raise CaseFailure(f"merge_heads raised {error.type_name}: it reshapes to (batch, T, head_dim), one head's "
                              "width, which cannot hold every head's features; the merged tokens are num_heads * "
                              "head_dim wide") from None
        width = int(size.group(3)) if size is not None and tuple(int(n) for n in size.groups())[:2] == (b, t) else None
        named = " or ".join(name for name, known in _wrong_widths(h, t, hd) if known == width)
        if named:
            raise CaseFailure(f"merge_heads raised {error.type_name}: it reshapes each token to {width} features, "
                              f"{named}; the merged tokens are num_heads * head_dim wide (x.shape[1] * x.shape[3])") \
                from None
        if error.type_name == "IndexError" and h > b and f"for dimension 0 with size {b}" in str(error):
            _explain_heads_read_from_batch(impl, x, error)
        if error.type_name == "IndexError" and h > t and f"for dimension 2 with size {t}" in str(error):
            _explain_heads_read_from_tokens(impl, x, error)
        if error.type_name == "IndexError" and t > h and f"for dimension 1 with size {h}" in str(error):
            _explain_heads_counted_by_tokens(impl, x, error)
        raise


def _wrong_widths(h, t, hd):
    """[(name, width)] of the merged widths a reshape may be given from the wrong sizes of x (h, t, hd)."""
    return [("num_heads + head_dim (+ for *)", h + hd),
            ("num_heads * T, from x.shape[1] * x.shape[2] (the tokens' axis for head_dim's)", h * t),
            ("T * head_dim, from the tokens' axis for the heads'", t * hd),
            ("head_dim * head_dim, head_dim where num_heads belongs", hd * hd),
            ("num_heads * num_heads, num_heads where head_dim belongs", h * h)]


def _explain_heads_read_from_batch(impl, x, error):
    """x[i] for head i indexes the batch, which raises where there are more heads than sequences: run again
    on a batch of exactly num_heads sequences, where it fits, and name it if it took the sequences for heads."""
    b, h, t, hd = x.shape
    as_many = x[torch.arange(h) % b]  # (num_heads, num_heads, T, head_dim): the batch as long as the heads
    try:
        out = checks.to_array(impl.merge_heads(as_many), "merge_heads")
    except RemoteError:
        return
    if toolkit.close(out, as_many.numpy().transpose(1, 2, 0, 3).reshape(h, t, h * hd)):
        raise CaseFailure(f"merge_heads raised {error.type_name} on a batch of {b} with {h} heads, and runs on a "
                          f"batch of {h}, which names the cause: {BATCH_AS_HEADS}") from None


def _explain_heads_read_from_tokens(impl, x, error):
    """x[:, :, i] for head i indexes the tokens, which raises where there are more heads than tokens: run again
    with as many tokens as heads, where it fits, and name it if it took the tokens for heads."""
    h, t = x.shape[1], x.shape[2]
    as_many = x[:, :, torch.arange(h) % t]  # (batch, num_heads, num_heads, head_dim): as many tokens as heads
    try:
        out = checks.to_array(impl.merge_heads(as_many), "merge_heads")
    except RemoteError:
        return
    if toolkit.close(out, np.concatenate([as_many.numpy()[:, :, i] for i in range(h)], axis=-1)):
        raise CaseFailure(f"merge_heads raised {error.type_name} on {t} tokens with {h} heads, and runs on {h} "
                          f"tokens, which names the cause: {TOKENS_AS_HEADS}") from None


def _explain_heads_counted_by_tokens(impl, x, error):
    """A loop over range(T) for the heads indexes past the last head where there are more tokens than heads: run
    again with as many tokens as heads, where that loop fits, and name it if the merge is right there."""
    h, t = x.shape[1], x.shape[2]
    as_many = x[:, :, torch.arange(h) % t]  # (batch, num_heads, num_heads, head_dim)
    try:
        out = checks.to_array(impl.merge_heads(as_many), "merge_heads")
    except RemoteError:
        return
    b, _, _, hd = as_many.shape
    if toolkit.close(out, as_many.numpy().transpose(0, 2, 1, 3).reshape(b, h, h * hd)):
        raise CaseFailure(f"merge_heads raised {error.type_name} on {t} tokens with {h} heads, and is right on {h} "
                          f"tokens: {HEADS_COUNTED_BY_TOKENS}") from None


# for h in range(num_tokens): x[:, h]: the heads counted by the tokens' axis, right only where the two agree
HEADS_COUNTED_BY_TOKENS = ("the loop over the heads runs over the tokens' count (range(num_tokens), x.shape[2]): "
                           "there are x.shape[1] heads, whatever T is")


# transpose(0, 1) for transpose(1, 2): the heads move in front of the batch, not behind the tokens; on a
# batch of one that is the reshape without a transpose, so that message gives both readings
SWAPS_BATCH_AND_HEADS = ("swaps the batch and the heads (transpose(0, 1)) where the heads and the tokens "
                         "belong (transpose(1, 2))")
BATCH_AS_HEADS = "it goes through x's first axis, the batch, as if it were the heads: x is (batch, num_heads, T, head_dim)"
# x[:, :, i] for head i: the tokens' axis indexed, which gives num_heads of the tokens, each with every head's rows
TOKENS_AS_HEADS = ("it takes head i as x[:, :, i], which indexes x's third axis, the tokens: x is (batch, num_heads, T, "
                   "head_dim), the heads second")
SWAPS_BATCH_AND_TOKENS = ("it swaps the batch and the tokens (transpose(0, 2)) before the reshape, which mixes the "
                          "sequences of the batch: the axes to swap are the heads and the tokens")


def _mistakes(x):
    b, h, t, hd = x.shape
    return [(lambda: x.reshape(b, t, h * hd),
             "reshaped to (batch, T, D) without first transposing the head and token dimensions back, "
             "which mixes tokens: transpose(1, 2), then reshape" + (f"; or it {SWAPS_BATCH_AND_HEADS}, which on a "
             "batch of one gives the same entries" if b == 1 else "")),
            (lambda: x.transpose(1, 0, 2, 3).reshape(b, t, h * hd), f"it {SWAPS_BATCH_AND_HEADS} before the "
             "reshape, which mixes the sequences of the batch"),
            # transpose(0, 2): on a batch of one that is the right merge, so no output names it there
            (lambda: x.transpose(2, 1, 0, 3).reshape(b, t, h * hd), SWAPS_BATCH_AND_TOKENS),
            (lambda: x.transpose(0, 2, 3, 1).reshape(b, t, hd * h),
             "the heads' features are interleaved; head i's features must form the block "
             "[i*head_dim, (i+1)*head_dim)"),
            (lambda: x[:, ::-1].transpose(0, 2, 1, 3).reshape(b, t, h * hd),
             "the heads are merged in reverse order: head 0's features come first"),
            (lambda: x.reshape(b, h * hd, t).transpose(0, 2, 1),
             "it reshapes to (batch, D, T) and then transposes: a reshape keeps the order of the entries in memory, "
             "so it cuts across heads and tokens; bring the tokens next to the batch first (transpose(1, 2)), then "
             "reshape to (batch, T, D)"),
            *_joined_wrongly(x)]


def _joined_wrongly(x):
    """Outputs that put the heads together along another axis, or join the wrong axes."""
    b, h, t, hd = x.shape
    added = ("the heads' outputs are {} into one head's width: merging puts them side by side, "
             "num_heads * head_dim features per token")
    return [(lambda: x.sum(axis=1), added.format("added")),
            (lambda: x.mean(axis=1), added.format("averaged")),
            (lambda: x.reshape(b, h * t, hd), "the heads are put one after another along the tokens axis; "
             "they go side by side along the features, T rows as before"),
            (lambda: x.transpose(1, 0, 2, 3).reshape(h * b, t, hd), "the heads are put one after another "
             "along the batch axis; they go side by side along the features"),
            (lambda: x.transpose(1, 2, 0, 3).reshape(h, t, b * hd), BATCH_AS_HEADS),
            *([(lambda: np.concatenate([x[:, :, i] for i in range(h)], axis=-1), TOKENS_AS_HEADS)] if h <= t else []),
            (lambda: x.transpose(0, 1, 3, 2).reshape(b, t, h * hd), "it swaps each head's tokens and features "
             "(the last two axes) before the reshape, which mixes tokens and features; the axes to swap are "
             "the heads and the tokens"),
            (lambda: x.transpose(0, 2, 1, 3), "the heads and tokens are swapped back, but the heads are never "
             "flattened into the features: (batch, T, num_heads, head_dim) must become (batch, T, "
             "num_heads * head_dim)"),
            (lambda: x.reshape(b, h, t * hd), "each head's tokens are joined into one row, (batch, num_heads, "
             "T * head_dim): the tokens must stay an axis of their own, in front of the heads"),
            (lambda: x.transpose(0, 2, 1, 3).reshape(b, h, t * hd), "it reads x's axes as (batch, T, "
             "num_heads, head_dim); x is (batch, num_heads, T, head_dim), as split_heads returns it"),
            (lambda: x.transpose(0, 2, 1, 3).reshape(b, t * h * hd), "the tokens are flattened into the "
             "features too: the result keeps one row per token, (batch, T, num_heads * head_dim)"),
            (lambda: x.transpose(0, 3, 2, 1).reshape(b, t, h * hd), HEADS_AND_FEATURES_SWAPPED),
            (lambda: x.transpose(0, 2, 1, 3).reshape(b, 1, t, h * hd), HEAD_AXIS_KEPT),
            # with a batch of 1 a batch folded in is the batch axis dropped (a squeeze): only the shape says so
            *([(lambda: x.transpose(0, 2, 1, 3).reshape(t, b * h * hd), "the batch is folded into the features: "
                "the batch axis stays first, (batch, T, num_heads * head_dim)")] if b > 1 else []),
            *_heads_left_out(x)]


def _heads_left_out(x):
    """Some heads' features missing: all but the last joined (a loop that stops one short), or one head's alone
    (x[:, 0], the first head taken for the merge); with two heads the two are one output, named as both."""
    h = x.shape[1]
    if h == 1:
        return []
    t = x.shape[2]
    joined = lambda count: np.concatenate([x[:, i] for i in range(count)], axis=-1)  # noqa: E731 - heads 0..count-1
    # one head alone, all but the last, and as many heads as tokens: the same output where the counts agree
    fits = {count: [message for message, known in ((ONE_HEAD, 1), (LAST_HEAD_LEFT_OUT, h - 1),
                                                   (HEADS_COUNTED_BY_TOKENS, t)) if known == count]
            for count in {1, h - 1, t} if count < h}
    return [(lambda count=count: joined(count), checks.one_or_all(messages)) for count, messages in fits.items()]


ONE_HEAD = ("the result holds one head's features alone (x[:, 0], head 0's): merging puts every head's features side "
            "by side, num_heads * head_dim per token")
LAST_HEAD_LEFT_OUT = ("the last head's features are left out: does the loop over the heads stop one short (range("
                      "num_heads - 1))? Every head's features go side by side")


# transpose(1, 3) for transpose(1, 2): (batch, head_dim, T, num_heads), whose reshape reads the features across the
# tokens; where head_dim is 1 it is the right merge, and where num_heads is 1 it is transpose(2, 3)'s, named first
HEADS_AND_FEATURES_SWAPPED = ("it swaps the heads and each head's features (transpose(1, 3)) before the reshape, "
                              "which mixes tokens and features; the axes to swap are the heads and the tokens "
                              "(transpose(1, 2))")
# torch.cat(x.split(1, dim=1), dim=-1): every head's features in place, but split (like chunk) keeps the axis it cuts
HEAD_AXIS_KEPT = ("the heads' features are side by side, but a head axis of size 1 is left in front of the tokens, "
                  "(batch, 1, T, num_heads * head_dim): x.split(1, dim=1) and torch.chunk keep the axis they cut "
                  "(x.unbind(1) drops it); the merged result is (batch, T, num_heads * head_dim)")


def _symptoms(record, k):
    return _mistakes(np.asarray(record["x"], dtype=np.float64))


def _batch_of_one(record):
    return record["x"].shape[0] == 1


# A batch of one is a case of its own: an axis of size 1 dropped there (a stray squeeze) is a slip that
# keeps the other shapes' points, while a wrong merge fails both.
@case(STEP, "stored", weight=2)
def test_stored_outputs(impl):
    """matches the reference for batches of 2 and 3, several lengths, numbers and widths of heads"""
    check_stored(impl, STEP, apply, "merge_heads(x)", symptoms=_symptoms, where=lambda record: not _batch_of_one(record))


@case(STEP, "stored", weight=1)
def test_stored_outputs_batch_of_one(impl):
    """matches the reference for a batch of one"""
    check_stored(impl, STEP, apply, "merge_heads(x)", symptoms=_symptoms, where=_batch_of_one)


@case(STEP, "property")
def test_inverts_split_heads(impl):
    """merge_heads undoes the split into heads, also on the non-contiguous tensor the split produces"""
    r = rng(1702)
    for b, t, d, h in ((2, 3, 6, 2), (1, 5, 8, 4), (3, 2, 4, 1)):
        x = torch.tensor(r.normal(size=(b, t, d)), dtype=torch.float32)
        heads = x.view(b, t, h, d // h).transpose(1, 2)  # a view: not contiguous
        checks.expect_close(_merged(impl, heads), x.numpy(),
                            f"merge_heads of a ({b}, {t}, {d}) tensor split into {h} heads",
                            symptoms=_mistakes(heads.numpy().astype(np.float64)))


@case(STEP, "oracle")
def test_matches_torch_multihead_attention(impl):
    """merging per-head attention reproduces torch.nn.MultiheadAttention (identity projections)"""
    b, t, d, h = 2, 5, 6, 3
    x = torch.tensor(rng(1703).normal(size=(b, t, d)), dtype=torch.float32)
    want = toolkit.torch_identity_multihead(x, h)
    heads = x.view(b, t, h, d // h).transpose(1, 2)
    context = torch.nn.functional.scaled_dot_product_attention(heads, heads, heads)
    checks.expect_close(_merged(impl, context), want,
                        "merge_heads of attention run per head, compared with nn.MultiheadAttention(6, 3) "
                        "with identity projections", symptoms=_mistakes(context.numpy().astype(np.float64)))


@case(STEP, "property", weight=0.5)
def test_input_unchanged(impl):
    """leaves x unchanged"""
    x = torch.tensor(rng(1704).normal(size=(2, 3, 4, 2)), dtype=torch.float32)
    _merged(impl, x.clone())  # a call that raises is named first, where it can be
    checks.expect_inputs_unchanged(impl, "merge_heads", [x], ["x"])


@case(STEP, "property", weight=0.5)
def test_not_a_fixed_shape(impl):
    """returns (batch, T, num_heads * head_dim) for a shape it was never shown"""
    x = torch.zeros(5, 7, 2, 3)
    out = _merged(impl, x)
    checks.expect_shape(checks.to_array(out, "merge_heads of a (5, 7, 2, 3) tensor"), (5, 2, 21),
                        "merge_heads of a (5, 7, 2, 3) tensor")
    if not isinstance(out, torch.Tensor):
        raise CaseFailure("merge_heads should return a torch tensor")
