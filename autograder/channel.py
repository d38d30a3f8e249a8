"""How the judge's requests reach the agent: in this process, or in a student's kernel.

Both channels move the same JSON text, so what CI checks against the reference in process is
the very codec the judge uses against a kernel.
"""

import json
import os
import signal
import stat
import threading
import time
from contextlib import contextmanager

from autograder import agent
from autograder.errors import KernelStuck
from autograder.limits import INTERRUPT_GRACE, MAX_REPLY_BYTES


@contextmanager
def _interrupt_after(seconds):
    """KeyboardInterrupt in the main thread after `seconds`: the agent answers "interrupted",
    as it does in a kernel that the judge interrupts."""
    if threading.current_thread() is not threading.main_thread() or seconds is None:
        yield
        return

    def expire(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _status_bytes(pid, field):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} for process {pid}")


class PeakMemory:
    """Peak resident memory of a process, read from outside it (Linux /proc)."""

    def reset(self):
        """Start a new peak; the resident memory now."""
        pid = self.pid()
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM to the current VmRSS
        return _status_bytes(pid, "VmRSS")

    def peak(self):
        return _status_bytes(self.pid(), "VmHWM")


class LocalChannel(PeakMemory):
    """An agent over `namespace` in this process: the reference in CI, or a test's namespace."""

    def __init__(self, namespace):
        self.agent = agent.Agent(namespace)

    def pid(self):
        return os.getpid()

    def request(self, payload, timeout):
        text = json.dumps(payload)
        with _interrupt_after(timeout):
            reply = self.agent.handle(json.loads(text))
        return json.loads(json.dumps(reply, allow_nan=True))


class KernelChannel(PeakMemory):
    """The agent inside a running kernel, reached with a blocking client.

    Each request is a file in `inbox` (which the sandbox sees read-only) and a one-line
    execute request that makes the agent answer into a file in `outbox` (the one place the
    sandbox shares writable with the judge). The reply is opened without following links and
    read only up to MAX_REPLY_BYTES, so no kernel can point the judge at another file or make
    it hold more than that.
    """

    def __init__(self, client, inbox, outbox, interrupt, launcher_pid=None):
        self.client = client
        self.launcher_pid = launcher_pid  # the kernel, or the sandbox around it
        self.inbox, self.outbox = str(inbox), str(outbox)
        self.interrupt = interrupt  # callable: interrupt the kernel
        self.request_path = os.path.join(self.inbox, agent.REQUEST_FILE)
        self.reply_path = os.path.join(self.outbox, agent.REPLY_FILE)

    def pid(self):
        """The kernel's process id, as this process sees it: the first process under the one
        that was launched (bubblewrap's, or the warm parent's monitor) that is not bubblewrap."""
        children = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                    children.setdefault(parent, []).append(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        todo = list(children.get(self.launcher_pid, []))
        while todo:
            pid = todo.pop(0)
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as handle:
                    program = handle.read().split(b"\0")[0]
            except OSError:
                continue
            if not program.endswith(b"bwrap"):
                return pid
            todo += children.get(pid, [])
        raise OSError("the kernel's process was not found")

    def _execute(self, code, timeout):
        """Run `code` silently; True once the kernel replied, False if it needed an interrupt."""
        msg_id = self.client.execute(code, silent=True, store_history=False, allow_stdin=False,
                                     stop_on_error=False)
        deadline = time.monotonic() + timeout
        interrupted = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if interrupted:
                    raise KernelStuck()
                self.interrupt()
                interrupted = True
                deadline = time.monotonic() + INTERRUPT_GRACE
                continue
            try:
                reply = self.client.get_shell_msg(timeout=min(left, 1.0))
            except Exception:  # noqa: BLE001 - queue.Empty: keep waiting until the deadline
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return not interrupted

    def boot(self, agent_path, timeout):
        self._execute(agent.boot_code(agent_path), timeout)

    def _read_reply(self):
        fd = os.open(self.reply_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise OSError("the reply is not a file")
            data = handle.read(MAX_REPLY_BYTES + 1)
        if len(data) > MAX_REPLY_BYTES:
            return {"error": {"type": "MemoryError", "bases": ["MemoryError"], "submission": True,
                              "message": "the answer is far larger than the task needs"}}
        return json.loads(data)

    def request(self, payload, timeout):
        with open(self.request_path, "w", encoding="utf-8") as handle:
            json.dump(payload, handle)
        answered = self._execute(agent.serve_code(self.inbox, self.outbox), timeout)
        if not answered:
            return {"interrupted": True}
        try:
            reply = self._read_reply()
            os.unlink(self.reply_path)
        except (OSError, ValueError):
            return {"error": {"type": "NoAnswer", "bases": [], "submission": True,
                              "message": "the kernel gave no answer (was the grader's agent removed?)"}}
        return reply if isinstance(reply, dict) else {"error": {"type": "NoAnswer", "bases": [],
                                                                "message": "malformed answer"}}
