"""`coursekit autograde`: grade a whole class into nbgrader's gradebook, in parallel, on Dask.

    coursekit autograde ASSIGNMENT [--student ID ...] [--workers N] [--scheduler ADDRESS] [--force]

Run from an nbgrader course directory, like `nbgrader autograde`, it grades what `nbgrader
collect` or `zip_collect` put under submitted/. nbgrader's `Autograde` converter does the work
in three parts, and only the first and the last touch the course directory or the gradebook:

A. the driver, per student, runs nbgrader's own code up to execution: the submission record and
   its timestamp, the files copied into autograded/, and the sanitize preprocessors (ClearOutput,
   DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata);
B. a Dask task per submission (`coursekit/grading_task.py`) gets plain data (the sanitized
   notebooks and the folder's other files as bytes, and the course's nbgrader config) and runs
   the configured autograde preprocessors that come before the gradebook ones (JudgedExecute,
   IgnorePattern, ClearMetadataPreprocessor, LimitOutput) on a copy of the folder on its worker;
   it returns the judged notebooks as text and a timing breakdown;
C. the driver writes the judged notebook into autograded/ and runs the rest of the configured
   list (SaveAutoGrades, AssignLatePenalties, CheckCellMetadata) on it.

Both ends are nbgrader's code with the course's configuration, so the scores and the autograded
notebooks are those of `nbgrader autograde` (tests/test_class_grading.py compares the two).
Only the driver writes the SQLite gradebook: no write races, no gradebooks to merge.

The engine: an embedded `LocalCluster` of `--workers` processes (default: the machine's cores),
one thread each, or an existing cluster (`--scheduler tcp://host:8786`: `dask scheduler` on one
machine, `dask worker tcp://host:8786 --nthreads 1` on each machine with this package
installed). A worker lost mid-task: the scheduler gives its submissions to another worker, up
to `cluster.ALLOWED_FAILURES` times for one submission (set on the embedded cluster; for your own
scheduler: DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES).

Resuming: after the gradebook has recorded a submission, a marker holding the hash of the
submitted folder goes to `.coursekit/graded/<assignment>/<student>.json`. A run grades only the
submissions without a valid marker (missing, a hash that no longer matches what is under
submitted/, or no record of it in the gradebook or autograded/), so running the command again
after the driver was killed grades only what is missing; `--force` grades everything again. A
submission without a marker that `nbgrader autograde` graded counts as graded too
(`Driver.graded_by_nbgrader`), so the command finishes what nbgrader started.
"""

import hashlib
import json
import logging
import os
import stat
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from autograder.limits import MAX_SHIPPED_SUBMISSION_BYTES
from coursekit import grading, intake, standing
from coursekit.cluster import StartingCluster
from coursekit.grading_task import describe, judge_submission
from coursekit.lean_driver import lean_nbgrader
from coursekit.paths import with_interpreter_on_path

TASK_RETRIES = 1  # a task that raised (a worker's disk, say) is tried once more
MARKERS = Path(".coursekit") / "graded"
# Preprocessors that read or write the gradebook: these and everything after them run on the driver.
GRADEBOOK_PREPROCESSORS = ("SaveAutoGrades", "AssignLatePenalties", "SaveCells", "OverwriteCells", "GetGrades")


class GradingError(Exception):
    """Grading cannot start at all (no such assignment, no submissions, no gradebook access)."""


class Ungradable(Exception):
    """One submission cannot be graded; the message says why, for the instructor and the student."""


@dataclass
class Outcome:
    student: str
    ok: bool
    problem: str = ""
    seconds: float = 0.0  # the task's wall time on its worker
    timings: dict = field(default_factory=dict)  # worker: grading_task.TIMING_KEYS; driver: prepare, save
    worker: str = ""


@dataclass
class Report:
    assignment: str
    outcomes: list = field(default_factory=list)  # graded in this run (ok or not)
    skipped: list = field(default_factory=list)  # already graded, per their markers
    seconds: float = 0.0
    workers: int = 0
    db_url: str = ""  # the gradebook it was recorded in
    closing: object = None  # the thread closing the run's own cluster (`autograde(close_later=True)`)

    def wait_closed(self):
        if self.closing is not None:
            self.closing.join()
            self.closing = None

    @property
    def failed(self):
        return [o for o in self.outcomes if not o.ok]


# --- the driver's part ---------------------------------------------------------------------------

def _dotted(preprocessor):
    if isinstance(preprocessor, str):
        return preprocessor
    return f"{preprocessor.__module__}.{preprocessor.__qualname__}"


def split_preprocessors(preprocessors):
    """(the worker's, the driver's): the driver's start at the first that touches the gradebook."""
    names = [_dotted(p) for p in preprocessors]
    for index, name in enumerate(names):
        if name.rsplit(".", 1)[-1] in GRADEBOOK_PREPROCESSORS:
            return names[:index], names[index:]
    return names, []


def _plain(config):
    return {key: _plain(value) if isinstance(value, dict) else value for key, value in config.items()}


def submission_hash(folder):
    """sha256 over every regular file of a submitted folder (names and contents). Nothing is
    followed: a link counts by its name and target text, a device or FIFO by its name."""
    digest = hashlib.sha256()
    folder = Path(folder)
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            if path.is_symlink():
                digest.update(b"link:" + os.fsencode(os.readlink(path)))
            elif stat.S_ISREG(os.lstat(path).st_mode):
                with path.open("rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
            digest.update(b"\0")
    return digest.hexdigest()


def _executed(path):
    """True if the notebook at `path` has a code cell that ran (a sanitized one has none)."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return False
    return any(c.get("cell_type") == "code" and c.get("execution_count") is not None for c in cells)


def _make_converter_class():
    from nbconvert.writers import FilesWriter
    from nbgrader.converters import Autograde
    from nbgrader.converters.base import BaseConverter

    class ClassAutograde(Autograde):
        """nbgrader's Autograde converter, cut where execution starts (module docstring)."""

        _phase = "sanitize"
        driver_preprocessors = ()

        def _init_preprocessors(self):
            if self._phase == "save":
                self.exporter._preprocessors = []
                for pp in self.driver_preprocessors:
                    self.exporter.register_preprocessor(pp)
            else:
                super()._init_preprocessors()

        def setup(self):
            self.init_notebooks()
            self.writer = FilesWriter(parent=self, config=self.config)
            self.exporter = self.exporter_class(parent=self, config=self.config)
            self.submissions = {}  # student -> (assignment folder, notebooks)
            for folder in sorted(self.assignments):
                student = self._parse(folder)["student_id"]
                self.submissions[student] = (folder, sorted(self.assignments[folder]))

        def _parse(self, folder):
            import re

            regexp = self._format_source("(?P<assignment_id>.*)", "(?P<student_id>.*)", escape=True)
            match = re.match(regexp, folder)
            if match is None:
                raise GradingError(f"could not match {folder!r} with {regexp!r}")
            return match.groupdict()

        def dest(self, student):
            return os.path.normpath(self._format_dest(self.coursedir.assignment_id, student))

        def prepare(self, student, local=True):
            """Part A for one student: nbgrader's steps up to execution. None if excluded.
            `local`: the task runs on this machine and reads the files from autograded/ itself;
            otherwise they travel as bytes, up to MAX_SHIPPED_SUBMISSION_BYTES."""
            assignment = self.coursedir.assignment_id
            folder, notebooks_found = self.submissions[student]
            self.notebooks = list(notebooks_found)
            self.force = True  # which students to grade is decided by the caller
            if not self.init_destination(assignment, student):
                return None
            self.run_pre_convert_hook()  # intake.autograde_hook: nothing unsafe stays in submitted/
            if not self.notebooks:
                dropped = intake.recorded(self.coursedir.root, assignment, student)
                raise Ungradable("no notebook could be taken in"
                                   + (f": {'; '.join(map(str, dropped))}" if dropped else ""))
            self.init_assignment(assignment, student)
            notebooks, resources = {}, {}
            for filename in self.notebooks:
                self._sanitizing, self._phase = True, "sanitize"
                self._init_preprocessors()
                BaseConverter.convert_single_notebook(self, filename)
                name = os.path.splitext(os.path.basename(filename))[0]
                sanitized = os.path.join(self.writer.build_directory, os.path.basename(filename))
                notebooks[name] = Path(sanitized).read_text(encoding="utf-8")
                self._sanitizing = False
                try:
                    resources[name] = self.init_single_notebook_resources(sanitized)
                finally:
                    self._sanitizing = True
            payload = {"student": student, "assignment": assignment, "notebooks": notebooks,
                       "resources": resources}
            dest = Path(self.dest(student))
            if local:
                return dict(payload, folder=str(dest))
            return dict(payload, files=self._files(dest, notebooks))

        @staticmethod
        def _files(dest, notebooks):
            """The autograded folder's other files, as bytes for a remote worker."""
            files, size = {}, sum(len(t) for t in notebooks.values())
            for path in sorted(p for p in dest.rglob("*") if p.is_file() and not p.is_symlink()):
                if path.suffix == ".ipynb" and path.stem in notebooks:
                    continue
                files[str(path.relative_to(dest))] = data = path.read_bytes()
                size += len(data)
            if size > MAX_SHIPPED_SUBMISSION_BYTES:
                raise Ungradable(f"the submission holds {size / 1024**2:.0f} MiB, more than the "
                                   f"{MAX_SHIPPED_SUBMISSION_BYTES / 1024**2:.0f} MiB sent to a remote worker "
                                   "(autograder/limits.py MAX_SHIPPED_SUBMISSION_BYTES; a local run has no limit)")
            return files

        def save(self, student, judged):
            """Part C: the driver's preprocessors on each judged notebook, whose result goes into
            autograded/. As in nbgrader, only that result lands there: a notebook in autograded/
            that ran is one whose grades are recorded (`Driver.graded_by_nbgrader`)."""
            self._phase, self._sanitizing = "save", False
            try:
                self._init_preprocessors()
                with tempfile.TemporaryDirectory(prefix="coursekit-judged-") as tmp:
                    for name, text in judged.items():
                        judged_path = Path(tmp) / f"{name}.ipynb"
                        judged_path.write_text(text, encoding="utf-8")
                        # what nbgrader's convert_single_notebook does, reading from judged_path
                        resources = self.init_single_notebook_resources(os.path.join(self.dest(student),
                                                                                     judged_path.name))
                        output, resources = self.exporter.from_filename(str(judged_path), resources=resources)
                        self.write_single_notebook(output, resources)
                self.set_permissions(self.coursedir.assignment_id, student)
                self.run_post_convert_hook()
            finally:
                self._phase, self._sanitizing = "sanitize", True

        def discard(self, student):
            """What nbgrader does with a submission that failed: its autograded notebooks go."""
            from nbgrader.utils import rmtree

            dest = self.dest(student)
            if os.path.exists(dest):
                rmtree(dest)

    return ClassAutograde


class Driver:
    """nbgrader's app and converter for one assignment, in a course directory."""

    def __init__(self, course_dir, assignment, log_level=logging.ERROR):
        from nbgrader.apps.autogradeapp import AutogradeApp

        self.course_dir = Path(course_dir).resolve()
        self.assignment = assignment
        self._cwd = os.getcwd()
        self._lean = lean_nbgrader()  # nbgrader's per-submission costs, paid once (lean_driver.py)
        self._lean.__enter__()
        os.chdir(self.course_dir)
        try:
            self.app = AutogradeApp()
            self.app.initialize([assignment])
            self.app.log.setLevel(log_level)
            self.app.coursedir.assignment_id = assignment
            self.converter = _make_converter_class()(coursedir=self.app.coursedir, parent=self.app)
            self.converter.log.setLevel(log_level)
            worker_pps, driver_pps = split_preprocessors(self.converter.autograde_preprocessors)
            self.converter.driver_preprocessors = driver_pps
            self.task_template = {"config": _plain(self.app.config), "preprocessors": worker_pps}
            self.root = Path(self.app.coursedir.root).resolve()
            try:
                self.converter.setup()
            except Exception as error:  # noqa: BLE001 - nbgrader says why (and logged it)
                self.converter.submissions = {}
                self.setup_problem = str(error) or type(error).__name__
            else:
                self.setup_problem = ""
        except BaseException:
            self.close()
            raise

    def close(self):
        os.chdir(self._cwd)
        if self._lean is not None:
            self._lean.__exit__(None, None, None)
            self._lean = None

    # markers
    @staticmethod
    def marker_path(root, assignment, student):
        return Path(root) / MARKERS / assignment / f"{student}.json"

    @staticmethod
    def read_marker(root, assignment, student):
        """The student's marker ({"hash", "notebooks", "graded_at"}), or None if there is none to read."""
        try:
            return json.loads(Driver.marker_path(root, assignment, student).read_text())
        except (OSError, ValueError):
            return None

    def marker(self, student):
        return self.marker_path(self.root, self.assignment, student)

    def submitted_folder(self, student):
        return Path(self.converter.submissions[student][0])

    def is_graded(self, student, recorded):
        """True if this student's current submission is graded and recorded (resume): by this
        command (its marker) or, without a marker, by `nbgrader autograde`."""
        if student not in recorded:
            return False
        marker = self.read_marker(self.root, self.assignment, student)
        if marker is None:
            return self.graded_by_nbgrader(student)
        if marker.get("hash") != submission_hash(self.submitted_folder(student)):
            return False
        dest = Path(self.converter.dest(student))
        return all((dest / f"{n}.ipynb").is_file() for n in marker.get("notebooks", []))

    def graded_by_nbgrader(self, student):
        """nbgrader's own rule (autograded/ holds the submission, and submitted/ holds no newer
        timestamp), made strict: every notebook there must have been executed. nbgrader writes
        the sanitized notebook there before executing it, so a run killed mid-notebook leaves
        one that nbgrader itself would take for graded."""
        dest = Path(self.converter.dest(student))
        new, old = (self.app.coursedir.get_existing_timestamp(str(folder))
                    for folder in (self.submitted_folder(student), dest))
        if new is not None and old is not None and new > old:  # submitted again since
            return False
        return all(_executed(dest / Path(notebook).name) for notebook in self.converter.submissions[student][1])

    def write_marker(self, student, notebooks):
        path = self.marker(student)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"hash": submission_hash(self.submitted_folder(student)),
                                   "notebooks": sorted(notebooks), "graded_at": time.time()}))
        os.replace(tmp, path)

    def forget(self, student):
        try:
            self.marker(student).unlink()
        except FileNotFoundError:
            pass

    def recorded_students(self):
        from nbgrader.api import Gradebook

        with Gradebook(self.app.coursedir.db_url, self.app.coursedir.course_id) as gb:
            try:
                return {s.student.id for s in gb.assignment_submissions(self.assignment)}
            except Exception:  # noqa: BLE001 - no such assignment yet: nothing recorded
                return set()


def _unmarked(course_dir, assignment, students):
    """A guess made before nbgrader starts (the driver decides): does a submission under
    submitted/ lack a marker that matches it?"""
    root = Path(course_dir)
    folders = ([root / "submitted" / s / assignment for s in students] if students
               else sorted((root / "submitted").glob(f"*/{assignment}")))
    for folder in folders:
        marker = Driver.read_marker(root, assignment, folder.parent.name)
        if marker is None or not folder.is_dir() or marker.get("hash") != submission_hash(folder):
            return True
    return False


def _progress(total, enabled, desc):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", file=sys.stderr, disable=not enabled, smoothing=0.1,
                dynamic_ncols=True, mininterval=0.5)


IN_PROCESS_MAX = 2  # this many submissions or fewer are graded in the driver, without a cluster


def _in_process(course_dir, assignment, students, scheduler, cluster):
    """Grade in the driver's own process? A cluster's start (seconds) costs more than it saves
    on a small job: one or a few submissions, and no scheduler or cluster named."""
    if scheduler or cluster is not None:
        return False
    count = len(students) if students else len(list((Path(course_dir) / "submitted").glob(f"*/{assignment}")))
    return count <= IN_PROCESS_MAX


def autograde(course_dir, assignment, students=None, workers=None, scheduler=None, force=False,
              progress=True, cluster=None, stop_after=None, close_later=False, in_process=None):
    """Grade `assignment`'s submissions (all, or `students`) into nbgrader's gradebook -> Report.

    `cluster`: a `Cluster` to reuse (the caller closes it). `stop_after`: stop as if killed once
    this many submissions are recorded (tests of resuming). `close_later`: the cluster this run
    started is closed in a thread (its workers take seconds to stop), so the caller can print the
    summary meanwhile; `report.wait_closed()` waits for it. `in_process`: grade in this process,
    without Dask (default: for IN_PROCESS_MAX submissions or fewer, `_in_process`).
    """
    start = time.perf_counter()
    warnings.filterwarnings("ignore", module="nbgrader.api")  # SQLAlchemy's session notes, as in nbgrader
    # The interpreter goes first on PATH: nbgrader runs `alembic` by name when it creates a
    # gradebook, and the workers, which start here while the driver starts nbgrader (where there
    # is work), inherit this environment.
    os.environ.update(with_interpreter_on_path(os.environ))
    if in_process is None:
        in_process = _in_process(course_dir, assignment, students, scheduler, cluster)
    likely = not in_process and cluster is None and (force or _unmarked(course_dir, assignment, students))
    engine = Engine(cluster, StartingCluster(workers, scheduler) if likely else None, workers, scheduler,
                    in_process)
    try:
        driver = Driver(course_dir, assignment)
    except BaseException:
        engine.discard(later=False)
        raise
    report = Report(assignment, db_url=driver.app.coursedir.db_url)
    try:
        _grade(driver, report, students, force, progress, stop_after, engine)
        return report
    finally:
        report.seconds = time.perf_counter() - start
        report.closing = engine.discard(later=close_later)
        driver.close()


@dataclass
class Engine:
    """What grades: a cluster given by the caller, one this run starts, or this process."""

    cluster: object
    starting: object  # a StartingCluster, started early when work is likely
    workers: object
    scheduler: object
    in_process: bool

    def get(self):
        if self.cluster is None:
            self.starting = self.starting or StartingCluster(self.workers, self.scheduler)
            self.cluster = self.starting.get()
        return self.cluster

    @property
    def local(self):
        """True if the task runs on this machine (it then reads autograded/ itself)."""
        if self.in_process:
            return True
        if self.cluster is not None:
            return self.cluster.cluster is not None  # an embedded LocalCluster
        return self.scheduler is None

    def discard(self, later):
        """Close the cluster this run started (in a thread returned if `later`)."""
        return self.starting.discard(later=later) if self.starting is not None else None


def _grade(driver, report, students, force, progress, stop_after, engine):
    assignment, root = driver.assignment, driver.root
    submitted = driver.converter.submissions
    wanted = list(students) if students else sorted(submitted)
    if driver.setup_problem and not students:
        raise GradingError(driver.setup_problem)
    for student in wanted:
        if student not in submitted:
            report.outcomes.append(Outcome(student, False, f"no submission under "
                                           f"submitted/{student}/{assignment}/"))
    wanted = [s for s in wanted if s in submitted]
    for student in wanted:  # before anything reads a file of it (hash, timestamp, notebooks)
        intake.take_in(root, assignment, student, driver.submitted_folder(student))
    recorded = set() if force else driver.recorded_students()
    todo = []
    for student in wanted:
        if not force and driver.is_graded(student, recorded):
            report.skipped.append(student)
        else:
            todo.append(student)
    if not todo:
        return
    bar = _progress(len(todo), progress, assignment)
    try:
        _submit_all(driver, report, todo, stop_after, engine, bar)
    finally:
        bar.close()  # before anything else is printed (an interrupt's line, say)


def _submit_all(driver, report, todo, stop_after, engine, bar):
    """Prepare each submission of `todo`, have it judged (on the cluster or here) and record it."""
    from distributed import as_completed

    assignment, root = driver.assignment, driver.root
    futures, finished = {}, None  # key -> (student, future)
    prepared_at = {}
    recorded_now = 0

    def fail(student, problem):
        problem = standing.diagnose(root, assignment, student) or problem
        standing.record_failure(root, assignment, student, problem)
        driver.converter.discard(student)
        return problem

    def finish(student, result):
        nonlocal recorded_now
        outcome = Outcome(student, bool(result.get("ok")), result.get("problem", ""),
                          result.get("seconds", 0.0), dict(result.get("timings", {})),
                          result.get("worker", ""))
        outcome.timings["prepare"] = prepared_at[student]
        save_start = time.perf_counter()
        if outcome.ok:
            try:
                driver.converter.save(student, result["notebooks"])
                driver.write_marker(student, result["notebooks"])
                standing.clear_failure(root, assignment, student)
                recorded_now += 1
            except Exception as error:  # noqa: BLE001
                outcome.ok, outcome.problem = False, f"recording the grades failed ({describe(error)})"
                fail(student, outcome.problem)
        else:
            outcome.problem = fail(student, outcome.problem)
        outcome.timings["save"] = time.perf_counter() - save_start
        report.outcomes.append(outcome)
        bar.update(1)
        if not outcome.ok:
            bar.set_postfix(failed=len(report.failed), refresh=False)

    def collect(future):
        student, _ = futures.pop(future.key)
        try:
            result = future.result()
        except Exception as error:  # noqa: BLE001 - a lost worker too often, a task that raised
            result = {"ok": False, "problem": f"the task failed on the cluster ({describe(error)})",
                      "timings": {}, "seconds": 0.0, "worker": ""}
        finish(student, result)

    for student in todo:
        if stop_after is not None and recorded_now >= stop_after:
            break
        driver.forget(student)  # from here on, the student's old record is being replaced
        began = time.perf_counter()
        try:
            payload = driver.converter.prepare(student, local=engine.local)
        except Exception as error:  # noqa: BLE001 - nbgrader's own failure of this submission
            problem = fail(student, str(error) if isinstance(error, Ungradable) else describe(error))
            report.outcomes.append(Outcome(student, False, problem))
            bar.update(1)
            bar.set_postfix(failed=len(report.failed), refresh=False)
            continue
        prepared_at[student] = time.perf_counter() - began
        if payload is None:  # excluded by CourseDirectory.student_id_exclude
            bar.update(1)
            continue
        if engine.in_process:
            report.workers = 1
            finish(student, judge_submission(dict(driver.task_template, **payload)))
            continue
        cluster = engine.get()
        report.workers = report.workers or cluster.workers
        if finished is None:
            finished = as_completed(loop=cluster.client.loop)
        future = cluster.client.submit(judge_submission, dict(driver.task_template, **payload), pure=False,
                                       retries=TASK_RETRIES,
                                       key=f"autograde-{assignment}-{student}-{time.time_ns()}")
        futures[future.key] = (student, future)
        finished.add(future)
        if finished.has_ready():
            for done in finished.next_batch(block=False):
                collect(done)
    for done in finished if finished is not None else []:
        if stop_after is not None and recorded_now >= stop_after:
            engine.cluster.client.cancel([future for _, future in futures.values()])
            break
        collect(done)


# --- what the instructor sees --------------------------------------------------------------------

def summary(db_url, report, root="."):
    """The table (full step names, class average per step, late penalties, flags) and the
    submissions that could not be graded, as text. Every row's standing is `coursekit/standing.py`'s."""
    from coursekit import classroom

    scores = grading.class_scores(db_url, report.assignment)
    penalties = grading.late_penalties(db_url, report.assignment)
    students = sorted(set(scores) | {o.student for o in report.outcomes})
    failed = {o.student: o.problem for o in report.failed}  # this run's words (a missing folder, say)
    rows = []
    for student in students:
        where = standing.standing(root, report.assignment, student, penalties.get(student, 0.0))
        graded = where.graded and student not in failed
        row = scores.get(student, {})
        rows.append(classroom.StudentResult(student, report.assignment, graded, failed.get(student) or where.problem,
                                            {k: float(v or 0.0) for k, v in row.items()}, flags=where.flags,
                                            late_penalty=penalties.get(student, 0.0)))
    lines = [classroom.table(rows, report.assignment, average=True)]
    graded = len(report.outcomes) - len(report.failed)
    lines.append(f"\n{report.assignment}: {graded} graded, {len(report.skipped)} already graded (skipped), "
                 f"{len(report.failed)} could not be graded, in {report.seconds:.1f} s"
                 + (f" on {report.workers} workers" if report.workers > 1 else " in this process"
                    if report.workers else ""))
    ungraded = [r for r in rows if not r.graded]
    if ungraded:
        lines.append("Could not be graded (no score exported; `coursekit feedback` tells the student why):")
        lines += [f"  {r.student}: {r.problem}" for r in ungraded]
    flagged = [(r.student, f) for r in rows if r.graded for f in r.flags]
    if flagged:
        lines.append("Flags:")
        lines += [f"  {student}: {flag}" for student, flag in flagged]
    return "\n".join(lines)


def graded_count(course, assignment):
    """(submissions with a marker, submissions under submitted/) of `assignment`: how far a run got."""
    folders = list((Path(course) / "submitted").glob(f"*/{assignment}"))
    return sum(Driver.marker_path(course, assignment, f.parent.name).is_file() for f in folders), len(folders)


def run_autograde(args, extra=()):
    course = Path(args.course).resolve()
    if not (course / "nbgrader_config.py").is_file():
        print(f"coursekit autograde: {course} is not a course directory (no nbgrader_config.py); run it "
              "from the course directory or pass --course DIR", file=sys.stderr)
        return 2
    try:
        report = autograde(course, args.assignment, args.student or None, args.workers, args.scheduler, args.force,
                           close_later=True)
    except GradingError as error:
        print(f"coursekit autograde: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        done, total = graded_count(course, args.assignment)
        print(f"\ncoursekit autograde: interrupted; {done} of {total} submissions of {args.assignment} are graded "
              "and recorded. Run the same command again to grade the rest.", file=sys.stderr)
        return 130
    try:
        print(summary(report.db_url, report, course))  # while the workers stop
        if args.timings:
            Path(args.timings).write_text(json.dumps([vars(o) for o in report.outcomes], indent=1))
    finally:
        report.wait_closed()
    return 1 if report.failed else 0


def add_autograde(subcommands):
    parser = subcommands.add_parser(
        "autograde", help="grade a class's submissions in parallel (Dask), into nbgrader's gradebook",
        description="Grade what nbgrader collect / zip_collect put under submitted/, with the scores and "
                    "autograded notebooks of `nbgrader autograde`, on an embedded Dask cluster or an "
                    "existing one. Submissions already graded are skipped unless --force.")
    parser.add_argument("assignment")
    parser.add_argument("--student", nargs="+", metavar="ID", help="grade only these students")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the embedded cluster (default: the machine's cores)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="an existing Dask scheduler, e.g. tcp://host:8786, instead of the embedded cluster")
    parser.add_argument("--force", action="store_true", help="grade again submissions already graded")
    parser.add_argument("--course", metavar="DIR", default=".",
                        help="the nbgrader course directory (default: the current directory)")
    parser.add_argument("--timings", metavar="FILE",
                        help="write each graded submission's outcome and timing breakdown to FILE (JSON)")
    parser.set_defaults(run=run_autograde)

