"""What a class report is made of, read from where grading left it.

- Points, maxima, submission times and due dates: nbgrader's gradebook, in one query.
- Each hidden case's verdict and diagnosis: the judge's record in each graded cell of the
  autograded notebooks (`cell.metadata["autograder"]`, `StepResult.as_record()`), never the
  report text a student reads.
- Who handed something in: the folders under submitted/. A submission there that the gradebook
  holds no autograded score for could not be graded.
"""

import json
import os
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from autograder.steps import ASSIGNMENTS, GRADE_SUFFIX, STEPS, graded_step
from coursekit import standing
from coursekit.course_dir import CourseDir


@dataclass
class Submission:
    student: str
    assignment: str
    points: dict = field(default_factory=dict)  # step -> the gradebook's score (None: not graded)
    max_points: dict = field(default_factory=dict)  # step -> the gradebook's max score
    records: dict = field(default_factory=dict)  # step -> the judge's StepRecord
    restored: list = field(default_factory=list)  # steps whose graded cell the student deleted (nbgrader put it back)
    seconds_late: float = 0.0
    problem: str = ""  # why it could not be graded

    @property
    def graded(self):
        return not self.problem

    @property
    def total(self):
        return sum(p or 0.0 for p in self.points.values())

    @property
    def max_total(self):
        return sum(self.max_points.values())


@dataclass
class ClassData:
    assignments: list  # in course order
    submissions: dict  # assignment -> {student: Submission}
    max_points: dict  # assignment -> {step: max score}


def assignment_order(names):
    """The course's order (ASSIGNMENTS), then any other assignment by name."""
    known = {name: i for i, name in enumerate(ASSIGNMENTS)}
    return sorted(names, key=lambda name: (known.get(name, len(known)), name))


def _gradebook_rows(db_url, assignments):
    """(the assignments found, rows, cells): a row (assignment, student, grade cell, score, auto
    score, manual score, max score, timestamp, due date, extension) for every grade cell of every
    submission; a cell (assignment, grade cell, max score) for every grade cell of the assignments."""
    from nbgrader import api

    with api.Gradebook(db_url) as gb:
        known = [a.name for a in gb.assignments]
        unknown = [a for a in assignments or () if a not in known]
        if unknown:
            raise ValueError(f"not in the gradebook: {', '.join(unknown)} (it holds {', '.join(known) or 'none'})")
        wanted = known if assignments is None else list(assignments)
        assignment, submission, cell, grade = api.Assignment, api.SubmittedAssignment, api.GradeCell, api.Grade
        rows = (gb.db.query(assignment.name, submission.student_id, cell.name, grade.score, grade.auto_score,
                            grade.manual_score, cell.max_score, submission.timestamp, assignment.duedate,
                            submission.extension)
                .join(submission, submission.assignment_id == assignment.id)
                .join(api.SubmittedNotebook, api.SubmittedNotebook.assignment_id == submission.id)
                .join(grade, grade.notebook_id == api.SubmittedNotebook.id)
                .join(cell, cell.id == grade.cell_id)
                .filter(assignment.name.in_(wanted)).all())
        cells = (gb.db.query(assignment.name, cell.name, cell.max_score)
                 .join(cell.notebook).join(assignment).filter(assignment.name.in_(wanted)).all())
    return wanted, rows, cells


def step_of(cell_name):
    """The step a gradebook grade cell scores (its grade_id is `grade_id(step)`), or None."""
    step = cell_name.removesuffix(GRADE_SUFFIX)
    return step if step != cell_name and step in STEPS else None


def seconds_late(timestamp, duedate, extension):
    """nbgrader's SubmittedAssignment.total_seconds_late, from the row's columns."""
    if timestamp is None or duedate is None:
        return 0.0
    return max(0.0, (timestamp - (duedate + (extension or timedelta()))).total_seconds())


def read_records(folder):
    """{step: StepRecord} from the graded cells of the notebooks in an autograded folder. Only a
    graded cell's record counts: the judge writes it there, whatever the submission held."""
    records = {}
    try:
        paths = sorted(entry.path for entry in os.scandir(folder) if entry.name.endswith(".ipynb"))
    except OSError:
        return records
    for path in paths:
        try:
            cells = json.loads(Path(path).read_bytes()).get("cells", [])
        except (OSError, ValueError, AttributeError):
            continue
        for cell in cells:
            step = graded_step(cell)
            if step and (record := standing.record_of(step, cell)) is not None:
                records.setdefault(step, record)
    return records


def _why_not_graded(course_dir, assignment, student):
    """A short reason for a submission without grades, from what autograde left behind."""
    folder = CourseDir(course_dir).submitted(assignment, student)
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        return "no notebook in the submission"
    for path in notebooks:
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            return f"{path.name} could not be read as a notebook ({type(error).__name__})"
    return (f"autograde recorded no grades (`coursekit autograde {assignment} --student {student}` "
            "says why)")


def _submitted(course_dir, assignment):
    return {p.parent.name for p in CourseDir(course_dir).submissions(assignment) if p.is_dir()}


def collect(course_dir, assignments=None, db_url=None, problems=None):
    """ClassData of `assignments` (None: every assignment in the gradebook). `problems`:
    {(student, assignment): why autograde could not grade it}, where the caller knows (the
    autograde run's outcomes); otherwise the reason is read from the submission."""
    course_dir = Path(course_dir)
    problems = problems or {}
    db_url = db_url or CourseDir(course_dir).gradebook_url
    if db_url.startswith("sqlite:///") and not Path(db_url.removeprefix("sqlite:///")).is_file():
        raise FileNotFoundError(f"no gradebook at {db_url.removeprefix('sqlite:///')}")  # nor make one
    wanted, rows, cells = _gradebook_rows(db_url, assignments)
    wanted = assignment_order(wanted)
    max_points = {a: {} for a in wanted}
    for assignment, cell, max_score in cells:
        if step_of(cell):
            max_points[assignment][step_of(cell)] = max_score
    subs = {a: {} for a in wanted}
    autoscored = set()
    for assignment, student, cell, score, auto, manual, max_score, timestamp, duedate, extension in rows:
        step = step_of(cell)
        if step is None:
            continue
        sub = subs[assignment].get(student)
        if sub is None:
            sub = subs[assignment][student] = Submission(student, assignment,
                                                         seconds_late=seconds_late(timestamp, duedate, extension))
        sub.points[step] = score  # nbgrader's: 0 for a cell no grade was recorded for (a deleted one)
        sub.max_points[step] = max_score
        if auto is not None or manual is not None:
            autoscored.add((assignment, student))
    for assignment in wanted:
        for student in _submitted(course_dir, assignment) - set(subs[assignment]):
            subs[assignment][student] = Submission(student, assignment, max_points=dict(max_points[assignment]))
        for student, sub in subs[assignment].items():
            if (assignment, student) in autoscored:
                sub.records = read_records(CourseDir(course_dir).autograded(assignment, student))
                sub.restored = [flag.split(":", 1)[0] for flag in standing.restored_flags(course_dir, assignment, student)]
            else:
                sub.problem = problems.get((student, assignment)) or _why_not_graded(course_dir, assignment, student)
                sub.points = dict.fromkeys(max_points[assignment])
        subs[assignment] = dict(sorted(subs[assignment].items()))
    return ClassData(wanted, subs, max_points)
