"""Where one student's submission of one assignment stands: graded, or why not, and its flags.

Every place that reports a grade reads it from here (the command's table, grades.csv,
step_scores.csv, canvas_grades.csv, the feedback), so a submission that could not be graded is
never shown as a score of 0 anywhere, and the flags are the same on every path:

- graded: every notebook of the submission in autograded/ has run (what `nbgrader autograde`
  and `coursekit autograde` leave behind only after the grades are recorded);
- not graded: the reason `coursekit autograde` recorded (`record_failure`), or, after plain
  `nbgrader autograde`, what `diagnose` finds wrong with the submitted files.

flags: the judge's flags in the graded cells' reports, the files intake dropped
(`coursekit/intake.py`), a late penalty, and the reason a submission was not graded.

A submission that could not be graded gets a feedback page of its own (`write_ungraded_pages`,
which `coursekit feedback` runs): what went wrong and what the student can do.
"""

import html
import json
import os
import string
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.harness import RECORD_KEY, instructor_flags
from autograder.steps import ASSIGNMENTS, grade_id, graded_step, steps_of
from coursekit import intake
from coursekit.course_dir import CourseDir

# What the student can do about each kind of problem (their feedback page says it).
ADVICE = {
    "not a notebook": "Hand in the .ipynb file itself, saved from Jupyter (File > Save Notebook), not "
                      "an export, an archive or a renamed file.",
    "old format": "Open the notebook in a current Jupyter (JupyterLab or Notebook 7), save it, and hand "
                  "that file in.",
    "wrong assignment": "You handed in the notebook of another assignment: hand in this assignment's "
                        "notebook, under its own name.",
    "nothing taken in": "Hand in the notebook as a plain file: links, devices and files over the size "
                        "limit are not accepted.",
    "other": "Ask your instructor: the grader could not run your notebook (the reason is above).",
}


@dataclass
class Standing:
    graded: bool
    problem: str = ""  # why it is not graded ("" when graded)
    advice: str = ""  # what the student can do about it
    flags: list = field(default_factory=list)


def record_failure(root, assignment, student, problem):
    """Remember why `coursekit autograde` could not grade this submission (with the advice)."""
    path = CourseDir(root).failure(assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"problem": problem, "kind": kind_of(problem), "at": time.time()}))


def clear_failure(root, assignment, student):
    CourseDir(root).failure(assignment, student).unlink(missing_ok=True)


def _recorded_failure(root, assignment, student):
    try:
        return json.loads(CourseDir(root).failure(assignment, student).read_text())
    except (OSError, ValueError):
        return None


def kind_of(problem):
    """The ADVICE key for a problem's text."""
    text = problem.lower()
    if "another assignment" in text:
        return "wrong assignment"
    if "notebook format" in text:
        return "old format"
    if "not a notebook" in text or "json" in text or "notjson" in text or "nbformat" in text:
        return "not a notebook"
    if "could be taken in" in text:
        return "nothing taken in"
    return "other"


def _json(path):
    """The parsed JSON of the file at `path`, read without following links; None if it is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            return json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):  # nested past the decoder: none
        return None


def _notebook(path):
    """The parsed JSON of a notebook file, or None if it is not one (read without following links)."""
    nb = _json(path)
    return nb if isinstance(nb, dict) and isinstance(nb.get("cells"), list) else None


def _old_format(path):
    """The notebook format of an nbformat 3 (or older) notebook at `path`, else None."""
    nb = _json(path)
    version = nb.get("nbformat") if isinstance(nb, dict) else None
    return version if isinstance(version, int) and version < 4 else None


def other_assignment(nb, assignment):
    """The assignment whose graded cells `nb` holds, when they are not `assignment`'s; else None."""
    own = {grade_id(s.name) for s in steps_of(assignment)}
    ids = {str(c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")) for c in nb["cells"]
           if isinstance(c, dict)}
    if ids & own:
        return None
    for other in ASSIGNMENTS:
        if other != assignment and ids & {grade_id(s.name) for s in steps_of(other)}:
            return other
    return None


def diagnose(root, assignment, student):
    """Why the submitted notebook cannot be graded, as a sentence ("" when nothing is visibly wrong)."""
    path = CourseDir(root).submitted_notebook(assignment, student)
    if not path.is_file() or path.is_symlink():
        dropped = intake.recorded(root, assignment, student)
        return ("no notebook could be taken in" + (f": {'; '.join(map(str, dropped))}" if dropped else "")
                if dropped else f"no {assignment}.ipynb was handed in")
    old = _old_format(path)
    if old:
        return f"{path.name} is in notebook format {old}, older than nbgrader grades (4)"
    nb = _notebook(path)
    if nb is None:
        return f"{path.name} is not a notebook (not Jupyter's JSON format)"
    other = other_assignment(nb, assignment)
    if other:
        return f"{path.name} is the notebook of another assignment ({other})"
    return ""


def ran_at(path):
    """The time the notebook at `path` was written if it ran (graded), else None. (nbgrader writes
    the sanitized notebook, in which nothing ran and no cell has outputs, before executing it.) A code
    cell that ran, or one with outputs: a notebook of graded cells alone (every other cell deleted, and
    those put back by nbgrader) has only the judge's outputs, and was reported not graded (r50)."""
    nb = _notebook(path)
    ran = nb is not None and any(c.get("cell_type") == "code" and (c.get("execution_count") is not None or c.get("outputs"))
                                 for c in nb["cells"] if isinstance(c, dict))
    return os.stat(path).st_mtime if ran else None


RESTORED = "was missing from the submission"  # nbgrader's note on a cell it put back (add_missing_cells)


def _graded_cells(root, assignment, student):
    nb = _notebook(CourseDir(root).autograded_notebook(assignment, student)) or {"cells": []}
    return [(graded_step(c), c) for c in nb["cells"] if isinstance(c, dict) and graded_step(c)]


def reports(root, assignment, student):
    """{step: the judge's report text} from the autograded notebook's graded cells."""
    return {step: "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
            for step, cell in _graded_cells(root, assignment, student)}


def record_of(step, cell):
    """The judge's StepRecord stored in a graded cell of `step`, or None. Only a record naming the
    cell's own step counts: the judge writes it there, whatever the submission held in the cell."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    record = metadata.get(RECORD_KEY) if isinstance(metadata, dict) else None
    return record if isinstance(record, dict) and record.get("step") == step else None


def records(root, assignment, student):
    """{step: its verdicts as the judge stored them (`StepRecord`)} from the autograded notebook's
    graded cells (the first cell of a step that holds one)."""
    found = {}
    for step, cell in _graded_cells(root, assignment, student):
        if (record := record_of(step, cell)) is not None:
            found.setdefault(step, record)
    return found


def restored_flags(root, assignment, student):
    """A flag for each graded cell the student deleted, which nbgrader put back and the judge graded."""
    source = "".join
    return [f"{step}: its graded cell was deleted; restored from the release and graded"
            for step, cell in _graded_cells(root, assignment, student)
            if RESTORED in (source(cell["source"]) if isinstance(cell.get("source"), list) else cell.get("source", ""))]


def judge_flags(step_records):
    """The judge's flags for the instructor, from each graded cell's stored verdicts."""
    return [f"{step}: {flag}" for step, record in step_records.items() for flag in instructor_flags(record)]


def standing(root, assignment, student, late_penalty=0.0):
    """The Standing of one submission (module docstring)."""
    dropped = intake.flags(root, assignment, student)
    late = [f"late: {late_penalty:g} points off"] if late_penalty else []
    failure = _recorded_failure(root, assignment, student)
    graded_at = ran_at(CourseDir(root).autograded_notebook(assignment, student))
    if failure is not None and graded_at is not None and graded_at > failure.get("at", 0):
        failure = None  # graded since (by `nbgrader autograde`, say)
    if graded_at is not None and failure is None:
        flags = judge_flags(records(root, assignment, student)) + restored_flags(root, assignment, student)
        return Standing(True, flags=flags + dropped + late)
    problem = failure["problem"] if failure else (diagnose(root, assignment, student)
                                                  or "not graded: autograde left no graded notebook")
    return Standing(False, problem, ADVICE[kind_of(problem)], [f"autograde failed: {problem}"] + dropped)


UNGRADED_PAGE = Path(__file__).with_name("ungraded_feedback.html")  # the page's template


def ungraded_page(assignment, student, where):
    """The feedback page of a submission that could not be graded: what went wrong, what to do."""
    fill = {"assignment": assignment, "student": student, "problem": where.problem, "advice": where.advice}
    return string.Template(UNGRADED_PAGE.read_text()).substitute({k: html.escape(v) for k, v in fill.items()})


def write_ungraded_pages(root, assignment, students=()):
    """feedback/<student>/<assignment>/<assignment>.html for each submission under submitted/ that
    could not be graded -> {student: problem}."""
    course = CourseDir(root)
    written = {}
    for folder in course.submissions(assignment):
        student = folder.parent.name
        if students and student not in students:
            continue
        where = standing(root, assignment, student)
        if where.graded:
            continue
        page = course.feedback_page(assignment, student)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(ungraded_page(assignment, student, where), encoding="utf-8")
        written[student] = where.problem
    return written
