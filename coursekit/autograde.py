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

Resuming: a run grades only what is not graded yet (`coursekit/resume.py`); `--force` grades
everything again.

The stages, one module each: `coursekit/converter.py` (parts A and C: nbgrader's converter, cut
where execution starts), `coursekit/grading_task.py` (part B), `coursekit/nbgrader_driver.py`
(nbgrader's app and the gradebook, on the driver), `coursekit/class_run.py` (which submissions a
run grades, and the loop over them), `coursekit/cluster.py` (the Dask cluster),
`coursekit/resume.py` (the markers) and `coursekit/results_table.py` (the table at the end).
"""

import json
import os
import sys
import time
import warnings
from pathlib import Path

from coursekit import class_run, resume
from coursekit.class_run import Engine
from coursekit.cluster import StartingCluster
from coursekit.course_dir import CourseDir
from coursekit.outcomes import GradingError, Report
from coursekit.paths import with_interpreter_on_path
from coursekit.results_table import summary


def autograde(course_dir, assignment, students=None, workers=None, scheduler=None, force=False,
              progress=True, cluster=None, close_later=False, in_process=None):
    """Grade `assignment`'s submissions (all, or `students`) into nbgrader's gradebook -> Report.

    `cluster`: a `Cluster` to reuse (the caller closes it). `close_later`: the cluster this run
    started is closed in a thread (its workers take seconds to stop), so the caller can print the
    summary meanwhile; `report.wait_closed()` waits for it. `in_process`: grade in this process,
    without Dask (default: when a cluster would cost more than it saves, `class_run.in_process_max`).
    """
    start = time.perf_counter()
    warnings.filterwarnings("ignore", module="nbgrader.api")  # SQLAlchemy's session notes, as in nbgrader
    # The interpreter goes first on PATH: nbgrader runs `alembic` by name when it creates a
    # gradebook, and the workers, which start here while the driver starts nbgrader (where there
    # is work), inherit this environment.
    os.environ.update(with_interpreter_on_path(os.environ))
    if in_process is None:
        in_process = class_run.in_process(course_dir, assignment, students, workers, scheduler, cluster)
    likely = not in_process and cluster is None and (force or resume.likely_work(course_dir, assignment, students))
    engine = Engine(cluster, StartingCluster(workers, scheduler) if likely else None, workers, scheduler,
                    in_process)
    try:
        from coursekit.nbgrader_driver import NbgraderDriver  # nbgrader: imported while the cluster starts

        driver = NbgraderDriver(course_dir, assignment)
    except BaseException:
        engine.discard(later=False)
        raise
    report = Report(assignment, db_url=driver.db_url)
    try:
        class_run.grade(driver, report, students, force, progress, engine)
        return report
    finally:
        report.seconds = time.perf_counter() - start
        report.closing = engine.discard(later=close_later)
        driver.close()


def run_autograde(args, extra=()):
    course = Path(args.course).resolve()
    if not CourseDir(course).is_course():
        print(f"coursekit autograde: {course} is not a course directory (no nbgrader_config.py); run it "
              "from the course directory or pass --course DIR", file=sys.stderr)
        return 2
    try:
        return _grade_and_summarise(course, args)
    except GradingError as error:
        print(f"coursekit autograde: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, wherever it came: what is recorded stays (coursekit/resume.py)
        done, total = resume.graded_count(course, args.assignment)
        print(f"\ncoursekit autograde: interrupted; {done} of {total} submissions of {args.assignment} are graded "
              "and recorded. Run the same command again to grade the rest.", file=sys.stderr)
        return 130


def _grade_and_summarise(course, args):
    report = autograde(course, args.assignment, args.student or None, args.workers, args.scheduler, args.force,
                       close_later=True)
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

