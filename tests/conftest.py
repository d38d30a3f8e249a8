"""A released course and one graded run of the whole catalogue, shared by the slow tests:
each submission goes through real nbgrader once (test_catalogue asserts every row,
test_end_to_end reads the controls, a mistake, the feedback and the exports of the same run)."""

import os
from pathlib import Path

import pytest
from catalogue_run import CatalogueRun

from autograder.steps import ASSIGNMENTS
from coursekit import grading, matrix, samples
from coursekit.course_dir import CourseDir

CATALOGUE = "catalogue_results"
READ_ASSIGNMENTS = pytest.StashKey[list]()  # the assignments whose catalogue the session's tests read


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """The course with all five assignments released. Under a name no test module redefines:
    the catalogue's run begins before the first test, whichever module that is."""
    course_dir = grading.prepare(tmp_path_factory.mktemp("course") / "course")
    for assignment in ASSIGNMENTS:
        grading.release(course_dir, assignment)
    return course_dir


@pytest.fixture(scope="session")
def course(released_course):
    return released_course


@pytest.fixture(scope="session")
def release_notebook(released_course):
    def read(assignment):
        return samples.read(CourseDir(released_course).release_notebook(assignment))

    return read


def pytest_collection_modifyitems(session, config, items):
    """The tests that read the catalogue's graded run go last (in their order), so that the run,
    begun with the session in the background, overlaps every other test: on CI's two cores the
    other tests mostly use one. `_catalogue_in_background` begins it only if such a test runs, for
    the assignments they read."""
    reads = [item for item in items if CATALOGUE in getattr(item, "fixturenames", ())]
    items[:] = [item for item in items if CATALOGUE not in getattr(item, "fixturenames", ())] + reads
    rows = [getattr(item, "callspec", None) and item.callspec.params.get("row") for item in reads]
    # Only test_row's rows say which assignment they read; any other reader may read them all.
    config.stash[READ_ASSIGNMENTS] = ([a for a in ASSIGNMENTS if any(row[0] == a for row in rows)]
                                      if all(rows) else list(ASSIGNMENTS))


@pytest.fixture(scope="session", autouse=True)
def _catalogue_in_background(request):
    if request.config.stash.get(READ_ASSIGNMENTS, []):
        request.getfixturevalue(CATALOGUE)


@pytest.fixture(scope="session")
def catalogue_results(released_course, request):
    """assignment -> {student: StudentResult}, each assignment graded once (one grade_class
    call), in the background from the session's start (`catalogue_run.CatalogueRun`). At the end the matrix
    of this run is written next to the course directory (or to $CATALOGUE_MATRIX_OUT): what
    `python -m coursekit.matrix` would write."""
    course = released_course
    run = CatalogueRun(course, request.config.stash.get(READ_ASSIGNMENTS, None) or ASSIGNMENTS)
    try:
        yield run
    finally:
        run.close()
    graded = {assignment: matrix.rows(assignment, by_student) for assignment, by_student in run.graded.items()}
    if graded:
        out = Path(os.environ.get("CATALOGUE_MATRIX_OUT") or Path(course).parent / "grading_matrix.md")
        out.write_text(matrix.render(graded))
        print(f"\ncatalogue matrix of this run: {out}")
