"""Building modules through their handles: construct one, find and load its nn.Linear layers by
attribute name, check its attributes; random weights and inputs for the cases.

One rule for an unwanted bias: it is zeroed while loading, so it costs points once, in the step's
attribute case (`check_linear`), and nowhere else. A missing bias that the weights need cannot be
loaded, and fails the case; one of zeros needs nothing loaded, so a case that is not about the
bias can load zeros and leave a missing bias to the cases that are.
"""

import math

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import SHAPE_MISMATCH, exception_line
from autograder.seam import Handle
from autograder.steps import PROJECTIONS
from autograder.suites.toolkit import checks

SIGNATURES = {
    "SelfAttention": "(d_in, d_out, qkv_bias=False)",
    "CausalAttention": "(d_in, d_out, context_length, dropout, qkv_bias=False)",
    "CachedCausalAttention": "(d_in, d_out, context_length, dropout, qkv_bias=False)",
    "MultiHeadAttentionWrapper": "(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)",
    "MultiHeadAttention": "(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False)",
    "CrossAttention": "(d_q, d_kv, d_out, num_heads, dropout=0.0, qkv_bias=False)",
}


# --- building modules ---------------------------------------------------------------------

def first_line(error, limit=160):
    return exception_line(error, limit) or type(error).__name__


def _is_signature_error(error):
    text = str(error)
    return isinstance(error, TypeError) and "__init__()" in text and "argument" in text


# A step's own explanation of a forward that raised, by class name: explain(impl, what, error) raises a
# CaseFailure that names the cause, or returns. A suite registers it with `explains_forward`.
FORWARD_EXPLAINERS = {}
# The classes whose explainer runs before the shared retries of `Layer`: one that confirms its mistake on a
# probe layer, where the case's own layer cannot tell that mistake from the one a shared retry names.
EXPLAINED_FIRST = set()


# A second explainer of a class whose own runs after the shared retries: one probe that must run before them.
EARLY_EXPLAINERS = {}


def explains_forward(class_name, first=False, early=False):
    def register(explain):
        if early:
            EARLY_EXPLAINERS[class_name] = explain
            return explain
        FORWARD_EXPLAINERS[class_name] = explain
        if first:
            EXPLAINED_FIRST.add(class_name)
        return explain
    return register


# A step's own explanation of a layer that raised while it was built, by class name: explain(impl, class_name,
# what, error) raises a CaseFailure that names the cause, or returns (toolkit.head_probes registers them).
CONSTRUCTION_EXPLAINERS = {}


# The positions of d_out and num_heads among the arguments of the layers that split d_out into heads.
SPLITS_INTO_HEADS = {"MultiHeadAttention": (1, 4), "CrossAttention": (2, 3)}


def _rejected_equal_heads(class_name, args, error):
    """(d_out, num_heads) if `error`, raised building a layer of SPLITS_INTO_HEADS, is the rejection of an
    indivisible d_out (ValueError or AssertionError) where d_out does split into num_heads equal heads; else None."""
    if class_name not in SPLITS_INTO_HEADS or error.type_name not in ("ValueError", "AssertionError"):
        return None
    try:
        d_out, num_heads = (int(args[i]) for i in SPLITS_INTO_HEADS[class_name])
    except (IndexError, TypeError, ValueError):
        return None
    return (d_out, num_heads) if num_heads > 0 and d_out % num_heads == 0 else None


def construct(impl, class_name, args, kwargs=None, what=None, explained=True):
    """impl.<class_name>(*args, **kwargs), checked to be an nn.Module: its Handle, a `Layer` (whose
    forward errors the class's `FORWARD_EXPLAINERS` entry also tries to name, if `explained`)."""
    what = what or f"{class_name}{tuple(args)}"
    try:
        module = getattr(impl, class_name)(*args, **(kwargs or {}))
    except RemoteError as error:
        # A call that does not fit the signature fails before any of the submission's code runs.
        if _is_signature_error(error):
            raise CaseFailure(f"{what} cannot be created ({first_line(error)}); keep the signature of the "
                              f"task: {class_name}{SIGNATURES.get(class_name, '(...)')}") from None
        if explained and not kwargs and class_name in CONSTRUCTION_EXPLAINERS:
            CONSTRUCTION_EXPLAINERS[class_name](impl, class_name, what, error)
        if "is not a Module subclass" in str(error):
            raise CaseFailure(f"{what} cannot be created ({first_line(error)}): a module container got something "
                              "other than a module; nn.Sequential takes its modules as separate arguments (not "
                              "a generator or a list), nn.ModuleList one iterable of modules") from None
        if "dropout probability has to be between 0 and 1" in str(error):
            raise CaseFailure(f"{what} cannot be created: an nn.Dropout got a rate outside [0, 1]; are the "
                              "arguments passed on in the order of each signature (the layers' too)?") from None
        if error.type_name == "TypeError" and "instances of 'Dropout' and" in str(error):
            # nn.Dropout(nn.Dropout(p)): the rate compared with 0 and 1 is a module
            raise CaseFailure(f"{what} cannot be created: an nn.Dropout was given an nn.Dropout module where its "
                              "rate belongs: the layers take the dropout rate, a number, and each builds its own "
                              "nn.Dropout from it") from None
        if (split := _rejected_equal_heads(class_name, args, error)) is not None:
            d_out, num_heads = split
            heads = f"{num_heads} equal head{'s' * (num_heads != 1)} of {d_out // num_heads}"
            raise CaseFailure(f"{what} raised {error.type_name}, though d_out = {d_out} splits into {heads}: is the "
                              "test of divisibility turned round (num_heads % d_out, or == where != belongs)? Only "
                              "a d_out that num_heads does not divide is rejected") from None
        raise
    if not isinstance(module, Handle) or not module.is_module:
        kind = module.type_name if isinstance(module, Handle) else type(module).__name__
        raise CaseFailure(f"{what} is a {kind}, not a torch.nn.Module: subclass nn.Module (and call "
                          "super().__init__() first)")
    explain = FORWARD_EXPLAINERS.get(class_name) if explained else None
    early = EARLY_EXPLAINERS.get(class_name) if explained else None
    return Layer.of(module, what, explain and (lambda what_, error: explain(impl, what_, error)),
                    first=class_name in EXPLAINED_FIRST, early=early and (lambda what_, error: early(impl, what_, error)))


UNSTEADY = ("in eval mode gives another output on each call with the same input: forward draws something new every "
            "time it runs (a layer built inside forward, with fresh random weights, or dropout that ignores eval "
            "mode); build every layer once, in __init__")
# The last forward a Layer ran, with the deadline of the case that ran it (each case sets its own), so that a
# wrong output no known mistake explains can be checked for a forward that draws anew (`explain_unsteady_forward`).
_LAST_FORWARD = []


def _last_forward_to_run_again():
    """(layer, args, kwargs) of the forward this case ran last, where it may be run again: this case's own, on
    tensors only, in eval mode; else None."""
    if not _LAST_FORWARD:
        return None
    layer, args, kwargs, deadline = _LAST_FORWARD[0]
    if deadline is None or layer._impl.deadline != deadline or set(kwargs) - {"_seed"}:
        return None
    if not all(torch.is_tensor(arg) for arg in args) or layer.describe().get("training", True):
        return None
    return layer, args, kwargs


def explain_unsteady_forward():
    """The layer this case called last, run twice more on the same inputs in eval mode: outputs that differ come
    from a forward that draws something new (a layer built there), which no output case can credit, and that,
    not the output's numbers, is what the case says. Inputs other than tensors (a cache) are not run again:
    a second call would change them."""
    last = _last_forward_to_run_again()
    if last is None:
        return
    layer, args, kwargs = last
    try:
        first, second = (Handle.__call__(layer, *args, **kwargs) for _ in range(2))
    except RemoteError:
        return
    if torch.is_tensor(first) and torch.is_tensor(second) and first.shape == second.shape \
            and not _same_with_nan(first, second):
        raise CaseFailure(f"the output is wrong, and no output of it can be right: {layer.what} {UNSTEADY}")


def _same_with_nan(first, second):
    """Two outputs equal entry by entry, a nan matching a nan: a forward that gives nan at the same places twice
    (a log-softmax's -inf weights times the values, a 0 / 0) draws nothing new, though nan != nan."""
    if torch.equal(first, second):
        return True
    if not first.is_floating_point():
        return False
    nan = torch.isnan(first)
    return torch.equal(nan, torch.isnan(second)) and torch.equal(first[~nan], second[~nan])


checks.BEFORE_UNNAMED.append(explain_unsteady_forward)


def unloaded_layers(module):
    """The nn.Linear layers `module` holds that the grader never loaded weights into (`load_linear` records each
    path it loads): layers the task does not name, which keep their random start, {path: the shape of its weight}.
    Empty where nothing was loaded. The shape is that of the weight the kernel sent, which the judge holds (so a
    reply bounds it), and describe() must say the same: a shape the kernel only names, from a weight expanded to
    (40000, 40000) over one number, had the judge make and send 6.4 GB of zeros (red-team round r63)."""
    loaded = module.__dict__.get("loaded_paths")
    if not loaded:
        return {}
    try:
        state = module.call("state_dict")
    except RemoteError:
        return {}
    shapes = {key.removesuffix(".weight"): list(value.shape) for key, value in state.items()
              if key.endswith(".weight") and torch.is_tensor(value) and value.dim() == 2}
    return {path: shape for path, shape in shapes.items()
            if path not in loaded and module.describe(path).get("weight_shape") == shape}


def explain_unloaded_layer():
    """The layer this case called last, where it holds an nn.Linear the task does not name (an output projection
    MultiHeadAttentionWrapper has no use for, say): run again on the same inputs with that layer's weights zeroed,
    an output that changes passes through it, and no output of it can be right, since its weights are nobody's."""
    last = _last_forward_to_run_again()
    if last is None:
        return
    layer, args, kwargs = last
    for path, (out_features, in_features) in unloaded_layers(layer).items():
        try:  # a copy, so the layer the case holds keeps its weights; one that cannot be copied tells nothing
            twin = layer.copy()
            twin.set_linear(path, np.zeros((out_features, in_features), dtype=np.float32))
            changed, first = (Handle.__call__(module, *args, **kwargs) for module in (twin, layer))
        except RemoteError:
            continue
        if torch.is_tensor(changed) and torch.is_tensor(first) and not torch.equal(changed, first):
            raise CaseFailure(f"the output is wrong, and it passes through `{path}` ({in_features} -> {out_features}), "
                              f"a layer the task does not name: {layer.what} {UNNAMED_LAYER}")


UNNAMED_LAYER = ("computes more than its docstring describes; the grader loads weights only into the layers the task "
                 "names, so an extra layer keeps its random start and changes every output: leave it out")
checks.BEFORE_UNNAMED.append(explain_unloaded_layer)


class Layer(Handle):
    """A module's handle whose forward, when it raises, is run again on an input where a known
    mistake is harmless, so that the report names the mistake instead of the bare exception."""

    @classmethod
    def of(cls, handle, what, explain=None, first=False, early=None):
        layer = cls.__new__(cls)
        layer.__dict__.update(vars(handle))
        layer.what, layer.explain, layer.explain_first, layer.explain_early = what, explain, first, early
        return layer

    def __call__(self, *args, **kwargs):
        try:
            result = super().__call__(*args, **kwargs)
        except RemoteError as error:
            if not any(phrase in str(error) for phrase in SHAPE_MISMATCH):
                raise  # the retries explain shapes that do not fit; an error a case expects stays as it is
            if self.explain_early is not None:
                self.explain_early(self.what, error)
            if self.explain is not None and self.explain_first:
                self.explain(self.what, error)
            if len(args) == 1 and set(kwargs) <= {"_seed"}:
                # x alone: where other inputs (a context, a mask) meet it, resizing x makes other shapes fit
                self._explain_batch_as_tokens(args, kwargs, error)
                self._explain_features_as_tokens(args, kwargs, error)
            if self.explain is not None and not self.explain_first:
                self.explain(self.what, error)  # the step's own retries
            raise
        _LAST_FORWARD[:] = [(self, args, kwargs, self._impl.deadline)]
        return result

    def _explain_features_as_tokens(self, args, kwargs, error):
        """The number of tokens read from the features axis (x.shape[-1]) fails wherever d_in != T, and is
        right on an input of exactly d_in tokens. A layer that also runs on d_in - 1 tokens (2 or more: one
        token broadcasts against any mask) fails for another reason, such as a mask made for fewer tokens."""
        x = args[0] if args else None
        if not torch.is_tensor(x) or x.dim() != 3 or x.shape[1] == x.shape[2]:
            return

        def runs_on(num_tokens):
            try:
                super(Layer, self).__call__(x[:, :1].expand(x.shape[0], num_tokens, x.shape[2]).clone(), *args[1:],
                                            **kwargs)
            except RemoteError:
                return False
            return True

        if not runs_on(x.shape[2]) or (x.shape[2] - 1 >= 2 and runs_on(x.shape[2] - 1)):
            return
        raise CaseFailure(f"{self.what} raised {error.type_name} on {x.shape[1]} tokens of {x.shape[2]} features, "
                          f"and runs on {x.shape[2]} tokens: is the number of tokens read from the features "
                          "axis? x is (batch, T, d_in), so T is its second axis") from None

    def _explain_batch_as_tokens(self, args, kwargs, error):
        """The number of tokens read from the batch axis (x.shape[0]) fails wherever batch != T, and
        is right on a batch of exactly T sequences: every batched input is retried so."""
        x = args[0] if args else None
        if not torch.is_tensor(x) or x.dim() != 3 or x.shape[0] == x.shape[1]:
            return
        batch, num_tokens = x.shape[:2]

        def as_batch_of_t(a):
            fits = torch.is_tensor(a) and a.dim() >= 2 and a.shape[0] == batch
            return a[:1].expand(num_tokens, *a.shape[1:]).clone() if fits else a

        try:
            out = super().__call__(*map(as_batch_of_t, args), **kwargs)
        except RemoteError:
            return
        try:  # in train mode dropout makes the copies differ anyway
            out = None if self.describe().get("training") else checks.to_array(out, self.what)
        except CaseFailure:
            out = None
        if out is not None and out.ndim >= 1 and not np.allclose(out, out[:1], atol=1e-5, equal_nan=True):
            # T sequences alike give unlike outputs: an axis of T that belongs to the tokens met the batch axis
            raise CaseFailure(f"{self.what} raised {error.type_name} on a batch of {batch} sequences of {num_tokens} "
                              f"tokens; it runs on a batch of {num_tokens} copies of one sequence, but gives the copies "
                              f"different outputs: {BATCH_LINED_UP}") from None
        raise CaseFailure(f"{self.what} raised {error.type_name} on a batch of {batch} sequences of {num_tokens} "
                          f"tokens, and runs on a batch of {num_tokens}: is the number of tokens read from the "
                          "batch axis? x is (batch, T, d_in), so T is its second axis") from None


BATCH_LINED_UP = ("something made for the tokens is lined up with the batch axis: is an axis added to the mask "
                  "in the middle (mask.unsqueeze(1), (T, 1, T))? Broadcasting lines shapes up from the last axis, so "
                  "its T rows meet the batch axis; a (T, T) mask already broadcasts over the batch")


def linear_info(module, path, what):
    """describe() of the nn.Linear at `path`, or a CaseFailure naming what is missing."""
    info = module.describe(path)
    if not info.get("exists"):
        if any(part.isdigit() for part in path.split(".")):
            raise CaseFailure(f"{what}: `{path}` does not exist (is `heads` an nn.ModuleList with one "
                              "module per head, each with W_query, W_key and W_value?)")
        raise CaseFailure(f"{what} has no attribute `{path}`; keep the attribute names of the task "
                          "(W_query, W_key, W_value, and out_proj or heads where the task has them)")
    if "weight_shape" not in info:
        raise CaseFailure(f"{what}: `{path}` is a {info.get('type', 'object')}, expected an nn.Linear "
                          "(nn.Linear(d_in, d_out, bias=qkv_bias) for the projections)")
    return info


# nn.Linear's weight is (out_features, in_features): the transposed shape is the two sizes exchanged
SIZES_SWAPPED = ("its input and output sizes are in each other's place (d_in and d_out swapped, in the "
                 "nn.Linear or in the arguments passed on to it?)")


# A wrapper head as wide as the whole layer: d_out read as MultiHeadAttention's (the layer's width), not one head's.
HEAD_WIDENED = ("each head's projection is a whole number of times d_out wide: is each head built with d_out * "
                "num_heads features? In MultiHeadAttentionWrapper d_out is ONE head's width, and the heads side by side "
                "make the num_heads * d_out of the output")


# nn.Linear(d_in, d_out) for out_proj, the projections' line copied: it reads the input's width, where the merged
# heads it is given are d_out wide
OUT_PROJ_READS_D_IN = ("out_proj reads {} features, not the {} of the merged heads it is given: out_proj mixes the heads' "
                       "outputs, d_out features per token, whatever the input x's width")


def _head_widened(shape, expected, path):
    """Whether a head's nn.Linear at `path` has the inputs expected and a multiple (2 or more) of the outputs."""
    out, inputs = shape
    return path.startswith("heads.") and inputs == expected[1] and out > expected[0] and out % expected[0] == 0


def load_linear(module, path, weight, bias, what):
    """Copy (weight (out, in), bias or None) into the nn.Linear at `path` (e.g. "heads.1.W_key").

    The one rule for biases: a bias the weights do not have is zeroed (the attribute case marks
    it down, once); a nonzero bias they have but the layer lacks fails here."""
    info = linear_info(module, path, what)
    weight = np.asarray(weight, dtype=np.float32)
    if tuple(info["weight_shape"]) != weight.shape:
        swapped = tuple(info["weight_shape"]) == weight.shape[::-1]
        widened = _head_widened(info["weight_shape"], weight.shape, path)
        raise CaseFailure(f"{what}: `{path}.weight` has shape {checks.fmt_shape(info['weight_shape'])}, "
                          f"expected {checks.fmt_shape(weight.shape)} (nn.Linear(in_features="
                          f"{weight.shape[1]}, out_features={weight.shape[0]}))" + (f": {SIZES_SWAPPED}" if swapped else "")
                          + (f": {HEAD_WIDENED}" if widened else "")
                          + (f": {OUT_PROJ_READS_D_IN.format(info['weight_shape'][1], weight.shape[1])}"
                             if path == "out_proj" and not swapped and info["weight_shape"][0] == weight.shape[0] else ""))
    if bias is not None and not info.get("bias") and np.any(np.asarray(bias)):
        why = ("out_proj always has one" if path.endswith("out_proj")
               else "qkv_bias=True: pass bias=qkv_bias to nn.Linear")
        raise CaseFailure(f"{what}: `{path}` has no bias, but it should have one ({why})")
    module.set_linear(path, weight, None if bias is None else np.asarray(bias, dtype=np.float32))
    module.__dict__.setdefault("loaded_paths", set()).add(path)  # the layers a wrong output may not blame


def loaded_module(impl, class_name, args, linears, what=None, dtype=None, explained=True):
    """impl.<class_name>(*args) holding `linears` {attribute path: (weight, bias or None)}, in
    eval mode (and converted to `dtype` if given); `explained` as for `construct`."""
    what = what or f"{class_name}{tuple(args)}"
    module = construct(impl, class_name, args, what=what, explained=explained)
    for path, (weight, bias) in linears.items():
        load_linear(module, path, weight, bias, what)
    if dtype is not None:
        module.to(dtype)
    return module.eval()


def check_linear(module, path, d_in, d_out, bias, what):
    """The attribute at `path` is nn.Linear(d_in, d_out, bias=bias), as the task asks."""
    info = module.describe(path)
    if not info.get("exists"):
        raise CaseFailure(f"{what} has no attribute `{path}`")
    if "weight_shape" not in info:
        raise CaseFailure(f"{what}.{path} is a {info.get('type', 'object')}, expected "
                          "nn.Linear(d_in, d_out, bias=qkv_bias)")
    out_features, in_features = info["weight_shape"]
    if (in_features, out_features) != (d_in, d_out):
        raise CaseFailure(f"{what}.{path} is nn.Linear({in_features}, {out_features}), expected "
                          f"nn.Linear({d_in}, {d_out})")
    if bool(info.get("bias")) != bias:
        has = "has a" if info.get("bias") else "has no"
        hint = ("out_proj is nn.Linear(d_out, d_out), with a bias" if path.endswith("out_proj")
                else "pass bias=qkv_bias to nn.Linear")
        raise CaseFailure(f"{what}.{path} {has} bias: {hint}")


def check_dropout_attribute(name, module, p):
    """`module.dropout` is nn.Dropout(p)."""
    info = module.describe("dropout")
    if "p" not in info:
        found = info.get("type", "nothing") if info.get("exists") else "nothing"
        raise CaseFailure(f"{name} should have an attribute `dropout` = nn.Dropout({p}); found {found}")
    if not abs(float(info["p"]) - p) <= 1e-12:  # a nan the kernel names is no p either
        # two digits: a p the kernel set to a number of its choice (an earlier case's input) is quoted no further
        raise CaseFailure(f"{name}(..., dropout={p}).dropout has p={float(info['p']):.2g}; pass the dropout "
                          "argument to nn.Dropout")


def check_mask_is_buffer(what, module):
    """`module` keeps no tensor of its own but as a buffer (its layers' parameters are theirs): a mask kept as
    a plain attribute stays on the CPU when the module moves to a GPU (.to(device)), and the first forward
    there fails; kept as an nn.Parameter, it is handed to the optimiser, although every value is right."""
    for name, kind in sorted(module.describe().get("stray_tensors", {}).items()):
        if kind == "Parameter":
            raise CaseFailure(f"{what} keeps the tensor `{name}` as an nn.Parameter, which an optimiser is given to "
                              "update; a tensor the module keeps but does not learn is a buffer, as the task asks "
                              "for the mask")
        raise CaseFailure(f"{what} keeps the tensor `{name}` as a plain attribute, which stays where it was made when "
                          "the module moves (.to(device)), so the forward fails on a GPU; a tensor the module keeps "
                          "but does not learn is a buffer, as the task asks for the mask")


# --- weights and inputs -------------------------------------------------------------------

def random_linear(r, d_out, d_in, bias):
    """(weight (d_out, d_in), bias or None) in float32."""
    weight = (r.normal(size=(d_out, d_in)) / math.sqrt(d_in)).astype(np.float32)
    return weight, (0.3 * r.normal(size=d_out)).astype(np.float32) if bias else None


def random_projections(r, d_in, d_out, bias):
    return {name: random_linear(r, d_out, d_in, bias) for name in PROJECTIONS}


def tensor(a):
    return torch.tensor(np.asarray(a), dtype=torch.float32)
