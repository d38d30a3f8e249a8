"""One graded kernel: its job folder, its envelope, and the jupyter_client manager that starts it.

A job folder holds what the judge and the kernel exchange: `inbox` (the connection file, the
agent and the judge's socket; read-only inside), `submission` (the judge's bounded copy of the
submission folder, links kept as links and never followed; read-only inside), and two mount
points the kernel's monitor covers with sized tmpfs mounts of the kernel's own (`zygote.py`):
`work`, its working copy of `submission`, and `outbox`, where it binds its ZeroMQ sockets. Those
two exist only in the kernel's mount namespace, so nothing it writes lands on the grading
machine's disk or in any other kernel's view; the judge reaches its sockets through
`/proc/<monitor>/root`, which shows the kernel's own mounts.
"""

import functools
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

from autograder.kernel import sandbox
from autograder.kernel.client import QuickStartClient
from autograder.kernel.envelope import Envelope, kernel_group
from autograder.kernel.relay import Relay
from autograder.limits import MAX_COPIED_BYTES, MAX_COPIED_ENTRIES


class SandboxedKernel:
    """The job folder and envelope of one notebook's kernel (and of the kernels that replace it
    after a restart). In a folder of its own (a cold sandbox, with its enclosure) or under the warm
    parent's (`warm.WarmParent`)."""

    def __init__(self, submission_dir):
        self.submission_dir = Path(submission_dir)
        self.root = self.enclosure = self.envelope = None
        self.forked = False  # whether the kernel's outbox is its own tmpfs (a warm kernel)
        self.relay = None  # between the judge's ZeroMQ sockets and the kernel's (`relay.py`)
        self.owns_envelope = True

    def open(self, warm=None, envelope=None):
        """`envelope`: another kernel's of the same submission (`lending.py`), to share its
        budgets; it is that kernel's to remove. Only with a warm parent."""
        if warm is None:
            self.enclosure = sandbox.Enclosure()
            self.root, uid, self.envelope = self.enclosure.root, self.enclosure.uid, self.enclosure.envelope
        else:
            self.root = Path(tempfile.mkdtemp(prefix="job-", dir=warm.jobs))
            uid, self.owns_envelope = warm.enclosure.uid, envelope is None
            self.envelope = envelope if envelope is not None else Envelope(
                kernel_group(warm.enclosure.root.name, self.root.name))
        os.chmod(self.root, 0o755)
        self.inbox = self.root / "inbox"  # judge -> kernel, read-only inside
        self.outbox = self.root / "outbox"  # the kernel's ZeroMQ sockets
        self.workdir = self.root / "work"  # the kernel's working copy of the submission folder
        self.inbox.mkdir(mode=0o755)
        self.outbox.mkdir()
        (self.root / "relay").mkdir(mode=0o700)
        self.relay = Relay()
        # Warm kernels copy `submission` into a tmpfs at `work` themselves; a cold one works on
        # this copy, on disk.
        copy = self.workdir if warm is None else self.root / "submission"
        copy_submission(self.submission_dir, copy)
        self.workdir.mkdir(exist_ok=True)
        if os.getuid() == 0:
            for path in [self.outbox, self.workdir, copy, *copy.rglob("*")]:
                os.lchown(path, uid, uid)
        return self

    @property
    def sockets(self):
        """Where this process reaches the kernel's outbox: a link, kept by the judge, to the
        outbox as the kernel's monitor sees it (its own tmpfs, mounted `nosymfollow`, so no link
        the kernel makes there is ever followed from outside)."""
        return self.root / "sockets" if self.forked else self.outbox

    def link_sockets(self, monitor_pid):
        """Point `sockets` at the outbox of the kernel whose monitor is `monitor_pid` (again
        after a restart: clients reconnect to the same path)."""
        self.forked = True
        link = self.root / "sockets"
        temporary = self.root / "sockets.new"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(f"/proc/{monitor_pid}/root{self.outbox}")
        temporary.replace(link)

    def host_path(self, inner):
        """Where this process reaches `inner`, a path in the kernel's outbox as it sees it: through the relay,
        which listens for each of the kernel's sockets (`relay_sockets`) and bounds what each message holds."""
        return str(inner).replace(str(self.outbox), str(self.root / "relay"), 1)

    def kernel_socket(self, inner):
        """Where this process reaches the kernel's own socket `inner` (in its outbox as it sees it): the relay's way."""
        return str(inner).replace(str(self.outbox), str(self.sockets), 1)

    def relay_sockets(self, base, ports):
        """Relay the judge's connections to the kernel's socket `base`-`port` (`base` in its outbox) of each of
        `ports`, from the same name under `relay` (once each: a restarted kernel binds the same ones)."""
        for port in ports:
            inner = f"{base}-{port}"
            path = Path(self.host_path(inner))
            if not path.exists():
                self.relay.listen(path, functools.partial(self.kernel_socket, inner))

    def close(self):
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        if self.enclosure is not None:
            self.enclosure.close()
        else:
            if self.envelope is not None and self.owns_envelope:
                self.envelope.remove()
            if self.root is not None and not os.environ.get("AUTOGRADER_KEEP_SANDBOX"):
                shutil.rmtree(self.root, ignore_errors=True)
        self.root = self.enclosure = self.envelope = None


def copy_submission(source, target):
    """A copy of a submission's folder for its kernel: regular files, folders and links only, within
    MAX_COPIED_ENTRIES (each of them one: a warm kernel copies this copy again, into a tmpfs of
    TMPFS_INODES) and MAX_COPIED_BYTES (the files'). Links are kept as links (never followed: the
    grading process may have rights the student has not), and sockets, pipes and devices are left
    out. Never into a sandbox's own folders: a notebook graded straight from /tmp must not copy the
    world."""
    budget = {"entries": MAX_COPIED_ENTRIES, "bytes": MAX_COPIED_BYTES}

    def ignore(folder, names):
        skipped = {n for n in names if n.startswith(("judge-", "job-"))}
        for name in sorted(set(names) - skipped):
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                skipped.add(name)  # sockets, pipes, devices: nothing a notebook reads
            else:
                budget["entries"] -= 1
                budget["bytes"] -= info.st_size if stat.S_ISREG(info.st_mode) else 0
                if budget["entries"] < 0 or budget["bytes"] < 0:
                    skipped.add(name)
        return skipped

    shutil.copytree(source, target, symlinks=True, ignore=ignore)


class SandboxKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs sandboxed, talking over IPC sockets.

    Set `.sandbox` (a SandboxedKernel, opened) before starting the kernel. Interrupts go as
    messages: a signal to bubblewrap would not reach the kernel in its PID namespace.
    """

    sandbox = None
    use_bwrap = True
    warm = None  # a WarmParent to fork the kernel from, instead of starting it
    oom_score_adj = 0  # see WarmParent.spawn
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
        self.sandbox.relay_sockets(self.ip, [self.shell_port, self.iopub_port, self.stdin_port, self.control_port,
                                             self.hb_port])
        os.chmod(self.connection_file, 0o644)
        return kernel_cmd, kw

    def _make_url(self, channel):
        # The kernel binds its sockets in its own tmpfs; this process reaches them from outside.
        return self.sandbox.host_path(super()._make_url(channel))

    def client(self, **kwargs):
        client = super().client(**kwargs)
        client.ip = self.sandbox.host_path(client.ip)
        return client

    def format_kernel_cmd(self, extra_arguments=None):
        command = super().format_kernel_cmd(extra_arguments)
        command[0] = sys.executable if command[0] in ("python", "python3") else command[0]
        if not self.use_bwrap or self.warm is not None:
            return command
        return sandbox.bwrap_command(command, self.sandbox.workdir, self.sandbox.enclosure.view,
                                     shared_ro=[self.sandbox.inbox], shared_rw=[self.sandbox.outbox])

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        kw["cwd"] = str(self.sandbox.workdir)
        if self.warm is not None:
            # Forked by the warm parent instead of started: the command's arguments after the
            # interpreter and `-m ipykernel_launcher` are the kernel's.
            argv = kernel_cmd[kernel_cmd.index("ipykernel_launcher") + 1:]
            process = self.warm.spawn(self.sandbox.root, argv, self.sandbox.envelope, sandbox.passed_environment(),
                                      self.oom_score_adj)
            self.sandbox.link_sockets(process.pid)
            self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, process.pid, None
            self._reconcile_connection_info(self.provisioner.connection_info)
            return
        if self.use_bwrap:
            kw["preexec_fn"] = self.sandbox.enclosure.preexec()
        else:
            kw["preexec_fn"] = sandbox._apply_limits
            kw["env"] = dict(kw.get("env") or os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
        # The kernel's own output never reaches the grading process's streams: a process it
        # leaves behind cannot hold the driver's pipe open.
        log = open(self.sandbox.root / "kernel.log", "wb")  # noqa: SIM115 - closed below
        kw["stdout"] = kw["stderr"] = log
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            log.close()
