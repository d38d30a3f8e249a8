"""Steps still as released borrow nothing (`autograder/stubs.py`): a stub raises before it could
call what it would be lent, so no lending kernel is started for it, and a step defined in a cell
of the student's own is still lent its dependencies."""

import copy

import nbformat
import pytest
from test_envelope import needs_sandbox
from test_judge import notebook, processes_left, program
from test_lending import calls_to

from autograder.judge import JudgedExecute, judge_notebook
from autograder.kernel.channel import LocalChannel
from autograder.seam import Implementation
from autograder.stubs import only_raises, still_a_stub, untouched_steps
from coursekit.paths import released_notebook

RELEASED_01 = released_notebook("01_simplified_self_attention")
CORRECT_WEIGHTS = "def attention_weights(scores):\n    return softmax(scores)\n"


def released_cell(grade_id):
    nb = nbformat.read(str(RELEASED_01), as_version=4)
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


# --- which objects only raise ---------------------------------------------------------------

def stub(scores):
    """As released."""
    # YOUR CODE HERE
    raise NotImplementedError()


def started(scores):
    weights = softmax(scores)  # noqa: F821 - a name of the notebook's
    raise NotImplementedError(weights)


def unfinished(scores):
    if scores is None:
        return None
    raise NotImplementedError()


class StubModule:
    def __init__(self, d_in):
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError()


class HalfDone:
    def __init__(self, d_in):
        self.d_in = d_in

    def forward(self, x):
        raise NotImplementedError()


@pytest.mark.parametrize(("obj", "expected"), [
    (stub, True), (StubModule, True),
    (started, False),  # it calls a name that may be lent before it raises
    (unfinished, False),  # it can return
    (HalfDone, False),  # it can be built: cases that need no forward may pass
    (lambda scores: scores, False),
])
def test_only_what_raises_whatever_it_is_given_counts_as_a_stub(obj, expected):
    impl = Implementation(LocalChannel({"attention_weights": obj}))
    assert still_a_stub(impl, "attention_weights") is expected


def test_a_name_that_is_not_defined_is_no_stub():
    assert still_a_stub(Implementation(LocalChannel({})), "attention_weights") is False


@pytest.mark.parametrize("reply", [
    None, [], {"code": None}, {"code": {"names": "NotImplementedError", "ops": ["RAISE_VARARGS"]}},
    {"code": {"names": [], "ops": ["RAISE_VARARGS", "RETURN_VALUE"]}},
    {"code": {"names": ["NotImplementedError"], "ops": ["LOAD_GLOBAL", "CALL"]}},  # no raise
    {"code": {"names": [["NotImplementedError"]], "ops": ["RAISE_VARARGS"]}},
])
def test_a_description_that_is_not_of_a_stub_is_read_as_none(reply):
    assert only_raises(reply) is False


def test_a_solution_cell_is_untouched_only_while_it_is_as_released():
    nb = nbformat.read(str(RELEASED_01), as_version=4)
    solutions = {c.metadata.nbgrader.grade_id.removesuffix("_solution")
                 for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}
    assert untouched_steps(nb.cells) == solutions and "softmax" in solutions
    edited = copy.deepcopy(nb)
    next(c for c in edited.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax_solution").source += "\n"
    assert untouched_steps(edited.cells) == solutions - {"softmax"}
    damaged = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": "not a mapping"})
    assert untouched_steps([damaged, *nb.cells]) == solutions


# --- through the judge ------------------------------------------------------------------------

def with_released(path, grade_id, at):
    """The notebook at `path` with the released solution cell `grade_id` inserted at `at`."""
    nb = nbformat.read(str(path), as_version=4)
    nb.cells.insert(at, released_cell(grade_id))
    nbformat.write(nb, str(path))
    return path


@needs_sandbox
def test_a_stub_after_a_wrong_dependency_starts_no_lending_kernel(tmp_path, monkeypatch):
    starts = calls_to(monkeypatch, JudgedExecute, "_start_lender")
    path = with_released(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), ("grade", "attention_weights")]),
        "attention_weights_solution", 2)
    judged = judge_notebook(path)
    assert judged.steps["softmax"].fraction < 1
    assert judged.steps["attention_weights"].fraction == 0
    assert all("NotImplementedError" in r.message for r in judged.steps["attention_weights"].results)
    assert starts == []
    assert processes_left() == []


@needs_sandbox
def test_a_step_written_in_a_cell_of_its_own_is_still_lent_its_dependency(tmp_path, monkeypatch):
    """The released cell is untouched, so no kernel was started ahead; the student's own cell
    defines the step, which is lent the reference softmax all the same (in a kernel started
    then), and scores full marks."""
    starts = calls_to(monkeypatch, JudgedExecute, "_start_lender")
    path = with_released(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), CORRECT_WEIGHTS, ("grade", "attention_weights")]),
        "attention_weights_solution", 2)
    judged = judge_notebook(path)
    assert judged.steps["softmax"].fraction < 1
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert len(starts) == 1
    assert processes_left() == []


@needs_sandbox
def test_the_stub_check_ends_with_the_notebooks_own_time(tmp_path):
    """Asking whether a step is still the stub is a request like any other: a kernel whose answer
    never comes holds it only as long as the notebook has left (4 s here), not a case's 10 s."""
    import time

    from autograder.kernel import warm

    warm.warm_parent()  # started before the clock: it is not the notebook's time
    start = time.monotonic()
    judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), program("hang_stub_check"), ("grade", "attention_weights")]),
        submission_timeout=4)
    assert time.monotonic() - start < 9.5, "the stub check was cut to what was left of 4 s"
    assert processes_left() == []
