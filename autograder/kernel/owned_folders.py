"""Temporary folders that name the process that made them.

A grading process removes its folders when it is done, but one killed with SIGKILL (a Dask worker
the nanny or the OOM killer ended, a driver killed in the middle) never gets there, and what it
left (a student's copied submission among it) would stay in the temporary folder for good. Each
folder made here names its maker by process id and start time (ids are reused; the pair is not),
so that a later process can tell the folders of the dead from those of the living, and remove the
former.
"""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from autograder.kernel import procfs

OWNER_FILE = "owner"  # in each folder: "<pid> <start time>" of the process that made it
_swept = set()  # the prefixes this process has already looked under


def make(prefix, mode=0o700):
    """A fresh folder under the temporary folder, named `prefix...`, that names this process."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(folder, mode)
    (folder / OWNER_FILE).write_text(f"{os.getpid()} {procfs.start_time(os.getpid())}")
    return folder


def owner_alive(folder):
    """Whether the process that made `folder` still runs (True when unknown)."""
    try:
        pid, started = (int(x) for x in (Path(folder) / OWNER_FILE).read_text().split())
    except (OSError, ValueError):
        return True  # not made here, or being made right now: left alone
    return procfs.start_time(pid) == started


def abandoned(prefix):
    """This user's folders named `prefix...` whose maker no longer runs. Another user's are never
    listed: as root, a folder anyone could make in /tmp is not ours to remove."""
    found = []
    for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            ours = folder.lstat().st_uid == os.getuid()
        except OSError:
            continue
        if ours and folder.is_dir() and not folder.is_symlink() and not owner_alive(folder):
            found.append(folder)
    return found


def first_sweep(prefix):
    """True the first time this process asks about `prefix`: sweeping once per process is enough,
    since what a process leaves behind is found by the next one."""
    if prefix in _swept:
        return False
    _swept.add(prefix)
    return True


@contextlib.contextmanager
def temporary(prefix):
    """As `tempfile.TemporaryDirectory`, for a folder that names this process; the first of each
    process also removes what killed processes left under the same prefix."""
    if first_sweep(prefix):
        for folder in abandoned(prefix):
            shutil.rmtree(folder, ignore_errors=True)
    folder = make(prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
