"""Resume markers: how `coursekit autograde` knows, after an interruption, what is left to grade.

After the gradebook has recorded a submission, a marker holding the hash of the submitted folder
goes to `.coursekit/graded/<assignment>/<student>.json` (`CourseDir.marker`). A run grades only
the submissions without a valid marker (missing, a hash that no longer matches what is under
submitted/, or no record of it in the gradebook or autograded/), so running the command again
after the driver was killed grades only what is missing; `--force` grades everything again. A
submission without a marker that `nbgrader autograde` graded counts as graded too
(`NbgraderDriver.graded_by_nbgrader`), so the command finishes what nbgrader started.
"""

import hashlib
import json
import os
import stat
import time

from coursekit import intake
from coursekit.course_dir import CourseDir


def submission_hash(folder):
    """sha256 over every regular file of a submitted folder (names and contents), walked as intake
    walks it (without recursion, and no deeper than it takes in). Nothing is followed: a link
    counts by its name and target text, a device or FIFO by its name; a link to a folder does not
    count, as os.walk, which this walk replaced, left it out."""
    digest = hashlib.sha256()
    for path, relative, info in intake.entries_under(folder):
        if stat.S_ISDIR(info.st_mode) or (stat.S_ISLNK(info.st_mode) and os.path.isdir(path)):
            continue  # a folder counts by what it holds, which the walk gives after its own files
        # a name's own bytes: one that is no UTF-8 failed .encode() (and the run's recording)
        digest.update(os.fsencode(relative) + b"\0")
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link:" + os.fsencode(os.readlink(path)))
        elif stat.S_ISREG(info.st_mode):
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def read_marker(course, assignment, student):
    """The student's marker ({"hash", "notebooks", "graded_at"}), or None if there is none to read."""
    try:
        return json.loads(CourseDir(course).marker(assignment, student).read_text())
    except (OSError, ValueError):
        return None


def write_marker(course, assignment, student, notebooks):
    """Record that the student's current submission is graded, with the notebooks it produced."""
    course = CourseDir(course)
    path = course.marker(assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"hash": submission_hash(course.submitted(assignment, student)),
                               "notebooks": sorted(notebooks), "graded_at": time.time()}))
    os.replace(tmp, path)


def forget(course, assignment, student):
    """Drop the marker: the student's old record is being replaced."""
    CourseDir(course).marker(assignment, student).unlink(missing_ok=True)


def marker_matches(course, assignment, student):
    """None without a marker; else whether it matches the submission under submitted/ and every
    notebook it names is in autograded/."""
    marker = read_marker(course, assignment, student)
    if marker is None:
        return None
    course = CourseDir(course)
    if marker.get("hash") != submission_hash(course.submitted(assignment, student)):
        return False
    return all((course.autograded(assignment, student) / f"{n}.ipynb").is_file() for n in marker.get("notebooks", []))


def likely_work(course, assignment, students=None):
    """A guess made before nbgrader starts (the driver decides): does a submission under
    submitted/ lack a marker that matches it?"""
    course = CourseDir(course)
    folders = ([course.submitted(assignment, s) for s in students] if students else course.submissions(assignment))
    for folder in folders:
        marker = read_marker(course.root, assignment, folder.parent.name)
        if marker is None or not folder.is_dir() or marker.get("hash") != submission_hash(folder):
            return True
    return False


def graded_count(course, assignment):
    """(submissions with a marker, submissions under submitted/) of `assignment`: how far a run got."""
    course = CourseDir(course)
    folders = course.submissions(assignment)
    return sum(course.marker(assignment, f.parent.name).is_file() for f in folders), len(folders)
