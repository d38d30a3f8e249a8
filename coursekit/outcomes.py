"""What a run of `coursekit autograde` produces: a `Report` of one `Outcome` per submission it
graded, and the two ways grading can fail (the whole run, or one submission)."""

from dataclasses import dataclass, field


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
