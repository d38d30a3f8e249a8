"""Case builders the step suites share: the notes' worked examples and stored outputs."""

import numpy as np

from autograder.errors import CaseFailure
from autograder.fixtures import notes, stored
from autograder.harness import case_family
from autograder.suites.toolkit import checks


def notes_cases(step, weight=1.0, symptoms=None):
    """One case per worked example of `step` in the notes, named test_notes_<key>.

    A suite binds the result to `test_notes`, so its notes cases sit where the reader sees them.
    `symptoms(example)` may return the known mistakes [(candidate, message)] on that example's
    inputs, so a wrong worked example is named by the same ladder as the suite's other cases.
    """
    members = {example.key: (example, f"notes' worked example: {example.where} ({example.source})")
               for example in notes.examples_of(step)}
    if not members:
        # pytest would skip an empty family, and a skipped case is no check at all
        raise ValueError(f"the notes work no example of {step}")

    @case_family(step, "notes", members, weight=weight)
    def test_notes(impl, member):
        actual = member.call(impl)  # inputs travel as copies: nothing can write into them
        checks.expect_close(actual, notes.expected(member), f"the notes' example \"{member.where}\"",
                            atol=member.atol, rtol=0, symptoms=symptoms(member) if symptoms else ())

    return test_notes


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
