"""Nothing of the notebook's kernel runs beside a kernel that holds a reference
(`autograder/kernel/still.py`, `lending.py`).

The two kernels of a submission share its pids and CPU budgets, so one can tell the other what
it knows by what it takes of them: red-team round r37 sent the reference's source that way, from
the lending kernel to the notebook's kernel, and out in a later step's report. Here the lending
kernel, once it holds the reference, takes most of the pids budget and keeps it; a thread of the
notebook's kernel, started before the lent step, tries all along to start a few threads. It
never finds the budget taken: it is stopped while the reference is held, and the kernel that
held it is gone before it runs again.
"""

from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left

from autograder.judge import judge_notebook

WRONG_SOFTMAX_RECORDING_THE_REFERENCE = """\
import builtins

import numpy as np

SEEN = []
_compile = builtins.compile


def _recording(source, *args, **kwargs):
    if isinstance(source, str) and "def softmax" in source:
        SEEN.append(source)  # only where the reference is lent
    return _compile(source, *args, **kwargs)


builtins.compile = _recording


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
"""

LISTENER = """\
import threading
import time

SQUEEZED = [0]


def _listen():
    while True:
        release, started = threading.Event(), []
        try:
            for _ in range(30):
                thread = threading.Thread(target=release.wait, daemon=True)
                thread.start()
                started.append(thread)
        except RuntimeError:  # the budget is taken: what a receiver decodes
            SQUEEZED[0] += 1
        release.set()
        for thread in started:
            thread.join()
        time.sleep(0.01)


threading.Thread(target=_listen, daemon=True).start()
"""

WEIGHTS_THAT_TAKE_THE_BUDGET = """\
import threading

TAKEN = []


def attention_weights(scores):
    if SEEN and not TAKEN:  # in a kernel holding the reference: take the budget, and keep it
        forever = threading.Event()
        try:
            while len(TAKEN) < 90:
                thread = threading.Thread(target=forever.wait, daemon=True)
                thread.start()
                TAKEN.append(thread)
        except RuntimeError:
            pass
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_the_notebooks_kernel_never_runs_while_another_kernel_holds_a_reference(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, ("grade", "softmax"), LISTENER,
        WEIGHTS_THAT_TAKE_THE_BUDGET, ("grade", "attention_weights"),
        "time.sleep(1.5)", "print('SQUEEZED', SQUEEZED[0], 'SEEN', len(SEEN))"]))
    assert judged.steps["softmax"].fraction < 1
    assert printed(judged, 6) == "SQUEEZED 0 SEEN 0\n"
    assert processes_left() == []
