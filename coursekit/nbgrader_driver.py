"""nbgrader as the driver of `coursekit autograde` runs it: its `AutogradeApp` with the course's
configuration, the cut converter (`coursekit/converter.py`), the gradebook's record of who is
graded, and the plain data every worker's task starts from.
"""

import contextlib
import logging
import os
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.apps.autogradeapp import AutogradeApp

from coursekit import resume, standing
from coursekit.converter import ClassAutograde, split_preprocessors
from coursekit.lean_driver import lean_nbgrader


@contextlib.contextmanager
def _said_instead_of_printed(log):
    """The messages nbgrader logs inside the block, collected (not printed): the command says
    them once, in its own words (`GradingError`), instead of twice."""
    said = []

    class Collect(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    handlers, propagate = log.handlers[:], log.propagate
    log.handlers[:], log.propagate = [Collect(logging.ERROR)], False
    try:
        yield said
    finally:
        log.handlers[:], log.propagate = handlers, propagate


def _plain(config):
    return {key: _plain(value) if isinstance(value, dict) else value for key, value in config.items()}


class NbgraderDriver:
    """nbgrader's app and converter for one assignment, in a course directory. It changes into
    the course directory, as nbgrader expects; `close()` changes back."""

    def __init__(self, course_dir, assignment, log_level=logging.ERROR):
        self.course_dir = Path(course_dir).resolve()
        self.assignment = assignment
        self._cwd = os.getcwd()
        self._lean = lean_nbgrader()  # nbgrader's per-submission costs, paid once (lean_driver.py)
        self._lean.__enter__()
        os.chdir(self.course_dir)
        try:
            self._start(assignment, log_level)
        except BaseException:
            self.close()
            raise

    def _start(self, assignment, log_level):
        self.app = AutogradeApp()
        self.app.initialize([assignment])
        self.app.log.setLevel(log_level)
        self.app.coursedir.assignment_id = assignment
        self.converter = ClassAutograde(coursedir=self.app.coursedir, parent=self.app)
        self.converter.log.setLevel(log_level)
        worker_pps, driver_pps = split_preprocessors(self.converter.autograde_preprocessors)
        self.converter.driver_preprocessors = driver_pps
        self.task_template = {"config": _plain(self.app.config), "preprocessors": worker_pps}
        self.root = Path(self.app.coursedir.root).resolve()
        with _said_instead_of_printed(self.converter.log) as said:
            try:
                self.converter.setup()
            except Exception as error:  # noqa: BLE001 - nbgrader says why (in its log)
                self.converter.submissions = {}
                self.setup_problem = "; ".join(said) or str(error) or type(error).__name__
            else:
                self.setup_problem = ""

    def close(self):
        os.chdir(self._cwd)
        if self._lean is not None:
            self._lean.__exit__(None, None, None)
            self._lean = None

    @property
    def db_url(self):
        return self.app.coursedir.db_url

    def submitted_folder(self, student):
        return Path(self.converter.submissions[student][0])

    def is_graded(self, student, recorded):
        """True if this student's current submission is graded and recorded (resume): by this
        command (its marker) or, without a marker, by `nbgrader autograde`."""
        if student not in recorded:
            return False
        matches = resume.marker_matches(self.root, self.assignment, student)
        return self.graded_by_nbgrader(student) if matches is None else matches

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
        return all(standing.ran_at(dest / Path(notebook).name) is not None
                   for notebook in self.converter.submissions[student][1])

    def recorded_students(self):
        with Gradebook(self.db_url, self.app.coursedir.course_id) as gb:
            try:
                return {s.student.id for s in gb.assignment_submissions(self.assignment)}
            except Exception:  # noqa: BLE001 - no such assignment yet: nothing recorded
                return set()
