"""A step graded with a dependency's reference in the kernel reports nothing the kernel chose.

Code that runs beside a lent reference can record its source (a wrapped `compile` sees it) and
write it into whatever the judge quotes from its answers: the name of an exception type it makes
up (80 characters a case), or the shape of an empty array it returns (63 bits a case). The report
of such a step is the student's, so the judge says only which cases failed, in fixed words
(red-team round r37: six cases of attention_weights carried the reference softmax, docstring and
all, into the autograded notebook and the feedback, on both grading paths).
"""

import pytest
from test_envelope import needs_sandbox
from test_judge import WRONG_SOFTMAX, notebook

from autograder.errors import RemoteError
from autograder.harness import _describe_error
from autograder.judge import judge_notebook
from autograder.sealed_reports import sealed_failure

RECORD_SOURCE = """
import builtins

SEEN = []
_compile = builtins.compile


def _recording(source, *args, **kwargs):
    if isinstance(source, str) and "def softmax" in source:
        SEEN.append(source)
    return _compile(source, *args, **kwargs)


builtins.compile = _recording
CALLS = [0]
"""

# Each answers the reference's source, 8 or 40 characters a call, where the judge quotes it.
BY_TYPE_NAME = """
def attention_weights(scores):
    if not SEEN:
        return softmax(scores, axis=-1)
    start = SEEN[-1].index("def softmax") + 40 * CALLS[0]
    CALLS[0] += 1
    raise type(SEEN[-1][start:start + 40], (ValueError,), {})("x")
"""

BY_SHAPE = """
import numpy as np


def attention_weights(scores):
    if not SEEN:
        return softmax(scores, axis=-1)
    text = SEEN[-1].encode()
    start = text.index(b"def softmax") + 8 * CALLS[0]
    CALLS[0] += 1
    return np.zeros((0, *text[start:start + 8]))
"""


# The judge's own words where its code failed on the answer (it names its own exception's type).
ANSWER_UNUSABLE = ("`attention_weights` answered something the grader could not use (IndexError): check the type and "
                   "shape of what it returns")

RAISED = "`attention_weights` raised ValueError, and the grader cannot name the cause"


def _spelled(chunk):
    """How the judge would show `chunk` as the shape of an empty array."""
    return ", ".join(str(b) for b in chunk.encode())


@needs_sandbox
@pytest.mark.parametrize("answer", [BY_TYPE_NAME, BY_SHAPE], ids=["type-name", "shape"])
def test_a_step_graded_with_a_lent_reference_reports_nothing_the_kernel_chose(tmp_path, answer):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        RECORD_SOURCE, WRONG_SOFTMAX, ("grade", "softmax"), answer, ("grade", "attention_weights")]))
    assert judged.steps["softmax"].fraction < 1
    results = judged.steps["attention_weights"].results
    failed = [r.message for r in results if not r.passed]
    messages = "\n".join(failed)
    assert len(failed) >= 4, messages  # an empty array passes the two cases no entry of it can fail
    for leaked in ("def softmax", "def softm", "axis=-1", _spelled("def soft"), _spelled("max(x, a")):
        assert leaked not in messages, messages
    assert set(failed) <= {sealed_failure("attention_weights"), ANSWER_UNUSABLE, RAISED}, messages


def test_a_sealed_exception_is_named_by_its_builtin_base():
    """The type's own name is the kernel's to choose; its builtin base is one of a few."""
    error = RemoteError.from_reply({"type": "def softmax(x, axis=-1): exps", "bases": ["ValueError"],
                                    "message": "the source"})
    assert "def softmax" in _describe_error("softmax", error)
    sealed = _describe_error("softmax", error, show_details=False)
    assert "def softmax" not in sealed and "the source" not in sealed and "ValueError" in sealed
