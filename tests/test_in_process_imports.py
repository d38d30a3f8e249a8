"""A cell graded in process (`reference_with`, as tests/test_step_mistakes.py grades the catalogue's step
mistakes) runs after the imports its own notebook gives, so a step mistake that uses one of them (F of
torch.nn.functional, which notebooks 02, 03 and 05 import) is graded for its mistake, not as a NameError
that only the in-process grading would see."""

import warnings

import numpy as np

from autograder.harness import run_step
from autograder.reference import notebook_imports, reference_with
from autograder.steps import A03, A04, STEPS
from coursekit.samples import reference_cell


def test_a_cell_graded_in_process_may_use_what_its_notebook_imports():
    cell = reference_cell(["masked_softmax"]).replace("torch.softmax(", "F.softmax(")
    assert "F.softmax(" in cell
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_step("masked_softmax", reference_with({"masked_softmax": cell}))
    assert result.points(STEPS["masked_softmax"].points) == STEPS["masked_softmax"].points


def test_only_what_the_notebook_imports_is_given():
    assert "import torch.nn.functional as F\n" in notebook_imports(A03)
    assert " as F\n" not in notebook_imports(A04)  # notebook 04 never imports F: a cell there that uses it fails
