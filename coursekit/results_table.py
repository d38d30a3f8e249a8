"""The results table an instructor reads after grading: one row per student, a column per step
(by its full name), the total less any late penalty, the number of flags, and the class average;
under it (`summary`), what a run of `coursekit autograde` did, the submissions it could not grade
and why, and every flag. Every row's standing is `coursekit/standing.py`'s.
"""

from dataclasses import dataclass, field

from autograder.errors import one_line
from autograder.steps import STEPS, steps_of
from coursekit import grading, standing


@dataclass
class StudentResult:
    student: str
    assignment: str
    graded: bool
    problem: str = ""
    points: dict = field(default_factory=dict)  # step -> points (0 where autograde failed)
    reports: dict = field(default_factory=dict)  # step -> the grader's report text
    flags: list = field(default_factory=list)
    seconds: float = 0.0
    late_penalty: float = 0.0  # points off for lateness (nbgrader's AssignLatePenalties)

    @property
    def shown(self):
        """The student's id as a terminal shows it: a folder's name, which the exchange lets a student choose for an
        account that does not exist, and r63's, an escape sequence and a newline, cleared the table's lines and
        wrote a row of its own (`errors.one_line`)."""
        return one_line(self.student)

    @property
    def total(self):
        """The score every export shows: the steps' points less the late penalty, never below 0."""
        return max(0.0, sum(self.points.values()) - self.late_penalty)


def table(results, assignment, average=False):
    """A plain-text table: one row per student, one column per step of `assignment`, headed by
    the step's full name; with `average`, a last row of the class average per step (over the
    submissions that were graded)."""
    steps = [s.name for s in steps_of(assignment)]
    maximum = sum(STEPS[s].points for s in steps)
    widths = [max(len(s), 6) for s in steps]
    first = max([len("student"), len("class average")] + [len(r.shown) for r in results])
    head = f"{'student':<{first}}  " + "  ".join(f"{s:>{w}}" for s, w in zip(steps, widths)) + "       total  flags"
    lines = [head, "-" * len(head)]
    for r in results:
        if r.graded:
            cells = "  ".join(f"{r.points.get(s, 0):>{w}g}" for s, w in zip(steps, widths))
            total = f"{r.total:g}/{maximum}" + (f" (late -{r.late_penalty:g})" if r.late_penalty else "")
        else:  # never a score: the reason is listed under the table
            cells = "  ".join(f"{'-':>{w}}" for w in widths)
            total = "not graded"
        lines.append(f"{r.shown:<{first}}  {cells}  {total:>10}  {len(r.flags) or ''}")
    graded = [r for r in results if r.graded]
    if average and graded:
        means = [sum(r.points.get(s, 0) for r in graded) / len(graded) for s in steps]
        cells = "  ".join(f"{m:>{w}.2f}" for m, w in zip(means, widths))
        total = f"{sum(means):.2f}/{maximum}"
        lines += ["-" * len(head), f"{'class average':<{first}}  {cells}  {total:>10}  (of {len(graded)} graded)"]
    return "\n".join(lines)


def class_results(db_url, report, root="."):
    """A StudentResult for every submission of the gradebook and every outcome of `report`."""
    scores = grading.class_scores(db_url, report.assignment)
    penalties = grading.late_penalties(db_url, report.assignment)
    students = sorted(set(scores) | {o.student for o in report.outcomes})
    failed = {o.student: o.problem for o in report.failed}  # this run's words (a missing folder, say)
    rows = []
    for student in students:
        where = standing.standing(root, report.assignment, student, penalties.get(student, 0.0))
        graded = where.graded and student not in failed
        row = scores.get(student, {})
        rows.append(StudentResult(student, report.assignment, graded, failed.get(student) or where.problem,
                                  {k: float(v or 0.0) for k, v in row.items()}, flags=where.flags,
                                  late_penalty=penalties.get(student, 0.0)))
    return rows


def run_line(report):
    """What the run did, in one line."""
    graded = len(report.outcomes) - len(report.failed)
    where = (f" on {report.workers} workers" if report.workers > 1 else " in this process" if report.workers else "")
    return (f"{report.assignment}: {graded} graded, {len(report.skipped)} already graded (skipped), "
            f"{len(report.failed)} could not be graded, in {report.seconds:.1f} s{where}")


def summary(db_url, report, root="."):
    """The table (full step names, class average per step, late penalties, flags), what the run
    did, and the submissions that could not be graded, as text."""
    rows = class_results(db_url, report, root)
    lines = [table(rows, report.assignment, average=True), "\n" + run_line(report)]
    ungraded = [r for r in rows if not r.graded]
    if ungraded:
        lines.append("Could not be graded (no score exported; `coursekit feedback` tells the student why):")
        lines += [f"  {r.shown}: {one_line(r.problem)}" for r in ungraded]
    flagged = [(r.shown, f) for r in rows if r.graded for f in r.flags]
    if flagged:
        lines.append("Flags:")
        lines += [f"  {student}: {flag}" for student, flag in flagged]
    return "\n".join(lines)
