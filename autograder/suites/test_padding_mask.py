"""Hidden suite of `padding_mask` (assignment 03).

The notes work no example of a padding mask, so the suite has no notes case; its oracle is
torch.nn.MultiheadAttention's own `key_padding_mask`. Every comparison goes through `_diagnose`,
which names the known mistakes (swapped True/False, `>` for `>=`, the size-1 axis in the wrong
place or missing) before it falls back to saying which sequence and position are wrong.

The stored and oracle cases grade what the mask blocks as scores (batch, T, T) see it
(`_seen_by_scores`), the exact shape (batch, 1, num_tokens) is the shape case's: the right keys
blocked for every query in another shape that lines up with the scores (repeated for every
query, or with a multi-head mask's axis of size 1 for the heads) is a slip in the shape, and
loses the cases about the shape only. A mask that does not line up with the scores (no query
axis) or blocks queries ((batch, T, 1)) blocks the wrong entries, and fails them all.
"""

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures import stored
from autograder.harness import case
from autograder.suites import toolkit
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import rng

STEP = "padding_mask"


def _blocked(lengths, num_tokens):
    """The right answer as a NumPy bool array (batch, 1, T)."""
    return (np.arange(num_tokens)[None, :] >= np.asarray(lengths)[:, None])[:, None, :]


# lengths[None, :] (or .view(1, -1)), or lengths as they are: the lengths lie along the positions' axis
LENGTHS_AS_A_ROW = ("lengths lie along the same axis as the positions (as they are, (batch,), or with an axis in front, "
                    "(1, batch)), so each length meets only the position at its own index (it runs where batch == "
                    "num_tokens, comparing them pair by pair); each sequence's length must meet a whole row of "
                    "positions, one sequence per row")


def _explain_lengths_as_a_row(impl, what, error):
    """A comparison that does not broadcast, run again with as many sequences as positions, where lengths made a row
    fit: a mask whose entries are position j against lengths[j] alone names LENGTHS_AS_A_ROW; quiet otherwise."""
    lengths = np.array([2, 4, 1, 3])
    try:
        out = impl.padding_mask(torch.as_tensor(lengths), len(lengths))
        entries = np.asarray(out.cpu() if torch.is_tensor(out) else out).astype(bool).ravel()
    except (RemoteError, TypeError, ValueError):
        return
    if entries.shape == lengths.shape and np.array_equal(entries, np.arange(len(lengths)) >= lengths):
        raise CaseFailure(f"{what} raised {error.type_name}: {LENGTHS_AS_A_ROW}") from None


def _call(impl, lengths, num_tokens, strict=False):
    """padding_mask(lengths, num_tokens) as a bool NumPy array, or a CaseFailure naming why not.

    Only `strict` cases insist on torch.bool: a 0/1 mask of another dtype costs that case alone."""
    what = f"padding_mask(lengths={np.asarray(lengths).tolist()}, num_tokens={num_tokens})"
    try:
        out = impl.padding_mask(torch.as_tensor(np.asarray(lengths, dtype=np.int64)), num_tokens)
    except RemoteError as error:
        if error.type_name == "IndexError" and "for dimension 0 with size" in str(error):
            _explain_sequences_counted_by_tokens(impl, what, error, lengths, num_tokens)
        # the one comparison of a padding mask is of lengths (batch,) with positions (num_tokens,)
        if not any(phrase in str(error) for phrase in _NOT_BROADCAST):
            raise
        _explain_lengths_as_a_row(impl, what, error)
        raise CaseFailure(f"{what} raised {error.type_name}: lengths (batch,) and the key positions (num_tokens,) "
                          "do not broadcast as they are compared; each sequence's length must meet a whole row "
                          "of positions, so one of the two needs an axis of its own") from None
    if isinstance(out, np.ndarray) and not strict:
        return what, out != 0  # a NumPy mask's entries are graded; its type costs the strict case alone
    if isinstance(out, np.ndarray):
        raise CaseFailure(f"{what} is a NumPy array; return a torch.bool tensor (torch.arange and a comparison "
                          "with lengths keep it one)")
    checks.expect_tensor(out, what)
    if not strict:
        return what, out.numpy() != 0
    if out.dtype.is_floating_point and set(out.unique().tolist()) <= {0.0, float("-inf")}:
        raise CaseFailure(f"{what} is {ADDITIVE}; padding_mask returns a torch.bool mask, True = blocked, which "
                          "masked_fill and `|` with causal_mask take")
    if out.dtype != torch.bool:
        raise CaseFailure(f"{what} has dtype {out.dtype}; return a torch.bool tensor (True = blocked): "
                          "a comparison such as >= gives one")
    return what, out.numpy()


# range(num_tokens) for the loop over the sequences, or torch.zeros(num_tokens, 1, num_tokens) for the mask: the
# two counts confused, which raises (or leaves rows out) wherever they differ and is right where they agree
SEQUENCES_COUNTED_BY_TOKENS = ("the number of sequences is taken from num_tokens somewhere (a loop over "
                               "range(num_tokens), or a mask made num_tokens rows long): the mask has one row per "
                               "sequence, as many as lengths has entries, whatever num_tokens is")


def _explain_sequences_counted_by_tokens(impl, what, error, lengths, num_tokens):
    """An index past the first axis, run again with as many sequences as key positions: right there, the call
    counts the sequences by num_tokens (the loop's range or the mask's rows); quiet otherwise."""
    as_many = np.resize(np.asarray(lengths, dtype=np.int64), num_tokens)
    if len(lengths) == num_tokens:
        return
    try:
        out = impl.padding_mask(torch.as_tensor(as_many), num_tokens)
        entries = np.asarray(out.cpu() if torch.is_tensor(out) else out).astype(bool)
    except (RemoteError, TypeError, ValueError):
        return
    if entries.shape == (num_tokens, 1, num_tokens) and np.array_equal(entries, _blocked(as_many, num_tokens)):
        raise CaseFailure(f"{what} raised {error.type_name} with {len(lengths)} sequences of {num_tokens} positions, "
                          f"and is right with {num_tokens} sequences: {SEQUENCES_COUNTED_BY_TOKENS}") from None


ADDITIVE = "an additive mask (0 where a key is kept, -inf where it is blocked), the form that is added to the scores"

# How torch words an elementwise comparison of shapes that do not broadcast, or a result with fewer axes
# than the indexing after it expects.
_NOT_BROADCAST = ("must match the size of tensor", "too many indices for tensor", "does not match the broadcast shape")


def _seen_by_scores(mask, batch, num_tokens):
    """What each query of each sequence has blocked, (batch, T, T), when `mask` meets scores of that shape; None
    where it does not line up with them. A multi-head mask (batch, 1, 1, T) is read as each head's scores see it."""
    if mask.ndim == 4 and mask.shape[:2] == (batch, 1):
        mask = mask[:, 0]
    try:
        return np.broadcast_to(mask, (batch, num_tokens, num_tokens))
    except ValueError:  # NumPy's words for shapes that do not broadcast
        return None


def _probe(impl, lengths):
    return lambda num_tokens: _call(impl, lengths, num_tokens)[1]


def _which_sizes(got, want):
    """What a wrong shape suggests: a hard-coded batch size or length only where those sizes differ."""
    if len(got) != len(want):
        return f"; it has {len(got)} axes, not 3"
    named = [name for name, g, w in zip(("the batch size", "the query axis (size 1)", "num_tokens"), got, want)
             if g != w]
    return "; " + " and ".join(named) + (" differ" if len(named) > 1 else " differs") + (
        ": is the batch size or num_tokens hard-coded?" if set(named) <= {"the batch size", "num_tokens"} else "")


def _diagnose(what, got, lengths, num_tokens, probe=None):
    """got == the right mask, or a CaseFailure naming the mistake. probe(t): the mask made for the same lengths
    and t key positions, to tell apart mistakes that one input cannot."""
    want = _blocked(lengths, num_tokens)
    batch = want.shape[0]
    if got.shape == want.shape and np.array_equal(got, want):
        return
    if got.shape == (batch, num_tokens) and np.array_equal(got, want[:, 0]):
        raise CaseFailure(f"{what}: the right entries, but shape {checks.fmt_shape(got.shape)} lacks the "
                          "query axis: return (batch, 1, num_tokens), so the mask broadcasts over the queries")
    if got.shape == (batch, num_tokens, 1) and np.array_equal(got[..., 0], want[:, 0]):
        raise CaseFailure(f"{what}: shape (batch, num_tokens, 1) blocks queries (rows), not keys: put the "
                          "axis of size 1 in the middle, (batch, 1, num_tokens)")
    if got.shape == (batch, num_tokens, num_tokens) and (got == want).all():
        raise CaseFailure(f"{what}: the right entries, repeated for every query, shape "
                          f"{checks.fmt_shape(got.shape)}: keep the query axis of size 1, (batch, 1, "
                          "num_tokens), and let broadcasting repeat it")
    if got.shape == (num_tokens, 1, batch) and np.array_equal(got[:, 0].T, want[:, 0]):
        raise CaseFailure(f"{what}: the batch and key-position axes are swapped, shape (num_tokens, 1, batch): "
                          "each row is one sequence, so the new axis goes on lengths (one length per row), "
                          "not on the positions")
    if got.shape == (1, batch, num_tokens) and np.array_equal(got[0], want[:, 0]):
        raise CaseFailure(f"{what}: the right entries, but the axis of size 1 comes first, shape (1, batch, "
                          "num_tokens); it stands for the queries and goes in the middle: (batch, 1, num_tokens)")
    if got.shape == (batch, 1, 1, num_tokens) and np.array_equal(got[:, 0], want):
        raise CaseFailure(f"{what}: the right entries, with an axis of size 1 for the heads too, shape (batch, 1, "
                          "1, num_tokens), as multi-head scores (batch, num_heads, T, T) would need; this mask is "
                          "for scores (batch, T, T): (batch, 1, num_tokens)")
    if got.shape == (batch, num_tokens, num_tokens) and np.array_equal(got, want | np.swapaxes(want, 1, 2)):
        raise CaseFailure(f"{what}: it blocks the padded queries (rows) as well as the padded keys, shape "
                          f"{checks.fmt_shape(got.shape)}: the mask blocks keys only, (batch, 1, num_tokens); a "
                          "row with every key blocked gives nan in the softmax")
    if got.shape == (batch, num_tokens, num_tokens) and np.array_equal(
            got, want | np.triu(np.ones((num_tokens, num_tokens), dtype=bool), 1)):
        raise CaseFailure(f"{what}: it blocks the later keys too (a causal mask inside): padding_mask marks only "
                          "the padding, (batch, 1, num_tokens), and is combined with causal_mask by | where both apply")
    if got.ndim == 3 and got.shape[:2] == want.shape[:2] and got.shape[2] != num_tokens:
        size = got.shape[2]
        # each size it may have been read from, all of them where they coincide
        which = [name for name, known in (("the longest sequence's length", int(np.max(lengths))),
                                          ("the batch size, len(lengths)", batch),
                                          ("one short of num_tokens", num_tokens - 1),
                                          ("one more than num_tokens (torch.arange(num_tokens + 1)?)", num_tokens + 1))
                 if size == known]
        if which:
            raise CaseFailure(f"{what} has {size} key position{'s' * (size != 1)}, {' or '.join(which)}: the mask "
                              "covers all num_tokens positions, padding included")
    if got.shape == (num_tokens, 1, num_tokens) != want.shape and np.array_equal(got[:batch], want[:num_tokens]):
        raise CaseFailure(f"{what} has {num_tokens} rows, one per key position, for {batch} sequences, its first {batch} right: "
                          f"{SEQUENCES_COUNTED_BY_TOKENS}")
    if got.shape != want.shape:
        raise CaseFailure(f"{what} has shape {checks.fmt_shape(got.shape)}, expected (batch, 1, num_tokens) "
                          f"= {checks.fmt_shape(want.shape)}{_which_sizes(got.shape, want.shape)}")
    if np.array_equal(got, ~want) or np.array_equal(got, ~_blocked(np.asarray(lengths) + 1, num_tokens)):
        # the second: `positions <= lengths[b]`, the comparison turned round (and so off by one as well)
        raise CaseFailure(f"{what}: True and False are swapped; True means blocked, so True marks the "
                          "padding, key positions j >= lengths[b]")
    if np.array_equal(got, _blocked(np.asarray(lengths) + 1, num_tokens)) and _fits_past_the_end(
            got, want, lengths, num_tokens, probe):
        raise CaseFailure(f"{what} is off by one: position lengths[b] is already padding (positions "
                          "count from 0): use j >= lengths[b], not j > lengths[b]")
    if np.array_equal(got, _blocked(np.asarray(lengths) - 1, num_tokens)):
        # j >= lengths[b] - 1 and positions counted from 1 (arange(1, num_tokens + 1) >= lengths) block alike
        raise CaseFailure(f"{what} is off by one: it also blocks the last real token, position "
                          "lengths[b] - 1; block j >= lengths[b] (are the positions counted from 1, torch.arange(1, "
                          "num_tokens + 1)? They count from 0, as indices do)")
    # `positions == lengths[b]` singles out the first padding position (and `!=` every other one)
    first_padding = want & ~_blocked(np.asarray(lengths) + 1, num_tokens)
    if np.array_equal(got, first_padding) or np.array_equal(got, ~first_padding):
        raise CaseFailure(f"{what} compares the key positions with lengths[b] by equality (== or !=), which "
                          "singles out the one position j == lengths[b]; the padding is every position from "
                          "lengths[b] on")
    # the last lengths[b] positions of each sequence: its real tokens if they were right-aligned
    last_lengths = _blocked(num_tokens - np.asarray(lengths), num_tokens)
    if np.array_equal(got, ~last_lengths):
        raise CaseFailure(f"{what} blocks the first positions of each sequence, as if the padding came before the "
                          "real tokens (left padding); here each sequence starts at position 0 and its padding "
                          "follows its lengths[b] real tokens")
    if np.array_equal(got, last_lengths):
        raise CaseFailure(f"{what} blocks the last lengths[b] positions of each sequence, as if lengths counted "
                          "the padding tokens; lengths[b] is the number of REAL tokens of sequence b")
    if _stops_short(got, want, lengths, num_tokens, probe):
        raise CaseFailure(f"{what} never blocks the last key position, num_tokens - 1: does a slice stop at "
                          "num_tokens - 1 (mask[b, 0, lengths[b]:num_tokens - 1])? A slice leaves its stop out "
                          "already, so mask[b, 0, lengths[b]:] reaches the last position")
    if not got.any():  # nothing written, whatever the loop or the index that should have written it
        # or one length for every row, which blocks nothing where that length is num_tokens: one key position
        # more tells them apart, where the one length blocks the new last position of every row
        longer = _longer(probe, num_tokens)
        named = longer is not None and _one_length(longer, lengths, num_tokens + 1)
        if named:
            raise CaseFailure(f"{what} blocks nothing, and with one key position more it shows why: {named}")
        raise CaseFailure(f"{what} blocks nothing, every entry False as the mask was made, though sequence "
                          f"{int(np.argmax(want.any(axis=(1, 2))))} has padding: is the mask ever written? A loop whose "
                          "range misses the padded sequences writes nothing, and so do an index such as mask[b, "
                          "length:], which slices the query axis of size 1 (mask[b, 0, length:] reaches the key "
                          "positions), and a return after an unpadded first sequence")
    # a loop over the sequences that returns (or breaks) in its body: the rows after the first keep what the mask
    # was made with, all False (torch.zeros) or all True (torch.ones)
    rest = got[1:]
    if batch > 1 and np.array_equal(got[0], want[0]) and (not rest.any() or rest.all()) and not np.array_equal(
            rest, want[1:]):
        raise CaseFailure(f"{what}: only sequence 0's row is right; every later row is all {bool(rest.all())}, as the "
                          "mask was made: does the loop over the sequences return (or break) after its first "
                          "sequence? The return belongs after the loop, once every row is filled")
    _explain_unfilled_rows(what, got, want)
    named = _one_length(got, lengths, num_tokens)
    if named:
        raise CaseFailure(f"{what}: {named}")
    for order, which in ((np.sort(lengths)[::-1], "longest first"), (np.sort(lengths), "shortest first")):
        if np.array_equal(got, _blocked(order, num_tokens)):
            raise CaseFailure(f"{what}: the rows follow the lengths sorted {which}, not the batch's order: row b "
                              "belongs to sequence b, so lengths are used as they come, unsorted")
    row = int(np.argmax((got != want).any(axis=(1, 2))))
    raise CaseFailure(f"{what}: sequence {row} (length {int(np.asarray(lengths)[row])}) should be True "
                      "exactly at key positions j >= its length; this mistake has no name in the grader, "
                      "compare your row with that rule")


def _one_length(got, lengths, num_tokens):
    """The diagnosis of a mask whose every row uses one length (the shortest, the first sequence's, ...), or None."""
    batch = len(lengths)
    for length, which in ((np.min(lengths), "the shortest"), (np.max(lengths), "the longest"),
                          (lengths[0], "the first sequence's"), (lengths[-1], "the last sequence's")):
        if batch > 1 and np.array_equal(got, _blocked(np.full(batch, length), num_tokens)):
            return (f"every sequence's row uses one length, {which} ({int(length)}): each sequence b is blocked "
                    "from its own lengths[b] on")
    return None


def _longer(probe, num_tokens):
    """The mask made for the same lengths and one key position more, or None where it cannot be made."""
    if probe is None:
        return None
    try:
        return probe(num_tokens + 1)
    except CaseFailure:
        return None


def _fits_past_the_end(got, want, lengths, num_tokens, probe):
    """Whether `j > lengths[b]` explains got. Where every wrong row blocks nothing (lengths[b] = num_tokens - 1), a
    row the mask was made with and never filled looks the same: one key position more tells them apart."""
    wrong = (got != want).any(axis=(1, 2))
    if got[wrong].any():
        return True
    longer = _longer(probe, num_tokens)
    return longer is None or np.array_equal(longer, _blocked(np.asarray(lengths) + 1, num_tokens + 1))


def _stops_short(got, want, lengths, num_tokens, probe):
    """Whether got is the right mask without its last key position. Where that leaves nothing blocked, a mask never
    written looks the same: one key position more tells them apart."""
    last_left_open = want.copy()
    last_left_open[..., -1] = False
    if not np.array_equal(got, last_left_open) or np.array_equal(got, want):
        return False
    if got.any() or probe is None:
        return True
    longer = _longer(probe, num_tokens)
    return longer is not None and bool(longer.any())


def _explain_unfilled_rows(what, got, want):
    """Every row right but the first or the last, which is all False (torch.zeros) or all True (torch.ones), as
    a loop over the sequences whose range misses one leaves it."""
    wrong = np.flatnonzero((got != want).any(axis=(1, 2)))
    made = got[wrong]
    # the only row of a batch of one: either bound of the range may have missed it
    if len(got) == 1 or len(wrong) != 1 or not (made.all() or not made.any()):
        return
    (row,) = wrong
    unfilled = f"{what}: sequence {row}'s row is never filled, all {bool(made.all())} as the mask was made: does"
    if row == 0:
        raise CaseFailure(f"{unfilled} the loop over the sequences start at 1 (range(1, len(lengths)))? It runs "
                          "over every sequence, from 0")
    if row == len(got) - 1:
        raise CaseFailure(f"{unfilled} the loop over the sequences stop one short (range(len(lengths) - 1))? It "
                          "runs over every sequence, to the last")


def stored_inputs():
    r = rng(1351)
    cases = [("one sequence, no padding", [4], 4), ("three sequences", [3, 1, 5], 5),
             ("lengths in any order, T = 7", [7, 2, 2, 6], 7), ("a single token each", [1, 1], 1),
             ("a long batch", list(r.integers(1, 33, size=16)), 32)]
    return [dict(label=label, lengths=np.asarray(lengths, dtype=np.int64), num_tokens=np.int64(t))
            for label, lengths, t in cases]


def apply(impl, record):
    return impl.padding_mask(torch.as_tensor(record["lengths"]), int(record["num_tokens"]))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """blocks, for every query of sequence b, exactly the key positions j >= lengths[b]"""
    # a record without padding tells fewer mistakes apart (swapped True/False blocks all of it, and so does
    # counting the padding), so the records with padding are compared first
    for record in sorted(stored.load(STEP), key=lambda record: bool(np.all(record["lengths"] ==
                                                                           record["num_tokens"]))):
        lengths, num_tokens = record["lengths"], int(record["num_tokens"])
        what, got = _call(impl, lengths, num_tokens)
        want = stored.expected_outputs(record)[0]  # (batch, 1, num_tokens)
        seen = _seen_by_scores(got, len(want), num_tokens)  # the shape is the shape case's to grade
        if seen is None or not np.array_equal(seen, np.broadcast_to(want, seen.shape)):
            _diagnose(f"{what} ({record['label']})", got, lengths, num_tokens, _probe(impl, lengths))
            raise CaseFailure(f"{what} differs from the stored reference ({record['label']}), in a way the "
                              "grader cannot name")


@case(STEP, "property", weight=0.5)
def test_bool_tensor_with_a_query_axis(impl):
    """returns a torch.bool tensor (batch, 1, num_tokens), whatever the batch size"""
    for lengths, num_tokens in (([2, 3], 3), ([5], 6), ([1, 2, 3, 4, 5], 5)):
        what, got = _call(impl, lengths, num_tokens, strict=True)
        _diagnose(what, got, lengths, num_tokens, _probe(impl, lengths))


@case(STEP, "property", weight=0.5)
def test_combines_with_causal_mask(impl):
    """padding_mask | causal_mask broadcasts to (batch, T, T) and blocks the future or the padding"""
    lengths, num_tokens = [4, 2, 3], 4
    what, got = _call(impl, lengths, num_tokens)
    causal = np.triu(np.ones((num_tokens, num_tokens), dtype=bool), 1)
    want = _blocked(lengths, num_tokens) | causal
    try:
        combined = got | causal
    except ValueError:  # NumPy's words for shapes that do not broadcast
        combined = None
    # What this case asks is the combination: a mask of another shape that still combines into the
    # right (batch, T, T) mask passes here, and loses its points in the cases about its shape.
    if combined is None or not np.array_equal(combined, want):  # array_equal compares the shapes too
        _diagnose(what, got, lengths, num_tokens, _probe(impl, lengths))
        raise CaseFailure(f"{what} | causal_mask({num_tokens}) does not block exactly the future and the "
                          f"padding, and {checks.UNNAMED}")


@case(STEP, "oracle", weight=2)
def test_matches_torch_key_padding_mask(impl):
    """masks what nn.MultiheadAttention's key_padding_mask masks"""
    r = rng(1352)
    lengths, num_tokens, d = [5, 2, 3], 5, 4
    what, got = _call(impl, lengths, num_tokens)
    x = torch.tensor(r.normal(size=(3, num_tokens, d)), dtype=torch.float32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(d, 2, batch_first=True).eval()
    key_padding = torch.arange(num_tokens)[None, :] >= torch.tensor(lengths)[:, None]
    seen = _seen_by_scores(got, len(lengths), num_tokens)  # the shape is the shape case's to grade
    if seen is None:
        _diagnose(what, got, lengths, num_tokens, _probe(impl, lengths))
    # one (T, T) mask per sequence and head, as attn_mask takes it
    blocked = torch.tensor(np.array(seen, dtype=bool)).repeat_interleave(2, dim=0)  # a copy: `seen` may be a read-only view
    with torch.no_grad():
        want = mha(x, x, x, key_padding_mask=key_padding, need_weights=False)[0]
        mine = mha(x, x, x, attn_mask=blocked, need_weights=False)[0]
    if not toolkit.close(mine, want):
        _diagnose(what, got, lengths, num_tokens, _probe(impl, lengths))
        raise CaseFailure(f"nn.MultiheadAttention with attn_mask={what} differs from its own key_padding_mask")


@case(STEP, "property", weight=0.5)
def test_lengths_unchanged(impl):
    """leaves lengths unchanged"""
    lengths = torch.tensor([3, 1, 4])
    _call(impl, [3, 1, 4], 4)  # an exception is named by its cause first
    checks.expect_inputs_unchanged(impl, "padding_mask", (lengths,), ["lengths"], more=(4,))
