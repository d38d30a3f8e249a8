"""What a submission may bring in: regular files and folders, as data; nothing is ever followed.

A student controls every entry of the folder they hand in (through the exchange's inbound folder,
an archive for `zip_collect`, or a folder copied by hand). `shutil.copytree` and `shutil.copy`,
which nbgrader's collect and autograde use, follow links and read devices with the instructor's
rights: a link to /etc/shadow would be copied into autograded/ and the feedback, a link to
/dev/zero or a FIFO would stall the run or fill the disk. Here is the one policy, used by every
path that takes a submission in:

- `coursekit.nbgrader_plugins.SafeCollect` (`nbgrader collect`, configured in nbgrader_config.py) copies
  from the exchange with `safe_copy`;
- `coursekit.nbgrader_plugins.SafeZipExtractor` (`nbgrader zip_collect`) copies an archive folder's loose
  files the same way (archives are unpacked by nbgrader's unpacker, setuptools', which writes
  regular files only: a link or a device in a tar is skipped);
- `autograde_hook` (nbgrader's `Autograde.pre_convert_hook`, run by `nbgrader autograde` and by
  `coursekit autograde` before any file of the submission is read) moves every unsafe entry out
  of submitted/ into the quarantine folder, so nothing after it can follow one.

What is dropped, and why, is recorded per student and assignment (`record`, `recorded`); the
instructor's flags, the exports and the student's feedback say so.
"""

import json
import os
import re
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.errors import one_line
from autograder.kernel_messages import encodable
from autograder.limits import (
    MAX_HANDED_IN_OUTPUTS,
    MAX_NOTEBOOK_CELLS,
    MAX_SUBMITTED_DEPTH,
    MAX_SUBMITTED_FILE_BYTES,
    MAX_SUBMITTED_PATH_BYTES,
)
from autograder.no_links import open_below
from coursekit.course_dir import CourseDir
from coursekit.submission_budget import TOO_MANY, TOO_MUCH, Count

REPORT = "dropped.json"  # in CourseDir.intake: what was moved away, and why
QUARANTINE = "quarantine"


@dataclass(frozen=True)
class Dropped:
    path: str  # relative to the submission folder
    reason: str

    def __str__(self):
        # The name is the student's: bytes that are not UTF-8 (held as lone surrogates) failed the
        # saving of the graded notebook that shows it, and a newline put a line of their choosing
        # among the instructor's flags. Each unprintable character is shown as its escape.
        return f"{one_line(self.path)} ({self.reason})"

    @property
    def replaced(self):
        """Not left out, but replaced by the grader's own (REPLACED, below)."""
        return self.reason.startswith(REPLACED)


# The reason of an entry that was not left out but replaced by the grader's own (timestamp.txt,
# coursekit/handed_in.py): the student and the instructor are told apart from what was dropped.
REPLACED = "replaced: "

KIND_REASONS = {
    stat.S_IFLNK: "a symbolic link, not followed",
    stat.S_IFCHR: "a device, not read",
    stat.S_IFBLK: "a device, not read",
    stat.S_IFIFO: "a FIFO (named pipe), not read",
    stat.S_IFSOCK: "a socket, not read",
}


def refusal(info, owner_uid, max_bytes=MAX_SUBMITTED_FILE_BYTES):
    """Why an entry with lstat `info` may not be taken in ("" if it may). `owner_uid`: the
    submission folder's owner (a hard link to someone else's file is not theirs to hand in)."""
    kind = stat.S_IFMT(info.st_mode)
    if kind == stat.S_IFDIR:
        return ""
    if kind != stat.S_IFREG:
        return KIND_REASONS.get(kind, "not a regular file, not read")
    if info.st_nlink > 1 and info.st_uid != owner_uid:
        return "a hard link to a file its author does not own, not read"
    if info.st_size > max_bytes:
        return f"{info.st_size / 1000**2:.1f} MB, over the {max_bytes / 1000**2:g} MB a file may hold"
    return ""


def too_deep(relative, info):
    """Why a folder at `relative` (inside the submission folder) is left out whole, or "": os.walk,
    shutil.copytree and rmtree recurse once per folder, and 1100 nested folders raised
    RecursionError in them, which stopped the autograde of the whole class; a long enough path
    cannot even be named (PATH_MAX). No honest submission nests that deep."""
    if stat.S_ISDIR(info.st_mode) and (len(relative.parts) > MAX_SUBMITTED_DEPTH
                                       or len(os.fsencode(str(relative))) > MAX_SUBMITTED_PATH_BYTES):
        return f"a folder nested more than {MAX_SUBMITTED_DEPTH} deep or with a longer path, not read"
    return ""


def summarised(dropped):
    """`dropped`, with the entries left out for their number, or for the bytes before them, said once
    each, at the first of them: each is a line of the instructor's flags and the student's feedback."""
    for reason in (TOO_MUCH, TOO_MANY):
        over = [d for d in dropped if d.reason == reason]
        if len(over) > 1:
            dropped = [d for d in dropped if d.reason != reason] + [
                Dropped(over[0].path, f"{reason}, nor the {len(over) - 1} after it")]
    return dropped


def entries_under(folder, enter=lambda relative, info: not too_deep(relative, info)):
    """(path, relative path, lstat) of every entry under `folder`, top-down and in name order, as
    os.walk gives them but without recursion; a folder's entries follow only where
    `enter(relative, info)` is true (by default, where it is not too deep to take in). A folder
    that cannot be listed shows nothing (as os.walk). The resume hash walks with it too."""
    stack = [(Path(folder), Path())]
    while stack:
        here, inside = stack.pop()
        try:
            names = sorted(os.listdir(here))
        except OSError:
            continue
        below = []
        for name in names:
            path, relative = here / name, inside / name
            try:
                info = os.lstat(path)
            except FileNotFoundError:  # removed since the listing (the folder is the student's to change)
                continue
            yield path, relative, info
            if stat.S_ISDIR(info.st_mode) and enter(relative, info):
                below.append((path, relative))
        stack.extend(reversed(below))


def unsafe_entries(folder, max_bytes=MAX_SUBMITTED_FILE_BYTES, notebooks=()):
    """Every entry under `folder` that may not be taken in, the folder itself included (as "."):
    `notebooks`, the assignment's, are never left out for their number or bytes (`Count`)."""
    folder = Path(folder)
    top = os.lstat(folder)
    if not stat.S_ISDIR(top.st_mode):
        return [Dropped(".", refusal(top, top.st_uid, max_bytes) or "not a folder")]
    dropped, count = [], Count(notebooks)

    def enter(relative, info):
        return count.enter(relative) and not too_deep(relative, info)

    for path, relative, info in entries_under(folder, enter):
        reason = count.refusal(relative) or refusal(info, top.st_uid, max_bytes) or too_deep(relative, info)
        if not reason and str(relative) == TIMESTAMP:
            reason = read_time(path)[1]
        if not reason and stat.S_ISREG(info.st_mode):
            reason = count.weigh(relative, info.st_size)
        if reason:
            dropped.append(Dropped(str(relative), reason))
    return dropped


# A submission's time, as nbgrader's submit writes it: one short line.
TIMESTAMP = "timestamp.txt"
MAX_TIMESTAMP_BYTES = 1000


def read_time(path):
    """(the time timestamp.txt holds, as nbgrader reads it (None when it is empty), "") or (None, why it
    holds no time nbgrader can read). nbgrader's autograde fails a submission whose timestamp.txt it
    cannot parse (the command's through an error in nbgrader's own error path), so a student could
    choose "not graded" by writing one (red-team round r33). Taken out, the submission is graded
    without a time, as one handed in without the file; the exchange's collect writes a trusted one
    (`coursekit/handed_in.py`). At most MAX_TIMESTAMP_BYTES are read: the file is the student's."""
    from nbgrader.utils import parse_utc  # nbgrader's own reading of it, in the grader's environment

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as source:
            raw = source.read(MAX_TIMESTAMP_BYTES + 1)
        if len(raw) > MAX_TIMESTAMP_BYTES:
            return None, f"not a submission time: longer than {MAX_TIMESTAMP_BYTES} bytes; graded without a time"
        text = raw.decode("utf-8").strip()
        return (parse_utc(text) if text else None), ""
    except (OSError, UnicodeDecodeError, ValueError, OverflowError, TypeError):
        return None, "not a time nbgrader can read (such as 2026-11-20 09:00:00 UTC); graded without a time"


# Mode bits no copy or unpacked file keeps: set-user-ID and set-group-ID (a student's program,
# copied or unpacked by root or the instructor, ran with the copier's rights for anyone who could
# reach it: r44's zip_collect as root wrote a root-owned set-user-ID file from a student's zip, and
# collect kept one from the exchange), sticky, and write for anyone but the owner.
UNSAFE_MODE_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH


def disarm(folder):
    """Take UNSAFE_MODE_BITS off every file and folder under `folder`, in place: what nbgrader's
    unpacker, or a copy by hand into submitted/, wrote as an archive or a student said. Each is
    changed through what was opened, never through a link."""
    for path, _, info in entries_under(folder):
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)) or not info.st_mode & UNSAFE_MODE_BITS:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            opened = os.fstat(fd)
            if stat.S_ISREG(opened.st_mode) or stat.S_ISDIR(opened.st_mode):
                os.fchmod(fd, stat.S_IMODE(opened.st_mode) & ~UNSAFE_MODE_BITS)
        except OSError:
            pass  # not ours to change: it runs with its owner's rights, no one else's
        finally:
            os.close(fd)


def _copy_file(top, relative, dest, owner_uid, max_bytes, count):
    """Copy the regular file `relative` below the folder `top` without following a link, re-checking
    what was opened (the student may swap the entry, or a folder above it, between the walk and the
    copy), and weighing it in `count` (`Count`). Returns why it was refused, or ""."""
    try:
        fd = open_below(top, relative.parts)
    except OSError as error:  # ELOOP: it, or a folder on its way, became a link
        return f"could not be read safely ({error.strerror})"
    with os.fdopen(fd, "rb") as source:
        opened = os.fstat(fd)
        reason = refusal(opened, owner_uid, max_bytes)
        room = count.room(relative)
        if reason or count.weigh(relative, opened.st_size):
            return reason or TOO_MUCH
        with open(dest, "wb") as target:
            copied = 0
            for block in iter(lambda: source.read(1 << 20), b""):
                copied += len(block)
                if copied > max_bytes or (room is not None and copied > room):  # it grew while being copied
                    target.close()
                    os.unlink(dest)
                    count.settle(relative, opened.st_size, 0)
                    return (f"grew past the {max_bytes / 1000**2:g} MB a file may hold while copied"
                            if copied > max_bytes else f"grew while copied: {TOO_MUCH}")
                target.write(block)
        count.settle(relative, opened.st_size, copied)
    # The times and mode of the file that was opened: the path may name another entry by now, or none.
    os.utime(dest, ns=(opened.st_atime_ns, opened.st_mtime_ns))
    os.chmod(dest, stat.S_IMODE(opened.st_mode) & ~UNSAFE_MODE_BITS)
    return ""


def safe_copy(src, dest, max_bytes=MAX_SUBMITTED_FILE_BYTES, keep=lambda relative: True, notebooks=()):
    """Copy the folder `src` to `dest` (created), regular files and folders only -> [Dropped].
    `keep(relative path)`: False leaves a file out silently (nbgrader's ignore patterns); an entry
    past MAX_SUBMITTED_ENTRIES (`Count`, with `notebooks`) is left out before `keep` is asked."""
    src, dest = Path(src), Path(dest)
    top = os.lstat(src)
    if not stat.S_ISDIR(top.st_mode):
        return [Dropped(".", refusal(top, top.st_uid, max_bytes) or "not a folder")]
    dropped, count = [], Count(notebooks)
    dest.mkdir(parents=True, exist_ok=True)

    def enter(relative, info):
        return count.enter(relative) and keep(str(relative)) and not too_deep(relative, info)

    for _, relative, info in entries_under(src, enter):
        reason = count.refusal(relative)
        if not reason and not keep(str(relative)):
            continue
        reason = reason or refusal(info, top.st_uid, max_bytes) or too_deep(relative, info)
        if not reason and stat.S_ISDIR(info.st_mode):
            (dest / relative).mkdir(exist_ok=True)
            continue
        reason = reason or _copy_file(src, relative, dest / relative, top.st_uid, max_bytes, count)
        if reason:
            dropped.append(Dropped(str(relative), reason))
    return summarised(dropped)


# --- the record: what was dropped, per student and assignment ------------------------------------

def record(root, assignment, student, dropped):
    """Add `dropped` to the student's report (a later collect or autograde adds to it)."""
    if not dropped:
        return
    folder = CourseDir(root).intake(assignment, student)
    folder.mkdir(parents=True, exist_ok=True)
    entries = {d.path: d for d in recorded(root, assignment, student)}
    entries.update({d.path: d for d in dropped})
    tmp = folder / (REPORT + ".tmp")
    tmp.write_text(json.dumps([asdict(d) for d in sorted(entries.values(), key=lambda d: d.path)], indent=1))
    os.replace(tmp, folder / REPORT)


def recorded(root, assignment, student):
    """What intake dropped from this student's submission of `assignment`, as [Dropped]."""
    try:
        entries = json.loads((CourseDir(root).intake(assignment, student) / REPORT).read_text())
        return [Dropped(str(e["path"]), str(e["reason"])) for e in entries]
    except (OSError, ValueError, TypeError, KeyError):
        return []


def forget(root, assignment, student):
    """A new submission replaces the old one: its report goes (the quarantine stays, as evidence)."""
    try:
        (CourseDir(root).intake(assignment, student) / REPORT).unlink()
    except FileNotFoundError:
        pass


def flags(root, assignment, student):
    """The instructor's flags for what intake dropped or replaced (one line per file)."""
    return [f"{one_line(d.path)} {d.reason}" if d.replaced else f"file dropped: {d}"
            for d in recorded(root, assignment, student)]


# --- autograde: quarantine what submitted/ must not hold --------------------------------------------

def quarantine(root, assignment, student, folder, max_bytes=MAX_SUBMITTED_FILE_BYTES):
    """Move every unsafe entry of the submitted `folder` into the student's quarantine (a rename
    moves a link or a device node itself, never what it points to) -> [Dropped], recorded."""
    dropped = unsafe_entries(folder, max_bytes, notebooks=assignment_notebooks(root, assignment))
    if not dropped:
        return []
    away = CourseDir(root).intake(assignment, student) / QUARANTINE
    for entry in dropped:
        source = Path(folder) / entry.path
        target = away / entry.path if entry.path != "." else away / Path(folder).name
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(target):  # an earlier autograde's: set aside, not removed (rmtree recurses)
            os.rename(target, target.with_name(f"{target.name}.{time.time_ns()}"))
        os.rename(source, target)
    dropped = summarised(dropped)
    record(root, assignment, student, dropped)
    return dropped


def assignment_notebooks(root, assignment):
    """The names of the notebooks the course released for `assignment` (none where it has no release)."""
    return {path.name for path in CourseDir(root).release_notebook(assignment).parent.glob("*.ipynb")}


def take_in(root, assignment, student, folder):
    """Make submitted/<student>/<assignment> (`folder`) safe to read: a link in place of the
    folder (or of submitted/<student>) is moved away whole, as is every unsafe entry inside it."""
    folder = Path(folder)
    for linked in (folder.parent, folder):
        if os.path.islink(linked):  # maybe someone else's folder: grade nothing, move the link away
            away = CourseDir(root).intake(assignment, student) / QUARANTINE / linked.name
            away.parent.mkdir(parents=True, exist_ok=True)
            os.rename(linked, away)
            record(root, assignment, student, [Dropped(".", KIND_REASONS[stat.S_IFLNK])])
            return
    if folder.is_dir():
        quarantine(root, assignment, student, folder)
        disarm(folder)
        for notebook in sorted(folder.glob("*.ipynb")):
            trim_notebook(root, assignment, student, notebook)


CELL = b'"cell_type"'  # once in each cell of a notebook's JSON (a key elsewhere, too: an upper bound)
OUTPUT = b'"output_type"'  # likewise, once in each output
SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]", re.ASCII)  # JSON's escape of half a pair, or of a lone one


def trim_notebook(root, assignment, student, notebook):
    """Leave out the cells of `notebook` past its first MAX_NOTEBOOK_CELLS (a graded cell among them
    nbgrader puts back, as one deleted), and its outputs where it holds more than
    MAX_HANDED_IN_OUTPUTS (nbgrader validates each, about 0.1 ms, then clears them all), and each lone
    surrogate its JSON spells (valid JSON, which no UTF-8 file holds: r63's "\\ud800" in a Markdown cell
    failed the write of the autograded notebook, and it was not graded) shown as its escape; the notebook
    as handed in is kept in the quarantine. A notebook that is no JSON, or of an old format, is left as
    it is: nbgrader says why it cannot be graded."""
    raw = notebook.read_bytes()
    if raw.count(CELL) <= MAX_NOTEBOOK_CELLS and raw.count(OUTPUT) <= MAX_HANDED_IN_OUTPUTS \
            and not SURROGATE.search(raw):
        return
    try:
        nb = json.loads(raw)
        cells = nb["cells"]
    except (ValueError, RecursionError, TypeError, KeyError):
        return
    if not isinstance(cells, list):
        return
    said = []
    try:
        json.dumps(nb, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        nb = encodable(nb)
        said.append("its lone surrogates (half of a UTF-16 pair, which no notebook file can hold) are shown as "
                    "their escapes, \\ud800")
    if len(cells) > MAX_NOTEBOOK_CELLS:
        said.append(f"its {len(cells) - MAX_NOTEBOOK_CELLS} cells after the first {MAX_NOTEBOOK_CELLS} were left "
                    "out, not run (a graded one among them was put back as released)")
        nb["cells"] = cells = cells[:MAX_NOTEBOOK_CELLS]
    with_outputs = [c for c in cells if isinstance(c, dict) and isinstance(c.get("outputs"), list)]
    if sum(len(c["outputs"]) for c in with_outputs) > MAX_HANDED_IN_OUTPUTS:
        said.append(f"its {sum(len(c['outputs']) for c in with_outputs)} outputs were cleared before nbgrader read "
                    "them (autograde clears every output)")
        for cell in with_outputs:
            cell["outputs"] = []
    if not said:
        return
    away = CourseDir(root).intake(assignment, student) / QUARANTINE / notebook.name
    away.parent.mkdir(parents=True, exist_ok=True)
    os.replace(notebook, away)
    notebook.write_text(json.dumps(nb, indent=1))
    record(root, assignment, student, [Dropped(notebook.name, REPLACED + "; ".join(said))])


def autograde_hook(assignment, student, notebooks):
    """nbgrader's `Autograde.pre_convert_hook`, run before nbgrader reads any file of a
    submission but its timestamp. nbgrader passes `student` as given on its command line ("*"
    for everyone), so the submission is found from its notebooks' paths
    (submitted/<student>/<assignment>/<notebook>.ipynb); a notebook moved away is taken out of
    `notebooks`, nbgrader's own list (nbgrader then grades it as missing)."""
    if not notebooks:
        return
    folder = Path(notebooks[0]).parent
    root = folder.parent.parent.parent
    take_in(root, folder.name, folder.parent.name, folder)
    notebooks[:] = [n for n in notebooks if os.path.isfile(n) and not os.path.islink(n)]
