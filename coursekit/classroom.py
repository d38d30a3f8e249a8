"""Grade a set of submissions end to end: submit, autograde, read scores and reports.

`grade_class` is what the main job and the catalogue tests call: it writes the submissions
under submitted/ and grades them with `coursekit autograde` (`coursekit/autograde.py`). What
the instructor must look at (a submission autograde could not grade, a kernel the judge had to
restart, a grader error, a file left out) comes back as the result's `flags`
(`coursekit/standing.py`, as every export shows them).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.steps import STEPS, is_solution, steps_of
from coursekit import grading, samples, standing


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
    def total(self):
        """The score every export shows: the steps' points less the late penalty, never below 0."""
        return max(0.0, sum(self.points.values()) - self.late_penalty)


def build_submission(release_nb, variant=None):
    """The notebook (or raw bytes) a student would hand in for `variant` (None: the reference)."""
    if variant is None:
        return samples.complete(release_nb)
    nb = samples.complete(release_nb, variant.replace)
    if variant.extra_cell:
        import nbformat

        cells = nb.cells
        last_solution = max(i for i, c in enumerate(cells) if is_solution(c))
        cells.insert(last_solution + 1, nbformat.v4.new_code_cell(variant.extra_cell))
    if variant.transform is not None:
        nb = variant.transform(json.loads(json.dumps(nb)))
    return nb


def grade_class(course_dir, assignment, submissions, workers=2, cluster=None, progress=False):
    """Grade {student: notebook or bytes} for one released assignment -> {student: StudentResult}.

    The submissions go under submitted/ as `nbgrader collect` puts them, and are graded by
    `coursekit autograde` (`coursekit.autograde.autograde`, forced: these are new submissions).
    """
    from coursekit import autograde

    course_dir = Path(course_dir)
    for student, nb in submissions.items():
        samples.write(nb, grading.submission_path(course_dir, assignment, student))
    report = autograde.autograde(course_dir, assignment, list(submissions), workers=workers, force=True,
                                 progress=progress, cluster=cluster)
    outcomes = {o.student: o for o in report.outcomes}
    scores = grading.step_scores(course_dir, [assignment])
    penalties = grading.late_penalties(grading.gradebook_url(course_dir), assignment)
    results = {}
    for student in submissions:
        where = standing.standing(course_dir, assignment, student, penalties.get(student, 0.0))
        row = scores.get((student, assignment)) if where.graded else None
        results[student] = StudentResult(
            student, assignment, where.graded, where.problem,
            {s.name: float((row or {}).get(s.name) or 0.0) for s in steps_of(assignment)},
            standing.reports(course_dir, assignment, student) if where.graded else {},
            where.flags, seconds=outcomes[student].seconds, late_penalty=penalties.get(student, 0.0))
    return results


def table(results, assignment, average=False):
    """A plain-text table: one row per student, one column per step of `assignment`, headed by
    the step's full name; with `average`, a last row of the class average per step (over the
    submissions that were graded)."""
    steps = [s.name for s in steps_of(assignment)]
    maximum = sum(STEPS[s].points for s in steps)
    widths = [max(len(s), 6) for s in steps]
    first = max([len("student"), len("class average")] + [len(r.student) for r in results])
    head = f"{'student':<{first}}  " + "  ".join(f"{s:>{w}}" for s, w in zip(steps, widths)) + "       total  flags"
    lines = [head, "-" * len(head)]
    for r in results:
        if r.graded:
            cells = "  ".join(f"{r.points.get(s, 0):>{w}g}" for s, w in zip(steps, widths))
            total = f"{r.total:g}/{maximum}" + (f" (late -{r.late_penalty:g})" if r.late_penalty else "")
        else:  # never a score: the reason is listed under the table
            cells = "  ".join(f"{'-':>{w}}" for w in widths)
            total = "not graded"
        lines.append(f"{r.student:<{first}}  {cells}  {total:>10}  {len(r.flags) or ''}")
    graded = [r for r in results if r.graded]
    if average and graded:
        means = [sum(r.points.get(s, 0) for r in graded) / len(graded) for s in steps]
        cells = "  ".join(f"{m:>{w}.2f}" for m, w in zip(means, widths))
        total = f"{sum(means):.2f}/{maximum}"
        lines += ["-" * len(head), f"{'class average':<{first}}  {cells}  {total:>10}  (of {len(graded)} graded)"]
    return "\n".join(lines)
