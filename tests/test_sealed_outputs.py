"""No output that may carry a hidden input reaches the student (`autograder/sealed_outputs.py`):
the judge marks each ordinary cell that ran after its kernel was sent a case's inputs, and the
next stage of the pipeline keeps one line in place of what it showed. Through real nbgrader, with
the hostile catalogue's `record-inputs`, in test_end_to_end.py."""

import re

import nbformat
from test_envelope import needs_sandbox
from test_judge import notebook, printed, program

from autograder.judge import judge_notebook
from autograder.sealed_outputs import NOTE, SEALED_KEY, SealOutputs

RECORD = "SEEN = []\n_given = softmax\ndef softmax(x, axis=-1):\n    SEEN.append(list(map(float, x)))\n    return _given(x, axis)\n"
SHOW = "print('RECORDED', len(SEEN), SEEN)"


def test_a_marked_cell_keeps_one_line_and_loses_its_mark():
    marked = nbformat.v4.new_code_cell("print(x)", metadata={SEALED_KEY: True})
    marked.outputs = [nbformat.v4.new_output("stream", name="stdout", text="0.25 0.75\n"),
                      nbformat.v4.new_output("error", ename="ValueError", evalue="0.25", traceback=["0.25"])]
    kept = nbformat.v4.new_code_cell("print(1)")
    kept.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    nb = nbformat.v4.new_notebook(cells=[marked, kept])
    nb, _ = SealOutputs()(nb, {})  # as a pipeline calls it
    assert [o.get("text") for o in nb.cells[0].outputs] == [NOTE] and SEALED_KEY not in nb.cells[0].metadata
    assert nb.cells[1].outputs[0]["text"] == "1\n"


@needs_sandbox
def test_the_judge_marks_every_cell_that_ran_after_inputs_were_sent(tmp_path):
    """A softmax that keeps what it is given: the cell before the graded one shows what it
    printed; the cell after ran once the kernel had held the hidden inputs, and is marked."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), RECORD + SHOW, ("grade", "softmax"), SHOW]))
    cells = judged.notebook.cells
    assert printed(judged, 1) == "RECORDED 0 []\n" and SEALED_KEY not in cells[1].metadata
    assert printed(judged, 3).startswith("RECORDED") and printed(judged, 3) != "RECORDED 0 []\n"
    assert cells[3].metadata.get(SEALED_KEY) is True
    SealOutputs()(judged.notebook, {})
    assert printed(judged, 3) == NOTE


def test_a_suite_quotes_an_error_text_without_the_numbers_it_may_hold():
    """r63: suites quote the first line of an error of the code under test themselves (`modules.first_line`, and
    `properties.backward_error_line` for a backward's error text, which the kernel sends), and quoted it whole."""
    from autograder.errors import RemoteError
    from autograder.suites.toolkit import modules, properties

    said = "inputs -0.685374 0.391119 1e-05 12345 \x1b[2K of shape (2, 3)\nsecond line"
    for quoted in (properties.backward_error_line(said),
                   modules.first_line(RemoteError.from_reply({"type": "RuntimeError", "message": said}))):
        assert quoted == "inputs -… … … … \\x1b[2K of shape (2, 3)", quoted


@needs_sandbox
def test_a_backwards_error_text_reaches_the_report_without_the_cases_inputs(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("backward_error_inputs"), ("grade", "SelfAttention")]))
    report = printed(judged, 1)
    assert "backpropagating through SelfAttention failed (inputs -… " in report, report
    assert not re.search(r"\d\.\d{4}", report.split("backpropagating", 1)[1]), report
