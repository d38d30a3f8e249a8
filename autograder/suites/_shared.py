"""Case builders the step suites share: the notes' worked examples and stored outputs."""

import numpy as np

from autograder import checks
from autograder.errors import CaseFailure
from autograder.fixtures import notes, stored
from autograder.harness import case


def add_notes_cases(module_globals, step, weight=1.0):
    """One case per worked example of `step`, named test_notes_<key>."""
    for example in notes.examples_of(step):

        def check(impl, example=example):
            actual = example.call(impl)  # inputs travel as copies: nothing can write into them
            checks.expect_close(actual, notes.expected(example),
                                f"the notes' example \"{example.where}\"", atol=example.atol, rtol=0)

        name = f"test_notes_{example.key}"
        check.__name__ = name
        check.__doc__ = f"notes' worked example: {example.where} ({example.source})"
        module_globals[name] = case(step, "notes", weight=weight)(check)


def check_stored(impl, step, apply, what, *, atol=1e-5, rtol=1e-4, symptoms=None):
    """Every stored record of `step`: apply(impl, record) must match its stored outputs.

    `symptoms(record, k)` may return [(candidate, message)] for output k: known mistakes to
    name when the output matches one of them.
    """
    for record in stored.load(step):
        outputs = apply(impl, record)
        expected = stored.expected_outputs(record)
        if len(expected) > 1:
            if not isinstance(outputs, (tuple, list)) or len(outputs) != len(expected):
                raise CaseFailure(f"{what} should return a tuple of {len(expected)} values "
                                  f"({record['label']})")
        else:
            outputs = (outputs,)
        tol = float(record.get("atol", atol))
        for k, (actual, want) in enumerate(zip(outputs, expected)):
            label = f"{what}{'' if len(expected) == 1 else f' (item {k} of the tuple)'} on {record['label']}"
            checks.expect_close(actual, want, label, atol=tol, rtol=rtol,
                                symptoms=symptoms(record, k) if symptoms else ())


def rng(seed):
    return np.random.default_rng(seed)
