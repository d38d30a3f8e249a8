"""The grading pipeline, as small stages an instructor (or a test) can run one at a time.

    prepare -> release -> submit -> autograde -> feedback -> export -> report

Every stage drives nbgrader's own commands in a course directory; `autograde` runs each
submission in its own process group with a wall-clock bound and a memory cap, so a broken or
hostile submission costs its author points and never the run or another student's grades.
"""

import csv
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from autograder.limits import MEMORY_LIMIT, SUBMISSION_TIMEOUT
from autograder.steps import STEPS, grade_id, steps_of

ROOT = Path(__file__).resolve().parent.parent
BATCH_TIMEOUT_PER_STUDENT = 90  # a worker's deadline, per student in its share


def _path_with_interpreter():
    """PATH with this interpreter's bin directory first: nbgrader runs `alembic` by name when it
    creates a gradebook, which fails from a virtual environment that was never activated."""
    bindir = os.path.dirname(sys.executable)
    return os.pathsep.join([bindir, os.environ.get("PATH", "")])


def _run(command, cwd, timeout=None, limit_memory=False):
    """Run `command` in its own process group; (exit code or None on timeout, output)."""

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
    shutil.copytree(ROOT / "source", course_dir / "source")
    return course_dir


def release(course_dir, assignment):
    code, output = _nbgrader(course_dir, "generate_assignment", assignment, "--force")
    if code != 0:
        raise RuntimeError(f"generate_assignment {assignment} failed:\n{output}")
    return Path(course_dir) / "assignments" / assignment / f"{assignment}.ipynb"


def submission_path(course_dir, assignment, student):
    return Path(course_dir) / "submitted" / student / assignment / f"{assignment}.ipynb"


@dataclass
class AutogradeOutcome:
    student: str
    ok: bool
    seconds: float
    problem: str = ""


def autograde_one(course_dir, assignment, student, timeout=SUBMISSION_TIMEOUT):
    start = time.perf_counter()
    code, output = _nbgrader(course_dir, "autograde", assignment, "--student", student, "--force",
                             timeout=timeout, limit_memory=True)
    seconds = time.perf_counter() - start
    if code is None:
        return AutogradeOutcome(student, False, seconds, f"grading stopped after {timeout} s")
    if code != 0 or "[AutogradeApp | ERROR]" in output:
        lines = [line for line in output.splitlines() if "ERROR" in line or "Error" in line]
        return AutogradeOutcome(student, False, seconds, (lines[-1] if lines else output[-300:]).strip())
    return AutogradeOutcome(student, True, seconds)


def _autograde_batch(course_dir, assignment, students):
    """One worker process for several students; {student: outcome} for those it reported."""
    command = [sys.executable, "-m", "coursekit.autograde_worker", str(course_dir), assignment, *students]
    code, output = _run(command, course_dir, timeout=BATCH_TIMEOUT_PER_STUDENT * len(students),
                        limit_memory=True)
    outcomes = {}
    for line in output.splitlines():
        if line.startswith('{"student"'):
            data = json.loads(line)
            outcomes[data["student"]] = AutogradeOutcome(data["student"], data["ok"], data["seconds"],
                                                         data["problem"])
    return outcomes


def autograde(course_dir, assignment, students, workers=2):
    """Autograde `students`, `workers` at a time (nbgrader alone grades one after another).

    Fast path: each worker process grades a share of the class, paying nbgrader's start-up
    once. Anyone a worker did not report on (its deadline passed, it died with a kernel) or
    whose autograde failed is graded again alone, in an isolated process with its own bound,
    so the outcome and its reason belong to that student only.
    """
    students = list(students)
    shares = [students[i::workers] for i in range(workers) if students[i::workers]]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = {}
        for batch in pool.map(lambda share: _autograde_batch(course_dir, assignment, share), shares):
            outcomes.update(batch)
        retry = [s for s in students if s not in outcomes or not outcomes[s].ok]
        for outcome in pool.map(lambda s: autograde_one(course_dir, assignment, s), retry):
            outcomes[outcome.student] = outcome
    return [outcomes[s] for s in students]


def feedback(course_dir, assignment):
    code, output = _nbgrader(course_dir, "generate_feedback", assignment, "--force")
    if code != 0:
        raise RuntimeError(f"generate_feedback {assignment} failed:\n{output}")
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
