"""Case builders the step suites share: the notes' worked examples and stored outputs."""

import inspect
import itertools

import numpy as np
import torch

from autograder.errors import CaseFailure, RemoteError
from autograder.fixtures import notes, stored
from autograder.harness import case_family, error_name
from autograder.suites.toolkit import checks


class _Replay:
    """Stands in for the code under test while a worked example is replayed: its one function,
    `step`, records the arguments it is called with (as a record of the stored outputs, named by
    the reference's parameters) and answers `answer(record)`; anything else is not there."""

    def __init__(self, step, answer):
        self.step, self.answer, self.record = step, answer, None

    def __getattr__(self, name):
        if name != self.step:
            raise AttributeError(name)  # the example uses more than this step: no replay

        def call(*args, **kwargs):
            import solutions  # the reference's signature names the arguments as the records do

            bound = inspect.signature(getattr(solutions, self.step)).bind(*args, **kwargs)
            bound.apply_defaults()
            self.record = {key: value.detach().cpu().numpy() if torch.is_tensor(value) else value
                           for key, value in bound.arguments.items()}
            return self.answer(self.record)

        return call


class _Stop(Exception):
    """Ends a replay once the arguments are recorded."""


def _stop(record):
    raise _Stop()


def _value(candidate):
    """A ladder's candidate is a value or a function that computes it (`checks.expect_close`)."""
    return candidate() if callable(candidate) else candidate


def _replaced(right, choice):
    """The outputs `right` with each item k whose choice holds a candidate replaced by its value."""
    return tuple(right[k] if candidate is None else _value(candidate) for k, (candidate, _) in enumerate(choice))


def _tuple_symptoms(record, ladder, correct):
    """[(candidate outputs, message)] of a step that returns a tuple: each item's ladder
    `ladder(record, k)` with the other items as `correct(record)` gives them, then two or more items
    wrong at once (an example may combine items, such as Q and K), fewest first; messages of the
    items joined, each said once."""
    right = correct(record)
    options = [[(None, None), *ladder(record, k)] for k in range(len(right))]
    found = []
    for choice in itertools.product(*options):
        messages = [message for candidate, message in choice if candidate is not None]
        if messages:
            found.append((len(messages), (lambda choice=choice: _replaced(right, choice)),
                          "; ".join(dict.fromkeys(messages))))
    return [(candidate, message) for _, candidate, message in sorted(found, key=lambda item: item[0])]


def replayed_symptoms(member, step, ladder, correct=None):
    """The stored outputs' ladder on a worked example: `ladder(record, k)` gives [(candidate,
    message)] for output k on the example's own inputs, and each candidate is pushed through the rest
    of the example (a row picked, say) by replaying it with the mistake's output in place of the
    step's. A step that returns a tuple names `correct(record)`, its right outputs (the suite's own
    model), which a mistake of one item leaves as they are."""
    recorder = _Replay(step, _stop)
    try:
        member.call(recorder)
    except _Stop:
        pass
    except Exception:  # the example does more than call this step once: nothing to replay
        return []
    if recorder.record is None:
        return []
    found = ladder(recorder.record, 0) if correct is None else _tuple_symptoms(recorder.record, ladder, correct)
    if correct is not None:
        found += _one_item_returned(recorder.record, step, correct)
    return [((lambda candidate=candidate: member.call(_Replay(step, lambda record: _value(candidate)))), message)
            for candidate, message in found]


def _one_item_returned(record, step, correct):
    """[(candidate, message)] of a step that should return a tuple but returns one of its items alone:
    the example then unpacks (or indexes) that one array's rows, and only its shape looks wrong."""
    right = correct(record)
    return [(lambda item=item: item, f"`{step}` returns one array (item {k} of its tuple, alone) where the example "
             f"unpacks a tuple of {len(right)}: return all {len(right)} items, as its docstring says")
            for k, item in enumerate(right)]


def notes_cases(step, weight=1.0, symptoms=None, replayed=None, correct=None, examine=None, probe=None,
                confirmed=None, unnamed=None):
    """One case per worked example of `step` in the notes, named test_notes_<key>.

    A suite binds the result to `test_notes`, so its notes cases sit where the reader sees them.
    `symptoms(example)` may return the known mistakes [(candidate, message)] on that example's
    inputs, so a wrong worked example is named by the same ladder as the suite's other cases.
    `replayed(record, k)`, the ladder of the stored outputs, does that for an example that calls
    the step once on plain inputs (`replayed_symptoms`; `correct` for a step that returns a tuple).
    `examine(actual, what)` may name a mistake no ladder can match (a value of the wrong kind) first.
    `probe(impl)`, for an example whose call raises: the step run on the suite's own inputs through
    the suite's naming wrapper, whose CaseFailure (a mistake that raises, named) explains the raise.
    `confirmed(impl, ladder)`, for a ladder whose candidates can coincide on the example's small inputs
    (a divisor that happens to equal another), keeps each candidate only where the same code shows the
    same mistake on the suite's own inputs. `unnamed(actual, member, what)`, where the ladder cannot name
    the cause, may still raise a CaseFailure that names one from the value itself (a wrong scale fitted).
    """
    members = {example.key: (example, f"notes' worked example: {example.where} ({example.source})")
               for example in notes.examples_of(step)}
    if not members:
        # pytest would skip an empty family, and a skipped case is no check at all
        raise ValueError(f"the notes work no example of {step}")

    @case_family(step, "notes", members, weight=weight)
    def test_notes(impl, member):
        try:
            actual = member.call(impl)  # inputs travel as copies: nothing can write into them
        except RemoteError as error:
            explained = _probed(probe, impl)
            if explained is None:
                raise
            raise CaseFailure(f"the notes' example \"{member.where}\" raised {error.type_name}; the same "
                              f"code on the grader's own inputs: {explained}") from None
        except TypeError as error:  # the example reads into what the step returned: None, if `return` is missing
            if "NoneType" not in str(error):
                raise _unpacked(error, member, step) from None
            raise checks.returned_none(f"what the notes' example \"{member.where}\" got") from None
        except ValueError as error:
            raise _unpacked(error, member, step) from None
        if examine is not None:
            examine(actual, f"the notes' example \"{member.where}\"")

        def ladder():  # built only if the example's value is wrong
            found = (symptoms(member) if symptoms else replayed_symptoms(member, step, replayed, correct)
                     if replayed else ())
            return found if confirmed is None else confirmed(impl, found)

        what = f"the notes' example \"{member.where}\""
        try:
            checks.expect_close(actual, notes.expected(member), what, atol=member.atol, rtol=0, symptoms=ladder)
        except CaseFailure as failure:
            if unnamed is not None and checks.UNNAMED in str(failure):
                unnamed(actual, member, what)
            raise

    return test_notes


def _unpacked(error, member, step):
    """The example's own code failed in this process on what the step returned: where it could not
    unpack it (a tuple of the wrong length, one array or a number instead), a CaseFailure that says
    so; else `error` itself, for the judge to decide whose it is."""
    if "values to unpack" not in str(error) and "cannot unpack" not in str(error):
        return error
    return CaseFailure(f"the notes' example \"{member.where}\" unpacks what `{step}` returns, and could not "
                       f"({error}): return the tuple its docstring names, every item in its place")


def _probed(probe, impl):
    """The message of the CaseFailure `probe(impl)` raises (a known mistake named), or None."""
    if probe is None:
        return None
    try:
        probe(impl)
    except CaseFailure as failure:
        return str(failure)
    except RemoteError:
        return None
    return None


def confirmed(ladder, output_on_probe, ladder_on_probe, only=None):
    """`ladder` [(candidate, symptom)] with each candidate kept only where the same code makes the same
    mistake on a probe: inputs where no two candidates coincide, as a scale of 1, sqrt(n) or sqrt(d_in) can
    with sqrt(d_k) // 1 or sqrt(d_k + 1) on small inputs. `output_on_probe()` is the code's output there
    (computed once, when a candidate is first tried; one that raises confirms nothing), and
    `ladder_on_probe()` the ladder on the probe's inputs. An unconfirmed candidate raises, which
    `checks.named_mistake` takes as "does not apply", so the last rung describes the value. `only(symptom)`
    picks the symptoms to confirm (a diagnosis worded for the inputs at hand, such as one that holds where two
    mistakes agree, has no twin on the probe); the others are kept as they are."""
    probe = {}

    def holds(symptom):
        if not probe:
            try:
                probe["output"] = checks.to_array(output_on_probe(), "the output on the probe")
            except Exception:  # noqa: BLE001 - code that fails on the probe confirms nothing
                probe["output"] = None
            probe["ladder"] = [] if probe["output"] is None else ladder_on_probe()
        # a symptom may have several candidates (an epsilon of each size): any one confirms it
        return checks.named_mistake(probe["output"], [(c, s) for c, s in probe["ladder"] if s == symptom]) is not None

    def kept(candidate, symptom):
        if not holds(symptom):
            raise LookupError(symptom)
        return _value(candidate)

    return [(candidate if only is not None and not only(symptom) else
             (lambda candidate=candidate, symptom=symptom: kept(candidate, symptom)), symptom)
            for candidate, symptom in ladder]


def check_stored(impl, step, apply, what, *, atol=1e-5, rtol=1e-4, symptoms=None, where=None, finite_hint=None):
    """Every stored record of `step` (or those for which `where(record)` holds): apply(impl,
    record) must match its stored outputs.

    `symptoms(record, k)` may return [(candidate, message)] for output k: known mistakes to
    name when the output matches one of them. `where` lets a suite grade one kind of input (one
    sequence, a batch) in a case of its own, so a slip on one kind keeps the other's points.
    `finite_hint(record)` may name why an output holds nan or inf on that record's inputs ("" if
    nothing about them explains it), so the hint shows only where its cause can be the reason; it is
    asked only where an output is not finite.
    """
    for record in stored.load(step):
        if where is not None and not where(record):
            continue
        outputs = apply(impl, record)
        expected = stored.expected_outputs(record)
        if len(expected) > 1:
            if outputs is None:
                raise checks.returned_none(f"{what} ({record['label']})")
            if not isinstance(outputs, (tuple, list)) or len(outputs) != len(expected):
                raise CaseFailure(f"{what} should return a tuple of {len(expected)} values "
                                  f"({record['label']})")
        else:
            outputs = (outputs,)
        tol = float(record.get("atol", atol))
        for k, (actual, want) in enumerate(zip(outputs, expected)):
            label = f"{what}{'' if len(expected) == 1 else f' (item {k} of the tuple)'} on {record['label']}"
            checks.expect_close(actual, want, label, atol=tol, rtol=rtol,
                                symptoms=(lambda record=record, k=k: symptoms(record, k)) if symptoms else (),
                                finite_hint=_hint_where_not_finite(finite_hint, record, actual))


def _hint_where_not_finite(finite_hint, record, actual):
    """finite_hint(record) where `actual` holds nan or inf, else "": a hint may run the code on probes of its
    own, which a finite output never needs."""
    if finite_hint is None:
        return ""
    try:
        finite = np.isfinite(checks.to_array(actual, "the output")).all()
    except (CaseFailure, TypeError, ValueError):  # an output of the wrong kind is expect_close's to name
        return ""
    return "" if finite else finite_hint(record)


def explain_batch_error(what, error, label, first_item):
    """An `error` of `what` on a batch (`label`) where `first_item()`, the same code on the batch's first
    item alone, goes through: the code fits one matrix only, which the CaseFailure says."""
    try:
        first_item()
    except Exception:  # noqa: BLE001 - only asks whether one item goes through
        return
    name = error_name(error)
    raise CaseFailure(f"{what} works on one item of the batch but raised {name} on {label}: {WRITTEN_FOR_ONE_MATRIX}"
                      ) from None


WRITTEN_FOR_ONE_MATRIX = ("code written for one matrix (.T, which reverses every axis of a batch; an einsum, np.dot or "
                          "loop for 2-d input) does not fit a batch; leave the leading axes alone and work on the last "
                          "two (@ broadcasts over them, np.swapaxes(a, -1, -2), '...' in einsum)")


def named_on_a_square(name, error, label, X, run, ladder):
    """An `error` of `name` on an (n, d) X with n != d, where the same code runs on X's leading square
    (a product that fits only n == d, such as X @ X): its output there, `run(square)`, named by the
    ladder of that square, `ladder(square)`. Returns quietly if the code fails there too or no rung fits."""
    side = min(X.shape)
    if X.ndim != 2 or X.shape[0] == X.shape[1] or side < 2:
        return
    square = X[:side, :side]
    try:
        out = checks.to_array(run(square), f"{name}(X)")
    except (RemoteError, CaseFailure):
        return
    symptom = checks.named_mistake(out, ladder(square))
    if symptom is not None:
        raise CaseFailure(f"{name} raised {error.type_name} on {label} of shape {checks.fmt_shape(X.shape)}, "
                          f"but runs on a square X, where it {symptom}") from None


def causal_blocked(n):
    """The causal mask of n tokens: True above the diagonal, where key j > query i is blocked."""
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def mixed_mask(r, n_q, n_k):
    """A random mask of `r` in which every row blocks at least one key and leaves at least one open."""
    mask = r.random((n_q, n_k)) < 0.5
    for i in range(n_q):
        keys = r.permutation(n_k)
        mask[i, keys[0]], mask[i, keys[1]] = True, False
    return mask


def rng(seed):
    return np.random.default_rng(seed)


def rounded(right, decimals=range(1, 5), what="the result is"):
    """(candidate, symptom) of a result rounded for display (round(x, 2), np.round(x, 3)): the right value
    rounded to each of `decimals`; more decimals stay within the tolerance of a float32 input anyway. `what`
    names the value rounded (`ROUNDED` starts each symptom)."""
    return [(lambda k=k: np.round(np.asarray(right, dtype=float), k),
             f"{what} {ROUNDED} {k} decimals: return the values as computed (round only where they are printed)")
            for k in decimals]


ROUNDED = "rounded to"
