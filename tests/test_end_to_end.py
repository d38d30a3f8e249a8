"""The course through real nbgrader: release, autograde, feedback, export.

The reference scores full marks, the untouched release scores 0 without breaking grading, a
typical mistake loses points at its own step only, and the feedback shows why without
showing hidden tests, tracebacks or expected values. The submissions are those of the
catalogue's graded run (`catalogue_results`, conftest.py): each is autograded once per CI run.
"""

import csv
import html as htmllib
import re

import numpy as np
import pytest

from autograder.fixtures import stored
from autograder.sealed_outputs import NOTE
from autograder.steps import ASSIGNMENTS, STEPS, steps_of
from coursekit import catalogue, grading, matrix

REFERENCE, UNTOUCHED = matrix.CONTROL, matrix.UNTOUCHED


@pytest.fixture(scope="module")
def graded(course, catalogue_results):
    """assignment -> (the typical mistake, {role: StudentResult}), the mistake's feedback written
    (the class's feedback is `coursekit feedback`'s, in test_class_grading)."""
    from concurrent.futures import ThreadPoolExecutor

    results = {}
    for assignment in ASSIGNMENTS:
        mistake = catalogue.by_assignment(catalogue.MISTAKES, assignment)[0]
        run = catalogue_results(assignment)
        results[assignment] = (mistake, {"e2e-reference": run[REFERENCE], "e2e-untouched": run[UNTOUCHED],
                                         "e2e-mistake": run[mistake.id]})
    # One nbgrader process per assignment, each writing its own folder: two at a time, one per core.
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda a: grading.feedback(course, a, [results[a][0].id]), ASSIGNMENTS))
    return results


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_scores_full_marks(graded, assignment):
    result = graded[assignment][1]["e2e-reference"]
    assert result.graded
    assert result.points == {s.name: s.points for s in steps_of(assignment)}
    assert result.flags == []


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_release_scores_zero_and_is_graded(graded, assignment):
    result = graded[assignment][1]["e2e-untouched"]
    assert result.graded, result.problem
    assert result.total == 0
    assert all("not implemented yet" in report for report in result.reports.values())


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_typical_mistake_loses_points_at_its_step_only(graded, assignment):
    mistake, results = graded[assignment]
    result = results["e2e-mistake"]
    for step in steps_of(assignment):
        if step.name in mistake.loses:
            assert result.points[step.name] < step.points
            assert mistake.symptom in result.reports[step.name]
        else:
            assert result.points[step.name] == step.points, step.name


def _feedback_html(course, student, assignment):
    path = course / "feedback" / student / assignment / f"{assignment}.html"
    return path.read_text()


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_explains_failures_without_revealing_hidden_tests(graded, course, assignment):
    mistake, _ = graded[assignment]
    html = _feedback_html(course, mistake.id, assignment)
    # nbgrader's stylesheet names pygments classes like "Generic.Traceback": drop style and script
    html = re.sub(r"<(style|script)[^>]*>.*?</\1>", "", html, flags=re.S)
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", html))
    assert "FAILED" in text and mistake.symptom.split()[0] in text
    # (visible check cells keep their tracebacks: their code is the student's to read)
    for secret in ("BEGIN HIDDEN TESTS", "from autograder", "autograder.notebook", "grade(",
                   "autograder/", "harness.py", "site-packages", "test_" + mistake.loses[0]):
        assert secret not in text, secret
    # The failed step's report (what its graded cell shows) holds no expected value of its
    # hidden stored cases, at any precision a message would print.
    step = mistake.loses[0]
    report = graded[assignment][1]["e2e-mistake"].reports[step]
    assert "FAILED" in report and report.strip() in text.replace("\r", "")
    for record in stored.load(step):
        for expected in stored.expected_outputs(record):
            for value in np.asarray(expected, dtype=float).ravel()[:50]:
                if abs(value) > 1e-3 and abs(value - round(value)) > 1e-3:
                    for shown in (f"{value:.4f}", f"{value:.4g}"):
                        assert shown not in report, (step, value)


def test_what_a_cell_shows_once_hidden_inputs_reached_its_kernel_reaches_no_student(course, catalogue_results):
    """`record-inputs` keeps every input the grader sends its softmax and prints them all in a
    later cell: the autograded notebook and the feedback keep one line in its place."""
    assignment, student = "01_simplified_self_attention", "record-inputs"
    assert catalogue_results(assignment)[student].graded
    grading.feedback(course, assignment, [student])
    autograded = (course / "autograded" / student / assignment / f"{assignment}.ipynb").read_text()
    feedback = htmllib.unescape(_feedback_html(course, student, assignment))
    for text in (autograded, feedback):
        assert re.search(r"RECORDED \d", text) is None, "the recorded inputs were kept"
        assert NOTE.split(":")[0] in text


def test_grades_and_step_scores_export(graded, course):
    grades = list(csv.DictReader(grading.export_grades(course).open()))
    students = {row["student_id"] for row in grades}
    assert {REFERENCE, UNTOUCHED} <= students
    step_csv = grading.export_step_scores(course, grading.step_scores(course))
    rows = list(csv.DictReader(step_csv.open()))
    reference_rows = [r for r in rows if r["student"] == REFERENCE]
    assert len(reference_rows) == len(STEPS)
    assert all(float(r["points"]) == float(r["max_points"]) for r in reference_rows)
