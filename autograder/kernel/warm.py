"""The warm parent of a grading process: one bubblewrap sandbox that has imported numpy, torch,
matplotlib and ipykernel (`zygote.py`) and forks each kernel into a fresh sandbox of its own.
Kernels start in a fraction of a second instead of seconds.

A forked kernel's monitor starts stopped: `WarmParent.spawn` moves it into the kernel's envelope
(`envelope.py`) before it runs on, so everything the kernel starts is counted there.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import TypedDict

from autograder.kernel import procfs, sandbox
from autograder.kernel.envelope import Envelope
from autograder.limits import (
    JOBS_BYTES,
    OUTBOX_BYTES,
    SCRATCH_BYTES,
    SHM_BYTES,
    TMP_BYTES,
    TMPFS_INODES,
    WARM_PARENT_START,
)


class MountSizes(TypedDict):
    """The sized tmpfs mounts a forked kernel gets (`zygote.MOUNTS` names them): bytes each, and
    the files and folders each may hold."""

    tmp: int
    shm: int
    work: int
    outbox: int
    inodes: int


class SpawnRequest(TypedDict):
    """What the judge asks the warm parent for, one JSON line: a kernel for a job folder."""

    job: str
    argv: list[str]
    env: dict[str, str]
    mounts: MountSizes


MOUNT_SIZES = MountSizes(tmp=TMP_BYTES, shm=SHM_BYTES, work=SCRATCH_BYTES, outbox=OUTBOX_BYTES, inodes=TMPFS_INODES)


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
    """The zygote in its sandbox, and the requests this process sends it."""

    def __init__(self):
        self.enclosure = sandbox.Enclosure(prefix="judge-warm-")
        self.jobs = self.enclosure.root / sandbox.JOBS
        self.jobs.mkdir(mode=0o755)
        # A job folder is where a kernel may look names up, and the kernel that replaces one after
        # a restart has the same: on the disk, a name looked up stays in the machine's name cache,
        # and r44's kernel lent a reference (in the notebook's own, as a notebook that holds more
        # than LENDING_ROOM makes it) looked up one per 1 bit, which the fresh kernel read back by
        # timing. A tmpfs keeps no name that does not exist (`runtime_image.py`).
        self.enclosure.own_tmpfs(self.jobs, JOBS_BYTES)
        if os.getuid() == 0:
            os.lchown(self.jobs, self.enclosure.uid, self.enclosure.uid)
        program = self.enclosure.root / "zygote.py"
        program.write_text(Path(__file__).with_name("zygote.py").read_text())
        command = sandbox.bwrap_command([sys.executable, "-I", str(program)], self.jobs,
                                        self.enclosure.view, shared_ro=[program])
        log = open(self.enclosure.root / "zygote.log", "wb")  # noqa: SIM115 - closed below
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                        preexec_fn=self.enclosure.preexec(), cwd=self.jobs, text=True)
        log.close()
        ready = self._line(WARM_PARENT_START)
        if ready != "READY":
            self.close()
            raise RuntimeError(f"the warm parent did not start: {ready!r}")
        self.host_pid = self._zygote_pid()
        self.warmed = set()

    def _line(self, timeout):
        """The zygote's next line, or '' when none comes within `timeout` seconds."""
        if not select.select([self.process.stdout], [], [], timeout)[0]:
            return ""
        return self.process.stdout.readline().strip()

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

    def _ask(self, request, timeout=60):
        """One request to the warm parent (a JSON line on its stdin), and its reply."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        try:
            return json.loads(self._line(timeout) or "{}")
        except ValueError:
            return {}

    def warm(self, name):
        """Have the warm parent do the extra warm-up `name` (`zygote.EXTRA_WARM_UPS`), once."""
        if name in self.warmed:
            return
        reply = self._ask({"warm": name})
        if reply.get("warmed") != name:
            raise RuntimeError(f"the warm parent did not warm up {name}: {reply.get('error', 'no answer')}")
        self.warmed.add(name)

    def spawn(self, job: str | os.PathLike, argv: list[str], envelope: Envelope,
              env: dict[str, str] | None = None, oom_score_adj: int = 0) -> HostProcess:
        """Fork a kernel for the job folder `job`, inside `envelope`; its monitor as a HostProcess.
        `oom_score_adj` (inherited by all it starts): 1000 makes it the first the kernel kills
        when the envelope runs out of memory (a lending kernel, before the notebook's own)."""
        request = SpawnRequest(job=str(job), argv=list(argv), env=dict(env or {}), mounts=MOUNT_SIZES)
        reply = self._ask(dict(request))
        if "pid" not in reply:
            raise RuntimeError(f"the warm parent could not fork a kernel: {reply.get('error', 'no answer')}")
        for _ in range(200):  # the monitor shows up under the warm parent
            for child in procfs.children(self.host_pid):
                try:
                    nspid = procfs.status(child).get("NSpid", [])
                except OSError:
                    continue
                if len(nspid) >= 2 and int(nspid[1]) == reply["pid"]:
                    if oom_score_adj:
                        try:
                            Path(f"/proc/{child}/oom_score_adj").write_text(str(oom_score_adj))
                        except OSError:
                            pass  # not ours to raise: it is killed as any other process of the envelope
                    envelope.admit(int(child))  # before it runs on: it waits, stopped
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
    if os.environ.get("AUTOGRADER_COLD_KERNELS") or not sandbox.available():
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
