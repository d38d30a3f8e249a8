"""A released course and one graded run of the whole catalogue, shared by the slow tests:
each submission goes through real nbgrader once (test_catalogue asserts every row,
test_end_to_end reads the controls, a mistake, the feedback and the exports of the same run)."""

import os
from pathlib import Path

import pytest

from autograder.steps import ASSIGNMENTS
from coursekit import grading, matrix, samples
from coursekit.course_dir import CourseDir


@pytest.fixture(scope="session")
def release_as_generated(tmp_path_factory):
    """(course directory, {committed release file: its bytes as nbgrader generated it}): the release
    of all five, generated once from source; the bytes are read before any test grades there."""
    from coursekit import release
    from coursekit.paths import RELEASE

    course_dir = grading.prepare(tmp_path_factory.mktemp("course") / "course")
    for assignment in ASSIGNMENTS:
        grading.release(course_dir, assignment)
    return course_dir, release.outputs(course_dir / "assignments", RELEASE)


@pytest.fixture(scope="session")
def course(release_as_generated):
    return release_as_generated[0]


@pytest.fixture(scope="session")
def release_notebook(course):
    def read(assignment):
        return samples.read(CourseDir(course).release_notebook(assignment))

    return read


@pytest.fixture(scope="session")
def catalogue_results(course):
    """assignment -> {student: StudentResult} of the controls and the catalogue entries CI grades
    through nbgrader (`matrix.nbgrader_sample`), graded on first use (one grade_class call each).
    At the end the matrix of this run is written next to the course directory (or to
    $CATALOGUE_MATRIX_OUT): the rows of those entries."""
    from coursekit.cluster import Cluster

    cache, clusters = {}, []

    def results(assignment):
        if assignment not in cache:
            if not clusters:  # one cluster for the five runs: its workers start and warm up once
                clusters.append(Cluster(workers=2))
            cache[assignment] = matrix.grade_catalogue(course, assignment, cluster=clusters[0],
                                                       only=matrix.nbgrader_sample(assignment))
        return cache[assignment]

    try:
        yield results
    finally:
        for cluster in clusters:
            cluster.close()
    graded = {assignment: matrix.rows(assignment, by_student) for assignment, by_student in cache.items()}
    if graded:
        out = Path(os.environ.get("CATALOGUE_MATRIX_OUT") or Path(course).parent / "grading_matrix.md")
        out.write_text(matrix.render(graded))
        print(f"\ncatalogue matrix of this run: {out}")


@pytest.fixture
def short_case_timeouts(monkeypatch):
    """`short(step, seconds)`: every case of `step` gets `seconds` instead of its suite's limit, and a
    case after one that timed out a fifth of that, for this test. The tests of what an endless
    function costs show the same rules as with the real limits (10 s, then 2 s), in a fraction of
    the time."""
    import dataclasses

    from autograder import harness

    cases_of = harness.cases_of

    def short(step, seconds):
        def shortened(name):
            cases = cases_of(name)
            return [dataclasses.replace(c, timeout=seconds) for c in cases] if name == step else cases

        monkeypatch.setattr(harness, "cases_of", shortened)
        monkeypatch.setattr(harness, "ENDLESS_RETRY", seconds / 5)

    return short
