"""A student racing collect (coursekit/intake.py, coursekit/nbgrader_plugins.py): the inbound folder is
theirs to change while collect reads it, between the walk and the copy, or between reading when it
last changed and copying it (red-team round r46). Each race is played here as if the student won it."""

import os
from datetime import UTC, datetime, timedelta

import pytest

from coursekit import grading, handed_in, intake

A = "01_simplified_self_attention"


@pytest.mark.parametrize("swapped", ["work", "."], ids=["a folder inside", "the submission folder"])
def test_a_folder_swapped_for_a_link_while_copied_is_not_followed(tmp_path, monkeypatch, swapped):
    """Red-teamed in round r46: the walk saw a folder and the notebook in it, then (a student racing
    collect, with rename(2) in a loop) the folder became a link to the instructor's, and the copy
    opened the notebook of that name there (O_NOFOLLOW refuses a link in the last name only): the
    instructor's notebook was taken in as the student's. Each name is now opened without following."""
    instructors = tmp_path / "source"
    (instructors / "work").mkdir(parents=True)
    (instructors / f"{A}.ipynb").write_text("the instructor's")
    (instructors / "work" / f"{A}.ipynb").write_text("the instructor's")
    student = tmp_path / "in"
    (student / "work").mkdir(parents=True)
    (student / "work" / f"{A}.ipynb").write_text("mine")
    (student / f"{A}.ipynb").write_text("mine")
    copy = intake._copy_file

    def raced(top, relative, *args):  # the student wins the race: after the walk, before the file is opened
        folder = student / swapped
        if swapped in (".", relative.parts[0]) and not folder.is_symlink():
            folder.rename(folder.with_name(folder.name + ".real"))
            os.symlink(instructors / swapped, folder)
        return copy(top, relative, *args)

    monkeypatch.setattr(intake, "_copy_file", raced)
    dropped = intake.safe_copy(student, tmp_path / "out")
    taken = [p.read_text() for p in (tmp_path / "out").rglob("*.ipynb")]
    assert "the instructor's" not in taken and any("read safely" in d.reason for d in dropped), (taken, dropped)


def test_a_submission_changed_after_collect_read_its_time_is_taken_as_changed_then(tmp_path):
    """Red-teamed in round r46: collect reads when every submission's files last changed, then copies
    them one after the other. A student whose on-time folder collect had read (its access time says
    so) put a late notebook in it before it was copied, and it was taken in as handed in on time.
    The time is read again once the folder is copied, and the later change counts."""
    from types import SimpleNamespace

    from coursekit.nbgrader_plugins import SafeCollect

    course = grading.prepare(tmp_path / "course")
    on_time = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
    folder = tmp_path / "inbound" / f"eve+{A}+{handed_in.stamp(on_time)}"
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text("late")  # changed now: after collect read it (an hour ago, here)
    (folder / "timestamp.txt").write_text(handed_in.stamp(on_time))
    record = {"filename": folder.name, "timestamp": on_time, "changed": on_time}  # as collect read it then
    collect = SimpleNamespace(coursedir=SimpleNamespace(root=str(course), assignment_id=A, ignore=[]),
                              src_records=[record], log=SimpleNamespace(warning=lambda *args: None),
                              _stamped=SafeCollect._stamped)
    dest = course / "submitted" / "eve" / A
    SafeCollect.do_copy(collect, str(folder), str(dest))
    taken = datetime.strptime((dest / "timestamp.txt").read_text(), handed_in.TIMESTAMP_FORMAT)
    assert taken > on_time + handed_in.SUBMIT_CLOCK_SLACK, taken
