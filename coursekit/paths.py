"""Where things live in a checkout of this course: the one home of the paths the tools share.

The checkout is itself an nbgrader course directory (`nbgrader_config.py` sits at its root), so
nbgrader's own commands and ours run from it unchanged.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTENT = ROOT / "content"  # what authors write: prose and given code, in MyST notebooks
SOURCE = ROOT / "source"  # nbgrader's source notebooks, generated from CONTENT and `solutions`
RELEASE = ROOT / "assignments"  # the student version nbgrader generates from SOURCE (committed)
GRADING_MATRIX = ROOT / "docs" / "grading_matrix.md"  # every catalogue entry's grades (committed)


def source_notebook(assignment):
    return SOURCE / assignment / f"{assignment}.ipynb"


def released_notebook(assignment):
    return RELEASE / assignment / f"{assignment}.ipynb"


def interpreter_bin():
    """The bin directory of the interpreter running the tools (the course's virtualenv)."""
    return os.path.dirname(sys.executable)


def with_interpreter_on_path(env):
    """A copy of `env` with interpreter_bin() first on PATH (unless it is first already): the
    tools start nbgrader, dask and JupyterLab by name, and nbgrader runs `alembic` by name when it
    creates a gradebook, all of which an environment that was never activated would not find."""
    path = env.get("PATH", "")
    if path.split(os.pathsep)[0] == interpreter_bin():
        return dict(env)
    return dict(env, PATH=os.pathsep.join([interpreter_bin(), path]))
