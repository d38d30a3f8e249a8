"""The grading pipeline, as small stages an instructor (or a test) can run one at a time.

    prepare -> release -> submit -> autograde -> feedback -> export -> report

Every stage drives nbgrader's own commands in a course directory. Autograding a class is
`coursekit autograde` (`coursekit/autograde.py`): nbgrader's converter on a Dask cluster, each
student's kernel in its own sandbox with the judge's bounds, so a broken or hostile submission
costs its author points and never the run or another student's grades.
"""

import csv
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from autograder.limits import MEMORY_LIMIT
from autograder.steps import STEPS, grade_id, steps_of
from coursekit.paths import ROOT, SOURCE


def _path_with_interpreter():
    """PATH with this interpreter's bin directory first: nbgrader runs `alembic` by name when it
    creates a gradebook, which fails from a virtual environment that was never activated."""
    bindir = os.path.dirname(sys.executable)
    return os.pathsep.join([bindir, os.environ.get("PATH", "")])


def _run(command, cwd, timeout=None, limit_memory=False):
    """Run `command` in its own process group; (exit code or None on timeout, output).
    `limit_memory`: cap its address space (and its children's) at MEMORY_LIMIT."""

    def limits():
        os.setsid()  # own process group: a timeout kills the kernel too
        if limit_memory:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    env = dict(os.environ, PYTHONWARNINGS="ignore", MPLBACKEND="Agg", PATH=_path_with_interpreter())
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, preexec_fn=limits)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output
    return process.returncode, output


def _nbgrader(course_dir, *args, timeout=None, limit_memory=False):
    return _run([sys.executable, "-m", "nbgrader", *args], course_dir, timeout, limit_memory)


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
    return Path(course_dir) / "assignments" / assignment / f"{assignment}.ipynb"


def submission_path(course_dir, assignment, student):
    return Path(course_dir) / "submitted" / student / assignment / f"{assignment}.ipynb"


def feedback(course_dir, assignment, students=()):
    """nbgrader generate_feedback for `assignment`: every student, or only `students` (one run
    each: nbgrader takes one --student)."""
    for extra in [["--student", s] for s in students] or [[]]:
        code, output = _nbgrader(course_dir, "generate_feedback", assignment, "--force", *extra)
        if code != 0:
            raise RuntimeError(f"nbgrader generate_feedback {assignment} {' '.join(extra)} failed:\n{output}")
    return Path(course_dir) / "feedback"


def export_grades(course_dir):
    """nbgrader's own CSV (one row per student and assignment)."""
    code, output = _nbgrader(course_dir, "export", "--to", "grades.csv")
    if code != 0:
        raise RuntimeError(f"nbgrader export failed:\n{output}")
    return Path(course_dir) / "grades.csv"


def step_scores(course_dir):
    """{(student, assignment): {step: points or None}} from the gradebook's grade cells."""
    from nbgrader.api import Gradebook, MissingEntry

    url = f"sqlite:///{Path(course_dir).resolve() / 'gradebook.db'}"
    scores = {}
    with Gradebook(url) as gb:
        for assignment in gb.assignments:
            for student in gb.students:
                row = {}
                for step in steps_of(assignment.name):
                    try:
                        grade = gb.find_grade(grade_id(step.name), assignment.name, assignment.name, student.id)
                        row[step.name] = grade.score
                    except MissingEntry:
                        row[step.name] = None
                if any(v is not None for v in row.values()):
                    scores[(student.id, assignment.name)] = row
    return scores


def export_step_scores(course_dir, scores, flags=None):
    """One CSV row per student, assignment and step: what nbgrader's CSV lacks."""
    flags = flags or {}
    path = Path(course_dir) / "step_scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "assignment", "step", "points", "max_points", "flags"])
        for (student, assignment), row in sorted(scores.items()):
            for step, points in row.items():
                writer.writerow([student, assignment, step, "" if points is None else f"{points:g}",
                                 STEPS[step].points, "; ".join(flags.get((student, assignment), []))])
    return path
