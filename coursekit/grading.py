"""The grading pipeline, as small stages an instructor (or a test) can run one at a time.

    prepare -> release -> submit -> autograde -> feedback -> export -> report

Every stage drives nbgrader's own commands in a course directory. Autograding a class is
`coursekit autograde` (`coursekit/autograde.py`): nbgrader's converter on a Dask cluster, each
student's kernel in its own sandbox with the judge's bounds, so a broken or hostile submission
costs its author points and never the run or another student's grades.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.steps import STEPS, grade_id, steps_of
from coursekit import standing
from coursekit.course_dir import CourseDir
from coursekit.paths import ROOT, SOURCE, with_interpreter_on_path


def _run(command, cwd):
    """Run `command`; (exit code, output)."""
    env = with_interpreter_on_path(dict(os.environ, PYTHONWARNINGS="ignore", MPLBACKEND="Agg"))
    process = subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    return process.returncode, process.stdout


def _nbgrader(course_dir, *args):
    return _run([sys.executable, "-m", "nbgrader", *args], course_dir)


def prepare(course_dir):
    """A fresh course directory holding the config and the source notebooks."""
    course_dir = Path(course_dir)
    if course_dir.exists():
        shutil.rmtree(course_dir)
    course_dir.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course_dir)
    shutil.copytree(SOURCE, course_dir / "source")
    return course_dir


def release(course_dir, assignment):
    code, output = _nbgrader(course_dir, "generate_assignment", assignment, "--force")
    if code != 0:
        raise RuntimeError(f"generate_assignment {assignment} failed:\n{output}")
    return CourseDir(course_dir).release_notebook(assignment)


def feedback(course_dir, assignment, students=()):
    """nbgrader generate_feedback for `assignment`: every student, or only `students` (one run
    each: nbgrader takes one --student); then a page for each submission that could not be
    graded, saying why and what the student can do (`standing.write_ungraded_pages`).
    -> (the feedback folder, {student: why not graded})."""
    for extra in [["--student", s] for s in students] or [[]]:
        code, output = _nbgrader(course_dir, "generate_feedback", assignment, "--force", *extra)
        if code != 0:
            raise RuntimeError(f"nbgrader generate_feedback {assignment} {' '.join(extra)} failed:\n{output}")
    return CourseDir(course_dir).feedback_root, standing.write_ungraded_pages(course_dir, assignment, students)


def export_grades(course_dir):
    """nbgrader's own CSV (one row per student and assignment)."""
    path = CourseDir(course_dir).export("grades.csv")
    code, output = _nbgrader(course_dir, "export", "--to", str(path))
    if code != 0:
        raise RuntimeError(f"nbgrader export failed:\n{output}")
    return path


def class_scores(db_url, assignment):
    """{student: {step: points or None}} for every submission of `assignment` in the gradebook (one
    pass over its submissions, not a lookup per student, assignment and step)."""
    from nbgrader.api import Gradebook

    cells = {grade_id(step.name): step.name for step in steps_of(assignment)}
    scores = {}
    with Gradebook(db_url) as gb:
        for submission in gb.assignment_submissions(assignment):
            row = dict.fromkeys(cells.values())
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.name in cells:
                        row[cells[grade.name]] = grade.score
            scores[submission.student.id] = row
    return scores


def gradebook_contents(course, assignment):
    """Every grade, comment and late penalty of `assignment` in the gradebook of `course` (a course
    directory): {(student, notebook, cell, kind) or (student, "late penalty"): values}. Two runs
    that grade alike give equal dicts (the tests and benchmarks/class_grading.py compare them)."""
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(CourseDir(course).gradebook_url) as gb:
        for submission in gb.assignment_submissions(assignment):
            for nb in submission.notebooks:
                for g in nb.grades:
                    rows[(submission.student.id, nb.name, g.name, "grade")] = (
                        g.auto_score, g.manual_score, g.needs_manual_grade, g.max_score)
                for c in nb.comments:
                    rows[(submission.student.id, nb.name, c.name, "comment")] = (c.auto_comment, c.manual_comment)
            rows[(submission.student.id, "late penalty")] = submission.late_submission_penalty
    return rows


def late_penalties(db_url, assignment):
    """{student: late penalty in points} for `assignment`'s submissions (nbgrader's
    AssignLatePenalties, from the due date and `LateSubmissionPlugin`); 0 when on time."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        return {s.student.id: float(s.late_submission_penalty or 0.0) for s in gb.assignment_submissions(assignment)}


def step_scores(course_dir, assignments=None):
    """{(student, assignment): {step: points or None}} from the gradebook's grade cells, for every
    submission of every assignment in it (or of `assignments`). Whether a submission was graded
    at all is `coursekit/standing.py`'s to say, not these numbers'."""
    from nbgrader.api import Gradebook

    url = CourseDir(course_dir).gradebook_url
    if assignments is None:
        with Gradebook(url) as gb:
            assignments = [a.name for a in gb.assignments]
    return {(student, assignment): row
            for assignment in assignments
            for student, row in class_scores(url, assignment).items()}


STEP_SCORES_COLUMNS = ["student", "assignment", "step", "points", "max_points", "late_penalty", "flags"]


def export_step_scores(course_dir, scores):
    """One CSV row per student, assignment and step: what nbgrader's CSV lacks. A submission that
    was not graded has blank points and the reason in `flags`; `late_penalty` is the submission's
    (nbgrader's), taken off its total as grades.csv does."""
    from coursekit import csvsafe, standing

    path = CourseDir(course_dir).export("step_scores.csv")
    url = CourseDir(course_dir).gradebook_url
    penalties = {a: late_penalties(url, a) for a in {a for _, a in scores}}
    with path.open("w", newline="") as handle:
        writer = csvsafe.Writer(handle)
        writer.writerow(STEP_SCORES_COLUMNS)
        for (student, assignment), row in sorted(scores.items()):
            penalty = penalties[assignment].get(student, 0.0)
            where = standing.standing(course_dir, assignment, student, penalty)
            for step, points in row.items():
                shown = "" if points is None or not where.graded else f"{points:g}"
                writer.writerow([student, assignment, step, shown, STEPS[step].points,
                                 f"{penalty:g}" if where.graded else "", "; ".join(where.flags)])
    return path
