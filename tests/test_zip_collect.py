"""`nbgrader zip_collect` takes whose a file is, and when it was handed in, from the names the
learning platform gave, never from names inside an archive a student uploaded
(`coursekit/zip_names.py`, `coursekit.nbgrader_plugins.SafeFileNameCollector`)."""

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from coursekit import grading, zip_names
from coursekit.paths import with_interpreter_on_path

A = "01_simplified_self_attention"
# nbgrader's own example expression, for a platform that names each file it hands over
LOOSE_FILES = r".*_(?P<student_id>\w+)_attempt_(?P<timestamp>[0-9\-: ]+)_(?P<file_id>\w+)"
# one that reads the student and the time from the folder an upload unpacks into
UPLOADS = r".*/ps1_(?P<student_id>[a-z]+)_attempt_(?P<timestamp>[0-9: -]+)_[^/]*/(?P<file_id>.*)"


def zipped(members):
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return data.getvalue()


def zip_collect(tmp_path, download, named_regexp, loose=None):
    """Run nbgrader zip_collect on the platform's `download` (member name -> bytes), or on `loose`
    archives put in archive/ by the instructor (file name -> bytes); returns each collected
    notebook's text and time by student, and what zip_collect said."""
    course = grading.prepare(tmp_path / "course")
    archive = course / "downloaded" / A / "archive"
    archive.mkdir(parents=True)
    for name, data in (loose or {"platform.zip": zipped(download)}).items():
        (archive / name).write_bytes(data)
    result = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", A,
                             f"--FileNameCollectorPlugin.named_regexp={named_regexp}"],
                            cwd=course, env=with_interpreter_on_path(os.environ), capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    collected = {}
    for folder in sorted((course / "submitted").glob(f"*/{A}")):
        stamp = folder / "timestamp.txt"
        notebook = folder / f"{A}.ipynb"
        collected[folder.parent.name] = (notebook.read_text() if notebook.exists() else None,
                                         stamp.read_text() if stamp.exists() else None)
    return collected, result.stderr


def test_a_file_inside_an_upload_named_as_a_classmates_is_not_collected_as_theirs(tmp_path):
    """Red-teamed here: mallory's upload held a file named as alice's, later than hers. With
    nbgrader's collector it replaced alice's submission."""
    upload = zipped({f"x_alice_attempt_2099-01-01 00:00:00_{A}.ipynb": "mallory's"})
    collected, said = zip_collect(tmp_path, {
        f"ps1_alice_attempt_2026-11-20 09:00:00_{A}.ipynb": "alice's",
        "ps1_mallory_attempt_2026-11-20 10:00:00_upload.zip": upload}, LOOSE_FILES)
    assert collected == {"alice": ("alice's", "2026-11-20 09:00:00")}
    assert "x_alice_attempt_2099" in said and "inside an archive a student handed in" in said
    assert "its student_id and timestamp would be read" in said


def test_an_upload_is_collected_with_the_time_its_platform_name_gives(tmp_path):
    honest = zipped({f"{A}.ipynb": "bob's"})
    forged = zipped({f"ps1_alice_attempt_2099-01-01 00:00:00_x/{A}.ipynb": "mallory's"})
    collected, said = zip_collect(tmp_path, {
        "ps1_bob_attempt_2026-11-20 08:00:00_work.zip": honest,
        "ps1_mallory_attempt_2026-11-20 10:00:00_work.zip": forged}, UPLOADS)
    assert collected == {"bob": ("bob's", "2026-11-20 08:00:00")}
    assert "ps1_alice_attempt_2099-01-01 00:00:00_x" in said and "not collected" in said


def test_uploads_put_loose_in_the_archive_folder_are_read_as_the_platform_named_them(tmp_path):
    """The instructor unpacked the platform's download and put its uploads in archive/ themselves."""
    collected, said = zip_collect(tmp_path, None, UPLOADS, loose={
        "ps1_bob_attempt_2026-11-20 08:00:00_work.zip": zipped({f"{A}.ipynb": "bob's"}),
        "ps1_alice_attempt_2026-11-20 09:00:00_work.zip": zipped({f"{A}.ipynb": "alice's"}),
        "ps1_mallory_attempt_2026-11-20 10:00:00_work.zip": zipped(
            {f"ps1_alice_attempt_2099-01-01 00:00:00_x/{A}.ipynb": "mallory's"})})
    assert collected == {"alice": ("alice's", "2026-11-20 09:00:00"), "bob": ("bob's", "2026-11-20 08:00:00")}
    assert "ps1_alice_attempt_2099-01-01 00:00:00_x" in said and "not collected" in said


@pytest.mark.parametrize("info, why", [
    ({"student_id": "..", "file_id": f"{A}.ipynb"}, "not a plain name"),
    ({"student_id": ".hidden", "file_id": f"{A}.ipynb"}, "not a plain name"),
    ({"student_id": "a/b", "file_id": f"{A}.ipynb"}, "not a plain name"),
    ({"student_id": "", "file_id": f"{A}.ipynb"}, "not a plain name"),
    ({"student_id": "eve", "file_id": f"../../bob/{A}"}, "outside the student's folder"),
    ({"student_id": "eve", "file_id": "/etc/passwd"}, "outside the student's folder"),
    ({"student_id": "eve", "file_id": "timestamp"}, "timestamp.txt handed in is the student's word"),
    ({"student_id": "eve", "file_id": f"sub/{A}"}, ""),
])
def test_names_that_would_leave_the_students_folder_are_refused(info, why):
    path = Path("/x/extracted") / ("f.txt" if info["file_id"] == "timestamp" else "f.ipynb")
    said = zip_names.refusal(path, info, r"(?P<student_id>.*)", uploads=[])
    assert (why in said) if why else said == ""


@pytest.mark.parametrize("named_regexp", [LOOSE_FILES, UPLOADS])
def test_a_bulk_download_names_no_student_but_a_loose_upload_does(named_regexp):
    name = f"{A}.ipynb"
    assert not zip_names.is_upload(Path("/x/extracted/platform"), False, named_regexp, name)
    assert zip_names.is_upload(Path("/x/extracted/ps1_bob_attempt_2026-11-20 08:00:00_work"), False, named_regexp, name)
    assert zip_names.is_upload(Path("/x/extracted/platform/anything"), True, named_regexp, name)


# Moodle's download: a folder for each student, holding the files they uploaded under their own names
MOODLE = r".*/(?P<first_name>[^/_]+) (?P<last_name>[^/_]+)_(?P<student_id>\d+)_assignsubmission_file_/(?P<file_id>.*)"


def test_an_upload_named_as_a_classmates_folder_is_not_collected_as_theirs(tmp_path):
    """Red-teamed in round r39: on Moodle a student's upload keeps the name they gave it, and an
    archive is unpacked into a folder of that name, beside it. Mallory's upload named as alice's
    folder was read, by the expression's last match, as alice's."""
    collected, said = zip_collect(tmp_path, {
        f"Alice Jones_42_assignsubmission_file_/{A}.ipynb": "alice's",
        "Bob Lee_7_assignsubmission_file_/work.zip": zipped({f"{A}.ipynb": "bob's"}),
        "Mallory Smith_66_assignsubmission_file_/Alice Jones_42_assignsubmission_file_.zip":
            zipped({f"{A}.ipynb": "mallory's"})}, MOODLE)
    assert collected == {"42": ("alice's", None), "7": (None, None)}
    assert (tmp_path / "course" / "submitted" / "7" / A / "work" / f"{A}.ipynb").read_text() == "bob's"
    assert "Mallory Smith_66_assignsubmission_file_/Alice Jones_42" in said and "not collected" in said


def _corrupt(data):
    """`data` (a zip whose members are stored) with one byte of its first member changed: its CRC fails."""
    at = data.index(b"xxxx")
    return data[:at] + b"y" + data[at + 1:]


def test_an_upload_that_cannot_be_unpacked_leaves_the_classmates_collected(tmp_path):
    """Red-teamed in round r54: nbgrader's unzip raises on a member it cannot read (a failed CRC here; a
    password or a compression method zipfile lacks do too), which zipfile's list of members does not show,
    and zip_collect stopped there: no classmate's upload was collected. So did an upload that is no archive, and one whose
    members are a file and a folder of one name, and (r63) one with a member setuptools will not write where its name
    says: above the archive's folder, at an absolute path, or with a backslash (a Windows tool's separator)."""
    collected, said = zip_collect(tmp_path, None, UPLOADS, loose={
        "ps1_alice_attempt_2026-11-20 09:00:00_work.zip": zipped({f"{A}.ipynb": "alice's"}),
        "ps1_bob_attempt_2026-11-20 08:00:00_work.zip": zipped({f"{A}.ipynb": "bob's"}),
        "ps1_mallory_attempt_2026-11-20 10:00:00_work.zip": _corrupt(zipped({f"{A}.ipynb": "x" * 100})),
        "ps1_trudy_attempt_2026-11-20 11:00:00_work.zip": b"no archive at all",
        "ps1_oscar_attempt_2026-11-20 12:00:00_work.zip": zipped({"a": "a file", "a/b": "in a folder of that name"}),
        "ps1_peggy_attempt_2026-11-20 13:00:00_work.zip": zipped({f"{A}.ipynb": "{}", "../up.txt": "up"}),
        "ps1_victor_attempt_2026-11-20 14:00:00_work.zip": zipped({f"{A}.ipynb": "{}", "/abs.txt": "abs"}),
        "ps1_walter_attempt_2026-11-20 15:00:00_work.zip": zipped({f"work\\{A}.ipynb": "{}"})})
    assert collected == {"alice": ("alice's", "2026-11-20 09:00:00"), "bob": ("bob's", "2026-11-20 08:00:00")}
    for who in ("mallory_attempt_2026-11-20 10:00:00", "trudy_attempt_2026-11-20 11:00:00",
                "oscar_attempt_2026-11-20 12:00:00", "peggy_attempt_2026-11-20 13:00:00",
                "victor_attempt_2026-11-20 14:00:00", "walter_attempt_2026-11-20 15:00:00"):
        assert f"{who}_work.zip: it could not be unpacked" in said, said
