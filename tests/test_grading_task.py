"""The class command's task (`coursekit/grading_task.py`) and its deadline for a whole notebook."""

import time

import nbformat
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from autograder.judge import JudgedExecute
from autograder.limits import CELL_TIMEOUT
from coursekit.grading_task import SubmissionTimeout, _timed


class _Judge(JudgedExecute):
    def preprocess_cell(self, cell, resources, index):
        return cell, resources


class _PlainExecute(ExecutePreprocessor):
    def preprocess_cell(self, cell, resources, index):
        return cell, resources


def test_the_tasks_deadline_leaves_a_notebooks_time_to_the_judge():
    """The judge marks what is left of a notebook not run once its time is spent, and grades the
    rest, as under `nbgrader autograde`. The task's deadline starts earlier (before the kernel):
    at the same moment, it failed the whole notebook where nbgrader's path graded it (a thread
    holding the interpreter in C: 0 points through the command, 6.6 through nbgrader). With the
    judge it is a backstop a cell's time later; with nbgrader's own Execute it is the only bound."""
    cell = nbformat.v4.new_markdown_cell("the deadline is checked before every cell")
    spent = time.monotonic() - 1
    assert _timed(_Judge, spent)().preprocess_cell(cell, {}, 0) == (cell, {})
    with pytest.raises(SubmissionTimeout):
        _timed(_Judge, spent - CELL_TIMEOUT)().preprocess_cell(cell, {}, 0)
    with pytest.raises(SubmissionTimeout):
        _timed(_PlainExecute, spent)().preprocess_cell(cell, {}, 0)
