"""nbgrader's `Autograde` converter, cut where execution starts: parts A and C of `coursekit
autograde` (`coursekit/autograde.py` describes the three parts).

`ClassAutograde.prepare` runs nbgrader's own steps up to execution for one student (part A);
`ClassAutograde.save` runs the configured preprocessors that read or write the gradebook on a
judged notebook and writes it into autograded/ (part C). `split_preprocessors` says which of the
course's autograde preprocessors run on a worker (part B) and which on the driver.
"""

import os
import re
import tempfile
from pathlib import Path

from nbconvert.writers import FilesWriter
from nbgrader.converters import Autograde
from nbgrader.converters.base import BaseConverter
from nbgrader.utils import rmtree

from autograder.limits import MAX_SHIPPED_SUBMISSION_BYTES
from coursekit import intake
from coursekit.outcomes import GradingError, Ungradable

# Preprocessors that read or write the gradebook: these and everything after them run on the driver.
GRADEBOOK_PREPROCESSORS = ("SaveAutoGrades", "AssignLatePenalties", "SaveCells", "OverwriteCells", "GetGrades")


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


def shipped_files(dest, notebooks):
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
            name = os.path.splitext(os.path.basename(filename))[0]
            notebooks[name], resources[name] = self._sanitize(filename)
        payload = {"student": student, "assignment": assignment, "notebooks": notebooks, "resources": resources}
        dest = Path(self.dest(student))
        if local:
            return dict(payload, folder=str(dest))
        return dict(payload, files=shipped_files(dest, notebooks))

    def _sanitize(self, filename):
        """nbgrader's sanitize preprocessors on one submitted notebook -> (its text, its resources)."""
        self._sanitizing, self._phase = True, "sanitize"
        self._init_preprocessors()
        BaseConverter.convert_single_notebook(self, filename)
        sanitized = os.path.join(self.writer.build_directory, os.path.basename(filename))
        text = Path(sanitized).read_text(encoding="utf-8")
        self._sanitizing = False
        try:
            return text, self.init_single_notebook_resources(sanitized)
        finally:
            self._sanitizing = True

    def save(self, student, judged):
        """Part C: the driver's preprocessors on each judged notebook, whose result goes into
        autograded/. As in nbgrader, only that result lands there: a notebook in autograded/
        that ran is one whose grades are recorded (`NbgraderDriver.graded_by_nbgrader`)."""
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
        dest = self.dest(student)
        if os.path.exists(dest):
            rmtree(dest)
