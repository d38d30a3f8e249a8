"""The files a kernel runs on, copied once per machine onto a tmpfs: kernels read nothing else.

A kernel sees the system's libraries and Python read-only. Bound from the machine's disk, those
folders are shared with every other kernel of the machine through the operating system's caches,
which remember what was asked of them. A name looked up there (one that does not exist, too) is
answered from the name cache about twice as fast for as long as the cache keeps it, and a page of
a file once read stays in the page cache. A kernel that had been lent a reference left its bits
there, one name per bit, and the notebook's kernel, or a classmate graded later, read them back
by timing (red-team round r39: 40 characters of 40; the classmate ran the reference softmax and
kept full marks where its control kept 0.04).

A tmpfs remembers nothing of what is asked of it: every name that exists is always in the name
cache (tmpfs pins them), a name that does not exist is never kept there (tmpfs drops negative
entries at once), and every page is always in memory. So kernels read their programs from a copy
on a tmpfs (`Image`): the interpreter and its standard library, the distributions a kernel imports
(`KERNEL_PACKAGES`, with everything they require), a shell and the common tools
(`SYSTEM_PROGRAMS`), the shared libraries all of those load, and the few files of /etc the loader
reads. Everything else a kernel sees is its own (`zygote.py`).

The copy is made by the first grading process that needs it (about 1.2 GB; seconds), under a lock,
and kept for every later one, until the machine restarts or the environment changes (a new key:
the interpreter's and every distribution's version and install time). As root it sits on a tmpfs
of its own, mounted at IMAGE_MOUNT; as anyone else in a folder of that user's own in /dev/shm, named
with a secret of that user's (`users_home`).
Where it cannot be made, kernels read the disk's files as before and `sandbox` says so loudly.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.metadata
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# What a kernel imports: the notebooks' libraries and the kernel itself (the warm parent imports
# these, `zygote.py`), each with every distribution it requires. Nothing else of the grading
# environment (nbgrader, Dask, the grader's own packages) is in the image.
KERNEL_PACKAGES = ("numpy", "torch", "matplotlib", "ipykernel")
# Parts of the standard library no kernel imports, and the interpreter's own site-packages (a
# virtualenv's interpreter does not read it): left out of the copy.
STDLIB_LEFT_OUT = ("site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip")
# The system's programs a notebook may run (`!ls`, `subprocess.run(["sleep", ...])`): a shell and
# the common tools, with the libraries they load. Any other is "not found", as on a machine
# without it; without a shell, every `!` line of a cell raised and the rest of its cell was lost.
SYSTEM_PROGRAMS = ("sh", "bash", "dash", "env", "ls", "cat", "echo", "printf", "test", "sleep", "true",
                   "false", "pwd", "mkdir", "rmdir", "rm", "cp", "mv", "ln", "touch", "chmod", "head",
                   "tail", "wc", "grep", "sed", "awk", "find", "xargs", "sort", "uniq", "cut", "tr", "tee",
                   "diff", "basename", "dirname", "readlink", "realpath", "mktemp", "stat", "du", "df", "tar",
                   "gzip", "gunzip", "zcat", "uname", "hostname", "id", "whoami", "date", "nproc", "seq",
                   "yes", "timeout", "kill", "ps", "free", "which")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
             "nsswitch.conf", "alternatives")
IMAGE_MOUNT = Path("/run/coursekit-kernel-image")  # as root: a tmpfs of the image's own
SECRET = Path(".cache") / "coursekit" / "kernel-image-secret"  # in a grading user's home: see users_home
FORMAT = 4  # raise when what goes into an image changes, so that older images are not reused
IN_USE = ".in-use"  # held (shared lock) by every process whose kernels read the image
COMPLETE = ".complete"  # written last: an image without it is not finished
LOCK_MODE = 0o600  # of the image folder's lock and each image's IN_USE: see image


@dataclass(frozen=True)
class Image:
    """A finished image: `root` holds each copied file at its own absolute path below it."""

    root: Path

    def source(self, path):
        """Where, on this machine, the image's copy of `path` is (None when it has none)."""
        copy = self.root / os.path.relpath(path, "/")
        return str(copy) if os.path.lexists(copy) else None


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def kernel_distributions():
    """KERNEL_PACKAGES and every distribution they require, in this environment (extras and
    requirements whose markers do not hold here are not followed)."""
    from packaging.requirements import Requirement

    found, todo = {}, list(KERNEL_PACKAGES)
    while todo:
        name = _canonical(todo.pop())
        if name in found:
            continue
        try:
            found[name] = distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional dependency not installed: a kernel cannot import it either
        for line in distribution.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return [found[name] for name in sorted(found)]


def _python_files():
    """Every file of Python a kernel may read: the interpreter, the virtualenv's own files, the
    standard library, and the kernel's distributions."""
    prefix = Path(sys.prefix)
    yield Path(sys.executable)
    yield from (p for p in (prefix / "pyvenv.cfg", *prefix.glob("bin/python*")) if os.path.lexists(p))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for folder, dirs, files in os.walk(stdlib):
        if Path(folder) == stdlib:
            dirs[:] = [d for d in dirs if d not in STDLIB_LEFT_OUT and not d.startswith("config-")]
        yield from (Path(folder) / name for name in files)
    site = Path(sysconfig.get_paths()["purelib"])
    for distribution in kernel_distributions():
        for file in distribution.files or []:
            path = Path(distribution.locate_file(file))
            if os.path.abspath(path).startswith(str(site) + os.sep):  # not scripts in bin/
                yield path


def _system_programs():
    """SYSTEM_PROGRAMS, where this machine has them."""
    for name in SYSTEM_PROGRAMS:
        path = shutil.which(name, path="/usr/bin:/bin")
        if path is not None:
            yield Path(path)


def key():
    """What an image is made of, in a few dozen file times: a new key means a new image."""
    digest = hashlib.sha256(f"{FORMAT} {sys.version} {os.path.realpath(sys.executable)}".encode())
    stdlib = sysconfig.get_paths()["stdlib"]
    for path in [os.path.realpath(sys.executable), stdlib]:
        digest.update(f"{path} {os.stat(path).st_mtime_ns}".encode())
    for distribution in kernel_distributions():
        where = getattr(distribution, "_path", None)  # its .dist-info folder: new on every install
        stamp = os.stat(where).st_mtime_ns if where is not None else 0
        digest.update(f"{distribution.metadata['Name']} {distribution.version} {stamp}".encode())
    return digest.hexdigest()[:16]


def _libraries(files):
    """The shared libraries the ELF files among `files` load, as this machine's loader finds them
    (the image's files themselves included where they load each other)."""
    elves = sorted({os.path.realpath(f) for f in files if f.is_file() and _is_elf(f)})
    found = set()
    for start in range(0, len(elves), 200):
        listing = subprocess.run(["ldd", *elves[start:start + 200]], capture_output=True, text=True).stdout
        for line in listing.splitlines():
            words = line.split()
            path = words[2] if len(words) > 2 and words[1] == "=>" else words[0] if words else ""
            if path.startswith("/") and not path.endswith(":"):
                found.add(path)
    return found


def _is_elf(path):
    try:
        with open(path, "rb") as file:
            return file.read(4) == b"\x7fELF"
    except OSError:
        return False


def _place(path, root, hops=40):
    """Copy `path` into `root` at its own absolute path, and every link met on the way below a
    top-level folder as a link, so that paths resolve in the image as they do here. A top-level
    link (/lib -> usr/lib) is the sandbox's to make (`sandbox.bwrap_command`)."""
    head, rest = "/", Path(os.path.abspath(path)).parts[1:]
    while rest:
        current, rest = os.path.join(head, rest[0]), rest[1:]
        if os.path.islink(current):
            hops -= 1
            if hops < 0:
                return
            link = os.readlink(current)
            if head != "/":
                copy = root / current.lstrip("/")
                if not os.path.lexists(copy):
                    copy.parent.mkdir(parents=True, exist_ok=True)
                    os.symlink(link, copy)
            head, rest = "/", Path(os.path.normpath(os.path.join(head, link))).parts[1:] + rest
        else:
            head = current
    copy = root / head.lstrip("/")
    if os.path.isfile(head) and not os.path.lexists(copy):
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(head, copy)
    elif os.path.isdir(head):
        copy.mkdir(parents=True, exist_ok=True)


def _etc(root):
    """The files of /etc a kernel sees, copied whole (a folder's links as links)."""
    for name in ETC_FILES:
        path, copy = Path("/etc", name), root / "etc" / name
        copy.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.copytree(path, copy, symlinks=True)
        elif path.exists():
            shutil.copyfile(path, copy)


def build(root, name):
    """Fill the empty folder `root` with an image of this environment, whose key is `name`."""
    _etc(root)  # first: a program's link may run through /etc/alternatives
    files = [*_python_files(), *_system_programs()]
    for path in files:
        _place(path, root)
    for path in _libraries(files):
        _place(path, root)
    for folder, dirs, names in os.walk(root):  # the sandbox's user reads it; nobody writes it
        for entry in dirs + names:
            path = os.path.join(folder, entry)
            if not os.path.islink(path) and path != str(root / IN_USE):
                mode = os.stat(path).st_mode
                os.chmod(path, (mode | 0o444 | (0o111 if stat.S_ISDIR(mode) or mode & 0o100 else 0)) & 0o755)
    os.chmod(root, 0o755)
    (root / COMPLETE).write_text(name)


def _home_of(uid):
    return Path(pwd.getpwuid(uid).pw_dir)


def users_home(uid, make=False, anew=False):
    """Where a user other than root keeps its images: a folder in /dev/shm, which is everyone's, named
    with a secret kept in the user's home where only that user can read it (`SECRET`, made with `make`,
    replaced with `anew`). A name anyone could work out was made first by another user, and grading ran
    without an image."""
    secret_file = _home_of(uid) / SECRET
    if anew or (make and not os.path.lexists(secret_file)):
        secret_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = secret_file.with_name(f"{secret_file.name}.{os.getpid()}")
        draft.write_text(secrets.token_hex(16))
        draft.chmod(0o600)
        if anew:
            os.replace(draft, secret_file)
        else:
            with contextlib.suppress(FileExistsError):  # another grading process's is as good
                os.link(draft, secret_file)
            draft.unlink()
    info = os.lstat(secret_file)
    secret = secret_file.read_text().strip()
    others_could = not stat.S_ISREG(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077
    if others_could or not re.fullmatch("[0-9a-f]{32}", secret):
        raise PermissionError(f"{secret_file} is not a secret of this user's only: no image folder can be trusted")
    return Path("/dev/shm") / f"coursekit-kernel-image-{uid}-{secret}"


def _home():
    """The folder images live in, made safe to trust: ours, no link, nobody else can write."""
    if os.getuid() == 0:
        IMAGE_MOUNT.mkdir(mode=0o755, exist_ok=True)
        if not os.path.ismount(IMAGE_MOUNT):
            # tmpfs's own default size, half the machine's memory: a cap, pages are taken as written
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "coursekit-kernel-image",
                            str(IMAGE_MOUNT)], check=True, capture_output=True)
        return trusted(IMAGE_MOUNT)
    return _users_own_home(os.getuid())


def _users_own_home(uid):
    """users_home, made and trusted. Its name is no secret once made (anyone can list /dev/shm), so once
    it is gone (the machine restarted) another user can make it first: then it is named anew, once."""
    try:
        return trusted(_made(users_home(uid, make=True)))
    except PermissionError:
        return trusted(_made(users_home(uid, anew=True)))


def _made(folder):
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o755)
    return folder


def trusted(home):
    """`home`, if it is a folder (not a link) of this user's that nobody else can write; else
    PermissionError: another user who made it first could put programs in every kernel."""
    info = os.lstat(home)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise PermissionError(f"{home} is not this user's own folder: its images cannot be trusted")
    return home


def remove_unused(home, keep):
    """Remove the images no running process reads (their IN_USE lock is free) but `keep`."""
    for image in home.iterdir():
        if image.name in (keep, ".lock") or not image.is_dir():
            continue
        try:
            handle = os.open(image / IN_USE, os.O_RDONLY)
        except OSError:
            shutil.rmtree(image, ignore_errors=True)  # an unfinished build of a killed process
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(image, ignore_errors=True)
        except BlockingIOError:
            pass
        finally:
            os.close(handle)


@functools.lru_cache(maxsize=1)
def image():
    """This environment's image, made if this machine has none yet; held in use (a shared lock,
    for as long as this process lives) so that no other process removes it."""
    home, name = _home(), key()
    root = home / name
    # Both locks are this user's alone to open: a lock needs only a file opened for reading, and another local
    # user (a student with a shell) who held either stalled every grading process of the machine here (r48).
    lock = os.open(home / ".lock", os.O_RDWR | os.O_CREAT, LOCK_MODE)
    os.fchmod(lock, LOCK_MODE)  # one made readable before
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / COMPLETE).exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(mode=0o755)
            (root / IN_USE).touch(mode=LOCK_MODE)
            build(root, name)
        in_use = os.open(root / IN_USE, os.O_RDONLY)
        os.fchmod(in_use, LOCK_MODE)
        fcntl.flock(in_use, fcntl.LOCK_SH)  # kept open: released when this process ends
        remove_unused(home, keep=name)
    finally:
        os.close(lock)
    return Image(root)
