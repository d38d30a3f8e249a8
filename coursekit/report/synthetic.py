"""A generated graded class, for the report's benchmark and tests: nothing is run or judged.

`generate(course_dir, students, assignments)` writes what grading would leave: nbgrader's
gradebook (assignments, grade cells, students, submissions and their scores, through
nbgrader.api) and an autograded notebook per submission, the released notebook with each graded
cell holding the judge's report and record. Each step's cases are the real suite's (names,
titles, kinds, weights); a student fails a step with one of two misconceptions whose messages
carry numbers of their own, so grouping has wordings to merge. Students who lose points at a
`linked` step's first step lose them at its second too: a pattern the report must find.
"""

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autograder.harness import RECORD_KEY, cases_of
from autograder.steps import ASSIGNMENTS, STEPS, graded_step, steps_of
from coursekit.course_dir import CourseDir
from coursekit.paths import released_notebook, with_interpreter_on_path
from coursekit.report.analysis import step_result

DUE = datetime(2026, 11, 1, 12, 0)  # every generated assignment's due date (UTC, as nbgrader keeps it)
FAIL_RATE = 0.25  # chance that a student loses points at a step
LATE_RATE = 0.1
UNGRADED_RATE = 0.02  # a submission under submitted/ that the gradebook holds no grades for
LINKED = (("causal_mask", "MultiHeadAttention"), ("softmax", "masked_softmax"))


def _misconceptions(step, rng):
    """Two diagnoses of `step`, each worded with its own numbers."""
    return [f"`{step}` output has shape ({rng.randint(2, 9)}, {rng.randint(2, 9)}), expected "
            f"({rng.randint(2, 9)}, {rng.randint(2, 9)}): did you transpose?",
            f"rows of {step}(x) sum to {rng.uniform(1.1, 3):.3g}, not 1"]


@dataclass
class Truth:
    """What was planted, for the tests."""
    failed: dict = field(default_factory=dict)  # (student, step) -> misconception index (0 or 1)
    late: dict = field(default_factory=dict)  # (student, assignment) -> seconds late
    ungraded: set = field(default_factory=set)  # (student, assignment)


def _record(step, cases, misconception, rng):
    failing = set() if misconception is None else {c.name for c in rng.sample(cases, max(1, len(cases) // 3))}
    return {"step": step, "grader_errors": [], "kernel_lost": False,
            "cases": [{"case": c.name, "title": c.title, "kind": c.kind, "weight": c.weight,
                       "passed": c.name not in failing,
                       "message": _misconceptions(step, rng)[misconception] if c.name in failing else ""}
                      for c in cases]}


def _plan(students, assignments, rng):
    truth = Truth()
    steps = [s.name for a in assignments for s in steps_of(a)]
    for student in students:
        for step in steps:
            if rng.random() < FAIL_RATE:
                truth.failed[(student, step)] = rng.randrange(2)
        for first, then in LINKED:
            if (student, first) in truth.failed and then in steps:
                truth.failed[(student, then)] = truth.failed[(student, first)]
        for assignment in assignments:
            if rng.random() < UNGRADED_RATE:
                truth.ungraded.add((student, assignment))
            elif rng.random() < LATE_RATE:
                truth.late[(student, assignment)] = rng.randint(60, 3 * 86400)
    return truth


def _gradebook(course_dir, students, assignments, graded_points, truth):
    """nbgrader's gradebook of the class, every submission added in one transaction."""
    import os

    from nbgrader.api import Grade, Gradebook, Student, SubmittedAssignment, SubmittedNotebook

    os.environ.update(with_interpreter_on_path(os.environ))  # a new gradebook runs `alembic` by name
    url = CourseDir(course_dir).gradebook_url
    with Gradebook(url) as gb:
        for assignment in assignments:
            gb.update_or_create_assignment(assignment, duedate=DUE)
            gb.update_or_create_notebook(assignment, assignment)
            for step in steps_of(assignment):
                gb.update_or_create_grade_cell(f"{step.name}_grade", assignment, assignment,
                                               max_score=float(step.points), cell_type="code")
        gb.db.add_all(Student(id=s) for s in students)
        gb.db.commit()
        for assignment in assignments:
            notebook = gb.find_notebook(assignment, assignment)
            cells = {cell.name: cell for cell in notebook.grade_cells}
            for student in students:
                late = truth.late.get((student, assignment))
                timestamp = DUE + timedelta(seconds=late) if late else DUE - timedelta(hours=1)
                submission = SubmittedAssignment(assignment=notebook.assignment, student_id=student, timestamp=timestamp)
                submitted = SubmittedNotebook(notebook=notebook, assignment=submission)
                points = graded_points.get((student, assignment), {})
                for step in steps_of(assignment):
                    Grade(cell=cells[f"{step.name}_grade"], notebook=submitted, auto_score=points.get(step.name),
                          needs_manual_grade=False)
                gb.db.add(submission)
        gb.db.commit()
    return url


def _notebook(template, records):
    from autograder.judge import graded_outputs

    nb = json.loads(template)
    for cell in nb["cells"]:
        step = graded_step(cell)
        if step in records:
            result = step_result(records[step])
            cell["outputs"] = graded_outputs(result, STEPS[step].points)
            cell["metadata"][RECORD_KEY] = records[step]
    return json.dumps(nb)


def generate(course_dir, students, assignments=ASSIGNMENTS, seed=0):
    """A graded class of `students` (ids) in `course_dir` -> Truth. Every submission is a notebook
    under submitted/; all but the planted ungraded ones have grades and an autograded notebook."""
    rng = random.Random(seed)
    course = CourseDir(course_dir)
    truth = _plan(students, assignments, rng)
    cases = {s.name: cases_of(s.name) for a in assignments for s in steps_of(a)}
    graded_points = {}
    for assignment in assignments:
        template = released_notebook(assignment).read_text()
        for student in students:
            course.submitted(assignment, student).mkdir(parents=True, exist_ok=True)
            course.submitted_notebook(assignment, student).write_text(template)
            if (student, assignment) in truth.ungraded:
                continue
            records = {s.name: _record(s.name, cases[s.name], truth.failed.get((student, s.name)), rng)
                       for s in steps_of(assignment)}
            graded_points[(student, assignment)] = {
                s.name: step_result(records[s.name]).points(s.points) for s in steps_of(assignment)}
            course.autograded(assignment, student).mkdir(parents=True, exist_ok=True)
            course.autograded_notebook(assignment, student).write_text(_notebook(template, records))
    _gradebook(course_dir, students, assignments, graded_points, truth)
    return truth
