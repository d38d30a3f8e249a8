"""A kernel that ends, or whose messages cannot be read, while an ordinary cell runs (red-team round
r27): nbclient's DeadKernelError, or jupyter_client's `ValueError: Invalid Signature`, escaped
`JudgedExecute.preprocess_cell` for an ordinary cell, and both `nbgrader autograde` and `coursekit
autograde` reported the submission as not graded (no score exported), which a student could choose
in order to be graded by hand or hand in again (`os._exit` at the top level, the kernel's session
key replaced, memory over the budget). Now the cell says so, a fresh kernel replays the cells
before it, and the notebook is graded (`autograder/dead_kernel.py`)."""

import pytest
from test_judge import notebook, points

from autograder.judge import judge_notebook
from autograder.reference import reference_source
from autograder.steps import STEPS

ENDINGS = {
    "os-exit": "import os\nos._exit(3)",
    "session-key": "get_ipython().kernel.session.key = b'not the key the grader holds'\nprint('signed')",
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_kernel_that_ends_in_an_ordinary_cell_costs_its_cells_not_the_notebook(tmp_path, ending):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), ENDINGS[ending], "after = 'the fresh kernel runs the later cells'\nprint(after)",
        ("grade", "softmax")]))
    assert points(judged, "softmax") == STEPS["softmax"].points
    ended, later = (judged.notebook.cells[i] for i in (1, 2))
    assert "this cell ended the kernel" in ended.outputs[0]["text"]
    assert "the fresh kernel runs the later cells" in later.outputs[0]["text"]
