"""Whose a file is, and when it was handed in, for `nbgrader zip_collect`: from the names the
learning platform gave, never from names a student chose.

nbgrader's `FileNameCollectorPlugin` matches the instructor's `named_regexp` against each
extracted file's whole path and takes the student id, the time and the file's name from its
groups; a later time for the same file replaces an earlier one. The platform names what it
hands over (`ps1_bitdiddle_attempt_2016-01-30-15-00-00_problem1.ipynb`), but an archive a
student uploaded is unpacked too, into a folder of its own, and the names inside it are the
student's. With nbgrader's own example expression (`.*_(?P<student_id>\\w+)_attempt_...`, whose
greedy `.*` reads the last match in the path), a file in mallory's upload named
`x_alice_attempt_2099-01-01 00:00:00_ps1.ipynb` was collected as alice's, later than hers, and
replaced her submission (issue 18: nothing crosses between submissions).

So a file is not collected when its student id or its time is read from below the folder of an
archive a student handed in (`uploads`), when its student id is not a plain name (`..` would put it
outside `submitted/`), when its file id would be written outside the student's folder, or when it
is a `timestamp.txt` (the student's word for a time the platform's name gives). The instructor is
told each time, by name and reason. A file whose whole name the platform gave is collected as
nbgrader collects it: the expression is the instructor's, and it should read the student id from
the platform's part of a name (the part before a student's original file name, where the platform
keeps one).
"""

import os
import re
from pathlib import PurePosixPath

# The groups of named_regexp that say whose a file is and when it was handed in.
IDENTITY_GROUPS = ("student_id", "timestamp", "first_name", "last_name", "email")


def is_upload(folder, nested, named_regexp, name):
    """Whether the names under `folder`, where an archive was unpacked, are a student's: those of an
    archive found inside another (what a student uploaded, in the platform's download), or of an
    archive the instructor put loose in `archive/` whose own name says whose it is (an upload the
    platform named). A bulk download's folder names no student. `name`, the file being collected's
    own name, is tried directly under `folder`, for expressions that read the student from a folder."""
    if nested:
        return True
    for probe in (str(folder), os.path.join(folder, name)):
        match = re.match(named_regexp, probe) if named_regexp else None
        if match and "student_id" in match.re.groupindex and 0 <= match.end("student_id") <= len(str(folder)):
            return True
    return False


def refusal(path, info, named_regexp, uploads, sources=None):
    """Why the file at `path`, which `named_regexp` read as `info` (nbgrader's groupdict), is not
    collected ("" if it is). `uploads`: the folders whose names below them are a student's;
    `sources`: the archive each was unpacked from."""
    student, file_id = info.get("student_id") or "", info.get("file_id") or ""
    if not student or "/" in student or "\\" in student or student.startswith(".") or "\0" in student:
        return f"its student id {student!r} is not a plain name"
    parts = PurePosixPath(file_id.replace("\\", "/")).parts
    if not parts or file_id.startswith(("/", "\\")) or any(part in (".", "..") for part in parts):
        return f"its file id {file_id!r} would be written outside the student's folder"
    if os.path.basename(os.path.splitext(file_id)[0] + os.path.splitext(path)[1]) == "timestamp.txt":
        return ("a timestamp.txt handed in is the student's word: the time is read from the name the "
                "platform gave (named_regexp's timestamp group)")
    inside = [folder for folder in uploads if str(path).startswith(str(folder) + os.sep)]
    if not inside:
        return ""
    outer = min(inside, key=lambda folder: len(str(folder)))
    boundary = len(str(outer))
    match = re.match(named_regexp, str(path))
    read_inside = [group for group in IDENTITY_GROUPS
                   if group in match.re.groupindex and match.start(group) >= 0 and match.end(group) > boundary]
    if read_inside:
        return (f"its {' and '.join(read_inside)} would be read from a name inside an archive a student handed in, "
                "which the student chose; collect it by hand if it is theirs")
    # The folder an upload unpacks into is named after it, and where a platform keeps the name a
    # student gave (Moodle: `Full Name_id_assignsubmission_file_/their name.zip`), that name is
    # theirs: r39's upload named as a classmate's folder was read, by the last match, as the
    # classmate's. A file inside an upload is whose the upload itself is, where it says.
    owner = re.match(named_regexp, str((sources or {}).get(outer, "")))
    if owner and "student_id" in owner.re.groupindex and owner.group("student_id"):
        differ = [group for group in IDENTITY_GROUPS if group in owner.re.groupindex
                  and owner.group(group) is not None and match.group(group) != owner.group(group)]
        if differ:
            return (f"its {' and '.join(differ)} would differ from those of the archive it was handed in, "
                    f"{os.path.basename(sources[outer])}; collect it by hand if it is theirs")
    return ""
