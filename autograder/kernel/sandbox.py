"""The bubblewrap sandbox around student kernels: what a kernel sees, and who it runs as.

What a kernel sees: the system's and Python's files read-only (from the kernel image,
`runtime_image.py`, a copy on a tmpfs, so that nothing one kernel looks up there is remembered
for the next; from the disk where no image can be made), and its job folder (`manager.py`):
the agent and the judge's socket read-only, a working copy of the submission folder, a folder for
its own sockets, and a private /tmp, /dev and /dev/shm, each of those writable places a sized
tmpfs of its own (`zygote.py`), so nothing it writes reaches a disk or any other kernel. The
course directory, the gradebook, other students' files, the grader, its fixtures and the
reference, and the instructor's home are not there at all.

What it cannot do: reach any network (it has none), outlive its grading (its own PID namespace
dies with it), or use more memory, processes or CPU than its envelope allows (`envelope.py`).
When grading runs as root, the kernel runs as an unprivileged user of its own, so those limits
hold and system files stay unreadable.

Kernels start warm (`warm.py`): each grading process keeps one warm parent, a sandbox that has
imported numpy, torch, matplotlib and ipykernel, and forks each kernel into fresh namespaces of
its own. `AUTOGRADER_COLD_KERNELS=1` starts each kernel in a bubblewrap sandbox of its own
instead (for comparison: its working copy and sockets then sit on the grading machine's disk).

Where bubblewrap is missing or cannot create namespaces (no user namespaces, macOS), the kernel
runs unsandboxed with the same per-process limits, and `warn_once` says loudly what is no longer
guaranteed: the judge's own guarantees (nothing to steal in the kernel) still hold.
"""

import functools
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from autograder.kernel import owned_folders, runtime_image
from autograder.kernel.envelope import Envelope, remove_abandoned, remove_orphans
from autograder.kernel.runtime_image import ETC_FILES
from autograder.limits import (
    CPU_SECONDS,
    MAX_OPEN_FILES,
    MAX_PROCESSES,
    MEMORY_LIMIT,
    SANDBOX_CHECK,
    TMP_BYTES,
)

# When grading runs as root, each kernel runs as a user of its own, numbered from here by the
# judge's process id: kernels graded in parallel cannot signal, trace or starve each other.
# Process ids run below PID_MAX_LIMIT (2**22), so every one of them names a user of its own.
# The range lies where no one else hands out ids: above useradd's subordinate ids (/etc/subuid,
# SUB_UID_MAX 600100000; numbered from 100000, the first account's range held every kernel's
# user until now, so its owner could map them in a user namespace of theirs and signal them),
# above systemd-nspawn's container ranges, and below both systemd's foreign range (0x7FFE0000)
# and 2**31, past which some tools take an id for negative.
SANDBOX_UID_BASE = 0x7000_0000
PID_MAX_LIMIT = 2**22  # Linux's highest pid_max
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Our own packages: never visible inside, even when installed into site-packages.
_HIDDEN_PACKAGES = ("autograder", "solutions", "coursekit")

NO_SANDBOX_WARNING = (
    "WARNING: no sandbox (bubblewrap) is available: student kernels run with the grader's rights. "
    "The verdicts are still made outside the kernel, so no submission can read an expected value "
    "or forge its score, but a submission CAN read and write files this user can (the gradebook, "
    "other submissions), reach the network, and leave processes running. Install bubblewrap "
    "(apt-get install -y bubblewrap) and make sure user namespaces are enabled.")


@functools.lru_cache(maxsize=1)
def available():
    """True if bubblewrap can make the namespaces the sandbox needs, here and now."""
    bwrap = shutil.which("bwrap")
    _libc()  # loaded here, in the parent: the child must not load anything
    if bwrap is None or os.environ.get("AUTOGRADER_NO_SANDBOX"):
        return False
    command = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
               "--dev", "/dev", "true"]
    try:
        return subprocess.run(command, preexec_fn=_sandboxed_child, capture_output=True,
                              timeout=SANDBOX_CHECK).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


_warned = False

NO_IMAGE_WARNING = (
    "WARNING: no kernel image could be made ({error}): student kernels read the system's and "
    "Python's files from this machine's disk, whose caches every kernel of the machine shares, so "
    "a kernel that was lent a reference can leave it there for a later kernel to read back by "
    "timing (README, threat model). As root the image is a tmpfs at /run/coursekit-kernel-image; "
    "otherwise a folder of this user's in /dev/shm, named by a secret in this user's home.")


@functools.lru_cache(maxsize=1)
def kernel_image():
    """This environment's kernel image (`runtime_image`), or None, said loudly once, where none
    can be made (no room, no tmpfs, a folder that is not ours)."""
    try:
        return runtime_image.image()
    except (OSError, subprocess.SubprocessError) as error:
        _say_loudly(NO_IMAGE_WARNING.format(error=error))
        return None


def _say_loudly(text):
    """`text` on stderr, for whoever runs grading, and as a RuntimeWarning, for a program that grades."""
    print(text, file=sys.stderr, flush=True)
    warnings.warn(text, RuntimeWarning, stacklevel=3)


def warn_once(say=True):
    """Say NO_SANDBOX_WARNING, the first time only; `say=False` only counts it as said (a process
    whose driver, on the same machine, says it for everyone)."""
    global _warned
    if not _warned:
        _warned = True
        if say:
            _say_loudly(NO_SANDBOX_WARNING)


def _apply_limits():
    # (jupyter_client already puts the kernel in a session of its own)
    for limit, value in ((resource.RLIMIT_AS, MEMORY_LIMIT), (resource.RLIMIT_CPU, CPU_SECONDS),
                         (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NOFILE, MAX_OPEN_FILES)):
        resource.setrlimit(limit, (value, value))


def _processes_of(uid):
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                continue
    return count


_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_MNT_DETACH = 2


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)  # the C library this process already runs on


def sandbox_uid():
    """The user a kernel started by this process runs as (when grading runs as root)."""
    return uid_of_grader(os.getpid()) if os.getuid() == 0 else os.getuid()


def uid_of_grader(pid):
    """The sandbox user of the grading process `pid`: one of its own while it lives, since no two
    live processes share an id. (Numbered modulo 100000 until now, graders 100000 apart shared a
    user where pid_max is higher, as systemd sets it, and so its count of processes.)"""
    return SANDBOX_UID_BASE + pid


def _stage(staging):
    """As root, in a mount namespace of the child's own: bind each Python folder at a path the
    sandbox user can reach (pyenv's Python under /root, say, is not), for bubblewrap to bind."""
    libc = _libc()
    if libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes_errno(), "unshare(CLONE_NEWNS)")
    if libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        raise OSError(ctypes_errno(), "mount --make-rprivate /")
    for source, target in staging:
        if libc.mount(source.encode(), target.encode(), None, _MS_BIND | _MS_REC, None) != 0:
            raise OSError(ctypes_errno(), f"mount --bind {source}")


def ctypes_errno():
    import ctypes

    return ctypes.get_errno()


def _sandboxed_child(uid=None, staging=(), cgroups=()):
    """In the child between fork and exec (so: nothing that imports or starts processes)."""
    _join(cgroups)
    _apply_limits()
    if staging and os.getuid() == 0:
        _stage(staging)
    if os.getuid() == 0:
        uid = uid or sandbox_uid()
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    # Counted per user, over all of that user's processes and threads: leave room for those
    # the user already runs (other kernels graded in parallel, the instructor's own).
    allowed = _processes_of(os.getuid()) + MAX_PROCESSES
    resource.setrlimit(resource.RLIMIT_NPROC, (allowed, allowed))


def _hidden_package_dirs():
    dirs = []
    for name in _HIDDEN_PACKAGES:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.realpath(location))
    return dirs


def _python_roots():
    """The interpreter's and the environment's folders (the venv, its base Python)."""
    roots = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.realpath(os.path.dirname(os.path.realpath(sys.executable)))}
    return sorted(r for r in roots if not any(r != o and r.startswith(o + os.sep) for o in roots))


# glibc's threshold (bytes) above which an allocation is a mapping of its own, given back whole once freed: its own
# starting value, kept fixed. By default glibc raises it to the size of each such block freed, so that the next
# blocks of that size come from the heap, where freed memory stays: 05's memory cases then count what an honest
# loop of blocks left behind, not what it held at once (r58: a torch style in float64 peaked at 19.5 MiB, over the
# limit, and 12.4 with it fixed; the reference's style 7.4 and 5.9; a whole float16 score matrix 21.6 either way).
MMAP_THRESHOLD = 128 * 1024

# What a kernel may learn of the grading process's environment: that it is being graded (as
# nbgrader says it to any kernel), so demos can skip work that neither grade nor feedback needs.
PASSED_ENVIRONMENT = ("NBGRADER_EXECUTION",)


def passed_environment():
    return {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}


def _real_system_dirs():
    """The folders of _SYSTEM_DIRS this machine has as folders (not links, which the sandbox makes again)."""
    return [p for p in _SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)]


def disk_view(python_roots):
    """bubblewrap's arguments for what a kernel sees read-only, read from the machine's disk (where
    no kernel image could be made). `python_roots` maps each Python folder to where bubblewrap can
    reach it from (`staged`)."""
    args = []
    for path in _real_system_dirs():
        args += ["--ro-bind", path, path]
    for path in [os.path.join("/etc", name) for name in ETC_FILES]:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    roots = sorted(python_roots)
    for root in roots:
        args += ["--ro-bind", python_roots[root], root]
    for hidden in _hidden_package_dirs():
        if any(hidden.startswith(root + os.sep) for root in roots):
            args += ["--tmpfs", hidden]
    return args


def image_view(image):
    """bubblewrap's arguments for what a kernel sees read-only, read from `image` (a
    `runtime_image.Image`): each folder it holds, at the path it was copied from."""
    system = _real_system_dirs()
    paths = system + [os.path.join("/etc", name) for name in ETC_FILES]
    paths += [r for r in _python_roots() if not any(r == d or r.startswith(d + os.sep) for d in system)]
    args = []
    for path in paths:
        source = image.source(path)
        if source is not None:
            args += ["--ro-bind", source, path]
    return args


def bwrap_command(command, workdir, view, shared_ro=(), shared_rw=()):
    """`command` wrapped in bubblewrap, seeing only what the module docstring lists: `view` is the
    read-only rest (`image_view` or `disk_view`)."""
    args = [shutil.which("bwrap"), "--unshare-all", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp"]
    for path in [p for p in _SYSTEM_DIRS if os.path.islink(p)]:
        args += ["--symlink", os.readlink(path), path]
    args += view
    for path in shared_ro:
        args += ["--ro-bind", str(path), str(path)]
    for path in [workdir, *shared_rw]:
        args += ["--bind", str(path), str(path)]
    # bubblewrap's root is a tmpfs without a size, and every kernel the warm parent forks shares
    # it: a file written in `/` was read by the next student graded on that worker, and its pages
    # outlived the writer's envelope (red-team round r44). Read-only once the mount points above
    # are made; a kernel's own namespaces lock it so (`zygote.py`).
    args += ["--remount-ro", "/"]
    args += ["--chdir", str(workdir), "--clearenv",
             "--setenv", "PATH", f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
             "--setenv", "HOME", "/tmp", "--setenv", "USER", "student", "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "MPLCONFIGDIR", "/tmp", "--setenv", "IPYTHONDIR", "/tmp/.ipython",
             "--setenv", "PYTHONWARNINGS", "ignore", "--setenv", "LANG", "C.UTF-8",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
             "--setenv", "MALLOC_MMAP_THRESHOLD_", str(MMAP_THRESHOLD)]
    for name, value in passed_environment().items():
        args += ["--setenv", name, value]
    return args + ["--", *command]


def _join(procs_files):
    """In the child: move this process into the kernel's control groups."""
    pid = str(os.getpid()).encode()
    for name in procs_files:
        fd = os.open(name, os.O_WRONLY)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)


JOBS = "jobs"  # in a warm parent's enclosure: its kernels' job folders (`warm.WarmParent`)
_PREFIX = "judge-"


def reap_abandoned():
    """Remove what enclosures of killed grading processes left: their folders (a kernel's copy of a
    submission among them) and control groups. A grading process removes its own at exit, but a
    Dask worker killed with SIGKILL, or a driver killed in the middle, never gets there. Done once
    per process, when its first enclosure is made."""
    if not owned_folders.first_sweep(_PREFIX):
        return
    for folder in owned_folders.abandoned(_PREFIX):
        remove_abandoned(folder.name)
        if os.getuid() == 0 and os.path.ismount(folder / JOBS):
            _unmount(folder / JOBS)
        shutil.rmtree(folder, ignore_errors=True)
    # Groups whose folder is gone already: lost by a grader that removed the one but not the other
    remove_orphans({f.name for f in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*")}, _PREFIX)


def _unmount(folder):
    _libc().umount2(str(folder).encode(), _MNT_DETACH)  # a folder that is no mount point: nothing


class Enclosure:
    """A folder, and what one bubblewrap sandbox needs around it: its user, the Python folders
    staged where that user can reach them, and its envelope (control groups)."""

    def __init__(self, prefix=_PREFIX):
        reap_abandoned()
        self.mounts = []  # tmpfs mounts below `root` (`own_tmpfs`), unmounted when it is removed
        self.root = owned_folders.make(prefix, mode=0o755)
        self.uid = sandbox_uid()
        self.envelope = Envelope(self.root.name)
        # What the kernel sees read-only: the kernel image (`runtime_image`), or, where none
        # could be made, the disk's files, with each Python folder (as root) staged in the
        # sandbox's own mount namespace under this folder, for folders its user cannot reach.
        self.staging = []
        image = kernel_image()
        if image is not None:
            self.view = image_view(image)
            return
        python_roots = {}
        for index, root in enumerate(_python_roots()):
            if os.getuid() == 0:
                stage = self.root / f"python{index}"
                stage.mkdir(mode=0o755)
                self.staging.append((root, str(stage)))
                python_roots[root] = str(stage)
            else:
                python_roots[root] = root
        self.view = disk_view(python_roots)

    def own_tmpfs(self, folder, size):
        """As root, a tmpfs of at most `size` bytes over `folder` (below `root`), gone with it; as
        anyone else, nothing (they cannot mount)."""
        if os.getuid() != 0:
            return
        data = f"size={int(size)},mode=0755".encode()
        if _libc().mount(b"tmpfs", str(folder).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, data) != 0:
            raise OSError(ctypes_errno(), f"mount tmpfs on {folder}")
        self.mounts.append(folder)

    def preexec(self):
        """What the sandbox's first process runs between fork and exec."""
        return functools.partial(_sandboxed_child, self.uid, self.staging, self.envelope.procs_files)

    def close(self):
        self.envelope.remove()
        if os.environ.get("AUTOGRADER_KEEP_SANDBOX"):
            print(f"sandbox kept: {self.root}", file=sys.stderr)
        else:
            for folder in self.mounts:
                _unmount(folder)
            shutil.rmtree(self.root, ignore_errors=True)
