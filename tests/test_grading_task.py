"""The class command's task (`coursekit/grading_task.py`) and its deadline for a whole notebook."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from autograder.judge import JudgedExecute
from autograder.kernel import owned_folders
from autograder.limits import CELL_TIMEOUT
from coursekit.grading_task import SubmissionTimeout, _timed, judge_submission

PREFIX = "coursekit-autograde-"


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


def test_the_folder_of_a_worker_killed_mid_task_is_removed_by_the_next_task():
    """A Dask worker killed in the middle of a task (the nanny, the OOM killer) never removed its copy of the
    submission: /tmp kept `coursekit-autograde-*` folders, a student's files in them, for good. The next task removes
    those whose maker no longer runs, and leaves alone a living process's, one being made (no owner yet), and one
    another user made (as root, anyone's folder in /tmp is not ours to remove)."""
    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal\n"
        "from autograder.kernel import owned_folders\n"
        f"with owned_folders.temporary({PREFIX!r}) as folder:\n"
        "    (folder / 'submission.ipynb').write_text('{}')\n"
        "    print(folder, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n")], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = Path(killed.stdout.strip())
    assert (left / "submission.ipynb").is_file(), "the killed worker left its folder"
    living = owned_folders.make(PREFIX)
    unowned = Path(tempfile.mkdtemp(prefix=PREFIX))
    foreign = owned_folders.make(PREFIX)
    (foreign / owned_folders.OWNER_FILE).write_text((left / owned_folders.OWNER_FILE).read_text())  # dead too
    if os.getuid() == 0:
        os.chown(foreign, 12345, 12345)
    try:
        owned_folders._swept.discard(PREFIX)
        result = judge_submission({"student": "s", "assignment": "a"})  # no config: fails once its folder is made
        assert not result["ok"] and "config" in result["problem"], result
        assert not left.exists()
        assert living.is_dir() and unowned.is_dir()
        assert foreign.is_dir() == (os.getuid() == 0)
        assert not [f for f in Path(tempfile.gettempdir()).glob(f"{PREFIX}*") if f not in (living, unowned, foreign)
                    and not owned_folders.owner_alive(f)], "the task's own folder is removed when it ends"
    finally:
        for folder in (living, unowned, foreign):
            subprocess.run(["rm", "-rf", str(folder)], check=True)
