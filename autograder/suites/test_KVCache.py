"""Hidden suite of `KVCache` (assignment 05).

No worked example: no seed mentions a cache, and a cache's outputs are its inputs put side by
side, so the notes hold no number it produces. Graded by stored sequences of updates, by
`torch.cat` along the token axis as an oracle, and by properties: `len` counts tokens (0 when
empty), two caches never share storage, a long run of one-token updates (generation), inputs
left unchanged. The cache lives with the code under test and is driven through its handle:
`cache.call("update", k, v)` and `len(cache)`. Only the two cases about `len` (the stored lengths
and the length property) grade it; the others read it as evidence for a diagnosis at most, so a
wrong `__len__`, a slip, costs those two cases and not the keys and values it has right.
"""

import re

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import case
from autograder.seam import Handle
from autograder.suites.toolkit import cache_lengths, checks
from autograder.suites.toolkit.cases import rng

STEP = "KVCache"


def _new_cache(impl):
    cache = impl.KVCache()
    if not isinstance(cache, Handle):
        raise CaseFailure(f"KVCache() returned a {type(cache).__name__}; it should create a cache object")
    return cache


_AXES = {"0": "dim 0, the batch axis", "2": "the last dim, the features", "-1": "the last dim, the features"}


def _call_update(impl, cache, k, v, what):
    """cache.update(k, v); a torch.cat along the wrong axis, or with another cache's entries, is named,
    not shown as a bare error."""
    try:
        return cache.call("update", k, v)
    except RemoteError as error:
        found = re.search(r"must match except in dimension (-?\d+)", str(error))
        joined = re.search(r"Expected size (\d+) but got size (\d+) for tensor number 1\b", str(error))
        widths = (np.shape(v)[-1], np.shape(k)[-1]) if torch.is_tensor(k) and torch.is_tensor(v) else None
        if found and found.group(1) == "1" and joined and widths and widths[0] != widths[1] and \
                (int(joined.group(1)), int(joined.group(2))) == widths:  # the values held, then a new key
            message = VALUES_HOLD_KEYS.format("appended after the first update")
            raise CaseFailure(f"{what} raised {error.type_name} joining the values held with a new key's width: "
                              f"{message}") from None
        if "but got NoneType" in str(error) and "expected Tensor as element" in str(error):
            raise CaseFailure(f"{what} raised {error.type_name}: {JOINS_NONE}") from None
        if found and found.group(1) == "1" and joined and widths and widths[0] != widths[1] and \
                (int(joined.group(2)), int(joined.group(1))) == widths and _first_update_fails(impl, k, v):
            raise CaseFailure(f"{what} raised {error.type_name}, and so does the first update of a brand-new cache, "
                              f"joining a key with a value: {ONE_LIST}") from None
        if re.search(r"must match the size of tensor b \(\d+\) at non-singleton dimension 1", str(error)):
            raise CaseFailure(f"{what} raised {error.type_name}: {ADDS}") from None  # held + new, entry by entry
        if found and found.group(1) == "1" and _first_update_fails(impl, k, v):
            raise CaseFailure(_shared(f"{what} raised {error.type_name}, and so does the first update of a "
                                      "brand-new cache: it joins the new entries with tensors of another "
                                      "batch or width, stored by an earlier cache")) from None
        if "stack expects each tensor to be equal size" in str(error):
            raise CaseFailure(f"{what} raised {error.type_name}: torch.stack puts tensors side by side along a NEW "
                              "axis, so they must have equal shapes; the cache grows along an existing one, the "
                              "token axis (dim 1), whatever the number of new tokens") from None
        if found and found.group(1) in _AXES:
            raise CaseFailure(f"{what} raised {error.type_name}: the new entries are appended along "
                              f"{_AXES[found.group(1)]}; append along dim 1, the token axis of (batch, T, d)") from None
        raise


def _first_update_fails(impl, k, v):
    """Whether the first update of a brand-new cache raises: it has nothing of its own to join with."""
    try:
        impl.KVCache().call("update", k, v)
    except RemoteError:
        return True
    return False


# return self, as a builder's methods do: the layer that calls update reads the keys and values it returns
RETURNS_ITSELF = "the cache itself (return self?)"


def _update(impl, cache, k, v, what):
    """cache.update(k, v) as (keys, values) arrays, or a CaseFailure saying what came back."""
    out = _call_update(impl, cache, k, v, what)
    if out is None:
        raise checks.returned_none(what)
    if isinstance(out, Handle):  # an object that stays with the code under test: the cache itself, or another
        raise CaseFailure(f"{what} returned {RETURNS_ITSELF if out.id == cache.id else f'a {out.type_name}'}, not "
                          "the tuple (all keys, all values) that the attention layer reads every key and value from")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CaseFailure(f"{what} should return a tuple (all keys, all values); it returned a "
                          f"{type(out).__name__}")
    for name, value in zip(("keys", "values"), out):
        if not torch.is_tensor(value):
            raise CaseFailure(f"the {name} {what} returns are a {type(value).__name__}; return torch tensors "
                              "(the attention layer multiplies them with its queries)")
    return out


def _chunks(x, sizes):
    starts = np.cumsum([0, *sizes])
    return [x[:, a:b] for a, b in zip(starts[:-1], starts[1:])]


def _symptoms(ks, vs, which):
    """Known mistakes for the keys (which=0) or values (1) after the updates ks, vs."""
    parts = [np.asarray(a, dtype=np.float64) for a in (ks if which == 0 else vs)]
    other = [np.asarray(a, dtype=np.float64) for a in (vs if which == 0 else ks)]
    return [
        (lambda: np.concatenate(parts, axis=0), "the new entries are appended along dim 0, the batch axis: "
                                                "append along dim 1, the token axis of (batch, T, d)"),
        (lambda: np.concatenate(parts, axis=2), "the new entries are appended along the last dim, the features: "
                                                "append along dim 1, the token axis of (batch, T, d)"),
        (lambda: parts[-1], VALUES_ALONE.format("are replaced by each update's v_new") if which else
         "update returns only the new entries: return everything held so far"),
        (lambda: parts[0], VALUES_ALONE.format("keep only the first update's") if which else
         "the cache keeps only its first update: later updates must be appended"),
        (lambda: np.concatenate([parts[0], parts[-1]], axis=1), "update returns what the cache holds with the new "
                                                                "entries appended, but does not keep it: the cache "
                                                                "still holds only its first update"),
        (lambda: np.concatenate(parts[::-1], axis=1), "each update is put in front of what the cache holds: "
                                                      "append it after, so the tokens stay in their order"),
        (lambda: sum(parts), ADDS),
        (lambda: _one_list(*((parts, other) if which == 0 else (other, parts))), ONE_LIST),
    ] + (_values_from_keys(parts, other) if which else [
        (lambda: np.concatenate(other, axis=1), "the keys and values are swapped (update(k, v) returns (keys, "
                                                "values) in that order)")])


JOINS_NONE = ("torch.cat was given None to join: a new cache holds None, which cannot be joined with the new "
              "entries; the first update stores k_new and v_new as they are (if self.keys is None: ...) and only the "
              "later ones are joined: is the `is None` test missing, or turned round (is not None)?")
ONE_LIST = ("the keys and the values are kept in one list: each update appends its keys and its values to the "
            "same list (self.keys = self.values = [] makes both names one list), so what it joins alternates keys "
            "and values; give the keys and the values a list (or tensor) each")


def _one_list(first, second):
    """What a cache whose keys and values are one list returns: first[0], second[0], first[1], ... joined."""
    return np.concatenate([part for pair in zip(first, second) for part in pair], axis=1)


# The values are checked after the keys, which were right: one of update's two lines is wrong, not the idea.
VALUES_ALONE = ("the keys are all kept, but the values {}: the values held grow with each update's v_new as the keys "
                "grow with k_new")
ADDS = ("update adds the new entries to the ones held (+= on tensors adds them up, entry by entry): append them "
        "along the token axis")
VALUES_HOLD_KEYS = "the values {} hold the keys: update must store v_new with the values, k_new with the keys"
# every value returned a key: a store of k_new for v_new on every update, or a return of the keys twice
VALUES_ARE_KEYS = ("the values returned are all the keys: does update return the keys twice (return self.keys, "
                   "self.keys), or store k_new as the values too? Store and return v_new with the values")


def _values_from_keys(values, keys):
    """The values (the keys being right) that hold keys: all of them, the first update's only, or the
    later updates' only (a copy-paste slip on one line of update)."""
    said = VALUES_HOLD_KEYS
    return [(lambda: np.concatenate(keys, axis=1), VALUES_ARE_KEYS),
            (lambda: np.concatenate(keys[:1] + values[1:], axis=1), said.format("of the first update")),
            (lambda: np.concatenate(values[:1] + keys[1:], axis=1), said.format("appended after the first update"))]


def _counted(cache, what):
    """len(cache), or the CaseFailure saying why it cannot be read: a case about the keys and values keeps it as
    evidence, and only the cases about len raise it (`_read`)."""
    try:
        return cache_lengths.length(cache, what)
    except CaseFailure as failure:
        return failure


def _read(lengths):
    """The lengths `_counted` read, as an int array; the first failure to read one is raised."""
    for length in lengths:
        if isinstance(length, CaseFailure):
            raise length
    return np.array(lengths, dtype=np.int64)


def _run(impl, cache, ks, vs, label):
    """Every update; (final keys, final values, len after each update as `_counted` read it)."""
    lengths = []
    out = None
    for step, (k, v) in enumerate(zip(ks, vs)):
        out = _update(impl, cache, k, v, f"update number {step + 1} ({label})")
        lengths.append(_counted(cache, f"the cache after update {step + 1} ({label})"))
    return out[0], out[1], lengths


# --- stored outputs ---------------------------------------------------------------------------

def _record(r, label, batch, sizes, d_k, d_v, dtype=np.float32):
    total = sum(sizes)
    return dict(label=label, k=r.normal(size=(batch, total, d_k)).astype(dtype),
                v=r.normal(size=(batch, total, d_v)).astype(dtype), sizes=np.array(sizes, dtype=np.int64))


def stored_inputs():
    r = rng(1521)
    return [
        _record(r, "batch of 2, d=3, four updates of one token", 2, [1, 1, 1, 1], 3, 3),
        _record(r, "batch of 1, a prompt of 4 tokens, then 1 and 1", 1, [4, 1, 1], 5, 5),
        _record(r, "batch of 3, keys 4 wide and values 2 wide, updates of 2, 3 and 1 tokens", 3, [2, 3, 1], 4, 2),
        _record(r, "float64, batch of 2, updates of 3 and 2 tokens", 2, [3, 2], 2, 3, np.float64),
        _record(r, "a single update of 5 tokens", 2, [5], 3, 3),
    ]


def apply(impl, record):
    sizes = [int(s) for s in record["sizes"]]
    k, v = torch.tensor(record["k"]), torch.tensor(record["v"])
    keys, values, lengths = _run(impl, _new_cache(impl), _chunks(k, sizes), _chunks(v, sizes), record["label"])
    return keys, values, _read(lengths)


def _stored_runs(impl):
    """(record, its sizes, keys and values as update returned them last, lengths as `_counted` read them)."""
    from autograder.fixtures import stored

    for record in stored.load(STEP):
        sizes = [int(s) for s in record["sizes"]]
        k, v = torch.tensor(record["k"]), torch.tensor(record["v"])
        yield (record, sizes, *_run(impl, _new_cache(impl), _chunks(k, sizes), _chunks(v, sizes), record["label"]))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference: prompts, single tokens, batches, keys and values of other widths, float64"""
    for record, sizes, keys, values, lengths in _stored_runs(impl):
        ks, vs = _chunks(record["k"], sizes), _chunks(record["v"], sizes)
        label = record["label"]
        _expect_not_replaced(keys, ks, lengths, sizes, f"the keys update returns last ({label})")
        checks.expect_close(keys, record["expected_0"], f"the keys update returns last ({label})",
                            atol=1e-6, rtol=1e-5, symptoms=_symptoms(ks, vs, 0))
        checks.expect_close(values, record["expected_1"], f"the values update returns last ({label})",
                            atol=1e-6, rtol=1e-5, symptoms=_symptoms(ks, vs, 1))


@case(STEP, "stored")
def test_stored_lengths(impl):
    """len(cache) after each update matches the reference's count of the tokens held"""
    for record, sizes, keys, _, lengths in _stored_runs(impl):
        _expect_lengths(_read(lengths), record["expected_2"], sizes, record["k"].shape, record["label"],
                        kept=_close(keys, record["k"]))


def _expect_lengths(lengths, want, sizes, shape, label, kept=False):
    """len(cache) after each update is `want`; `shape` is that of all the keys, (batch, T, d). `kept`: the keys
    returned were right, so a len that does not grow names __len__ alone, not the updates."""
    lengths, batch, width = np.asarray(lengths), shape[0], shape[-1]
    if lengths.shape == np.shape(want) and (lengths == want).all():
        return
    what = f"after updates of {', '.join(map(str, sizes))} tokens ({label}) len(cache) was " + \
        ", ".join(str(int(n)) for n in lengths)
    if (lengths == batch).all() and batch != want[-1]:
        raise CaseFailure(f"{what}: len(cache) is the batch size: len() of a (batch, T, d) tensor is its first "
                          "dim; return the number of tokens, keys.shape[1]")
    if (lengths == np.arange(1, len(sizes) + 1)).all() and list(want) != list(range(1, len(sizes) + 1)):
        raise CaseFailure(f"{what}: len(cache) counts the calls to update, not the tokens held")
    if not kept and len(sizes) > 1 and (lengths == sizes[0]).all():
        raise CaseFailure(f"{what}: len(cache) never grows after the first update: the later updates are not kept")
    if len(sizes) > 1 and lengths.shape == np.shape(sizes) and (lengths == np.asarray(sizes)).all():
        # each update's own size: a count set where it should grow if the keys came back whole, else a cache replaced
        if kept:
            raise CaseFailure(f"{what}: len(cache) is the size of the latest update, though the cache keeps every "
                              "token: does update set a count to k_new's tokens (= where += belongs)? Return the size "
                              "of the token axis of what the cache holds, self.keys.shape[1]")
        raise CaseFailure(f"{what}: len(cache) is each update's own size: every update replaces what the cache held, "
                          "so only the latest is kept")
    if len(sizes) > 1 and lengths.shape == np.shape(sizes) and (lengths[1:] == 1).all() and want[-1] > 2 and \
            max(sizes[1:]) > 1:
        raise CaseFailure(f"{what}: len(cache) is 1 after every later update, whatever its size: the cache keeps only "
                          "the last token it was given; it must keep every token so far, in order")
    if (lengths == width).all() and width != want[-1]:
        raise CaseFailure(f"{what}: len(cache) is the keys' width, their last dim: return the number of tokens, "
                          "the size of the token axis (dim 1 of (batch, T, d))")
    if lengths.shape == np.shape(want) and (lengths == batch * width * np.asarray(want)).all():
        raise CaseFailure(f"{what}: len(cache) counts every number the keys hold (numel(): batch x T x d), not the "
                          "tokens: return the size of the token axis, dim 1 of (batch, T, d)")
    if batch > 1 and lengths.shape == np.shape(want) and (lengths == batch * np.asarray(want)).all():
        raise CaseFailure(f"{what}: len(cache) counts the tokens of every batch item together (batch x T): "
                          "the batch items are sequences side by side, so T is the number of tokens held" +
                          # where every update holds one token, a count grown by len(k_new) each time reads the same
                          (" (or it adds len(k_new), the batch size, at each update: here each update holds one "
                           "token)" if set(sizes) == {1} else ""))
    if batch > 1 and lengths.shape == np.shape(want) and (lengths == batch * np.arange(1, len(sizes) + 1)).all():
        raise CaseFailure(f"{what}: len(cache) grows by the batch size at each update, whatever its number of tokens: "
                          "len(k_new) is the batch size, the first dim of (batch, t, d); the new tokens are "
                          "k_new.shape[1]")
    if lengths.shape == np.shape(want) and (lengths == 2 * np.asarray(want)).all():
        raise CaseFailure(f"{what}: len(cache) is twice the number of tokens held: does it count the keys and the "
                          "values together (kept in one list, say)?")
    raise CaseFailure(f"{what}: len(cache) must be the number of tokens held")


def _expect_not_replaced(keys, ks, lengths, sizes, what):
    """A cache whose every update replaces what it held holds, and returns, the last update alone: len(cache) is
    each update's own size. (One that keeps its first update only has that len too, but returns the first.)"""
    if any(isinstance(length, CaseFailure) for length in lengths):  # no count to read the evidence from
        return
    sizes, lengths = np.asarray(sizes), np.asarray(lengths)
    if len(sizes) < 2 or lengths.shape != sizes.shape or (lengths != sizes).any():
        return
    if _close(keys, ks[-1]):
        raise CaseFailure(f"{what}: the cache holds only its latest update (len(cache) was "
                          f"{', '.join(map(str, lengths))}, each update's own size): each update replaces what "
                          "it held; the new entries are appended to it, along the token axis")


def _close(actual, want):
    actual = checks.to_array(actual, "the keys")
    return actual.shape == np.shape(want) and np.allclose(actual, want, atol=1e-6, rtol=1e-5)


# --- PyTorch as an oracle ---------------------------------------------------------------------

@case(STEP, "oracle", weight=6)
def test_matches_torch_cat(impl):
    """after each update, the keys and values equal torch.cat of everything so far along dim 1"""
    r = rng(1522)
    sizes = [3, 1, 2, 1]
    k = torch.tensor(r.normal(size=(2, 7, 4)), dtype=torch.float32)
    v = torch.tensor(r.normal(size=(2, 7, 6)), dtype=torch.float32)
    ks, vs = _chunks(k, sizes), _chunks(v, sizes)
    cache = _new_cache(impl)
    lengths = []
    for step in range(len(sizes)):
        what = f"update number {step + 1} (of {', '.join(map(str, sizes))} tokens)"
        keys, values = _update(impl, cache, ks[step], vs[step], what)
        lengths.append(_counted(cache, f"the cache after {what}"))
        _expect_not_replaced(keys, ks[:step + 1], lengths, sizes[:step + 1], f"the keys {what} returns")
        want_k, want_v = torch.cat(ks[:step + 1], dim=1), torch.cat(vs[:step + 1], dim=1)
        checks.expect_close(keys, want_k.numpy(), f"the keys {what} returns, compared with torch.cat(..., dim=1)",
                            atol=1e-6, rtol=1e-5, symptoms=_symptoms(ks[:step + 1], vs[:step + 1], 0))
        checks.expect_close(values, want_v.numpy(), f"the values {what} returns, compared with torch.cat(..., dim=1)",
                            atol=1e-6, rtol=1e-5, symptoms=_symptoms(ks[:step + 1], vs[:step + 1], 1))


# --- properties -------------------------------------------------------------------------------

@case(STEP, "property")
def test_length_counts_tokens(impl):
    """len is 0 when empty, then the number of tokens held (not the batch size, not the calls)"""
    cache = _new_cache(impl)
    _expect_empty(cache)
    r = rng(1523)
    sizes = [2, 1, 3]
    k = torch.tensor(r.normal(size=(4, 6, 3)), dtype=torch.float32)
    keys, _, lengths = _run(impl, cache, _chunks(k, sizes), _chunks(k, sizes), "a batch of 4")
    _expect_lengths(_read(lengths), np.cumsum(sizes), sizes, k.shape, "a batch of 4", kept=_close(keys, k.numpy()))


SHARED = ("Keep the storage on the instance (self.keys = ... in __init__), not in a class attribute or a "
          "default argument, which every cache shares")


def _shared(evidence):
    return f"two KVCache objects share what they hold: {evidence}. {SHARED}"


def _expect_empty(cache, counted=cache_lengths.length):
    held = counted(cache, "a new KVCache()")
    if not isinstance(held, CaseFailure) and held != 0:
        raise CaseFailure(f"len(KVCache()) is {held} for a brand-new cache, not 0: do the caches share what they "
                          f"hold? {SHARED}")


@case(STEP, "property")
def test_caches_are_independent(impl):
    """two caches never share what they hold"""
    r = rng(1524)
    first = _new_cache(impl)
    _expect_empty(first, _counted)  # a count that cannot be read is the length cases' to take, not a sign of sharing
    second = _new_cache(impl)
    a = torch.tensor(r.normal(size=(1, 2, 3)), dtype=torch.float32)
    b = torch.tensor(r.normal(size=(1, 3, 3)), dtype=torch.float32)
    _update(impl, first, a, a, "update of the first cache")
    keys, _ = _update(impl, second, b, b, "update of a second, new cache")
    keys = checks.to_array(keys, "the keys of the second cache")
    both = 2 + 3  # what a cache that also holds the other one's tokens holds or counts
    # A wrong len that is not that count is the length case's to take, not a sign of sharing.
    if (keys.ndim == 3 and keys.shape[1] == both) or both in (_counted(second, "the second cache"),
                                                             _counted(first, "the first cache")):
        raise CaseFailure(_shared("a second, new cache returned the first cache's tokens too"))
    checks.expect_close(keys, b.numpy(), "the keys of a second, new cache", atol=1e-6, rtol=1e-5,
                        symptoms=[(lambda: _one_list([b.numpy()], [b.numpy()]), ONE_LIST)])


@case(STEP, "property")
def test_generation_one_token_at_a_time(impl):
    """a prompt then 60 single-token updates (as in generation): everything kept, in order"""
    r = rng(1525)
    sizes = [4] + [1] * 60
    k = torch.tensor(r.normal(size=(2, 64, 8)), dtype=torch.float32)
    v = torch.tensor(r.normal(size=(2, 64, 8)), dtype=torch.float32)
    keys, values, lengths = _run(impl, _new_cache(impl), _chunks(k, sizes), _chunks(v, sizes), "a long generation")
    what = "after a prompt of 4 tokens and 60 one-token updates"
    _expect_not_replaced(keys, _chunks(k, sizes), lengths, sizes, f"the keys {what}")
    checks.expect_close(keys, k.numpy(), f"the keys {what}", atol=1e-6, rtol=1e-5,
                        symptoms=_symptoms(_chunks(k, sizes), _chunks(v, sizes), 0))
    checks.expect_close(values, v.numpy(), f"the values {what}", atol=1e-6, rtol=1e-5,
                        symptoms=_symptoms(_chunks(k, sizes), _chunks(v, sizes), 1))


@case(STEP, "property", weight=0.5)
def test_inputs_unchanged(impl):
    """update leaves the tensors it is given unchanged"""
    r = rng(1526)
    tensors = [torch.tensor(r.normal(size=(2, t, 3)), dtype=torch.float32) for t in (2, 2, 1, 1)]
    held = impl.hold(*tensors)
    cache = _new_cache(impl)
    _call_update(impl, cache, held[0], held[1], "the first update")
    _call_update(impl, cache, held[2], held[3], "the second update")
    for index, (before, handle) in enumerate(zip(tensors, held)):
        checks.expect_unchanged(before.numpy(), handle.call("clone"),
                                f"the {'keys' if index % 2 == 0 else 'values'} passed to update")
