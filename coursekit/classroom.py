"""Grade a set of submissions end to end: submit, autograde, read scores and reports.

`grade_class` is what the main job and the catalogue tests call: it writes the submissions
under submitted/ and grades them with `coursekit autograde` (`coursekit/autograde.py`). What
the instructor must look at (a submission autograde could not grade, a kernel the judge had to
restart, a grader error, a file left out) comes back as the result's `flags`
(`coursekit/standing.py`, as every export shows them).
"""

import json

from autograder.steps import is_solution, steps_of
from coursekit import autograde, grading, samples, standing
from coursekit.course_dir import CourseDir
from coursekit.results_table import StudentResult


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


def grade_class(course_dir, assignment, submissions, workers=2, cluster=None, progress=False, files=None):
    """Grade {student: notebook or bytes} for one released assignment -> {student: StudentResult}.

    The submissions go under submitted/ as `nbgrader collect` puts them, with `files` ({student:
    [catalogue.HandedIn]}) beside the notebook, and are graded by `coursekit autograde`
    (`coursekit.autograde.autograde`, forced: these are new submissions).
    """
    course = CourseDir(course_dir)
    for student, nb in submissions.items():
        samples.write(nb, course.submitted_notebook(assignment, student))
        for handed_in in (files or {}).get(student, ()):
            handed_in.write(course.submitted_notebook(assignment, student).parent)
    report = autograde.autograde(course_dir, assignment, list(submissions), workers=workers, force=True,
                                 progress=progress, cluster=cluster)
    outcomes = {o.student: o for o in report.outcomes}
    scores = grading.step_scores(course_dir, [assignment])
    penalties = grading.late_penalties(course.gradebook_url, assignment)
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

