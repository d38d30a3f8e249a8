"""Files handed in are data (coursekit/intake.py, coursekit/nbgrader_plugins.py), and every CSV is safe in
a spreadsheet (coursekit/csvsafe.py).

A submission folder with a link to a root-only file, a link to /dev/zero, a link to a folder, a
FIFO, a socket, a hard link to someone else's file and an oversized file: `safe_copy` (collect,
zip_collect, the worker's copy) and `quarantine` (both autograde paths) take in the regular files
only, never read what the others point to, and say which were dropped and why. `nbgrader
collect` runs for real, through the exchange, with the course's nbgrader_config.py. Grading such
a folder through `nbgrader autograde` and `coursekit autograde`: tests/test_class_grading.py.
"""

import csv
import io
import os
import socket
import stat
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from coursekit import csvsafe, grading, handed_in, intake
from coursekit.course_dir import CourseDir
from coursekit.paths import with_interpreter_on_path

SECRET = Path("/etc/shadow")  # root-only: what a student would like the grader to copy for them
A = "01_simplified_self_attention"


def hostile_folder(folder):
    """A submission folder with one of everything that must not be taken in -> {name: reason word}."""
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    (folder / "data").mkdir()
    (folder / "data" / "table.csv").write_text("1,2\n")
    os.symlink(SECRET, folder / "secret.txt")
    os.symlink("/dev/zero", folder / "zeros.npy")
    os.symlink("/etc", folder / "etc")
    os.mkfifo(folder / "pipe")
    listener, here = socket.socket(socket.AF_UNIX), os.getcwd()
    os.chdir(folder)  # a socket's path is short (108 bytes): bound relative to its folder
    try:
        listener.bind("socket")
    finally:
        os.chdir(here)
        listener.close()
    theirs = folder.parent / "someone-elses.txt"
    theirs.write_text("not yours")
    os.chown(theirs, 54321, 54321)
    os.link(theirs, folder / "hardlink.txt")
    (folder / "huge.bin").write_bytes(b"x" * 2000)
    return {"secret.txt": "symbolic link", "zeros.npy": "symbolic link", "etc": "symbolic link",
            "pipe": "FIFO", "socket": "socket", "hardlink.txt": "hard link", "huge.bin": "over the"}


def test_safe_copy_takes_in_regular_files_only_and_says_why_it_dropped_each_other(tmp_path):
    expected = hostile_folder(tmp_path / "in")
    dropped = intake.safe_copy(tmp_path / "in", tmp_path / "out", max_bytes=1000)
    assert {d.path: d.reason for d in dropped}.keys() == expected.keys()
    for entry in dropped:
        assert expected[entry.path] in entry.reason, entry
    taken = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*"))
    assert taken == ["data", "data/table.csv", "notes.txt"]
    assert not any(p.is_symlink() for p in (tmp_path / "out").rglob("*"))


def test_a_folder_that_is_itself_a_link_is_not_copied(tmp_path):
    os.symlink("/etc", tmp_path / "linked")
    assert [d.path for d in intake.safe_copy(tmp_path / "linked", tmp_path / "out")] == ["."]
    assert not (tmp_path / "out").exists()


def test_quarantine_moves_the_links_themselves_out_of_submitted_and_records_why(tmp_path):
    root = tmp_path / "course"
    folder = root / "submitted" / "eve" / A
    expected = hostile_folder(folder)
    dropped = intake.quarantine(root, A, "eve", folder, max_bytes=1000)
    assert {d.path for d in dropped} == expected.keys()
    assert sorted(p.name for p in folder.iterdir()) == ["data", "notes.txt"]
    away = CourseDir(root).intake(A, "eve") / intake.QUARANTINE
    assert os.readlink(away / "secret.txt") == str(SECRET)  # the link was moved, not its target
    assert SECRET.exists()
    assert intake.recorded(root, A, "eve") == dropped
    assert intake.flags(root, A, "eve") == [f"file dropped: {d}" for d in dropped]


def test_the_autograde_hook_drops_a_linked_notebook_and_a_linked_student_folder(tmp_path):
    root = tmp_path / "course"
    ada = root / "submitted" / "ada" / A
    ada.mkdir(parents=True)
    (ada / f"{A}.ipynb").write_text("{}")
    mallory = root / "submitted" / "mallory" / A
    mallory.mkdir(parents=True)
    os.symlink(ada / f"{A}.ipynb", mallory / f"{A}.ipynb")  # ada's notebook, graded as mallory's
    notebooks = [str(mallory / f"{A}.ipynb")]
    intake.autograde_hook(assignment=A, student="*", notebooks=notebooks)
    assert notebooks == []
    assert [d.path for d in intake.recorded(root, A, "mallory")] == [f"{A}.ipynb"]

    os.symlink(root / "submitted" / "ada", root / "submitted" / "trudy")  # the whole folder
    notebooks = [str(root / "submitted" / "trudy" / A / f"{A}.ipynb")]
    intake.autograde_hook(assignment=A, student="*", notebooks=notebooks)
    assert notebooks == [] and not os.path.lexists(root / "submitted" / "trudy")
    assert [d.reason for d in intake.recorded(root, A, "trudy")] == ["a symbolic link, not followed"]
    assert (ada / f"{A}.ipynb").read_text() == "{}"  # ada's own submission is untouched


def now_stamp(earlier=timedelta()):
    """A time as `nbgrader submit` writes it; honest ones are now (a claim is checked against the
    folder's ctime, coursekit/handed_in.py)."""
    return handed_in.stamp(datetime.now(UTC).replace(tzinfo=None) - earlier)


def test_nbgrader_collect_takes_in_no_link_from_the_exchange(tmp_path):
    """The inbound folder is the student's to write: a real `nbgrader collect`, as configured."""
    course = grading.prepare(tmp_path / "course")
    exchange = tmp_path / "exchange"
    stamp = now_stamp()
    inbound = exchange / "self-attention" / "inbound" / f"eve+{A}+{stamp}"
    expected = hostile_folder(inbound)
    (inbound / f"{A}.ipynb").write_text("{}")
    (inbound / "timestamp.txt").write_text(stamp)
    env = dict(with_interpreter_on_path(os.environ), COURSEKIT_EXCHANGE=str(exchange))
    result = subprocess.run([sys.executable, "-m", "nbgrader", "collect", A, "--CollectApp.check_owner=False"],
                            cwd=course, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    taken = course / "submitted" / "eve" / A
    assert sorted(p.name for p in taken.iterdir()) == sorted([f"{A}.ipynb", "data", "notes.txt",
                                                               "timestamp.txt", "huge.bin"])
    assert not any(p.is_symlink() for p in taken.rglob("*"))
    dropped = {d.path for d in intake.recorded(course, A, "eve")}
    assert dropped == expected.keys() - {"huge.bin"}  # 2 kB is under the course's limit
    assert "secret.txt" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="hands in as two accounts (chown): root only")
def test_nbgrader_collect_takes_no_submission_in_a_classmates_name(tmp_path):
    """Every student may write the inbound folder, and a folder's name says whose submission it is.
    nbgrader's check_owner only warned: a folder named for a classmate, with a later timestamp,
    replaced the classmate's own submission. Here `daemon` and `nobody` are the two students (two
    accounts every system has): nobody's folder in daemon's name is refused, each keeps their own. So is
    nobody's folder in the name of no account: a student's folders in made-up names were each a submission
    to grade, a thousand of them as easily as one."""
    import pwd

    course = grading.prepare(tmp_path / "course")
    exchange = tmp_path / "exchange"
    inbound = exchange / "self-attention" / "inbound"
    folders = {("daemon", "daemon", now_stamp(timedelta(minutes=2))): '{"own": "daemon"}',
               ("daemon", "nobody", now_stamp()): '{"forged": "by nobody"}',
               ("nobody", "nobody", now_stamp(timedelta(minutes=1))): '{"own": "nobody"}',
               ("ghost", "nobody", now_stamp()): '{"made up": "by nobody"}'}
    for (named, owner, stamp), text in folders.items():
        folder = inbound / f"{named}+{A}+{stamp}+{owner}"
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text(text)
        (folder / "timestamp.txt").write_text(stamp)
        for path in (folder, *folder.iterdir()):
            os.chown(path, pwd.getpwnam(owner).pw_uid, -1)
    env = dict(with_interpreter_on_path(os.environ), COURSEKIT_EXCHANGE=str(exchange))
    result = subprocess.run([sys.executable, "-m", "nbgrader", "collect", A], cwd=course, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for student in ("daemon", "nobody"):
        assert (course / "submitted" / student / A / f"{A}.ipynb").read_text() == f'{{"own": "{student}"}}'
    assert "not collected" in result.stderr and "owned by nobody" in result.stderr
    assert not (course / "submitted" / "ghost").exists() and "in ghost's name" in result.stderr


def test_nbgrader_collect_takes_when_a_submission_was_handed_in_from_its_files_not_its_word(tmp_path):
    """The folder's name and timestamp.txt are the student's: renamed to 2020, or set to 1970, they
    hid lateness from the gradebook (red-team round r27). What collect writes in timestamp.txt, and
    uses to choose the newest, is the claim where the folder's files bear it out, else when they
    were last changed (`coursekit/handed_in.py`); each student is told why, in the intake report."""
    course = grading.prepare(tmp_path / "course")
    exchange = tmp_path / "exchange"
    inbound = exchange / "self-attention" / "inbound"
    started = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=1)  # ctime's clock is coarser
    submissions = {  # (student, the time in the folder's name, timestamp.txt or None) -> notebook
        ("eve", now_stamp(timedelta(minutes=1)), "same"): "honest",
        ("mallory", now_stamp(timedelta(minutes=2)), "same"): "older",
        ("mallory", "2020-01-01 09:00:00.000000 UTC", None): "newer, renamed early, stamp deleted",
        ("trudy", now_stamp(timedelta(minutes=1)), "1970-01-01 00:00:00.000000 UTC"): "stamp set to 1970",
    }
    for (student, named, written), text in submissions.items():
        folder = inbound / f"{student}+{A}+{named}"
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").write_text(text)
        if written:
            (folder / "timestamp.txt").write_text(named if written == "same" else written)
    env = dict(with_interpreter_on_path(os.environ), COURSEKIT_EXCHANGE=str(exchange))
    result = subprocess.run([sys.executable, "-m", "nbgrader", "collect", A, "--CollectApp.check_owner=False"],
                            cwd=course, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr

    def taken(student):
        folder = CourseDir(course).submitted_notebook(A, student).parent
        when = datetime.strptime((folder / "timestamp.txt").read_text(), handed_in.TIMESTAMP_FORMAT)
        notes = [d.reason for d in intake.recorded(course, A, student) if d.path == "timestamp.txt"]
        return (folder / f"{A}.ipynb").read_text(), when, notes

    text, when, notes = taken("eve")
    assert (text, notes) == ("honest", []) and when < started
    text, when, notes = taken("mallory")
    assert text == "newer, renamed early, stamp deleted", "the newest was chosen by the forged name"
    assert when >= started and len(notes) == 1 and "it was missing" in notes[0] and "last changed at" in notes[0]
    text, when, notes = taken("trudy")
    assert when < started and len(notes) == 1
    assert "it said 1970-01-01" in notes[0] and "which its files bear out" in notes[0]
    assert intake.flags(course, A, "trudy") == [f"timestamp.txt {notes[0]}"]  # the instructor's
    from nbformat.v4 import new_notebook

    from coursekit.nbgrader_plugins import IntakeNote
    feedback, _ = IntakeNote(course_root=str(course)).preprocess(
        new_notebook(), {"nbgrader": {"assignment": A, "student": "trudy"}})
    (note,) = [cell.source for cell in feedback.cells]  # the student's, at the top of the feedback
    assert note.startswith("**Changed by the grader") and "1970" in note and "Left out" not in note


@pytest.mark.parametrize("named", ["..", ".", ".hidden", "mallory\x1b[2K\nalice", "eve\u202e"])
def test_nbgrader_collect_takes_no_folder_whose_student_id_is_a_path_or_no_line_of_text(tmp_path, named):
    """A student id comes from the inbound folder's name, which the student chooses: `..` would put
    the submission at submitted/../<assignment>, outside submitted/, and `.` at submitted/<assignment>
    (red-team round r27 read this in nbgrader's collect, without running it). Run, nothing is
    collected: collect finds the folders with a glob, whose `*` matches no name that starts with a
    dot. This keeps it so. Nor one whose id is not one line of printable text (r63: a student of no account,
    named with an escape sequence and a newline, wrote a row of its own into the instructor's results table)."""
    course = grading.prepare(tmp_path / "course")
    exchange = tmp_path / "exchange"
    stamp = "2026-11-20 09:00:00.000000 UTC"
    folder = exchange / "self-attention" / "inbound" / f"{named}+{A}+{stamp}+x"
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text(stamp)
    env = dict(with_interpreter_on_path(os.environ), COURSEKIT_EXCHANGE=str(exchange))
    result = subprocess.run([sys.executable, "-m", "nbgrader", "collect", A], cwd=course, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    copied = [p.relative_to(course) for p in course.rglob(f"{A}.ipynb") if p.parts[-3:-1] != ("source", A)]
    assert copied == [], (copied, result.stderr)


def test_zip_collect_copies_loose_files_without_following_links(tmp_path):
    from coursekit.nbgrader_plugins import SafeZipExtractor

    downloads = tmp_path / "downloads"
    hostile_folder(downloads)
    with zipfile.ZipFile(downloads / "eve.zip", "w") as archive:
        archive.writestr(f"eve/{A}.ipynb", "{}")
    extracted = tmp_path / "extracted"
    extracted.mkdir()
    SafeZipExtractor().extract(str(downloads), str(extracted))
    assert (extracted / "eve" / "eve" / f"{A}.ipynb").read_text() == "{}"
    assert (extracted / "notes.txt").read_text() == "mine"
    assert not any(p.is_symlink() or p.name in ("pipe", "socket", "hardlink.txt") for p in extracted.rglob("*"))


@pytest.mark.parametrize("value, shown", [
    ("=2+3", "'=2+3"), ("+1+1", "'+1+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("ada", "ada"), ("-1.5", "-1.5"), ("1e-3", "1e-3"), (-2.0, -2.0),
    # r63: after what an import may trim, full-width and small forms, and digits a spreadsheet does not read
    (" =2+3", "' =2+3"), ("\n@SUM(A1)", "'\n@SUM(A1)"), ("\uff1d2+3", "'\uff1d2+3"), ("\ufe622+3", "'\ufe622+3"),
    ("\uff0d2+3", "'\uff0d2+3"), ("\uff20SUM(A1)", "'\uff20SUM(A1)"), ("-\u0661\u0662", "'-\u0661\u0662"),
    ("\uff11", "\uff11"), (" ada", " ada")])
def test_a_formula_is_shown_as_text_and_a_number_stays_a_number(value, shown):
    assert csvsafe.cell(value) == shown
    handle = io.StringIO()
    csvsafe.Writer(handle).writerow([value])
    assert next(csv.reader(io.StringIO(handle.getvalue())))[0] == str(shown)



def _nested(folder, depth):
    """`depth` folders `d`, each inside the last, under `folder`, with a link at the bottom: made
    through folder descriptors, as a path that long could not be named."""
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.symlink("/etc/shadow", "shadow.txt", dir_fd=fd)
    os.close(fd)


def test_a_thousand_nested_folders_are_dropped_below_the_depth_limit_without_recursion(tmp_path):
    """os.walk and shutil.copytree recurse once per folder: a submission of 1100 nested folders
    raised RecursionError in intake, which stopped `coursekit autograde` for the whole class
    (and would stop `nbgrader collect`). The folder below MAX_SUBMITTED_DEPTH is dropped whole,
    quarantined twice without error, and nothing under it is followed."""
    from autograder.limits import MAX_SUBMITTED_DEPTH

    try:
        submitted = tmp_path / "course" / "submitted" / "deep" / "01"
        submitted.mkdir(parents=True)
        (submitted / "notebook.ipynb").write_text("{}")
        _nested(submitted, 1100)
        too_deep = "/".join(["d"] * (MAX_SUBMITTED_DEPTH + 1))
        assert [d.path for d in intake.unsafe_entries(submitted)] == [too_deep]
        copied = intake.safe_copy(submitted, tmp_path / "copy")
        assert [d.path for d in copied] == [too_deep] and "nested" in copied[0].reason
        assert (tmp_path / "copy" / "notebook.ipynb").is_file()
        assert not (tmp_path / "copy" / too_deep).exists()
        root = tmp_path / "course"
        for _ in range(2):  # a second autograde of the same hand-in finds the first one's quarantine
            assert [d.path for d in intake.quarantine(root, "01", "deep", submitted)] == [too_deep]
            assert not (submitted / too_deep).exists()
            _nested(submitted / "/".join(["d"] * MAX_SUBMITTED_DEPTH), 1100 - MAX_SUBMITTED_DEPTH)
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path)], check=True)  # pytest's own clean-up recurses too


def test_a_dropped_name_that_is_no_text_is_shown_escaped_on_one_line():
    """A link named with bytes that are not UTF-8 (b"\\xff") failed `coursekit autograde`'s saving of
    that student's graded notebook (UnicodeEncodeError from the feedback's note), and a newline in
    a name put a line of the student's choosing among the instructor's flags."""
    from coursekit.nbgrader_plugins import _markdown_text

    dropped = intake.Dropped(os.fsdecode(b"\xff\xfe-x.txt") + "\nsoftmax: GRADER ERROR", "a symbolic link, not followed")
    shown = str(dropped)
    assert shown.isprintable() and "\n" not in shown
    assert shown == "\\udcff\\udcfe-x.txt\\nsoftmax: GRADER ERROR (a symbolic link, not followed)"
    _markdown_text(shown).encode("utf-8")


def test_the_resume_hash_takes_a_name_that_is_no_text_and_a_thousand_nested_folders(tmp_path):
    """`resume.submission_hash` (which `coursekit autograde` without --force runs before intake)
    encoded each name as UTF-8 and walked with os.walk: a file named b"\\xff" failed the recording
    of that student's grades, 1100 nested folders stopped the run. Names are hashed as the bytes
    they are, and a plain folder hashes as before."""
    import hashlib

    from coursekit import resume

    def before(folder):  # the hash as it was, for a folder it could take
        digest = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    plain = tmp_path / "plain"
    for relative in ("b.txt", "a/z.txt", "a/b/c.txt", "c/x.txt", "a.txt"):
        (plain / relative).parent.mkdir(parents=True, exist_ok=True)
        (plain / relative).write_text(relative)
    assert resume.submission_hash(plain) == before(plain)
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / os.fsdecode(b"\xff.npy")).write_bytes(b"x")
    try:
        _nested(odd, 1100)
        assert resume.submission_hash(odd) != resume.submission_hash(plain)
    finally:
        subprocess.run(["rm", "-rf", str(odd)], check=True)


def test_when_a_submission_was_handed_in_is_read_without_entering_a_link(tmp_path):
    """A folder in the exchange that is a link to another (the student's to make) gives its own
    ctime, never those of what it points to."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "submission")
    time.sleep(0.05)  # ctime's clock ticks every few milliseconds
    (target / "later.txt").write_text("changed after the link was made")
    link_changed = datetime.fromtimestamp(os.lstat(tmp_path / "submission").st_ctime, UTC).replace(tzinfo=None)
    assert handed_in.last_change(tmp_path / "submission") == link_changed


def test_a_file_removed_while_it_is_copied_is_still_taken_in_as_it_was_opened(tmp_path, monkeypatch):
    """The folder is the student's to change while collect copies it: a file removed (or swapped)
    after it was opened raised from the copy of its times, ending collect for the whole class."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    os.chmod(folder / "notes.txt", 0o640)
    checked, calls = intake.refusal, []

    def removed_once_opened(info, *args, **kwargs):
        calls.append(info)
        if len(calls) == 2:  # the second look is at what was opened (the first, at the walk's lstat)
            (folder / "notes.txt").unlink()
        return checked(info, *args, **kwargs)

    monkeypatch.setattr(intake, "refusal", removed_once_opened)
    assert intake.safe_copy(folder, tmp_path / "copy") == []
    copied = tmp_path / "copy" / "notes.txt"
    assert copied.read_text() == "mine" and stat.S_IMODE(copied.stat().st_mode) == 0o640


@pytest.mark.parametrize("written, dropped", [
    ("2026-11-20 09:00:00.000000 UTC", False), ("", False), ("  2026-11-20 09:00:00 UTC\n", False),
    ("not a date", True), ("2026-13-45 99:00:00 UTC", True), (b"\xff\xfe", True), ("9" * 2000, True)])
def test_a_timestamp_nbgrader_cannot_read_is_taken_out_before_autograde(tmp_path, written, dropped):
    """nbgrader's autograde failed a submission whose timestamp.txt it could not parse: a student could
    choose "not graded" (red-team round r33). The autograde hook's quarantine takes such a file out;
    one nbgrader reads (or an empty one, which it reads as no time) stays."""
    folder = tmp_path / "submitted" / "eve" / A
    folder.mkdir(parents=True)
    path = folder / "timestamp.txt"
    path.write_bytes(written if isinstance(written, bytes) else written.encode())
    reasons = {d.path: d.reason for d in intake.unsafe_entries(folder)}
    assert ("timestamp.txt" in reasons) == dropped, reasons
    if dropped:
        assert "graded without a time" in reasons["timestamp.txt"]


def test_collect_reads_no_more_of_a_students_timestamp_than_a_time_can_hold(tmp_path, monkeypatch):
    """A timestamp.txt of megabytes (under the file limit, so it is copied) is replaced without being
    parsed whole: dateutil took 2.6 s on these 4.8 MB, and would take about a minute on the 100 MB a
    file may hold, per student, while collect holds the whole class."""
    from nbgrader import utils

    from coursekit.nbgrader_plugins import SafeCollect

    parsed, parse = [], utils.parse_utc
    monkeypatch.setattr(utils, "parse_utc", lambda text: parsed.append(len(text)) or parse(text))
    path = tmp_path / "timestamp.txt"
    path.write_text("2026-11-20 09:00:00 UTC " * 200_000)
    when = datetime(2026, 11, 20, 9, 0)
    (dropped,) = SafeCollect._stamped(path, when, when)
    assert path.read_text() == handed_in.stamp(when) and "it was missing or held no time" in dropped.reason
    assert max(parsed, default=0) <= intake.MAX_TIMESTAMP_BYTES

