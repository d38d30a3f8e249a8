"""Right code a hair off the reference (an epsilon that guards a division by a zero length) keeps full
marks at its step, graded in process as the step mistakes are: the suites' ladders blame a known mistake
only where the value is off by more than the case's own tolerance, and a mistake that gives the right
value on an input (|a|² for |a|·|b| where b = -a) is no cause of a value near it."""

import warnings

import numpy as np
import pytest

from autograder.harness import run_step
from autograder.reference import reference_with
from autograder.steps import STEPS
from coursekit.samples import reference_cell

NEAR_RIGHT = {
    "cosine-epsilon-in-denominator": ("cosine_similarity", "float(np.linalg.norm(a) * np.linalg.norm(b))",
                                      "(float(np.linalg.norm(a) * np.linalg.norm(b)) + 1e-8)"),
}


@pytest.mark.parametrize("name", NEAR_RIGHT)
def test_right_code_a_hair_off_keeps_full_marks(name):
    step, old, new = NEAR_RIGHT[name]
    cell = reference_cell([step])
    assert cell.count(old) == 1
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_step(step, reference_with({step: cell.replace(old, new)}))
    assert result.points(STEPS[step].points) == STEPS[step].points
