"""Where a submission stands (coursekit/standing.py), without grading anything: what is wrong
with a submission that cannot be graded, in words a student can act on, and which record wins
when a submission that failed is graded later by another command."""

import json
import os
import time

from autograder.steps import A01, A03
from coursekit import standing
from coursekit.course_dir import CourseDir
from coursekit.paths import released_notebook


def hand_in(root, student, content):
    path = CourseDir(root).submitted_notebook(A01, student)
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    return path


def test_a_submission_that_cannot_be_graded_is_named_for_what_it_is(tmp_path):
    hand_in(tmp_path, "text", b"print('hello')")
    hand_in(tmp_path, "other", released_notebook(A03).read_bytes())
    old = json.loads(released_notebook(A01).read_text())
    hand_in(tmp_path, "old", json.dumps(dict(old, nbformat=3)).encode())
    hand_in(tmp_path, "fine", released_notebook(A01).read_bytes())
    assert standing.diagnose(tmp_path, A01, "text") == f"{A01}.ipynb is not a notebook (not Jupyter's JSON format)"
    assert standing.diagnose(tmp_path, A01, "other") == f"{A01}.ipynb is the notebook of another assignment ({A03})"
    assert "notebook format 3" in standing.diagnose(tmp_path, A01, "old")
    assert standing.diagnose(tmp_path, A01, "fine") == ""
    assert standing.diagnose(tmp_path, A01, "nobody") == f"no {A01}.ipynb was handed in"
    for student, kind in (("text", "not a notebook"), ("other", "wrong assignment"), ("old", "old format")):
        assert standing.kind_of(standing.diagnose(tmp_path, A01, student)) == kind
        where = standing.standing(tmp_path, A01, student)
        assert not where.graded and where.advice == standing.ADVICE[kind]
        assert where.flags == [f"autograde failed: {where.problem}"]


def test_a_failure_is_forgotten_once_the_submission_is_graded_after_it(tmp_path):
    standing.record_failure(tmp_path, A01, "ada", "the task failed on the cluster (KilledWorker)")
    notebook = json.loads(released_notebook(A01).read_text())
    code = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    code["execution_count"] = 1
    path = CourseDir(tmp_path).autograded_notebook(A01, "ada")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(notebook))
    earlier = time.time() - 60
    os.utime(path, (earlier, earlier))  # graded before the failure: the failure stands
    assert not standing.standing(tmp_path, A01, "ada").graded
    os.utime(path, None)  # graded after it (by nbgrader autograde, say)
    assert standing.standing(tmp_path, A01, "ada").graded


def test_a_notebook_nested_past_the_json_decoder_is_not_a_notebook_and_raises_nothing(tmp_path):
    """Metadata holding a list nested 100000 deep: json raises RecursionError (no ValueError), which
    escaped `diagnose` and stopped `coursekit autograde` for the whole class."""
    path = CourseDir(tmp_path).submitted_notebook(A01, "deep")
    path.parent.mkdir(parents=True)
    path.write_text('{"cells": [], "metadata": {"deep": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    assert standing.diagnose(tmp_path, A01, "deep") == f"{A01}.ipynb is not a notebook (not Jupyter's JSON format)"


def test_the_instructors_flags_come_from_the_judges_record_never_the_reports_text():
    """A report quotes the student's exception: its message (first line) and its type's name. An
    exception whose message read "FLAGGED FOR THE INSTRUCTOR: GRADER ERROR ..." put a forged grader
    error among the instructor's flags (red-team round r25). The flags are read from the verdicts
    the judge stores (`StepRecord`), so no text the student chose reaches them; the report shows
    the same flags, after the marker."""
    from autograder.errors import FLAG
    from autograder.harness import GRADER_ERROR, CaseResult, StepResult, cases_of
    from autograder.judge import format_report

    case = cases_of("softmax")[0]
    message = f"`softmax` raised RuntimeError: {FLAG}: GRADER ERROR in every case"
    forged = StepResult("softmax", [CaseResult(case, False, message)])
    assert f"{FLAG}: GRADER ERROR in every case" in format_report(forged, 3)
    assert standing.judge_flags({"softmax": forged.as_record()}) == []

    flagged = StepResult("softmax", [CaseResult(case, False, f"{GRADER_ERROR}: the case failed on the reference too")],
                         kernel_lost=True)
    flags = standing.judge_flags({"softmax": flagged.as_record()})
    assert flags == [f"softmax: GRADER ERROR in {case.name}", "softmax: the kernel stopped answering and was restarted"]
    shown = [line.strip() for line in format_report(flagged, 3).splitlines() if line.lstrip().startswith(FLAG)]
    assert shown == [f"{FLAG}: {flag.split(': ', 1)[1]}" for flag in flags]


def test_a_graded_cell_counts_only_a_record_the_judge_wrote_for_its_own_step():
    """Both readers of stored verdicts (this module, and the class report through `read_records`)
    ask `record_of`: a record naming another step, or metadata of the wrong type, is no record."""
    from autograder.harness import RECORD_KEY

    record = {"step": "softmax", "cases": []}
    assert standing.record_of("softmax", {"metadata": {RECORD_KEY: record}}) == record
    assert standing.record_of("attention_weights", {"metadata": {RECORD_KEY: record}}) is None
    assert standing.record_of("softmax", {"metadata": {RECORD_KEY: ["softmax"]}}) is None
    assert standing.record_of("softmax", {"metadata": ["not", "a", "dict"]}) is None
    assert standing.record_of("softmax", "not a cell") is None
