"""A kernel that ends, or whose messages cannot be read, while an ordinary cell runs (red-team round
r27). The README promises that `os._exit`, memory over the submission's budget and forged messages
cost their author the affected cases or steps; here they cost the whole notebook: nbclient's
DeadKernelError, or jupyter_client's `ValueError: Invalid Signature`, escapes
`JudgedExecute.preprocess_cell` for an ordinary cell, and both `nbgrader autograde` and
`coursekit autograde` report the submission as not graded (no score exported). A student who
would rather be graded by hand, or hand in again, chooses that. Graded through real nbgrader and
`coursekit autograde --workers 2` in classes of 8 to 17 (os._exit at the top level, the kernel's
session key replaced, 5 GiB of memfds across the kernel and a child, 120 sleeping threads, all
dup2'd over): each "not graded", classmates unaffected, nothing left behind.

The fix belongs in judge.py (which another change is rewriting): an ordinary cell whose kernel
died or sent what cannot be read gets an error output saying so (naming the memory budget when
the envelope's memory group recorded an out-of-memory kill), then `_restart_and_replay(index)`
(the cells before it, not the one that ended the kernel), the restart flag, and grading goes on.
Until then these are expected to fail (strict: a fix makes them pass, and the marks must go)."""

import pytest
from test_judge import notebook, points

from autograder.judge import judge_notebook
from autograder.reference import reference_source
from autograder.steps import STEPS

ENDINGS = {
    "os-exit": "import os\nos._exit(3)",
    "session-key": "get_ipython().kernel.session.key = b'not the key the grader holds'\nprint('signed')",
}


@pytest.mark.xfail(strict=True, reason="kernel deaths in ordinary cells end the notebook's grading (r27)")
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_kernel_that_ends_in_an_ordinary_cell_costs_its_cells_not_the_notebook(tmp_path, ending):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), ENDINGS[ending], ("grade", "softmax")]))
    assert points(judged, "softmax") == STEPS["softmax"].points
