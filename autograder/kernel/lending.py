"""The lending kernel: where the steps that borrow a reference are judged.

A step whose dependency did not score full marks is graded with the dependency's reference in
place of the student's own (`reference.py`), so one mistake costs points once. Whatever held a
reference must never run the student's code again with it in reach (issue "Sealed submissions",
item 5): student code can keep a reference it was lent, or record its source.

The notebook's own kernel therefore never holds one. A second kernel of the same submission, in
the same envelope (one budget for both) but with its own mounts and processes, follows the
notebook: it is started once a step that later steps depend on loses points, is sent each
ordinary cell as the notebook's kernel runs it (both run at once, on two cores where there are
two), and is waited for before any step is judged, so that no step is judged while it works
(a memory peak is the whole envelope's). A borrowing step is judged there, and the kernel is then
discarded: a kernel that has held a reference never runs again. While it holds one, the
notebook's kernel is held still (`still.py`): the two share one pids and one CPU budget, and
red-team round r37 sent the reference's source from one to the other through them, from a
lending kernel that went on following the notebook after its step, and from one judged while
the notebook's kernel had a thread running. A fresh kernel, holding nothing, then follows the
notebook again, replaying it from the top while the notebook's kernel runs on.

Each borrowing step used to cost a restart of the notebook's kernel and a replay, one cell at a
time, of every cell before it (about 0.2 s each, most of the judging of a weak notebook).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from jupyter_core.utils import run_sync

from autograder.kernel import procfs, still
from autograder.limits import INTERRUPT_GRACE
from autograder.steps import STEPS

STOP_WAIT = INTERRUPT_GRACE  # the most a stopped lending kernel's processes are waited for


def may_lend_later(pending: Collection[str], verdicts: dict[str, Any]) -> bool:
    """Whether a step still to come (`pending`, in the notebook's order) may be lent a
    reference: one it depends on lost points, or is not graded in this notebook and has no
    verdict yet (it is checked when the step comes). `verdicts`: name -> StepResult."""
    for later in pending:
        for name in STEPS[later].depends_on:
            verdict = verdicts.get(name)
            if verdict is None and name not in pending:
                return True
            if verdict is not None and (verdict.fraction < 1 or verdict.kernel_lost):
                return True
    return False


@dataclass
class SideKernel:
    """A started lending kernel: its manager, its job folder (sharing the notebook kernel's
    envelope) and the judge's channel to it."""

    km: Any
    box: Any
    channel: Any = None

    def alive(self):
        return run_sync(self.km.is_alive)()

    def wait_until_ready(self, timeout):
        self.channel.wait_until_ready(timeout, alive=self.alive)

    def stop(self, wait=True):
        """Kill the kernel. With `wait`, return once its processes are gone, so that what they
        held is no longer counted in the envelope it shares (a step judged next may measure the
        envelope's memory peak); without, at the end of a notebook, the envelope is removed with
        anything still in it (a wait was 0.03 s a kernel)."""
        if self.channel is not None:
            self.channel.stop()
            self.channel = None
        process = getattr(self.km.provisioner, "process", None) if self.km.provisioner else None
        if process is not None:
            inside = [process.pid, *procfs.descendants(process.pid)] if wait else []
            process.kill()
            deadline = time.monotonic() + STOP_WAIT
            while inside and time.monotonic() < deadline:
                inside = [pid for pid in inside if _running(pid)]
                time.sleep(0.002)
        self.box.close()


def _running(pid):
    return not still.ended(pid)  # a zombie holds no memory, but one whose first thread alone has ended does


@dataclass
class LendingKernel:
    """The lending kernel's bookkeeping, for one notebook.

    `start()` gives a started SideKernel (not yet waited for); `cells(first, upto)` the indexes
    and sources of the notebook's ordinary code cells from `first` to `upto` (not included);
    `timeout(index)` the seconds cell `index` may run."""

    start: Callable[[], SideKernel]
    cells: Callable[[int, int], list[tuple[int, str]]]
    timeout: Callable[[int], float]
    startup_timeout: float
    kernel: SideKernel | None = None
    sent_to: int = 0  # the cells before this one have been sent to `kernel`
    pending: list[tuple[str, int]] = field(default_factory=list)  # (request id, cell) not yet answered

    def open(self):
        """Start the kernel, if there is none (once a step that later steps need lost points)."""
        if self.kernel is None:
            self.kernel, self.sent_to, self.pending = self.start(), 0, []

    def follow(self, upto: int):
        """Send the kernel the cells before `upto` it has not been sent, once it answers; never
        waits."""
        if self.kernel is not None and self.kernel.channel.ready():
            self._send(upto)

    def catch_up(self, upto: int, within: float | None = None):
        """Wait until the kernel has run every ordinary cell before `upto`; its start is waited for
        at most `within` seconds too (the notebook's time left). Raises KernelStuck or RuntimeError
        where it cannot."""
        if self.kernel is None:
            return
        self.kernel.wait_until_ready(self.startup_timeout if within is None else min(self.startup_timeout, within))
        self._send(upto)
        while self.pending:
            msg_id, index = self.pending[0]
            self.kernel.channel.wait(msg_id, self.timeout(index), alive=self.kernel.alive)
            self.pending.pop(0)

    def _send(self, upto: int):
        for index, source in self.cells(self.sent_to, upto):
            self.pending.append((self.kernel.channel.send(source), index))
        self.sent_to = max(self.sent_to, upto)

    def ready_for(self, upto: int, within: float | None = None) -> SideKernel:
        """The kernel, having run the notebook's ordinary cells before `upto`, to be lent the
        references of the step there (and discarded after it); `within`: see catch_up."""
        self.open()
        self.catch_up(upto, within)
        return self.kernel

    def discard(self, wait=True):
        """Stop the kernel (it stopped answering, was lent a reference, or no step to come may
        borrow); `wait`: see SideKernel.stop."""
        if self.kernel is not None:
            kernel, self.kernel, self.pending = self.kernel, None, []
            kernel.stop(wait)
