"""A submission whose cells of the release were deleted is graded, on both paths (red-team round r50).

nbgrader puts a deleted graded cell back after the cell of the release just before it, looked up in
the submission; where that cell was deleted too (a solution cell deleted with its test cell, or a
notebook holding none of the release's cells), nbgrader's KeyError left the submission not graded on
both paths, which its author could choose (`coursekit.nbgrader_plugins.RestoreCells`). And a notebook
holding graded cells alone, all of them put back, has no code cell that ran: it was reported not
graded although the judge had graded it (`coursekit.standing.ran_at`)."""

import nbformat
import pytest

from autograder.steps import STEPS, grade_id
from coursekit import autograde, grading, samples, standing
from coursekit.course_dir import CourseDir

A = "01_simplified_self_attention"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    course = grading.prepare(tmp_path_factory.mktemp("deleted") / "course")
    grading.release(course, A)
    return course


def handed_in(course):
    """{student: notebook}: none of the release's cells; dot_product's solution and test cells deleted."""
    reference = samples.complete(samples.read(CourseDir(course).release_notebook(A)))
    step_cells = {grade_id("dot_product"), "dot_product_solution"}
    without = nbformat.from_dict(reference)
    without.cells = [c for c in without.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in step_cells]
    nothing = nbformat.from_dict(reference)
    nothing.cells = [nbformat.v4.new_markdown_cell("all mine")]
    return {"walt": nothing, "trent": without}


def submit(course):
    for student, nb in handed_in(course).items():
        samples.write(nb, CourseDir(course).submitted_notebook(A, student))


def assert_graded(course):
    scores = grading.step_scores(course, [A])
    assert standing.standing(course, A, "walt").graded
    assert all(float(scores[("walt", A)][step.name] or 0) == 0 for step in STEPS.values() if step.assignment == A)
    assert standing.standing(course, A, "trent").graded
    trent = scores[("trent", A)]
    assert float(trent["dot_product"] or 0) == 0 and float(trent["softmax"]) == STEPS["softmax"].points


def test_nbgrader_autograde_grades_a_notebook_whose_release_cells_were_deleted(released):
    submit(released)
    code, output = grading._nbgrader(released, "autograde", A, "--force")
    assert code == 0, output
    assert_graded(released)


def test_coursekit_autograde_grades_a_notebook_whose_release_cells_were_deleted(released):
    submit(released)
    report = autograde.autograde(released, A, ["walt", "trent"], force=True, progress=False, in_process=True)
    assert all(outcome.ok for outcome in report.outcomes), report.outcomes
    assert_graded(released)
