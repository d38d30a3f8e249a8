"""Every path of an nbgrader course directory, in one place: `CourseDir(root)`.

nbgrader's folders (the release, submitted/, autograded/, feedback/) and its gradebook are where
the course's `nbgrader_config.py` puts them: read from that file, as nbgrader reads it, so the
command and nbgrader never disagree. coursekit's own records live beside them, under
`.coursekit/`: the resume markers of `coursekit autograde`, why a submission could not be graded,
what intake left out of a submission, and the imported roster.

(`coursekit/paths.py` holds the paths of this checkout, which is itself a course directory.)
"""

import functools
import os
from pathlib import Path

STATE = ".coursekit"  # coursekit's records in a course directory
CONFIG_FILE = "nbgrader_config.py"


@functools.lru_cache(maxsize=32)
def _nbgrader_config(config_file, modified):
    """The `CourseDirectory` section of an nbgrader_config.py, as nbgrader loads it (traitlets),
    read once per version of the file (`modified`)."""
    from traitlets.config.loader import PyFileConfigLoader

    loader = PyFileConfigLoader(os.path.basename(config_file), path=os.path.dirname(config_file))
    return dict(loader.load_config().get("CourseDirectory", {}))


class CourseDir:
    """The paths of the course directory at `root` (nothing is created or checked)."""

    def __init__(self, root):
        self.root = root.root if isinstance(root, CourseDir) else Path(root)

    def __repr__(self):
        return f"CourseDir({str(self.root)!r})"

    # --- nbgrader's ---------------------------------------------------------------------------
    @property
    def config_file(self):
        return self.root / CONFIG_FILE

    def is_course(self):
        return self.config_file.is_file()

    def _setting(self, name, default):
        try:
            stat = self.config_file.stat()
        except OSError:
            return default
        return _nbgrader_config(str(self.config_file.resolve()), stat.st_mtime_ns).get(name) or default

    @property
    def gradebook_url(self):
        """The gradebook nbgrader uses (`CourseDirectory.db_url`; nbgrader's default without one)."""
        return self._setting("db_url", f"sqlite:///{self.root.resolve() / 'gradebook.db'}")

    @property
    def gradebook_file(self):
        """The SQLite file of the gradebook (None for another database)."""
        url = self.gradebook_url
        return Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None

    def has_gradebook(self):
        """A course directory whose gradebook exists (nbgrader would create an empty one)."""
        return self.is_course() and (self.gradebook_file is None or self.gradebook_file.is_file())

    def release_folder(self, assignment):
        return self.root / self._setting("release_directory", "release") / assignment

    def release_notebook(self, assignment):
        """Where `nbgrader generate_assignment` puts the student version of `assignment`."""
        return self.release_folder(assignment) / f"{assignment}.ipynb"

    @property
    def submitted_root(self):
        return self.root / self._setting("submitted_directory", "submitted")

    def submitted(self, assignment, student):
        """The folder `nbgrader collect` fills with one student's submission."""
        return self.submitted_root / student / assignment

    def submitted_notebook(self, assignment, student):
        return self.submitted(assignment, student) / f"{assignment}.ipynb"

    def submissions(self, assignment):
        """Every submission folder of `assignment` under submitted/, in order of student id."""
        return sorted(self.submitted_root.glob(f"*/{assignment}"))

    @property
    def autograded_root(self):
        return self.root / self._setting("autograded_directory", "autograded")

    def autograded(self, assignment, student):
        return self.autograded_root / student / assignment

    def autograded_notebook(self, assignment, student):
        return self.autograded(assignment, student) / f"{assignment}.ipynb"

    @property
    def feedback_root(self):
        return self.root / self._setting("feedback_directory", "feedback")

    def feedback_page(self, assignment, student):
        return self.feedback_root / student / assignment / f"{assignment}.html"

    def export(self, name):
        """A CSV the exports write into the course directory (grades.csv, step_scores.csv, ...)."""
        return self.root / name

    # --- coursekit's own, under .coursekit/ -----------------------------------------------------
    def marker(self, assignment, student):
        """`coursekit autograde`'s record that a submission is graded (`coursekit/resume.py`)."""
        return self.root / STATE / "graded" / assignment / f"{student}.json"

    def failure(self, assignment, student):
        """Why `coursekit autograde` could not grade a submission (`coursekit/standing.py`)."""
        return self.root / STATE / "failed" / assignment / f"{student}.json"

    def intake(self, assignment, student):
        """What intake left out of a submission, and the quarantine (`coursekit/intake.py`)."""
        return self.root / STATE / "intake" / assignment / student

    @property
    def roster(self):
        """The SIS ids and sections `coursekit roster import` keeps (`coursekit/roster.py`)."""
        return self.root / STATE / "roster.json"
