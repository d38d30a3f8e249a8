"""Hidden suite of `split_heads` (assignment 04)."""

import numpy as np
import torch

from autograder.errors import CaseFailure
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


def apply(impl, record):
    return impl.split_heads(torch.tensor(record["x"]), int(record["num_heads"]))


def _mistakes(x, h):
    b, t, d = x.shape
    hd = d // h
    right = x.reshape(b, t, h, hd).transpose(0, 2, 1, 3)
    return [(lambda: x.reshape(b, h, t, hd),
             "reshaped to (batch, num_heads, T, head_dim) without a transpose, which mixes tokens across "
             "heads: view as (batch, T, num_heads, head_dim), then transpose(1, 2)"),
            (lambda: x.reshape(b, t, hd, h).transpose(0, 3, 1, 2), "head i gets every num_heads-th feature "
             "(i, i+h, ...); it must get the contiguous block [i*D/h, (i+1)*D/h)"),
            (lambda: right[:, ::-1],
             "the heads come out in reverse order: head 0 holds the first D/h features")]


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
    out = impl.split_heads(torch.tensor(x), h)
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
    heads = impl.split_heads(x, h)
    if not torch.is_tensor(heads):
        raise CaseFailure(f"split_heads returned a {type(heads).__name__}; return a torch tensor")
    checks.expect_shape(heads, (b, h, t, d // h), "split_heads(x, 3) of a (2, 5, 6) tensor")

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
    checks.expect_inputs_unchanged(impl, "split_heads", [x], ["x"], more=(2,))
