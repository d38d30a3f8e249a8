"""When a submission was handed in, as far as the grader can know it.

nbgrader takes a submission's time from the student: the inbound folder's name and the
`timestamp.txt` in it, both written by the student's `nbgrader submit`, and both the student's to
rewrite. A folder renamed to an earlier time, or a `timestamp.txt` deleted or set to 1970, hid
lateness from the gradebook, grades.csv and the class report, and so from any late penalty an
instructor configures (red-team round r27).

What the student cannot set is a file's ctime: the kernel stamps it with its own clock at every
change of the file's content or metadata, and no call moves it back. So the last ctime under the
submission folder is when the submission last changed, and it cannot be earlier than the time at
which what is graded was handed in. `nbgrader submit` stamps its time, then copies the files and
sets the folder's mode, so an honest submission changes a few seconds after its stamp: a claim
that is at most `SUBMIT_CLOCK_SLACK` before the last change is believed, and an earlier or
missing one gives way to the last change.

What still depends on the host: anything that changes the inbound folders after the students
(restoring the exchange from a backup, an instructor's `chmod -R`) moves every ctime to that
moment, and every submission then reads as handed in then. The instructor is told for each one,
with both times, so such a run is recognised and not believed. On a network filesystem ctime is
the file server's clock, which must agree with the students' servers' to within the slack.
"""

import os
import stat
from datetime import UTC, datetime, timedelta

from coursekit import intake

# Longer than nbgrader submit takes to copy a notebook and set the folder's mode; a student can
# hide at most this much lateness.
SUBMIT_CLOCK_SLACK = timedelta(minutes=5)
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's own, written in UTC


def last_change(folder):
    """The latest ctime of the folder and of every entry under it, as a naive UTC datetime (as
    nbgrader's `parse_utc` gives its times). Nothing is followed: links are lstat'ed."""
    top = os.lstat(folder)
    below = intake.entries_under(folder) if stat.S_ISDIR(top.st_mode) else ()  # a link to a folder is not entered
    changed = max([top.st_ctime] + [info.st_ctime for _, _, info in below])
    return datetime.fromtimestamp(changed, UTC).replace(tzinfo=None)


def trusted(claimed, changed):
    """The time a submission is taken as handed in: the student's claim (None where there is none),
    unless its files changed more than SUBMIT_CLOCK_SLACK after it; then the last change."""
    if claimed is not None and changed - claimed <= SUBMIT_CLOCK_SLACK:
        return claimed
    return changed


def stamp(when):
    """`when` as nbgrader writes it in timestamp.txt."""
    return when.strftime(TIMESTAMP_FORMAT)


def why_replaced(said, when, changed):
    """What the instructor and the student are told when timestamp.txt did not say `when`: `said`
    is its time (None where it was missing or no time)."""
    said = f"it said {stamp(said)}" if said is not None else "it was missing or held no time"
    if when == changed:
        return f"{intake.REPLACED}{said}, but the submission's files were last changed at {stamp(changed)}; graded as handed in then"
    return f"{intake.REPLACED}{said}; graded as handed in at {stamp(when)}, the time nbgrader submit gave it, which its files bear out"
