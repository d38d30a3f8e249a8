"""The class driver of `coursekit autograde`: which submissions a run grades, and the loop that
prepares each on the driver, has it judged (on a Dask cluster, or in this process) and records it
as its result comes back, with a progress bar.
"""

import sys
import time
import warnings
from dataclasses import dataclass

from coursekit import intake, resume, sandbox_warning, standing
from coursekit.cluster import StartingCluster, default_workers
from coursekit.course_dir import CourseDir
from coursekit.grading_task import describe, judge_submission
from coursekit.outcomes import GradingError, Outcome, Ungradable

TASK_RETRIES = 1  # a task that raised (a worker's disk, say) is tried once more
# What a job costs, to choose where it runs (benchmarks/results.md, "Small jobs", 2 cores): what
# an embedded cluster adds to a run (its start, its workers' warm-up and its stop, beyond the
# driver's own start, which overlaps them), and one notebook's grading.
CLUSTER_SECONDS = 4.5
NOTEBOOK_SECONDS = 1.5


def in_process_max(workers):
    """The largest job graded faster in the driver's own process than on an embedded cluster of
    `workers`: n notebooks take n * NOTEBOOK_SECONDS here, CLUSTER_SECONDS + n * NOTEBOOK_SECONDS
    / workers there."""
    if workers <= 1:
        return float("inf")
    return int(CLUSTER_SECONDS / (NOTEBOOK_SECONDS * (1 - 1 / workers)))


def in_process(course_dir, assignment, students, workers, scheduler, cluster):
    """Grade in the driver's own process? Unless a scheduler or a cluster is named, whenever a
    cluster's start would cost more than it saves (`in_process_max`)."""
    if scheduler or cluster is not None:
        return False
    course = CourseDir(course_dir)
    count = (sum(course.submitted(assignment, s).is_dir() for s in students) if students
             else len(course.submissions(assignment)))
    return count <= in_process_max(workers or default_workers())


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


def _progress(total, enabled, desc):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="nb", file=sys.stderr, disable=not enabled, smoothing=0.1,
                dynamic_ncols=True, mininterval=0.5)


def to_grade(driver, report, students, force):
    """The students whose submissions this run grades; the others go into `report` (no
    submission: an outcome; graded already: skipped)."""
    submitted = driver.converter.submissions
    wanted = list(students) if students else sorted(submitted)
    if driver.setup_problem and not students:
        raise GradingError(driver.setup_problem)
    for student in wanted:
        if student not in submitted:
            report.outcomes.append(Outcome(student, False, f"no submission under "
                                           f"submitted/{student}/{driver.assignment}/"))
    wanted = [s for s in wanted if s in submitted]
    for student in wanted:  # before anything reads a file of it (hash, timestamp, notebooks)
        intake.take_in(driver.root, driver.assignment, student, driver.submitted_folder(student))
    recorded = set() if force else driver.recorded_students()
    todo = []
    for student in wanted:
        if not force and driver.is_graded(student, recorded):
            report.skipped.append(student)
        else:
            todo.append(student)
    return todo


def grade(driver, report, students, force, progress, engine):
    """Grade what `to_grade` leaves, recording every outcome in `report`."""
    todo = to_grade(driver, report, students, force)
    if not todo:
        return
    sandbox_warning.say_once()  # before the bar, and once, whichever process grades
    bar = _progress(len(todo), progress, driver.assignment)
    try:
        ClassRun(driver, engine, report, bar).run(todo)
    finally:
        bar.close()  # before anything else is printed (an interrupt's line, say)


class ClassRun:
    """One run's loop: prepare each submission, have it judged, record it as it comes back."""

    def __init__(self, driver, engine, report, bar):
        self.driver, self.engine, self.report, self.bar = driver, engine, report, bar
        self.prepare_seconds = {}  # student -> the driver's part A
        self.pending = {}  # future key -> (student, future)
        self.finished = None  # distributed.as_completed, from the first task on the cluster
        self.failures = 0  # of the bar's submissions (a student with none is not one)

    def run(self, todo):
        try:
            for student in todo:
                payload = self.prepare(student)
                if payload is not None:
                    self.judge(student, dict(self.driver.task_template, **payload))
            for done in self.finished if self.finished is not None else []:
                self.collect(done)
        finally:
            self.cancel_pending()  # interrupted: what is still on a cluster the caller keeps

    def prepare(self, student):
        """Part A (`ClassAutograde.prepare`): the task's payload, or None (excluded, or failed)."""
        resume.forget(self.driver.root, self.driver.assignment, student)  # its old record is being replaced
        began = time.perf_counter()
        try:
            payload = self.driver.converter.prepare(student, local=self.engine.local)
        except Exception as error:  # noqa: BLE001 - nbgrader's own failure of this submission
            problem = self.fail(student, str(error) if isinstance(error, Ungradable) else describe(error))
            self.advance(Outcome(student, False, problem))
            return None
        self.prepare_seconds[student] = time.perf_counter() - began
        if payload is None:  # excluded by CourseDirectory.student_id_exclude
            self.advance(None)
        return payload

    def judge(self, student, task):
        """Part B: in this process, or as a task on the cluster (collected as they finish)."""
        if self.engine.in_process:
            self.report.workers = 1
            self.record(student, judge_submission(task))
            return
        from distributed import as_completed

        cluster = self.engine.get()
        self.report.workers = self.report.workers or cluster.workers
        if self.finished is None:
            self.finished = as_completed(loop=cluster.client.loop)
        with warnings.catch_warnings():
            # A submission's files travel in its task (up to MAX_SHIPPED_SUBMISSION_BYTES), once, to
            # one worker: Dask's advice for a large graph (load the data on the workers, scatter it)
            # does not apply, and scattered data dies with its worker, where a task can be retried.
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            future = cluster.client.submit(judge_submission, task, pure=False, retries=TASK_RETRIES,
                                           key=f"autograde-{self.driver.assignment}-{student}-{time.time_ns()}")
        self.pending[future.key] = (student, future)
        self.finished.add(future)
        if self.finished.has_ready():
            for done in self.finished.next_batch(block=False):
                self.collect(done)

    def collect(self, future):
        student, _ = self.pending.pop(future.key)
        try:
            result = future.result()
        except Exception as error:  # noqa: BLE001 - a lost worker too often, a task that raised
            result = {"ok": False, "problem": f"the task failed on the cluster ({describe(error)})",
                      "timings": {}, "seconds": 0.0, "worker": ""}
        self.record(student, result)

    def record(self, student, result):
        """Part C (`ClassAutograde.save`) for a judged submission, then its marker; or its failure."""
        outcome = Outcome(student, bool(result.get("ok")), result.get("problem", ""), result.get("seconds", 0.0),
                          dict(result.get("timings", {})), result.get("worker", ""))
        outcome.timings["prepare"] = self.prepare_seconds[student]
        save_start = time.perf_counter()
        if outcome.ok:
            try:
                self.driver.converter.save(student, result["notebooks"])
                resume.write_marker(self.driver.root, self.driver.assignment, student, result["notebooks"])
                standing.clear_failure(self.driver.root, self.driver.assignment, student)
            except Exception as error:  # noqa: BLE001
                outcome.ok, outcome.problem = False, f"recording the grades failed ({describe(error)})"
                self.fail(student, outcome.problem)
        else:
            outcome.problem = self.fail(student, outcome.problem)
        outcome.timings["save"] = time.perf_counter() - save_start
        self.advance(outcome)

    def fail(self, student, problem):
        """Record why the submission could not be graded (the standing's words where it has some)."""
        root, assignment = self.driver.root, self.driver.assignment
        problem = standing.diagnose(root, assignment, student) or problem
        standing.record_failure(root, assignment, student, problem)
        self.driver.converter.discard(student)
        return problem

    def advance(self, outcome):
        """One submission done (`outcome`, None if excluded): the report and the bar."""
        if outcome is not None:
            self.report.outcomes.append(outcome)
        self.bar.update(1)
        if outcome is not None and not outcome.ok:
            self.failures += 1
            self.bar.set_postfix(failed=self.failures, refresh=False)

    def cancel_pending(self):
        if self.pending and self.engine.cluster is not None:
            try:
                self.engine.cluster.client.cancel([future for _, future in self.pending.values()])
            except Exception:  # noqa: BLE001 - a cluster that is gone has nothing left to cancel
                pass
            self.pending.clear()
