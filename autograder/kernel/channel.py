"""How the judge's requests reach the agent: in this process, or in a student's kernel.

Both channels move the same JSON text, so what CI checks against the reference in process is
the very codec the judge uses against a kernel.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import threading
import time
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from typing import Any

from autograder.errors import KernelStuck
from autograder.kernel import agent, procfs, still
from autograder.kernel.replies import HostileReply, Reply, checked_reply, invalid_answer, no_answer
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


@dataclass
class ApartCall:
    """A call measured apart (`KernelChannel.apart`). The seam sets `inputs`, the (address, bytes) to write into the
    arrays the kernel made for them (`agent.op_room`); the channel fills in, as the call's window opens, `before`,
    the memory charged then, from which the call's peak counts, and `uncharged`, what the call could use that no
    charge in its window shows (bytes, complete once the block ends): the files in RAM and shared mappings the
    submission held as the window opened and the memory the call's process alone mapped then, whole, and every
    page the call wrote that a held process alone maps; and `disturbed`, the held processes that ran or ended in its
    window (the call let them go: nothing it held can be told then)."""
    inputs: list[tuple[int, bytes]] = field(default_factory=list)
    before: int = 0
    uncharged: int = 0
    disturbed: list[int] = field(default_factory=list)


class PeakMemory:
    """Peak resident memory of the processes `pids()` names, read from outside them (Linux
    /proc): summed over them, each reset to what it holds now. A process that ended before the
    peak is read is not counted; a kernel's envelope counts every one (`KernelChannel`)."""

    # Whether the peak counts what a process that has already ended held: then a call can be
    # measured in a forked child of the kernel (`agent.apart`), where every page it writes is
    # one of its own, a buffer held before the call included. Per-process peaks do not.
    counts_children = False

    def pids(self) -> list[int]:
        raise NotImplementedError

    def reset(self) -> int:
        """Start a new peak; the resident memory now."""
        now = 0
        for pid in self.pids():
            with open(f"/proc/{pid}/clear_refs", "w") as handle:
                handle.write("5")  # resets VmHWM to the current VmRSS
            now += procfs.status_bytes(pid, "VmRSS")
        return now

    def peak(self) -> int:
        return sum(procfs.status_bytes(pid, "VmHWM") for pid in self.pids())

    def apart(self):  # where the peak counts children only: `KernelChannel.apart`
        return nullcontext(ApartCall())

    def hold_others(self) -> None:
        pass


def boot_code(agent_path: str, socket_path: str) -> str:
    """The code the judge runs in the kernel to load the agent from `agent_path` (once a kernel),
    install it and connect it to the judge. The kernel's code could change what it loaded as
    easily as what it loads: the judge believes no reply either way."""
    name = agent.MODULE_NAME
    return (f"__grader_boot__ = getattr(__import__('sys').modules.get({name!r}), 'install', None)\n"
            "if __grader_boot__ is None:\n"
            f"    exec(compile(open({str(agent_path)!r}).read(), {agent.AGENT_FILENAME!r}, 'exec'), "
            f"__grader_boot__ := {{'__name__': {name!r}}})\n"
            "    __grader_boot__ = __grader_boot__['install']\n"
            f"__grader_boot__(__import__('IPython').get_ipython().user_ns, {str(socket_path)!r})\n"
            "del __grader_boot__")


def interrupt_code() -> str:
    """The code the judge runs in the kernel's main thread to interrupt the agent's request."""
    return f"__import__('sys').modules[{agent.MODULE_NAME!r}].agent.interrupt()"


def _trim_heap():
    """glibc's malloc_trim(0): free memory the allocator holds is returned to the system (nothing elsewhere)."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


class LocalChannel(PeakMemory):
    """An agent over `namespace` in this process: the reference in CI, or a test's namespace."""

    def __init__(self, namespace):
        self.agent = agent.Agent(namespace)

    def pids(self):
        return [os.getpid()]

    def reset(self) -> int:
        # This process graded other code before (a whole pytest of mistakes): memory that code freed, glibc keeps
        # resident for reuse, and a call that reuses it never raises the peak. Hand it back first.
        _trim_heap()
        return super().reset()

    def request(self, payload: dict[str, Any], timeout: float) -> Reply:
        text = json.dumps(payload)
        with _interrupt_after(timeout):
            reply = self.agent.answer(json.loads(text))
        return json.loads(json.dumps(reply, allow_nan=True))


class KernelChannel(PeakMemory):
    """The agent inside a running kernel.

    The judge listens on a Unix socket in `inbox`, a folder the sandbox sees read-only, so no
    kernel can replace it or point the judge elsewhere. Each step, a one-line execute request
    boots the agent, which connects and answers requests from a thread of its own: a request
    costs a socket round trip, not a trip through IPython's execution machinery. A reply is
    read only up to MAX_REPLY_BYTES. A request that runs over its time is interrupted from the
    kernel's main thread; a kernel that does not answer even then is stuck (`KernelStuck`).

    A request is sent within its time too (a kernel may stop reading). Every reply is hostile
    input: the whole of it must arrive before the request's deadline
    (not each read), it may hold at most MAX_REPLY_BYTES, MAX_REPLY_CONTAINERS lists and objects
    nested MAX_REPLY_DEPTH deep, and it must have the shape of a reply (`checked_reply`). What
    fails any of that costs the case it answers, as the submission's failure.

    Memory peaks are the envelope's (every process of the submission, and its files in RAM),
    where it has a memory group.
    """

    def __init__(self, client, inbox, interrupt, launcher_pid=None, envelope=None):
        self.client = client
        self.launcher_pid = launcher_pid  # the kernel, or the sandbox around it
        self.envelope = envelope
        self.interrupt = interrupt  # callable: interrupt the kernel's main thread
        self.socket_path = os.path.join(str(inbox), agent.SOCKET_NAME)
        self.listener = None
        self.connection = None
        self._ready, self._info_id = False, None  # `ready()`
        self._apart = None  # in `apart`: the processes before it, and those held

    def pids(self):
        """The kernel's processes, as this process sees them: everything under the one that was
        launched (bubblewrap's, or the warm parent's monitor) that is not bubblewrap."""
        found = [pid for pid in procfs.descendants(self.launcher_pid)
                 if (program := procfs.argv(pid)) and not program[0].endswith(b"bwrap")]
        if not found:
            raise OSError("the kernel's process was not found")
        return found

    @property
    def counts_children(self):
        return self.envelope is not None and self.envelope.measures_peak

    def reset(self):
        if self.counts_children:
            return self.envelope.reset_peak()
        return super().reset()

    def peak(self):
        if self.counts_children:
            return self.envelope.peak()
        return super().peak()

    @contextmanager
    def apart(self):
        """For the block, what the kernel starts once asked ("apart": `agent.apart`) runs alone, and ends with it. It
        yields the block's `ApartCall`: a call request marked "apart" is made in a process the kernel's child forks for
        it (`agent.apart`), which stops itself at once, and the call's window opens then (`_open_window`)."""
        call = ApartCall()
        self._apart = {"before": set(self.pids()), "held": [], "child": [], "call": call}
        try:
            yield call
        finally:
            called = []
            try:
                with suppress(OSError):  # the kernel is gone
                    # the call's process first: the held ones are read as it left them. Not the kernel's child, which
                    # reaps it: killed with it, it left the call's process to the kernel, a zombie for good (CI, twice)
                    called = [pid for pid in self._started() if pid not in self._apart["child"]]
                    still.end(called)
                    if self._apart.get("late") and self.connection and select.select([self.connection], [], [], 0)[0]:
                        self.close()  # what the child sent of a late reply is still in the stream
                if "pages" in self._apart:  # the window was opened
                    call.uncharged += procfs.written_bytes(self._apart["pages"])
                    call.disturbed = still.disturbed(self._apart["runs"])
                with suppress(OSError):  # started for the block: the kernel's child, let go, reaps the call's process
                    # first (ended after its parent, it was left a zombie to the kernel, PID 1 of its namespace, which
                    # then took 2.5 s to shut down)
                    started = [pid for pid in self.pids() if pid not in self._apart["before"]]
                    still.release(self._kernels_child())
                    still.end(started, reaped=[pid for pid in started if pid not in self._apart["child"]])
            finally:
                still.release(self._apart["held"])
                # the kernel, let go, reaps its child (`agent.apart`): not yet reaped, CI's next cell saw it as the
                # kernel's child once
                still.await_reaped(self._apart["child"], self._apart["before"])
                self._apart = None

    def _started(self):  # in `apart`: the processes that run (started for it, not ended)
        return [pid for pid in self.pids() if pid not in self._apart["held"] and not still.ended(pid)]

    def hold_others(self) -> None:
        """In `apart`, once the kernel's child answered: every process but those it started is stopped (`still.hold`),
        until the block ends (r48's helper process and kernel thread computed a call's score matrix on memory held
        before)."""
        self._apart["child"] = [p for p in self.pids() if p not in self._apart["before"]]  # the kernel's child
        self._apart["held"] = still.hold(self.launcher_pid, self._apart["child"])

    def _kernels_child(self):
        """In `apart`: the processes started for it whose parent is the kernel's (its child, the one that answers)."""
        return [pid for pid in self.pids() if pid not in self._apart["before"] and procfs.parent(pid) in self._apart["before"]]

    def _call_process(self):
        """In `apart`, once an "apart" call was asked for: the process forked for it (the one child of the kernel's
        child) once it has stopped itself, every thread of it (`still.settled`), or None."""
        calls = procfs.children(first[0]) if len(first := self._kernels_child()) == 1 else []
        return calls[0] if len(calls) == 1 and still.settled(calls[0]) else None

    def _open_window(self, pid):
        """The call's window opens, its process `pid` stopped: every other process is held (those it started too, so
        nothing runs until it goes on), the memory it maps alone is noted, its inputs are written into it from outside,
        so no code has them before the window (r54 padded a fork measured to be left out, and passed a whole float16
        score matrix), the peak starts (`Envelope.reset_peak`: on v1 every process moves into a fresh group, so memory
        given back from here on makes no room), and what else the call could use uncharged is noted (`ApartCall`).
        The pages its inputs fill are charged before the window and left out: they are the judge's (1.2 MiB at 3072
        tokens: r58's honest float64 torch style went over the limit by them), and a call writing over its inputs has
        that room and no more. Then the call goes on. OSError where its inputs cannot be written."""
        call = self._apart["call"]
        self._apart["held"] += still.hold(self.launcher_pid, [pid], their_children=False)
        alone = procfs.private_bytes(pid)
        with open(f"/proc/{pid}/mem", "r+b", buffering=0) as memory:
            for address, data in call.inputs:
                memory.seek(address)
                if data and memory.write(data) != len(data):
                    raise OSError("the call's inputs were not all written")
        # Whatever writing them added beyond their own pages counts (a huge page the process asked for faults in
        # whole on its first write)
        inputs = len({page for address, data in call.inputs
                      for page in range(address // procfs.PAGE, -(-(address + len(data)) // procfs.PAGE))})
        alone += max(0, procfs.private_bytes(pid) - alone - inputs * procfs.PAGE)
        call.before = self.envelope.reset_peak()
        call.uncharged = self.envelope.shared() + alone
        self._apart["pages"] = procfs.own_pages_of(self._apart["held"])
        self._apart["runs"] = still.runs(self._apart["held"])  # r59's call let a held process go, or killed one
        os.kill(pid, signal.SIGCONT)

    def _execute(self, code, timeout):
        """Run `code` silently; True once the kernel replied, False if it needed an interrupt."""
        return self.wait(self.send(code), timeout)

    def send(self, code) -> str:
        """Ask the kernel to run `code` silently, without waiting: the request's id. The kernel
        runs what it is sent in order."""
        return self.client.execute(code, silent=True, store_history=False, allow_stdin=False,
                                   stop_on_error=False)

    def wait(self, msg_id, timeout, alive=None):
        """Wait for the reply to `msg_id`, at most `timeout` seconds, then interrupt the kernel
        and give it INTERRUPT_GRACE more: True once it replied, False if it needed the
        interrupt. Raises KernelStuck if it never replied, and RuntimeError as soon as
        `alive()` (checked each second) says the kernel is gone. Replies to earlier requests
        are passed over."""
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
                if alive is not None and not alive():
                    raise RuntimeError("the kernel died") from None
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return not interrupted

    def _answered(self, timeout) -> bool:
        """Whether the kernel has answered a kernel_info request, waiting at most `timeout`
        seconds for it (asking one first if none is pending). Replies to anything else are passed
        over."""
        if self._ready:
            return True
        if self._info_id is None:
            self._info_id = self.client.kernel_info()
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply = self.client.get_shell_msg(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - queue.Empty: no answer yet
                return False
            if reply.get("parent_header", {}).get("msg_id") == self._info_id:
                self._ready = True
                return True

    def ready(self) -> bool:
        """Whether the kernel has answered a kernel_info request yet (asked on the first call);
        never waits."""
        return self._answered(0)

    def wait_until_ready(self, timeout, alive):
        """Return once the kernel answers a kernel_info request on the shell channel.

        jupyter_client's `wait_for_ready` also waits for an IOPub message after the reply, which
        this channel never opens: it paid 0.2 s timeouts, about 0.45 s a restart, and the judge
        restarts a kernel after every step it lent a reference for. Raises RuntimeError when
        the kernel died (`alive()` false) or did not answer in `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self._answered(min(0.5, max(0.0, deadline - time.monotonic()))):
            if not alive():
                raise RuntimeError("the kernel died before it answered")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"the kernel did not answer in {timeout:g} s")
            self._info_id = None  # ask again: a request sent before the kernel listened is lost

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
        self._execute(boot_code(agent_path, self.socket_path), timeout)
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

    def stop(self):
        """Close the agent's sockets and the client's, for good."""
        self.shutdown()
        self.client.stop_channels()
        self.client.context.destroy(linger=0)

    def _answer(self, timeout):
        deadline = time.monotonic() + max(timeout, 1e-3)
        # (looked at often while a call's process waits, stopped, for its window)
        while self._apart is not None and not select.select([self.connection], [], [], 0.002 if self._apart.get("opening") else 0.05)[0]:
            if self._apart.get("opening") and (pid := self._call_process()) is not None:
                self._apart["opening"] = False
                try:
                    self._open_window(pid)
                except OSError as error:
                    return invalid_answer(f"the call's inputs could not be placed ({error})"[:300])
            elif not self._started():  # the call's process ended (over the memory budget, say): no answer comes
                return self._lost(None, {"error": dict(agent.ENDED_ITS_PROCESS)})
            if time.monotonic() > deadline:
                raise TimeoutError
        reply = checked_reply(agent.receive_bytes(self.connection, MAX_REPLY_BYTES, deadline))
        if self._apart is not None and self._apart.get("opening") and "error" not in reply:
            return invalid_answer("the call was answered before it was let go")
        return reply

    def request(self, payload: dict[str, Any], timeout: float) -> Reply:
        if self.connection is None:
            return no_answer("the grader's agent is not connected (was it removed?)")
        deadline = time.monotonic() + timeout
        try:
            # The whole request within its time, sent and answered: a kernel that stopped reading held the judge
            # in sendall for as long as it liked, once a request passed the socket's buffer (r54).
            self.connection.settimeout(max(timeout, 1e-3))
            if self._apart is not None and payload.get("apart"):
                self._apart["opening"] = True  # `_answer` opens the call's window
            agent.send(self.connection, payload)
            try:
                reply = self._answer(deadline - time.monotonic())
            except TimeoutError:
                if self._apart is not None:  # the kernel is stopped: `apart` ends the child instead
                    self._apart["late"] = True
                    return {"interrupted": True}
                # Over time: interrupt the agent's thread from the kernel's main thread.
                if not self._execute(interrupt_code(), INTERRUPT_GRACE):
                    raise KernelStuck() from None
                try:
                    reply = self._answer(INTERRUPT_GRACE)
                except TimeoutError:
                    raise KernelStuck() from None
        except agent.TooLarge:
            self.close()  # the rest of that message is still in the stream
            return {"error": {"type": "MemoryError", "bases": ["MemoryError"],
                              "message": "the answer is far larger than the task needs"}}
        except HostileReply as error:
            self.close()
            return no_answer(f"the kernel's answer is not plain data ({error})")
        except (EOFError, OSError, ValueError) as error:
            self.close()
            return self._lost(error)
        return reply

    def _lost(self, error, otherwise=None):
        """A broken connection, or a call's process that ended (`otherwise`): did a budget stop the submission?"""
        overruns = self.envelope.overruns() if self.envelope is not None else {}
        if overruns.get("memory"):
            return {"error": {"type": "MemoryError", "bases": ["MemoryError"], "message": (
                "the submission went over its memory budget (all its processes and files in RAM "
                "together) and was stopped")}}
        return otherwise or no_answer(f"the kernel gave no proper answer ({type(error).__name__})")
