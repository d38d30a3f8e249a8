"""Hidden suite of `MultiHeadAttentionWrapper` (assignment 04).

While this step is graded, `CausalAttention` (and the mask helpers) are the reference's, so the
cases grade the wrapping: one causal head per `heads` entry, concatenated head 0 first. Weights
are copied into `heads[i].W_query` etc. by attribute name (`toolkit.loaded_module`).
"""

import numpy as np
import torch
from torch import nn

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures.notes import chapter_linear_weights, journey_batch
from autograder.harness import case
from autograder.steps import PROJECTIONS
from autograder.suites import toolkit
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import notes_cases, rng

STEP = "MultiHeadAttentionWrapper"

_BIAS = {"W_query": "b_query", "W_key": "b_key", "W_value": "b_value"}


def _random_heads(r, num_heads, d_in, d_out, bias):
    """[{name: (weight, bias)}] per head."""
    return [toolkit.random_projections(r, d_in, d_out, bias) for _ in range(num_heads)]


def _what(d_in, d_out, context_length, num_heads, dropout=0.0, bias=False):
    return (f"MultiHeadAttentionWrapper({d_in}, {d_out}, {context_length}, {dropout}, "
            f"num_heads={num_heads}, qkv_bias={bias})")


def _wrapper(impl, d_in, d_out, context_length, heads, dropout=0.0, bias=False, explained=True):
    what = _what(d_in, d_out, context_length, len(heads), dropout, bias)
    module = toolkit.construct(impl, STEP, (d_in, d_out, context_length, dropout, len(heads), bias), what=what,
                               explained=explained)
    _check_heads(module, len(heads), what)
    # a head as wide as d_out // num_heads that still reads d_in features: one whose d_in and d_out are
    # swapped can be as wide by chance, and loading its weights says so
    width, width_in = module.describe("heads.0.W_query").get("weight_shape", (d_out, d_in))
    if width != d_out and width == d_out // len(heads) and width_in == d_in:
        raise CaseFailure(f"{what}: each head is d_out // num_heads = {width} wide; in the wrapper d_out is the "
                          "width of ONE head, and the output is num_heads * d_out wide")
    linears = {f"heads.{i}.{name}": head[name] for i, head in enumerate(heads) for name in PROJECTIONS}
    try:
        for path, (weight, b) in linears.items():
            toolkit.load_linear(module, path, weight, b, what)
    except CaseFailure:
        _check_arguments_in_place(module, dropout, bias, what)  # a bias missing may be a dropout rate's place
        raise
    return module.eval()


def _check_arguments_in_place(module, dropout, bias, what):
    """Heads without the bias qkv_bias asks for never got it; heads whose bias follows dropout and whose dropout
    rate is qkv_bias got the two in each other's place."""
    head_bias = bool(module.describe("heads.0.W_query").get("bias"))
    rate = module.describe("heads.0.dropout").get("p")
    if bias and not head_bias and rate is not None and float(rate) == float(dropout):
        raise CaseFailure(f"{what}: its heads' projections have no bias though qkv_bias=True, and their dropout is "
                          "right: is qkv_bias passed on to the heads? CausalAttention's own qkv_bias defaults to False")
    if head_bias != bias and head_bias == bool(dropout) and rate is not None and float(rate) == float(bias):
        raise CaseFailure(f"{what}: its heads' dropout rate is {float(rate):g} (qkv_bias) and their projections "
                          f"{'have' if head_bias else 'lack'} a bias as dropout={dropout} is {bool(dropout)}: "
                          f"{ARGUMENTS_SWAPPED}")


HEAD_ARGUMENTS = "CausalAttention takes (d_in, d_out, context_length, dropout, qkv_bias)"
ARGUMENTS_SWAPPED = ("are dropout and qkv_bias passed to the heads in each other's place? CausalAttention takes "
                     "(d_in, d_out, context_length, dropout, qkv_bias)")


# range(num_heads - 1) where range(num_heads) belongs: every case builds the heads, so this names it before any output
ONE_SHORT = "does the loop that builds the heads stop one short (range(num_heads - 1), or range(1, num_heads))?"


CHAINED = ("the heads run one after another, each on the previous head's output (calling an nn.Sequential "
           "chains its modules): every head runs on x itself, and their outputs go side by side")


@toolkit.explains_forward(STEP)
def _explain_forward(impl, what, error):
    """A forward that raised, run again with d_in == d_out, where heads chained one after another fit; and on as
    many tokens as heads, where heads built with num_heads for their context_length fit."""
    _explain_masks_of_num_heads(impl, what, error)
    r = rng(1509)
    heads = _random_heads(r, 2, 2, 2, False)
    x = r.normal(size=(2, 3, 2))
    toolkit.explain_by_probe(what, error, lambda: _wrapper(impl, 2, 2, 4, heads, explained=False)(toolkit.tensor(x)),
                             lambda: toolkit.attention(toolkit.attention(x, heads[0]), heads[1]), [({}, CHAINED)],
                             "d_in == d_out")


def _explain_masks_of_num_heads(impl, what, error):
    """A wrapper of 3 heads, d_in 5, d_out 2 and context_length 7 that runs right on as many tokens as one of its
    other sizes but raises on one token more: its heads' causal masks cover that size, not context_length (a mask
    not sliced to T fails on fewer tokens too)."""
    r = rng(1510)
    heads = _random_heads(r, 3, 5, 2, False)
    x = r.normal(size=(2, 6, 5))  # 5 features, neither 3 nor 4: no other retry of a Layer fits them
    try:
        layer = _wrapper(impl, 5, 2, 7, heads, explained=False)
    except (RemoteError, CaseFailure):
        return
    for size, passed in ((2, "d_out"), (3, "num_heads"), (5, "d_in")):
        try:
            if not toolkit.close(layer(toolkit.tensor(x[:, :size])), toolkit.heads_side_by_side(x[:, :size], heads)):
                continue
        except (RemoteError, CaseFailure):
            return  # fewer tokens than a wrong mask covers raise too: no size explains it
        try:
            layer(toolkit.tensor(x[:, :size + 1]))
        except RemoteError:
            runs = (f"{what} raised {error.type_name}: a wrapper of 3 heads, d_in 5, d_out 2 and context_length 7 runs "
                    f"right on {size} tokens and raises on {size + 1}")
            if passed == "num_heads":  # neighbours in the wrapper's arguments, and easily swapped
                raise CaseFailure(f"{runs}, so each head's causal mask covers num_heads tokens, not context_length: "
                                  "are the two passed in each other's place to the heads?") from None
            raise CaseFailure(f"{runs}, so each head's causal mask covers {passed} tokens, not context_length: is "
                              f"{passed} passed to the heads in context_length's place?") from None
        except CaseFailure:
            return


def _check_heads(module, num_heads, what):
    """`heads` must hold num_heads modules to load weights into (any container whose forward the
    wrapper does not call: test_heads_structure charges one other than nn.ModuleList)."""
    info = module.describe("heads")
    if not info.get("exists") or not {"ModuleList", "Sequential", "list", "tuple"} & set(info.get("mro", ())):
        found = info.get("type", "nothing") if info.get("exists") else "nothing"
        raise CaseFailure(f"{what} should have an attribute `heads`, an nn.ModuleList of the heads; found "
                          f"{found}")
    if info.get("len") == num_heads - 1 > 0:
        raise CaseFailure(f"{what}.heads holds {num_heads - 1} modules, one fewer than num_heads={num_heads}: {ONE_SHORT}")
    if info.get("len") != num_heads:
        raise CaseFailure(f"{what}.heads holds {info.get('len')} modules, expected num_heads={num_heads}")


def _check_heads_as_the_task_says(module, num_heads, d_in, d_out, bias, what):
    """An nn.ModuleList of num_heads distinct modules, each with its three projections."""
    mro = module.describe("heads").get("mro", ())
    if "Sequential" in mro:
        raise CaseFailure(f"{what}.heads is an nn.Sequential, the container of a chain (each module's output "
                          "fed to the next); the heads run side by side on the same x, so they are an "
                          "nn.ModuleList")
    if "ModuleList" not in mro:
        raise CaseFailure(f"{what}.heads is a {module.describe('heads').get('type')}, not an nn.ModuleList, "
                          "so the heads' parameters are not registered (model.parameters(), .eval() and "
                          ".to() miss them)")
    # The same module, reached twice, comes back as the same handle.
    handles = {module.call("get_submodule", f"heads.{i}").id for i in range(num_heads)}
    if len(handles) != num_heads:
        raise CaseFailure(f"{what}.heads holds the same module more than once: create a new causal "
                          "attention module for every head, so each has its own weights")
    # CausalAttention(d_in, d_out, context_length, dropout, num_heads), the wrapper's own arguments copied: the bias
    # is the wrapper's to pass on (the heads build the layers), so nn.Linear's own advice would not reach it
    if not bias and module.describe("heads.0.W_query").get("bias"):
        raise CaseFailure(f"{what}: its heads' projections have a bias though qkv_bias=False: is qkv_bias passed on "
                          "to the heads, in its place? An argument in qkv_bias's place (num_heads, say, the wrapper's "
                          f"own arguments copied) turns the bias on whenever it is not 0: {HEAD_ARGUMENTS}")
    for i in range(num_heads):
        for name in PROJECTIONS:
            if "weight_shape" not in module.describe(f"heads.{i}.{name}"):
                raise CaseFailure(f"{what}.heads[{i}] has no nn.Linear `{name}`; each head needs W_query, "
                                  "W_key and W_value")
            toolkit.check_linear(module, f"heads.{i}.{name}", d_in, d_out, bias, what)


SAME_HEAD = "every head computes the same output: each head needs its own module (and weights)"
ONE_HEAD = ("the output is one head's output alone, as wide as one head: does the loop over the heads keep only one "
            "(overwriting the result with each head's output, joining a list made anew for each head, or returning "
            "after the first)? Collect every head's output and concatenate them along the last dimension")


def _wrapper_mistakes(x, heads):
    # one head's output repeated: the last (one module listed num_heads times holds the last weights
    # loaded into it) or the first (heads[0] called for every head)
    return [(lambda: toolkit.heads_side_by_side(x, heads[::-1]), "the heads are concatenated in reverse "
             "order: head 0's output comes first"),
            (lambda: toolkit.heads_side_by_side(x, [heads[-1]] * len(heads)), SAME_HEAD),
            (lambda: toolkit.heads_side_by_side(x, [heads[0]] * len(heads)), SAME_HEAD),
            (lambda: toolkit.heads_side_by_side(x, heads, mask="none"), "the heads are not causal: use causal "
             "single-head modules (CausalAttention)"),
            *_one_head_alone(x, heads), *_joined_wrongly(x, heads)]


# With two heads, all but the last is head 0 alone: its message says both.
LAST_LEFT_OUT = ("the last head's output is left out: does the loop over the heads stop one short (self.heads[:-1], "
                 "range(num_heads - 1))? Every head's output goes into the concatenation")
# torch.cat([self.heads[0](x), self.heads[1](x)], dim=-1): the chapter's two heads written out. With three heads it
# is all but the last, and the message says both.
TWO_HEADS = ("only the first two heads' outputs are kept, whatever num_heads is: are the chapter's two heads written "
             "out one by one (heads[0] and heads[1])? Every head in self.heads goes into the concatenation")
HEAD_ZERO_TWICE = ("head 0's output comes twice, before every head's output, head 0's included: is the result "
                   "started with heads[0](x) before a loop over all the heads? Start from an empty list (or from "
                   "heads[0] and loop over the rest)")


def _one_head_alone(x, heads):
    """One head's output alone (right with one head, where no case fails): the loop keeps the last or the first;
    all the heads but the last, the first two alone, and head 0's output twice."""
    first_alone = ONE_HEAD if len(heads) != 2 else f"{ONE_HEAD}; or {LAST_LEFT_OUT}"
    return [(lambda: toolkit.attention(x, heads[-1]), ONE_HEAD), (lambda: toolkit.attention(x, heads[0]), first_alone),
            *[(lambda: toolkit.heads_side_by_side(x, heads[:-1]),
               LAST_LEFT_OUT if len(heads) != 3 else checks.one_or_all([LAST_LEFT_OUT, TWO_HEADS]))] * (len(heads) > 2),
            *[(lambda: toolkit.heads_side_by_side(x, heads[:2]), TWO_HEADS)] * (len(heads) > 3),
            (lambda: toolkit.heads_side_by_side(x, [heads[0], *heads]), HEAD_ZERO_TWICE)]


def _joined_wrongly(x, heads):
    """The heads' outputs put together along another axis than the features, or added up."""
    outputs = lambda: [toolkit.attention(x, head) for head in heads]  # noqa: E731 - computed only when asked
    side_by_side = "they go side by side along the last dimension, the features"
    return [(lambda: np.concatenate(outputs(), axis=-2), f"the heads' outputs are concatenated along the tokens "
             f"(dim=1): {side_by_side}"),
            (lambda: np.concatenate(outputs(), axis=0), f"the heads' outputs are concatenated along the batch "
             f"(dim=0): {side_by_side}"),
            *[(lambda axis=axis: np.stack(outputs(), axis=axis), f"the heads' outputs are stacked on a new axis "
               f"(torch.stack(..., dim={axis})), not concatenated: {side_by_side}") for axis in (0, -1)],
            (lambda: np.sum(outputs(), axis=0), f"the heads' outputs are added, not concatenated: {side_by_side}"),
            (lambda: np.mean(outputs(), axis=0), f"the heads' outputs are averaged, not concatenated: "
             f"{side_by_side}"),
            *[(lambda: np.concatenate(outputs(), axis=-1) / len(heads), DIVIDED_BY_HEADS)] * (len(heads) > 1)]


# torch.cat(...) / num_heads: the heads side by side, then scaled as if they were averaged
DIVIDED_BY_HEADS = ("the heads' outputs are side by side but divided by num_heads, as if averaged: each head's "
                    "output goes into the concatenation as it is, unscaled")


def _notes_symptoms(example):
    """The known mistakes on the chapter's batch with the chapter's heads (seed 123, in order)."""
    layers = chapter_linear_weights(123, [(3, 2, False)] * 6)
    heads = [{name: (layers[3 * i + k][0].numpy(), None) for k, name in enumerate(PROJECTIONS)} for i in range(2)]
    return _wrapper_mistakes(journey_batch().numpy(), heads)


test_notes = notes_cases(STEP, weight=2, symptoms=_notes_symptoms)


def _record(r, label, batch, num_tokens, d_in, d_out, num_heads, bias):
    heads = _random_heads(r, num_heads, d_in, d_out, bias)
    record = dict(label=label, x=r.normal(size=(batch, num_tokens, d_in)).astype(np.float32),
                  d_in=np.int64(d_in), d_out=np.int64(d_out), context_length=np.int64(num_tokens),
                  num_heads=np.int64(num_heads), qkv_bias=np.int64(bias))
    for name in PROJECTIONS:
        record[name] = np.stack([head[name][0] for head in heads])
        record[_BIAS[name]] = (np.stack([head[name][1] for head in heads]) if bias
                               else np.zeros((num_heads, d_out), dtype=np.float32))
    return record


def _record_heads(record):
    bias = bool(record["qkv_bias"])
    return [{name: (record[name][i], record[_BIAS[name]][i] if bias else None) for name in PROJECTIONS}
            for i in range(int(record["num_heads"]))]


def stored_inputs():
    r = rng(1501)
    return [
        _record(r, "2 heads, d_in=3, d_out=2, 6 tokens, batch of 2", 2, 6, 3, 2, 2, False),
        _record(r, "3 heads, d_in=4, d_out=3, 5 tokens, batch of 1, qkv_bias=True", 1, 5, 4, 3, 3, True),
        _record(r, "1 head, d_in=3, d_out=4, 4 tokens, batch of 3", 3, 4, 3, 4, 1, False),
        _record(r, "4 heads, d_in=2, d_out=1, a single token, batch of 2", 2, 1, 2, 1, 4, False),
    ]


def apply(impl, record):
    module = _wrapper(impl, int(record["d_in"]), int(record["d_out"]), int(record["context_length"]),
                      _record_heads(record), bias=bool(record["qkv_bias"]))
    return module(torch.tensor(record["x"]))


@case(STEP, "stored", weight=3)
def test_stored_outputs(impl):
    """matches the reference for 1 to 4 heads, several widths, batch sizes, with and without bias"""
    toolkit.check_stored_outputs(impl, STEP, apply, "MultiHeadAttentionWrapper",
                                 lambda record, k: _wrapper_mistakes(record["x"], _record_heads(record)))


@case(STEP, "property", weight=0.5)
def test_heads_structure(impl):
    """has `heads`: an nn.ModuleList of num_heads separate modules, each with W_query, W_key, W_value"""
    r = rng(1502)
    for num_heads, bias in ((3, False), (2, True)):
        module = _wrapper(impl, 4, 2, 5, _random_heads(r, num_heads, 4, 2, bias), bias=bias)
        _check_heads_as_the_task_says(module, num_heads, 4, 2, bias,
                                      f"MultiHeadAttentionWrapper(4, 2, 5, 0.0, num_heads={num_heads})")


@case(STEP, "property", weight=0.5)
def test_head_zero_first(impl):
    """output columns [i*d_out, (i+1)*d_out) are heads[i](x)"""
    r = rng(1503)
    heads = _random_heads(r, 3, 3, 2, False)
    module = _wrapper(impl, 3, 2, 5, heads)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    out = checks.to_array(module(x), "MultiHeadAttentionWrapper(x)")
    what = "MultiHeadAttentionWrapper(3, 2, 5, 0.0, num_heads=3)(x)"
    # as wide as one head, or a head too few or too many: wrong widths the shape's relation cannot name
    if out.shape != (2, 5, 6) and (symptom := checks.named_mistake(out, _one_head_alone(x.numpy(), heads))):
        raise CaseFailure(f"{what}: {symptom}")
    checks.expect_shape(out, (2, 5, 6), what)
    for i in range(3):
        try:
            head = module.call("get_submodule", f"heads.{i}")(x)
        except RemoteError:  # heads that are no nn.ModuleList: what a causal head with these weights gives
            head = toolkit.attention(x.numpy(), heads[i])
        head = checks.to_array(head, f"heads[{i}](x)")
        if not toolkit.close(out[..., 2 * i:2 * i + 2], head):
            toolkit.explain_unsteady_forward()  # heads made anew in forward are not the heads it holds
            right = toolkit.heads_side_by_side(x.numpy(), heads)
            if not toolkit.close(np.sort(out, axis=None), np.sort(right, axis=None)):
                # not the heads' numbers in other places: how they are joined is not the cause, the ladder names it
                checks.expect_close(out, right, what, symptoms=_wrapper_mistakes(x.numpy(), heads))
            raise CaseFailure(f"output columns {2 * i}..{2 * i + 1} are not heads[{i}](x): concatenate the "
                              "heads' outputs along the last dimension, head 0 first")


@case(STEP, "oracle", weight=2)
def test_matches_torch(impl):
    """each head agrees with torch.nn.MultiheadAttention (one head, causal attn_mask)"""
    r = rng(1504)
    d, num_tokens, num_heads = 4, 5, 2
    # qkv_bias=True with biases of zeros (drawn, so the stream stays): the stored record with qkv_bias=True is the
    # case about their values, so heads built without a bias, a slip, cost it and the structure case, not this one
    heads = [{name: (weight, np.zeros_like(bias)) for name, (weight, bias) in head.items()}
             for head in _random_heads(r, num_heads, d, d, True)]
    x = toolkit.tensor(r.normal(size=(2, num_tokens, d)))
    blocked = torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)
    wants = []
    for head in heads:
        torch_mha = nn.MultiheadAttention(d, 1, bias=True, batch_first=True)
        with torch.no_grad():
            torch_mha.in_proj_weight.copy_(torch.cat([torch.as_tensor(head[n][0]) for n in PROJECTIONS]))
            torch_mha.in_proj_bias.copy_(torch.cat([torch.as_tensor(head[n][1]) for n in PROJECTIONS]))
            torch_mha.out_proj.weight.copy_(torch.eye(d))
            torch_mha.out_proj.bias.zero_()
            wants.append(torch_mha.eval()(x, x, x, attn_mask=blocked, need_weights=False)[0])
    module = _wrapper(impl, d, d, num_tokens, heads, bias=True)
    checks.expect_close(module(x), torch.cat(wants, dim=-1).numpy(),
                        "MultiHeadAttentionWrapper(4, 4, 5, 0.0, num_heads=2, qkv_bias=True) compared "
                        "with two torch.nn.MultiheadAttention heads, concatenated",
                        symptoms=_wrapper_mistakes(x.numpy(), heads))


@case(STEP, "property", weight=0.25)
def test_causal(impl):
    """is causal: changing later tokens never changes the outputs of earlier ones"""
    module = _wrapper(impl, 3, 2, 6, _random_heads(rng(1505), 2, 3, 2, False))
    toolkit.check_finite_and_causal("MultiHeadAttentionWrapper", module, 3, 6, 1506)


@case(STEP, "property", weight=0.25)
def test_last_token_is_self_attention(impl):
    """the last token's output equals its unmasked self-attention output (notes 003)"""
    r = rng(1507)
    heads = _random_heads(r, 2, 3, 2, False)
    x = toolkit.tensor(r.normal(size=(2, 5, 3)))
    toolkit.check_last_token("MultiHeadAttentionWrapper", _wrapper(impl, 3, 2, 5, heads), x,
                             toolkit.heads_side_by_side(x.numpy(), heads, mask="none"),
                             toolkit.heads_side_by_side(x.numpy(), heads), _wrapper_mistakes(x.numpy(), heads))


@case(STEP, "property", weight=0.25)
def test_shorter_than_context_length(impl):
    """accepts inputs of context_length tokens (8, more than any other case's) and shorter ones"""
    heads = _random_heads(rng(1508), 2, 3, 2, False)
    toolkit.check_short_input("MultiHeadAttentionWrapper", lambda ctx: _wrapper(impl, 3, 2, ctx, heads),
                              3, 8, (8, 5, 1), 1509)


def _probe_heads(num_tokens, num_heads):
    heads = _random_heads(rng(1510), num_heads, num_tokens, 2 * num_tokens, False)
    eye = np.eye(num_tokens, dtype=np.float32)
    for head in heads:
        head["W_value"] = (np.vstack([eye, 2 * eye]), None)
    return heads


def _dropout_probe(impl, num_tokens, num_heads, p):
    return _wrapper(impl, num_tokens, 2 * num_tokens, num_tokens, _probe_heads(num_tokens, num_heads), dropout=p)


@case(STEP, "property", weight=0.5)
def test_dropout_passed_to_heads(impl):
    """passes dropout to its heads: off in eval mode, on the attention weights in train mode"""
    toolkit.check_dropout("MultiHeadAttentionWrapper", lambda p: _dropout_probe(impl, 5, 2, p), 5, 2,
                          not_applied=f"pass the dropout argument on to every head, in its place: {HEAD_ARGUMENTS}",
                          expected=toolkit.heads_side_by_side(np.eye(5)[None], _probe_heads(5, 2)))


@case(STEP, "property", weight=0.25)
def test_batch_sizes(impl):
    """works for any batch size, each item independent of the others"""
    module = _wrapper(impl, 3, 2, 4, _random_heads(rng(1511), 2, 3, 2, True), bias=True)
    toolkit.check_batches("MultiHeadAttentionWrapper", module, 3, 4, 1512)


@case(STEP, "property", weight=0.25)
def test_input_unchanged(impl):
    """leaves its input x unchanged"""
    r = rng(1513)
    module = _wrapper(impl, 3, 2, 4, _random_heads(r, 2, 3, 2, False))
    toolkit.check_input_unchanged(impl, "MultiHeadAttentionWrapper", module,
                                  toolkit.tensor(r.normal(size=(2, 4, 3))))


@case(STEP, "property", weight=0.25)
def test_gradients_reach_every_head(impl):
    """gradients flow back to every head's W_query, W_key and W_value"""
    r = rng(1514)
    module = _wrapper(impl, 3, 2, 4, _random_heads(r, 3, 3, 2, False))
    paths = [f"heads.{i}.{name}.weight" for i in range(3) for name in PROJECTIONS]
    toolkit.check_gradients("MultiHeadAttentionWrapper", module, toolkit.tensor(r.normal(size=(2, 4, 3))), paths)
