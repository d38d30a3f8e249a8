"""Property checks several layer suites share: causality, the last token, inputs shorter than
`context_length`, batches, the input left unchanged, gradients, dropout."""

import re

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.harness import exception_line
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.model import NAN_HINT
from autograder.suites.toolkit.modules import UNNAMED_LAYER, UNSTEADY, first_line, tensor, unloaded_layers

# The attention weights returned for the context (return weights, the product with the values left out): a
# (batch, T, T) output of rows that sum to 1, which the output's shape alone would call a wrong size.
RETURNS_WEIGHTS = ("it returns the attention weights (batch, T, T), not the context vectors: the weights say how "
                   "much each token attends to each other; the output is their product with the values, "
                   "weights @ values, (batch, T, d_out)")


# --- properties ---------------------------------------------------------------------------

def close(a, b, atol=1e-5, rtol=1e-4):
    """a ≈ b elementwise; nan matches nan only (so a nan mistake costs in the cases that name it), inf the same inf."""
    a, b = checks.to_array(a, "output"), checks.to_array(b, "output")
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore"):  # inf - inf is nan: equal infinities are equal all the same
        return bool(((abs(a - b) <= atol + rtol * abs(b)) | both_nan | (a == b)).all())


def check_finite_and_causal(name, module, d_in, num_tokens, seed, mistakes=None):
    """Outputs finite; replacing the tokens from position t on never changes outputs before t. A layer that is not
    causal, or not finite, is named by a known mistake, `mistakes(x)` [(candidate, symptom)] on the input, where its
    output fits one (a leak of later tokens need not be a missing mask, nor nan a row with every key blocked)."""
    r = rng(seed)
    x = tensor(r.normal(size=(2, num_tokens, d_in)))
    out = checks.to_array(module(x), f"{name}(x)")
    checks.expect_shape(out, (2, num_tokens, out.shape[-1]), f"{name}(x)")
    if mistakes is not None and not np.isfinite(out).all():  # NAN_HINT's guesses would blame a cause of their own
        symptom = checks.named_mistake(out, mistakes(x.numpy()))
        if symptom is not None:
            raise CaseFailure(f"{name}(x) is not finite, as a known mistake makes it: {symptom}")
    checks.expect_finite(out, f"{name}(x)", NAN_HINT)
    for t in sorted({1, num_tokens // 2, num_tokens - 1}):
        changed = x.clone()
        changed[:, t:] = tensor(r.normal(size=(2, num_tokens - t, d_in)))
        after = checks.to_array(module(changed), f"{name}(x)")
        if not close(after[:, :t], out[:, :t]):
            explain_unsteady(name, module, x)
            symptom = None if mistakes is None else checks.named_mistake(out, mistakes(x.numpy()))
            raise CaseFailure(f"{name} is not causal: changing the tokens from position {t} on changed the "
                              f"outputs of earlier tokens; " + (symptom or "token i may only attend to tokens 0..i"))


def explain_unsteady(name, module, x):
    """A module whose eval-mode output changes from one call to the next on the same x draws something new in
    forward (a layer built there): no property of its output can hold, and that, not the property, is why."""
    if not close(module(x), module(x), 0, 0):
        raise CaseFailure(f"{name} {UNSTEADY}")


# torch.manual_seed in forward: dropout acts, but its random draws start from the same state on every call
SAME_DRAWS = ("dropout acts but drops the same entries on every call: does forward reset the random generator "
              "(torch.manual_seed) each time it runs? Seeding belongs outside the layer, if anywhere")
# self.dropout.eval() or head.eval() in forward: the layer is in train mode, a part that holds its dropout is not
PARTS_WITH_DROPOUT = ("dropout", "heads.0", "heads.0.dropout")
PART_EVAL_IN_FORWARD = ("forward switches a part of the layer to eval mode (self.dropout.eval(), or a head's .eval()), "
                        "so its dropout never acts: the mode is the caller's to set, and the layer's .train() and "
                        ".eval() set every part of it")
EVAL_IN_FORWARD = ("forward switches the layer to eval mode (self.eval(), self.train(False)), so its dropout never "
                   "acts: the mode is the caller's to set, with .train() and .eval()")


def explain_built_alike(name, module, twin, x):
    """`twin` is built as `module` was (the same arguments, the same weights loaded): outputs that differ on the
    same x come from something the weights do not set, not from the property a case compares two modules for (a
    mask sliced to T, dropout off in eval mode). A layer the task does not name, which keeps its random start, is
    named where the module holds one."""
    if close(module(x), twin(x), 0, 0):
        return
    unloaded = list(unloaded_layers(module))
    raise CaseFailure(f"two {name} built with the same arguments and given the same weights give other outputs on the "
                      "same input, so no case that compares two layers can pass: " + (
                          f"each has `{unloaded[0]}`, a layer the task does not name: {name} {UNNAMED_LAYER}"
                          if unloaded else "__init__ draws something that the weights the task names do not set"))


def check_last_token(name, module, x, unmasked, expected, mistakes):
    """The last token's causal output equals its unmasked (plain self-attention) output.

    When it does not, a known mistake the whole output matches is named; else, when the other
    tokens' outputs equal the correct ones (`expected`), the message says so and that something
    blocks part of the last row; else the whole output is compared with the correct one, which
    names the size and place of the error and says that the grader cannot name the cause."""
    out = checks.to_array(module(x), f"{name}(x)")
    what = f"the last token's output of {name} (which must equal unmasked self-attention's)"
    if out.shape != unmasked.shape:  # a known mistake of another shape (the weights returned) is named first
        symptom = checks.named_mistake(out, mistakes)
        if symptom is not None:
            raise CaseFailure(f"{what}: {symptom}")
    checks.expect_shape(out, unmasked.shape, f"{name}(x)")
    if close(out[:, -1], unmasked[:, -1]):
        return
    symptom = checks.named_mistake(out, mistakes)
    if symptom is not None:
        raise CaseFailure(f"{what}: {symptom}")
    if close(out[:, :-1], expected[:, :-1]):
        raise CaseFailure(f"{what}; the other tokens' outputs are right, so the last row is changed by "
                          "something that depends on its position: nothing of its row may be blocked")
    checks.expect_close(out, expected, what)  # the other rows are wrong too: where, with no name


def check_short_input(name, make, d_in, context_length, lengths, seed):
    """T <= context_length works and equals a module built for exactly T tokens."""
    r = rng(seed)
    long_module = make(context_length)
    for num_tokens in lengths:
        x = tensor(r.normal(size=(2, num_tokens, d_in)))
        try:
            out = long_module(x)
        except RemoteError as error:  # the usual symptom is a shape error
            if num_tokens == context_length:  # a size written in where context_length belongs (a mask's, a head's)
                raise CaseFailure(f"{name} built with context_length={context_length} failed on an input of as many "
                                  f"tokens ({error.type_name}: {first_line(error, 120)}): is context_length used "
                                  "wherever it is given, or is a length written into the code?") from None
            exact = make(num_tokens)
            exact(x)  # a module built for exactly T tokens must work, or the mask's size is not the cause
            if num_tokens != lengths[0] and _runs(make(context_length), x):  # what came before is the cause
                raise CaseFailure(f"{name} with context_length={context_length} failed on an input of {num_tokens} "
                                  f"tokens after one of {lengths[0]} tokens, though a fresh one runs on it: "
                                  f"{FIRST_INPUT_KEPT}") from None
            raise CaseFailure(
                f"{name} with context_length={context_length} failed on an input of {num_tokens} tokens "
                f"({error.type_name}: {first_line(error, 120)}); inputs may be shorter than "
                "context_length: slice the mask to the input's length, mask[:T, :T]") from None
        if not close(out, make(num_tokens)(x)):
            explain_unsteady(name, long_module, x)
            explain_built_alike(name, long_module, make(context_length), x)
            raise CaseFailure(f"{name} with context_length={context_length} gives other outputs on "
                              f"{num_tokens} tokens than a module built with context_length={num_tokens}: "
                              "use the top-left T x T corner of the mask, mask[:T, :T]")


# A mask made in forward on the first call and kept (if self.mask is None: self.mask = causal_mask(T)): right until
# an input of another length comes.
FIRST_INPUT_KEPT = ("the layer keeps something sized to the first input it saw (a mask made in forward and stored, "
                    "say), so a later input of another length does not fit it: what a layer keeps is made in "
                    "__init__, for context_length tokens, and each forward takes from it what its input needs")


def _runs(module, x):
    try:
        module(x)
    except RemoteError:
        return False
    return True


def check_batches(name, module, d_in, num_tokens, seed):
    """Each item of a batch of 4 gets the output it gets alone."""
    x = tensor(rng(seed).normal(size=(4, num_tokens, d_in)))
    out = checks.to_array(module(x), f"{name} on a batch of 4")
    checks.expect_shape(out, (4, num_tokens, out.shape[-1]), f"{name} on a batch of 4")
    for i in range(4):
        if not close(module(x[i:i + 1]), out[i:i + 1]):
            explain_unsteady(name, module, x)
            raise CaseFailure(f"{name}: item {i} of a batch of 4 gets another output than when it is run "
                              "alone (batch of 1); nothing in forward may depend on the batch size "
                              "or mix batch items")


def run_on_held(impl, module, x):
    """(module(x), x as it is afterwards): x stays with the code under test for the call, so an
    in-place change to it shows."""
    (held,) = impl.hold(x)
    out = module(held)
    return out, held.call("clone")


def check_input_unchanged(impl, name, module, x):
    before = x.clone()
    try:
        _, after = run_on_held(impl, module, x)
    except (RemoteError, CaseFailure):
        # A forward that raises is explained on a plain input (`modules.Layer` retries what it is given), as
        # the reports of every other case explain it; only a forward that raises on the held input alone
        # keeps this error.
        module(x.clone())
        raise
    checks.expect_unchanged(before.numpy(), after, f"the input x of {name}")


def check_gradients(name, module, x, paths, seed=99):
    """Backpropagating a random cotangent reaches every parameter at `paths` (e.g. "W_key.weight")."""
    out = checks.to_array(module(x), f"{name}(x)")
    cotangent = rng(seed).normal(size=out.shape).astype(np.float32)
    explain_gradients(name, module.backward([x], cotangent, paths), paths, module)


def backward_error_line(error):
    """The first line of a failed backward's error (autograd's words), short enough for a message."""
    return exception_line(error, 150) or "RuntimeError"


def explain_gradients(name, report, paths, module=None):
    """A Handle.backward report: every parameter at `paths` got a non-zero gradient, or a message
    that tells the causes apart (no graph at all, a failed backward, one layer left out, and, where
    the `module` is given, its dropout rate 1)."""
    if not report.get("differentiable"):
        raise CaseFailure(f"{name}'s output does not depend on its parameters in a differentiable way "
                          "(no autograd graph): do not use torch.no_grad(), .detach() or NumPy in forward")
    if "backward_error" in report:
        first = backward_error_line(report["backward_error"])
        if "floor_divide" in str(report["backward_error"]):  # autograd's words for //, which has no gradient
            raise CaseFailure(f"backpropagating through {name} failed ({first}): a division with // (floor "
                              "division) rounds down to whole numbers and has no gradient; divide with /")
        if "inplace" not in str(report["backward_error"]):  # autograd's words for a tensor changed in place
            raise CaseFailure(f"backpropagating through {name} failed ({first}), and the grader cannot "
                              "name why")
        raise CaseFailure(f"backpropagating through {name} failed ({first}): an in-place operation "
                          "(x.mul_(), +=, masked_fill_ on x ...) changed a tensor autograd needs: use the "
                          "out-of-place version")
    for path in paths:
        grad = report["grads"].get(path)
        layer = path.rsplit(".", 1)[0]
        if grad is None and "called" in report and layer not in report["called"]:
            raise CaseFailure(f"no gradient reaches {path} of {name}: forward never calls `{layer}`")
        if grad is None:  # called, yet left out of the output's graph: unused or cut off
            raise CaseFailure(f"no gradient reaches {path} of {name}: forward calls `{layer}`, but its output "
                              "does not reach the module's output through torch operations (is it unused, "
                              "or passed through .detach(), .data or NumPy?)")
        if not bool((checks.to_array(grad, path) != 0).any()):
            # the probes are built with dropout 0.0 and backpropagate in train mode, where a rate of 1 drops everything
            if module is not None and module.describe("dropout").get("p") == 1.0:
                raise CaseFailure(f"{name} built with dropout=0.0 has dropout.p = 1, which drops every attention "
                                  "weight in train mode, so no gradient gets through: nn.Dropout takes the "
                                  "probability of dropping an entry (is it given 1 - dropout, the probability of "
                                  "keeping one?)")
            raise CaseFailure(f"the gradient of {path} of {name} is zero everywhere: `{layer}`'s output does "
                              "not reach the module's output (is it overwritten, or multiplied by zero?)")


# nn.Dropout(p, inplace=True), or F.dropout(..., inplace=True), on the softmax's output: right in eval and in train
# mode under no_grad, but the softmax computes its gradient from its output, so the first training step fails.
DROPOUT_IN_PLACE = ("dropout overwrites the attention weights in place, and autograd keeps them for the backward "
                    "(a softmax's gradient needs its output): apply nn.Dropout(p) without inplace=True")


def check_trains_with_dropout(name, module, args, p, seed=99):
    """`module`, built with dropout p > 0 like a layer whose backward with dropout 0.0 just ran on `args`,
    backpropagates in train mode too: dropout that changes in place a tensor autograd keeps breaks training
    only, so only a backward can show it."""
    out = checks.to_array(module(*args), f"{name}(x)")
    error = str(module.backward(list(args), rng(seed).normal(size=out.shape).astype(np.float32), [])
                .get("backward_error", ""))
    if not error:
        return
    if "inplace" not in error:  # autograd's words for a tensor changed in place
        first = backward_error_line(error)
        raise CaseFailure(f"{name} in train mode with dropout={p} cannot backpropagate ({first}), though with "
                          "dropout=0.0 it can, and the grader cannot name why")
    node = re.search(r"output \d+ of (\w+)", error)
    changed = f"the output of {node.group(1)}" if node else "a tensor it needs"
    raise CaseFailure(f"{name} in train mode with dropout={p} cannot backpropagate (autograd: {changed} was modified "
                      "by an inplace operation), though with dropout=0.0 it can: "
                      + DROPOUT_IN_PLACE)


# self.dropout called on the weights twice (a line that applies it, and a return that applies it again): each kept
# weight is scaled twice, and a weight is dropped by either call
DROPPED_TWICE = ("the kept attention weights are scaled by 1/(1-p) twice, 1/(1-p)**2, and more of them are zeroed: "
                 "dropout is applied to the weights twice (is self.dropout called on them, and then again where they "
                 "meet the values?); apply it once")


def check_dropout(name, make, num_tokens, num_heads, p=0.5, seed=0,
                  not_applied="apply self.dropout to the attention weights in forward", expected=None):
    """make(p) -> a module whose output on x = eye(T) (batch 1) is, per head h, [w_h, 2 w_h] with
    w_h that head's (dropped) attention weights (W_value = [I; 2I] per head, out_proj = I).

    Eval mode: dropout is off, and the output is `expected` (the probe's correct output) when given:
    otherwise the module's own mistake, not its dropout, would be blamed. Train mode: each weight
    entry is 0 or w / (1 - p), and the two halves of every head agree, which holds only if dropout
    acts on the weights."""
    x = torch.eye(num_tokens).unsqueeze(0)
    module, plain = make(p), make(0.0)

    def blocks(out, what):
        out = checks.to_array(out, what)
        if (expected is not None and num_heads == 1 and out.shape == (1, num_tokens, num_tokens)
                and close(out, np.asarray(expected)[..., :num_tokens])):
            # on this probe (x = eye, values = [x, 2x]) the weights are the first half of the right output
            raise CaseFailure(f"{what}: {RETURNS_WEIGHTS}")
        if num_heads > 1 and out.shape == (1, num_tokens, 2 * num_tokens):
            raise CaseFailure(f"{what} has shape {checks.fmt_shape(out.shape)}, one head's width, where the "
                              f"{num_heads} heads' outputs belong side by side: is only one head's output kept?")
        checks.expect_shape(out, (1, num_tokens, num_heads * 2 * num_tokens), what)
        out = out[0].reshape(num_tokens, num_heads, 2, num_tokens)
        return out[:, :, 0], out[:, :, 1]

    module.eval()
    first, second = module(x), module(x)
    if not close(first, second, 0, 0) or not close(first, plain(x)):
        explain_unsteady(name, plain, x)  # without dropout it should give one output
        explain_built_alike(name, plain, make(0.0), x)
        raise CaseFailure(f"{name} in eval mode (after .eval()) gives other outputs with dropout={p} than "
                          "with dropout=0.0: dropout must be off in eval mode (use the nn.Dropout module, "
                          "which follows .train()/.eval(), not F.dropout(..., training=True))")
    clean, clean_doubled = blocks(first, f"{name}(x)")
    if not np.isfinite(clean).all():
        # what makes the nan (a row with every key blocked, +inf for -inf, log_softmax's -inf weights) is the
        # other cases' to name: a guess here would blame a cause unchecked
        raise CaseFailure(f"{name} gives nan even in eval mode, so its dropout cannot be checked (the other cases "
                          "name what makes the nan)")
    right = expected is None or close(first, expected)  # the probe's correct eval output, when given
    if not (right and close(clean_doubled, 2 * clean) and close(clean.sum(axis=-1), np.ones(clean.shape[:-1]))):
        raise CaseFailure(f"{name} in eval mode does not compute attention correctly (see the other cases), "
                          "so where its dropout acts cannot be checked")
    module.train()
    runs = [module(x, _seed=seed), module(x)]
    if close(runs[0], runs[1], 0, 0):
        if not close(runs[0], first):  # dropout acts, and draws alike each time
            raise CaseFailure(f"{name} in train mode with dropout={p} gives one output twice, not the eval-mode "
                              f"one: {SAME_DRAWS}")
        if module.describe().get("training") is False:
            raise CaseFailure(f"{name} in train mode with dropout={p} gives the eval-mode output, and forward leaves "
                              f"it in eval mode: {EVAL_IN_FORWARD}")
        parts = [path for path in PARTS_WITH_DROPOUT if module.describe(path).get("training") is False]
        if parts:
            raise CaseFailure(f"{name} in train mode with dropout={p} gives the eval-mode output, and forward leaves "
                              f"`{parts[0]}` in eval mode: {PART_EVAL_IN_FORWARD}")
        raise CaseFailure(f"{name} in train mode with dropout={p} gives the same output twice: dropout "
                          f"is not applied ({not_applied})")
    renormalised = (f"{name} in train mode: dropout zeroes attention weights after the softmax, but the rows "
                    "are then divided by their sums again")
    # each of the two messages says what it saw, so a mistake's report shows which one fired
    leave_them = ("; leave them as dropout returns them (its 1/(1-p) keeps each weight right on average, and rows "
                  "need not sum to 1 in training)")
    for run in runs:
        weights, doubled = blocks(run, f"{name}(x) in train mode")
        whole = np.isfinite(weights).all(axis=-1)  # rows that are numbers
        if not whole.all() and whole.any() and _renormalised(weights[whole], clean[whole], weights[whole] == 0):
            raise CaseFailure(renormalised + " (a row whose every weight was dropped became 0 / 0 = nan)"
                              + leave_them)
        checks.expect_finite(checks.to_array(run, f"{name}(x) in train mode"), f"{name}(x) in train mode",
                             "dropout on the masked scores turns -inf into nan (-inf * 0); apply dropout to "
                             "the attention weights after the softmax")
        if not close(doubled, 2 * weights, 1e-5, 1e-4):
            raise CaseFailure(f"{name} in train mode: the outputs are not (dropped attention weights) @ "
                              "values; apply dropout to the attention weights after the softmax, not to "
                              "the values, the projections or the output")
        tol = 1e-5 + 1e-4 * abs(clean)
        kept = abs(weights - clean / (1 - p)) <= tol
        dropped = abs(weights) <= 1e-6
        if not (kept | dropped).all():
            if (dropped | (abs(weights - clean) <= tol)).all():
                raise CaseFailure(f"{name} in train mode: the kept attention weights are not rescaled by "
                                  f"1/(1-p); use nn.Dropout, which does that")
            if _renormalised(weights, clean, dropped):
                raise CaseFailure(renormalised + ", so the weights each row keeps sum to 1 again" + leave_them)
            if close(weights.sum(axis=-1), np.ones(weights.shape[:-1])):
                # rows still sum to 1 although entries changed: the softmax ran after the dropout
                raise CaseFailure(f"{name} in train mode: the attention weights still sum to 1 but are not the "
                                  "eval-mode weights with entries zeroed: dropout acts on the scores before the "
                                  "softmax; apply it to the weights after the softmax")
            if (dropped | (abs(weights - clean / (1 - p) ** 2) <= tol / (1 - p) ** 2)).all():
                raise CaseFailure(f"{name} in train mode: {DROPPED_TWICE}")
            if _whole_tokens_dropped(weights, clean, dropped):
                raise CaseFailure(f"{name} in train mode: whole tokens are dropped, the same keys weighted 0 for "
                                  "every query, as when dropout acts on the input before the projections: apply "
                                  "it to the attention weights after the softmax")
            raise CaseFailure(f"{name} in train mode: the attention weights are not the eval-mode weights with "
                              "some entries zeroed and the rest scaled by 1/(1-p), and the grader cannot name why")
    # No "some weights kept and some dropped" check follows: the two runs differ (checked above) and every
    # entry of each is kept or dropped, so an entry that differs is kept in one run and dropped in the other.


def _whole_tokens_dropped(weights, clean, dropped):
    """Whether every weight that dropout zeroed lies in a key's column zeroed for all its queries,
    and some such column had weights in two rows or more: dropout on the input zeroes value rows
    (whole keys), where dropout on the weights zeroes entries one by one. `weights`, `clean` and
    `dropped`: (query, head, key)."""
    live = clean > 1e-6  # weights the mask lets through
    column_dropped = (dropped | ~live).all(axis=0, keepdims=True)  # (1, head, key)
    wide = column_dropped & (live.sum(axis=0, keepdims=True) >= 2)
    return bool(wide.any()) and bool((~(dropped & live) | column_dropped).all())


def _renormalised(weights, clean, dropped):
    """Whether `weights` are `clean` with the `dropped` entries zeroed and each row divided by its
    new sum (dropout, then a second normalisation)."""
    kept = np.where(dropped, 0.0, clean)
    sums = kept.sum(axis=-1, keepdims=True)
    return bool(dropped.any()) and close(weights, kept / np.where(sums > 0, sums, 1.0))


def check_eval_mode_without_dropout(name, make, x, p=0.5):
    """make(p) in eval mode gives the same output twice, and that of make(0.0)."""
    module = make(p)
    first = module(x)
    if not close(first, module(x), 0, 0) or not close(first, make(0.0)(x)):
        explain_unsteady(name, make(0.0), x)  # without dropout it should give one output
        raise CaseFailure(f"{name} in eval mode (after .eval()) gives other outputs with dropout={p} "
                          "than with dropout=0.0: dropout must be off in eval mode (use nn.Dropout)")
