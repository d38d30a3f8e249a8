"""No file handed in keeps a mode that gives anyone else its rights (`intake.UNSAFE_MODE_BITS`).

Red-teamed in round r44: a copy keeps its source's mode, and an unpacked member the mode its
archive states. Run as root, `nbgrader zip_collect` wrote a student's zip member as a root-owned
set-user-ID file under downloaded/ (nbgrader's unpacker, setuptools', chmods each member as
stated, though it gives none the owner its archive states), and collect copied a
set-user-ID file from the exchange as such into submitted/: a program of the student's, run by
anyone who can reach those folders, with the grader's rights. Each path now takes those bits off.
"""

import io
import logging
import os
import stat
import tarfile
import zipfile

from coursekit import archives, intake

UNSAFE = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH


def _modes(folder):
    return {str(p.relative_to(folder)): stat.S_IMODE(os.lstat(p).st_mode) for p in sorted(folder.rglob("*"))}


def test_an_unpacked_member_keeps_no_set_id_bit(tmp_path):
    member = zipfile.ZipInfo("run")
    member.external_attr = (stat.S_IFREG | 0o6777) << 16
    with zipfile.ZipFile(tmp_path / "eve.zip", "w") as archive:
        archive.writestr(member, b"\x7fELF")
        archive.writestr("nb.ipynb", b"{}")
    with tarfile.open(tmp_path / "mal.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo("run")
        info.mode, info.size, info.uid, info.uname = 0o4755, 4, 0, "root"
        archive.addfile(info, io.BytesIO(b"\x7fELF"))
    out = tmp_path / "out"
    out.mkdir()
    for name in ("eve.zip", "mal.tar.gz"):
        archives.unpack(tmp_path / name, out, [".zip", ".gz"], logging.getLogger("test"))
    modes = _modes(out)
    assert modes["eve/run"] == 0o755 and modes["mal/run"] == 0o755, modes
    assert not any(mode & UNSAFE for mode in modes.values()), modes


def test_an_unpacked_tar_member_is_the_grading_users_whatever_owner_it_states(tmp_path):
    """tarfile, run as root, chowns each member to the owner its archive states (anyone's, a student's
    own account's, who could then rewrite it after collection); setuptools' unpacker, nbgrader's, turns
    that off (`tar_obj.chown`). This holds it to that."""
    with tarfile.open(tmp_path / "mal.tar.gz", "w:gz") as archive:
        for name in ("nb.ipynb", "folder/"):
            info = tarfile.TarInfo(name.rstrip("/"))
            info.type = tarfile.DIRTYPE if name.endswith("/") else tarfile.REGTYPE
            info.mode, info.uid, info.gid = 0o755, 4242, 4343
            info.size = 0 if info.isdir() else 2
            archive.addfile(info, None if info.isdir() else io.BytesIO(b"{}"))
    out = tmp_path / "out"
    out.mkdir()
    archives.unpack(tmp_path / "mal.tar.gz", out, [".gz"], logging.getLogger("test"))
    owners = {str(p.relative_to(out)): (p.lstat().st_uid, p.lstat().st_gid) for p in out.rglob("*")}
    assert set(owners) == {"mal", "mal/nb.ipynb", "mal/folder"}, owners
    assert set(owners.values()) == {(os.geteuid(), os.getegid())}, owners


def test_a_copy_or_a_folder_in_submitted_keeps_no_set_id_bit(tmp_path):
    handed_in = tmp_path / "inbound"
    (handed_in / "sub").mkdir(parents=True)
    for name, mode in (("run", 0o4755), ("group", 0o2750), ("open.ipynb", 0o666), ("sub", 0o3777)):
        path = handed_in / name
        if not path.exists():
            path.write_bytes(b"\x7fELF")
        os.chmod(path, mode)
    assert intake.safe_copy(handed_in, tmp_path / "copied") == []
    copied = _modes(tmp_path / "copied")
    assert copied["run"] == 0o755 and copied["group"] == 0o750 and copied["open.ipynb"] == 0o644, copied
    submitted = tmp_path / "course" / "submitted" / "eve" / "ps1"
    submitted.parent.mkdir(parents=True)
    handed_in.rename(submitted)  # a folder copied into submitted/ by hand, modes and all
    intake.take_in(tmp_path / "course", "ps1", "eve", submitted)
    taken = _modes(submitted)
    assert taken == {"group": 0o750, "open.ipynb": 0o644, "run": 0o755, "sub": 0o755}, taken
