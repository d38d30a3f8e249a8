"""A kernel that ends, or whose messages cannot be read, while an ordinary cell runs (red-team round
r27): nbclient's DeadKernelError, or jupyter_client's `ValueError: Invalid Signature`, escaped
`JudgedExecute.preprocess_cell` for an ordinary cell, and both `nbgrader autograde` and `coursekit
autograde` reported the submission as not graded (no score exported), which a student could choose
in order to be graded by hand or hand in again (`os._exit` at the top level, the kernel's session
key replaced, memory over the budget). Now the cell says so, a fresh kernel replays the cells
before it, and the notebook is graded (`autograder/dead_kernel.py`)."""

import asyncio

import pytest
from jupyter_core.utils import ensure_event_loop
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
    # nbclient's poller of the ended cell is stopped, not left to fail on a later loop and be logged
    # when collected (on 3.11, inside a parse, that once stopped the grading: autograder/parse_guard.py)
    assert not [task for task in asyncio.all_tasks(ensure_event_loop()) if "_async_poll" in task.get_coro().__qualname__]


# A cell that ends the kernel, or leaves it unable to answer, only when it runs silently: in a
# replay (and in a lending kernel), never in the notebook's own run, which the student can tell
# apart (the request's `silent`).
ON_REPLAY = {"ends": "os._exit(7)", "replaces-its-key": "get_ipython().kernel.session.key = b'a key of its own'"}


@pytest.mark.parametrize("what", sorted(ON_REPLAY))
def test_a_cell_that_spoils_only_the_replay_is_left_out_of_the_replays_and_the_notebook_is_graded(tmp_path, what):
    """Red-team round r33: the replay after a death ran the cell that spoiled only replays, the
    judge waited the cell's whole time for a kernel that would never answer, and nbclient's next
    client found none that did ('Kernel died before replying to kernel_info', or 'Kernel didn't
    respond in 63 seconds'): the notebook was not graded, on both paths; a student could choose
    that. Now the cell the replay lost its kernel in is left out of the replays, a death is seen
    at once, and the notebook is graded."""
    import time

    started = time.monotonic()
    spoils = f"import os\nif get_ipython().kernel.get_parent().get('content', {{}}).get('silent'):\n    {ON_REPLAY[what]}\n"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), spoils + "print('ran in the notebook')", "import os\nos._exit(3)",
        "after = 'the fresh kernel runs the later cells'\nprint(after)", ("grade", "softmax")]), timeout=5)
    assert judged.problem == ""
    assert points(judged, "softmax") == STEPS["softmax"].points
    cells = judged.notebook.cells
    assert "ran in the notebook" in cells[1].outputs[0]["text"]
    assert "the grader's later replays leave this cell out" in cells[1].outputs[-1]["text"]
    assert "this cell ended the kernel" in cells[2].outputs[0]["text"]
    assert "the fresh kernel runs the later cells" in cells[3].outputs[0]["text"]
    if what == "ends":
        assert time.monotonic() - started < 25  # no cell's whole time waited for a kernel that is gone


# Run silently (the lending kernel follows the notebook so), keep taking every process the
# envelope and the warm parent's user have left; run in the notebook, end the kernel once no
# thread can start.
HOLDS_EVERY_PID = '''
import os, threading, time

def _grab():
    while True:
        try:
            threading.Thread(target=time.sleep, args=(10_000,), daemon=True).start()
        except RuntimeError:
            time.sleep(0.001)

def _watch():
    while True:
        time.sleep(0.1)
        try:
            threading.Thread(target=time.sleep, args=(0.01,), daemon=True).start()
        except RuntimeError:
            os._exit(9)

silent = get_ipython().kernel.get_parent().get('content', {}).get('silent')
threading.Thread(target=_grab if silent else _watch, daemon=True).start()
'''


def test_a_lending_kernel_that_holds_every_process_cannot_stop_the_notebooks_kernel_from_restarting(tmp_path):
    """Red-team round r33: the lending kernel (started once softmax lost points) took every process
    left, the notebook's kernel ended itself, and its restart failed: the warm parent shares its
    user's process limit with its kernels, its fork failed and it died ('the warm parent could not
    fork a kernel'), and the notebook was not graded on both paths. Now the warm parent says so
    and serves on, and the judge discards the lending kernel and starts the notebook's again."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "def softmax(x, axis=-1):\n    return x", ("grade", "softmax"), "import time\ntime.sleep(2)",
        HOLDS_EVERY_PID, "import time\ntime.sleep(25)", reference_source(["attention_weights"]),
        ("grade", "attention_weights")]), submission_timeout=120)
    assert judged.problem == ""
    assert points(judged, "softmax") < STEPS["softmax"].points  # so a lending kernel started
    assert "this cell ended the kernel" in judged.notebook.cells[4].outputs[0]["text"]
    assert "attention_weights" in judged.steps
