"""A released course shared by the slow end-to-end tests: nbgrader's start-up is paid once."""

import pytest

from autograder.steps import ASSIGNMENTS
from coursekit import grading, samples


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    course_dir = grading.prepare(tmp_path_factory.mktemp("course") / "course")
    for assignment in ASSIGNMENTS:
        grading.release(course_dir, assignment)
    return course_dir


@pytest.fixture(scope="session")
def release_notebook(course):
    def read(assignment):
        return samples.read(course / "assignments" / assignment / f"{assignment}.ipynb")

    return read
