"""Where things live in a checkout of this course: the one home of the paths the tools share.

The checkout is itself an nbgrader course directory (`nbgrader_config.py` sits at its root), so
nbgrader's own commands and ours run from it unchanged.
"""

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
