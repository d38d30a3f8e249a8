"""The student's kernel in a bubblewrap sandbox.

What the kernel sees: the system's and Python's files read-only, its own scratch working
directory (a copy of the submission's folder) and a private /tmp writable, and two exchange
folders shared with the judge (the agent and the judge's socket read-only, the kernel's own
sockets writable).
The course directory, the gradebook, other students' files, the grader, its fixtures and the
reference, and the instructor's home are not there at all.

What it cannot do: reach any network (only the IPC sockets in the shared folder connect it to
the judge), outlive its grading (its own PID namespace dies with it), hold more memory, CPU time
or processes than `limits.py` allows. When run as root the kernel runs as an unprivileged user,
so those limits hold and system files stay unreadable.

Kernels start warm: each grading process keeps one `WarmParent` (`zygote.py`), a sandbox that
has already imported numpy, torch, matplotlib and ipykernel and forks each kernel into fresh
namespaces of its own (its own /tmp hiding every other job, its own PID namespace, no
capabilities). That saves seconds per notebook. `AUTOGRADER_COLD_KERNELS=1` starts each kernel
in a bubblewrap sandbox of its own instead.

Where bubblewrap is missing or cannot create namespaces (no user namespaces, macOS), the kernel
runs unsandboxed with the same limits, and `warn_once` says loudly what is no longer
guaranteed: the judge's own guarantees (nothing to steal in the kernel) still hold.
"""

import atexit
import functools
import importlib.util
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

from autograder import procfs
from autograder.kernel_client import QuickStartClient
from autograder.limits import CPU_SECONDS, MAX_PROCESSES, MEMORY_LIMIT

# When grading runs as root, each kernel runs as a user of its own, numbered from here by the
# judge's process id: kernels graded in parallel cannot signal, trace or starve each other.
SANDBOX_UID_BASE = 100_000
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group",
              "nsswitch.conf", "alternatives")
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
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


_warned = False


def warn_once():
    global _warned
    if not _warned:
        _warned = True
        print(NO_SANDBOX_WARNING, file=sys.stderr, flush=True)
        warnings.warn(NO_SANDBOX_WARNING, RuntimeWarning, stacklevel=2)


def _apply_limits():
    # (jupyter_client already puts the kernel in a session of its own)
    for limit, value in ((resource.RLIMIT_AS, MEMORY_LIMIT), (resource.RLIMIT_CPU, CPU_SECONDS),
                         (resource.RLIMIT_CORE, 0)):
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


_PR_SET_DUMPABLE = 4
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)  # the C library this process already runs on


def sandbox_uid():
    """The user a kernel started by this process runs as (when grading runs as root)."""
    return SANDBOX_UID_BASE + os.getpid() % 100_000 if os.getuid() == 0 else os.getuid()


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


# What a kernel may learn of the grading process's environment: that it is being graded (as
# nbgrader says it to any kernel), so demos can skip work that neither grade nor feedback needs.
PASSED_ENVIRONMENT = ("NBGRADER_EXECUTION",)


def passed_environment():
    return {name: os.environ[name] for name in PASSED_ENVIRONMENT if name in os.environ}


def bwrap_command(command, workdir, python_roots, shared_ro=(), shared_rw=()):
    """`command` wrapped in bubblewrap, seeing only what the module docstring lists.
    `python_roots` maps each Python folder to where bubblewrap can reach it from (`staged`)."""
    args = [shutil.which("bwrap"), "--unshare-all", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC_FILES:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    roots = sorted(python_roots)
    for root in roots:
        args += ["--ro-bind", python_roots[root], root]
    for hidden in _hidden_package_dirs():
        if any(hidden.startswith(root + os.sep) for root in roots):
            args += ["--tmpfs", hidden]
    for path in shared_ro:
        args += ["--ro-bind", str(path), str(path)]
    for path in [workdir, *shared_rw]:
        args += ["--bind", str(path), str(path)]
    args += ["--chdir", str(workdir), "--clearenv",
             "--setenv", "PATH", f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
             "--setenv", "HOME", "/tmp", "--setenv", "USER", "student", "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "MPLCONFIGDIR", "/tmp", "--setenv", "IPYTHONDIR", "/tmp/.ipython",
             "--setenv", "PYTHONWARNINGS", "ignore", "--setenv", "LANG", "C.UTF-8",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONDONTWRITEBYTECODE", "1"]
    for name, value in passed_environment().items():
        args += ["--setenv", name, value]
    return args + ["--", *command]


class ControlGroups:
    """Control groups that cap a kernel's processes and CPU share, where this machine lets us
    make them (root, with the cgroup v1 `pids` and `cpu` hierarchies writable). Without them the
    per-user process limit still holds, but a kernel may use every core while it runs."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, name):
        self.paths = []
        settings = {"pids": {"pids.max": str(MAX_PROCESSES)},
                    # one core at most: a kernel that spins cannot starve the others
                    "cpu": {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "100000"}}
        if os.getuid() != 0:
            return
        for controller, values in settings.items():
            path = self.ROOT / controller / name
            try:
                path.mkdir()
                for key, value in values.items():
                    (path / key).write_text(value)
            except OSError:
                continue
            self.paths.append(path)

    @property
    def procs_files(self):
        return [str(path / "cgroup.procs") for path in self.paths]

    def remove(self):
        for path in self.paths:
            for _ in range(50):  # the PID namespace is torn down asynchronously
                try:
                    path.rmdir()
                    break
                except OSError:
                    for pid in (path / "cgroup.procs").read_text().split():
                        try:
                            os.kill(int(pid), 9)
                        except OSError:
                            pass
                    time.sleep(0.05)
        self.paths = []


def _join(procs_files):
    """In the child: move this process into the kernel's control groups."""
    pid = str(os.getpid()).encode()
    for name in procs_files:
        fd = os.open(name, os.O_WRONLY)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)


class Enclosure:
    """A folder, and what one bubblewrap sandbox needs around it: its user, the Python folders
    staged where that user can reach them, and its control groups."""

    def __init__(self, prefix="judge-"):
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        os.chmod(self.root, 0o755)
        self.uid = sandbox_uid()
        self.cgroups = ControlGroups(self.root.name)
        # Where bubblewrap finds the Python folders: as they are, or (as root) staged in the
        # sandbox's own mount namespace under this folder, for folders its user cannot reach.
        self.python_roots, self.staging = {}, []
        for index, root in enumerate(_python_roots()):
            if os.getuid() == 0:
                stage = self.root / f"python{index}"
                stage.mkdir(mode=0o755)
                self.staging.append((root, str(stage)))
                self.python_roots[root] = str(stage)
            else:
                self.python_roots[root] = root

    def preexec(self):
        """What the sandbox's first process runs between fork and exec."""
        return functools.partial(_sandboxed_child, self.uid, self.staging, self.cgroups.procs_files)

    def close(self):
        self.cgroups.remove()
        if os.environ.get("AUTOGRADER_KEEP_SANDBOX"):
            print(f"sandbox kept: {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


class SandboxedKernel:
    """The folders of one kernel: the agent and the judge's socket (read-only inside), the
    kernel's own sockets, and a working copy of the submission's folder. In a folder of its own
    (a cold sandbox, with its enclosure) or under the warm parent's (`WarmParent`)."""

    def __init__(self, submission_dir):
        self.submission_dir = Path(submission_dir)
        self.root = None
        self.enclosure = None

    def open(self, warm=None):
        if warm is None:
            self.enclosure = Enclosure()
            self.root, uid = self.enclosure.root, self.enclosure.uid
        else:
            self.root, uid = Path(tempfile.mkdtemp(prefix="job-", dir=warm.jobs)), warm.enclosure.uid
        os.chmod(self.root, 0o755)
        self.inbox = self.root / "inbox"  # judge -> kernel, read-only inside
        self.outbox = self.root / "outbox"  # kernel -> judge: the kernel's ZMQ sockets
        self.workdir = self.root / "work"  # a copy of the submission's folder
        self.inbox.mkdir(mode=0o755)
        self.outbox.mkdir()
        _copy_submission(self.submission_dir, self.workdir)
        if os.getuid() == 0:
            for path in [self.outbox, self.workdir, *self.workdir.rglob("*")]:
                os.lchown(path, uid, uid)
        return self

    def close(self):
        if self.enclosure is not None:
            self.enclosure.close()
        elif self.root is not None and not os.environ.get("AUTOGRADER_KEEP_SANDBOX"):
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = self.enclosure = None


MAX_COPIED_FILES = 2000
MAX_COPIED_BYTES = 200 * 1024**2


def _copy_submission(source, target):
    """A working copy of a submission's folder, links kept as links. Bounded, and never into
    a sandbox's own folders: a notebook graded straight from /tmp or a home folder must not
    copy the world (or itself)."""
    budget = {"files": MAX_COPIED_FILES, "bytes": MAX_COPIED_BYTES}

    def ignore(folder, names):
        skipped = {n for n in names if n.startswith(("judge-", "job-"))}
        for name in sorted(set(names) - skipped):
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)  # sockets, pipes, devices: nothing a notebook reads
            elif stat.S_ISREG(mode):
                budget["files"] -= 1
                budget["bytes"] -= os.path.getsize(path)
                if budget["files"] < 0 or budget["bytes"] < 0:
                    skipped.add(name)
        return skipped

    shutil.copytree(source, target, symlinks=True, ignore=ignore)


class HostProcess:
    """A kernel the warm parent forked, driven like the `Popen` jupyter_client expects: its
    monitor process, found by the number the warm parent's PID namespace gives it."""

    stdin = stdout = stderr = None

    def __init__(self, pid):
        self.pid = pid
        self.returncode = None
        self.started = procfs.start_time(pid)  # a process id can be reused once this one is gone

    def poll(self):
        if self.returncode is None:
            try:
                if procfs.state(self.pid) in ("Z", "X") or procfs.start_time(self.pid) != self.started:
                    self.returncode = 0
            except OSError:
                self.returncode = 0
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                self.returncode = 0

    def kill(self):
        self.send_signal(9)

    def terminate(self):
        self.send_signal(15)


class WarmParent:
    """The warm parent (`zygote.py`) of this grading process: one bubblewrap sandbox that has
    imported numpy, torch, matplotlib and ipykernel, and forks each kernel into a fresh sandbox
    of its own. Kernels start in a fraction of a second instead of seconds."""

    def __init__(self):
        self.enclosure = Enclosure(prefix="judge-warm-")
        self.jobs = self.enclosure.root / "jobs"
        self.jobs.mkdir(mode=0o755)
        if os.getuid() == 0:
            os.lchown(self.jobs, self.enclosure.uid, self.enclosure.uid)
        program = self.enclosure.root / "zygote.py"
        program.write_text(Path(__file__).with_name("zygote.py").read_text())
        command = bwrap_command([sys.executable, "-I", str(program)], self.jobs, self.enclosure.python_roots,
                                shared_ro=[program])
        log = open(self.enclosure.root / "zygote.log", "wb")  # noqa: SIM115 - closed below
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        preexec_fn=self.enclosure.preexec(), cwd=self.jobs, text=True)
        log.close()
        ready = self.process.stdout.readline().strip()
        if ready != "READY":
            self.close()
            raise RuntimeError(f"the warm parent did not start: {ready!r}")
        self.host_pid = self._zygote_pid()
        self.warmed = set()

    def _zygote_pid(self):
        """The warm parent's own process (under bubblewrap's), as this machine numbers it."""
        for pid in procfs.descendants(self.process.pid):
            argv = procfs.argv(pid)
            if argv and not argv[0].endswith(b"bwrap") and any(a.endswith(b"zygote.py") for a in argv):
                return pid
        raise RuntimeError("the warm parent's process was not found")

    def alive(self):
        return self.process.poll() is None

    def own_pids(self):
        """The warm parent's own processes (bubblewrap's two and the zygote): everything else
        running as its user belongs to some kernel."""
        pids, todo = set(), [self.process.pid]
        while todo:
            pid = todo.pop()
            pids.add(pid)
            if pid != self.host_pid:
                todo += procfs.children(pid)
        return pids

    def _ask(self, request):
        """One request to the warm parent (a JSON line on its stdin), and its reply."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline() or "{}")

    def warm(self, name):
        """Have the warm parent do the extra warm-up `name` (`zygote.EXTRA_WARM_UPS`), once."""
        if name in self.warmed:
            return
        reply = self._ask({"warm": name})
        if reply.get("warmed") != name:
            raise RuntimeError(f"the warm parent did not warm up {name}: {reply.get('error', 'no answer')}")
        self.warmed.add(name)

    def spawn(self, job, argv, env=None):
        """Fork a kernel for the job folder `job`; its monitor as a HostProcess."""
        reply = self._ask({"job": str(job), "argv": list(argv), "env": dict(env or {})})
        if "pid" not in reply:
            raise RuntimeError(f"the warm parent could not fork a kernel: {reply.get('error', 'no answer')}")
        for _ in range(200):  # the monitor shows up under the warm parent
            for child in procfs.children(self.host_pid):
                try:
                    nspid = procfs.status(child).get("NSpid", [])
                except OSError:
                    continue
                if len(nspid) >= 2 and int(nspid[1]) == reply["pid"]:
                    return HostProcess(int(child))
            time.sleep(0.01)
        raise RuntimeError("the forked kernel's monitor was not found")

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            stream.close()
        self.enclosure.close()


_warm = None


def warm_parent():
    """This process's warm parent, started on first use (None where it cannot run)."""
    global _warm
    if os.environ.get("AUTOGRADER_COLD_KERNELS") or not available():
        return None
    if _warm is None or not _warm.alive():
        if _warm is not None:
            _warm.close()
        _warm = WarmParent()
        atexit.register(_warm.close)
    return _warm


def close_warm_parent():
    """Stop this process's warm parent now, if it has one (it is also stopped at exit)."""
    global _warm
    if _warm is not None:
        _warm.close()
        _warm = None


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs inside `bwrap_command`, talking over IPC sockets.

    Set `.sandbox` (a SandboxedKernel, opened) before starting the kernel. Interrupts go as
    messages: a signal to bubblewrap would not reach the kernel in its PID namespace.
    """

    sandbox = None
    use_bwrap = True
    warm = None  # a WarmParent to fork the kernel from, instead of starting it
    client_factory = Type(QuickStartClient, klass=AsyncKernelClient)  # ready 0.2 s sooner

    async def _async_wait(self, pollinterval=0.1):
        # jupyter_client polls a stopping kernel every 0.1 s, and a graded kernel is gone within a
        # few ms of its shutdown request: each notebook waited most of 0.1 s (0.113 -> 0.045 s for
        # the whole shutdown). A poll reads two small /proc files.
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))

    async def _async_pre_start_kernel(self, **kw):
        self.transport = "ipc"
        self.ip = str(self.sandbox.outbox / "kernel")
        self.connection_file = str(self.sandbox.inbox / "kernel.json")
        kernel_cmd, kw = await super()._async_pre_start_kernel(**kw)
        self.kernel_spec.interrupt_mode = "message"
        os.chmod(self.connection_file, 0o644)
        return kernel_cmd, kw

    def format_kernel_cmd(self, extra_arguments=None):
        command = super().format_kernel_cmd(extra_arguments)
        command[0] = sys.executable if command[0] in ("python", "python3") else command[0]
        if not self.use_bwrap or self.warm is not None:
            return command
        return bwrap_command(command, self.sandbox.workdir, self.sandbox.enclosure.python_roots,
                             shared_ro=[self.sandbox.inbox], shared_rw=[self.sandbox.outbox])

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        kw["cwd"] = str(self.sandbox.workdir)
        if self.warm is not None:
            # Forked by the warm parent instead of started: the command's arguments after the
            # interpreter and `-m ipykernel_launcher` are the kernel's.
            argv = kernel_cmd[kernel_cmd.index("ipykernel_launcher") + 1:]
            process = self.warm.spawn(self.sandbox.root, argv, passed_environment())
            self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, process.pid, None
            self._reconcile_connection_info(self.provisioner.connection_info)
            return
        if self.use_bwrap:
            kw["preexec_fn"] = self.sandbox.enclosure.preexec()
        else:
            kw["preexec_fn"] = _apply_limits
            kw["env"] = dict(kw.get("env") or os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
        # The kernel's own output never reaches the grading process's streams: a process it
        # leaves behind cannot hold the driver's pipe open.
        log = open(self.sandbox.root / "kernel.log", "wb")  # noqa: SIM115 - closed below
        kw["stdout"] = kw["stderr"] = log
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            log.close()
