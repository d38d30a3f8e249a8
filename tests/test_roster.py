"""`coursekit roster import` (coursekit/roster.py): Canvas's roster into nbgrader's gradebook, so
that canvas_grades.csv matches Canvas's own gradebook format row by row.

The samples of Canvas's formats are data files (tests/data/canvas/, with a README saying where
each comes from). No notebook is graded here: a gradebook with the assignment and no submission
is enough for the identity columns.
"""

import csv
import os
import subprocess
from pathlib import Path

import pytest

from coursekit import exports, grading, roster
from coursekit.course_dir import CourseDir
from coursekit.paths import interpreter_bin, with_interpreter_on_path

CANVAS = Path(__file__).parent / "data" / "canvas"
A = "01_simplified_self_attention"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course whose gradebook holds assignment 01 (both samples describe the same students)."""
    from nbgrader.api import Gradebook

    course = grading.prepare(tmp_path_factory.mktemp("roster") / "course")
    with Gradebook(CourseDir(course).gradebook_url) as gb:
        gb.add_assignment(A)
    return course


def import_file(course, name):
    return subprocess.run([str(Path(interpreter_bin()) / "coursekit"), "roster", "import", str(CANVAS / name)],
                          cwd=course, env=with_interpreter_on_path(os.environ), capture_output=True, text=True,
                          timeout=300)


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_canvas_grades_matches_canvas_gradebook_format_after_a_roster_import(course):
    result = import_file(course, "gradebook_export.csv")
    assert result.returncode == 0 and "3 students" in result.stdout, result.stdout + result.stderr
    sample = rows(CANVAS / "gradebook_export.csv")
    ours = rows(exports.export_canvas(course, {A: "4711"}))
    identity = len(exports.CANVAS_IDENTITY)
    assert ours[0][:identity] == sample[0][:identity]
    assert ours[0][identity] == sample[0][identity]  # "NAME (CANVAS_ID)"
    assert ours[1][0] == sample[1][0]  # "Points Possible"
    assert sorted(r[:identity] for r in ours[2:]) == sorted(r[:identity] for r in sample[2:])


def test_the_users_report_brings_emails_and_names_into_nbgrader(course):
    from nbgrader.api import Gradebook

    result = import_file(course, "users_report.csv")
    assert result.returncode == 0, result.stdout + result.stderr
    with Gradebook(CourseDir(course).gradebook_url) as gb:
        ada = gb.find_student("ada")
        assert (ada.first_name, ada.last_name, ada.email, ada.lms_user_id) == (
            "Ada", "Lovelace", "ada@example.edu", "1001")
    assert roster.imported(course)["grace"].sis_user_id == "S-20233"


def test_a_file_that_is_not_a_canvas_roster_is_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("name,score\nada,3\n")
    with pytest.raises(ValueError, match="not a Canvas roster"):
        roster.read(path)
