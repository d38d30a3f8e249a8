"""How the judge's requests reach the agent: in this process, or in a student's kernel.

Both channels move the same JSON text, so what CI checks against the reference in process is
the very codec the judge uses against a kernel.
"""

import json
import os
import signal
import socket
import threading
import time
from contextlib import contextmanager

from autograder import agent, procfs
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


class PeakMemory:
    """Peak resident memory of a process, read from outside it (Linux /proc)."""

    def reset(self):
        """Start a new peak; the resident memory now."""
        pid = self.pid()
        with open(f"/proc/{pid}/clear_refs", "w") as handle:
            handle.write("5")  # resets VmHWM to the current VmRSS
        return procfs.status_bytes(pid, "VmRSS")

    def peak(self):
        return procfs.status_bytes(self.pid(), "VmHWM")


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
    """The agent inside a running kernel.

    The judge listens on a Unix socket in `inbox`, a folder the sandbox sees read-only, so no
    kernel can replace it or point the judge elsewhere. Each step, a one-line execute request
    boots the agent, which connects and answers requests from a thread of its own: a request
    costs a socket round trip, not a trip through IPython's execution machinery. A reply is
    read only up to MAX_REPLY_BYTES. A request that runs over its time is interrupted from the
    kernel's main thread; a kernel that does not answer even then is stuck (`KernelStuck`).
    """

    def __init__(self, client, inbox, interrupt, launcher_pid=None):
        self.client = client
        self.launcher_pid = launcher_pid  # the kernel, or the sandbox around it
        self.interrupt = interrupt  # callable: interrupt the kernel's main thread
        self.socket_path = os.path.join(str(inbox), agent.SOCKET_NAME)
        self.listener = None
        self.connection = None

    def pid(self):
        """The kernel's process id, as this process sees it: the first process under the one
        that was launched (bubblewrap's, or the warm parent's monitor) that is not bubblewrap."""
        for pid in procfs.descendants(self.launcher_pid):
            program = procfs.argv(pid)
            if program and not program[0].endswith(b"bwrap"):
                return pid
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
        """Start a fresh agent in the kernel, connected to this judge."""
        self.close()
        if self.listener is None:
            if os.path.lexists(self.socket_path):
                os.unlink(self.socket_path)
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(self.socket_path)
            os.chmod(self.socket_path, 0o666)  # the kernel's user connects
            self.listener.listen(1)
        self._execute(agent.boot_code(agent_path, self.socket_path), timeout)
        self.listener.settimeout(max(timeout, 1.0))
        try:
            self.connection, _ = self.listener.accept()
        except OSError:
            self.connection = None  # the kernel never connected: every request says so

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def shutdown(self):
        self.close()
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    def _answer(self, timeout):
        self.connection.settimeout(max(timeout, 1e-3))
        return agent.receive(self.connection, MAX_REPLY_BYTES)

    def request(self, payload, timeout):
        if self.connection is None:
            return _no_answer("the grader's agent is not connected (was it removed?)")
        try:
            agent.send(self.connection, payload)
            try:
                reply = self._answer(timeout)
            except TimeoutError:
                # Over time: interrupt the agent's thread from the kernel's main thread.
                if not self._execute(agent.interrupt_code(), INTERRUPT_GRACE):
                    raise KernelStuck() from None
                try:
                    reply = self._answer(INTERRUPT_GRACE)
                except TimeoutError:
                    raise KernelStuck() from None
        except agent.TooLarge:
            self.close()  # the rest of that message is still in the stream
            return {"error": {"type": "MemoryError", "bases": ["MemoryError"], "submission": True,
                              "message": "the answer is far larger than the task needs"}}
        except (EOFError, OSError, ValueError) as error:
            self.close()
            return _no_answer(f"the kernel gave no proper answer ({type(error).__name__})")
        return reply if isinstance(reply, dict) else _no_answer("malformed answer")


def _no_answer(message):
    return {"error": {"type": "NoAnswer", "bases": [], "submission": True, "message": message}}
