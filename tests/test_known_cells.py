"""A cell the student added with nbgrader metadata of their own is graded as an ordinary cell
(`coursekit/known_cells.py`): it failed the whole submission on both grading paths (r37)."""

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from coursekit import classroom, grading, samples
from coursekit.course_dir import CourseDir
from coursekit.known_cells import RestoreKnownCells

A01 = "01_simplified_self_attention"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    course = grading.prepare(tmp_path_factory.mktemp("known") / "course")
    grading.release(course, A01)
    return course


def _sanitized(course, added):
    nb = classroom.build_submission(samples.read(CourseDir(course).release_notebook(A01)))
    graded = sum(1 for c in nb.cells if "nbgrader" in c.metadata)
    nb.cells += [new_code_cell("x = 1", metadata=metadata) for metadata in added]
    resources = {"nbgrader": {"notebook": A01, "assignment": A01, "db_url": CourseDir(course).gradebook_url}}
    out, _ = RestoreKnownCells().preprocess(nbformat.from_dict(nb), resources)
    return out, graded


@pytest.mark.parametrize("metadata", [
    {"nbgrader": {"grade_id": "not-in-the-gradebook", "grade": False, "solution": False, "locked": False,
                  "schema_version": 3}},
    {"nbgrader": {"solution": True, "schema_version": 3}},
    {"nbgrader": {"grade_id": "\x1b]52;c;eA==\x07", "grade": True, "points": 100, "schema_version": 3}},
], ids=["unknown-grade-id", "no-grade-id", "escapes"])
def test_a_cell_with_nbgrader_metadata_of_its_own_is_an_ordinary_cell(released, metadata):
    out, graded = _sanitized(released, [metadata])
    assert "nbgrader" not in out.cells[-1].metadata
    assert sum(1 for c in out.cells if "nbgrader" in c.metadata) == graded  # the release's, no more


def test_the_course_config_uses_it():
    from coursekit.paths import ROOT

    assert '"coursekit.known_cells.RestoreKnownCells"' in (ROOT / "nbgrader_config.py").read_text()
