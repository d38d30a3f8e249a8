"""A kernel held still: every process below its monitor stopped, then let go.

While the lending kernel holds a reference (`lending.py`), nothing of the notebook's kernel may
run. The two share the submission's envelope, one pids budget and one CPU budget, so code in one
can signal to the other: red-team round r37 sent the reference's source from the lending kernel
to the notebook's kernel by how many threads it held (90 characters in 25 s), and by how much CPU
it took, and the notebook's kernel put it in a later step's report. A process that is stopped
measures nothing, so the notebook's kernel is stopped from the moment a reference is lent until
the lending kernel that held it is gone, and then let go. What it can still tell afterwards is
how long it was stopped: a few bits per lending step, out of the step's own time.

SIGSTOP cannot be caught or ignored, and a stopped process starts nothing: the processes are
stopped, then looked for again until a look finds no new one (a child forked before its parent
stopped). The kernel is PID 1 of its own namespace (`zygote.py`), so an orphan becomes its child,
never a process outside this tree.

05's memory cases hold every process of the kernel but the call's the same way (`KernelChannel.apart`). Any
process of the submission may signal another, so the judge also reads which of them ran or ended meanwhile
(`runs`, `disturbed`), and opens the call's window only once every thread of the call's process has stopped
(`settled`).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from autograder.kernel import procfs

STOP_WAIT = 2.0  # seconds for the processes to show as stopped (one in the kernel's D state waits)
# Seconds for a parent of ours (the kernel, or its child) to reap a child that ended. Their own code reaps it at once,
# once it runs; on a loaded machine that may take long, and a child not reaped was left to the kernel for good.
REAP_WAIT = 10.0


def stopped(pid: int) -> bool:
    """Whether every thread of process `pid` is stopped (or has ended). Asked of its first thread alone, a process
    whose first thread had ended (a zombie) counted as stopped at once while another thread of it ran on."""
    try:
        return all(letter in "TtZX" for letter in procfs.thread_states(pid))
    except OSError:
        return True  # gone


def ended(pid: int) -> bool:
    """Whether every thread of process `pid` has ended: one whose first thread alone has is still running."""
    try:
        return all(letter in "ZX" for letter in procfs.thread_states(pid))
    except OSError:
        return True  # gone


def hold(monitor: int, running: Collection[int] = (), their_children: bool = True) -> list[int]:
    """Stop every process below `monitor` (the kernel and all it started) but `running` and, with `their_children`,
    what they start; the ones stopped. Raises RuntimeError where they do not all stop within STOP_WAIT."""
    held: list[int] = []
    deadline = time.monotonic() + STOP_WAIT
    while True:
        spared = {*running, *(child for pid in running if their_children for child in procfs.descendants(pid))}
        new = [pid for pid in procfs.descendants(monitor) if pid not in held and pid not in spared]
        if not new:
            return held
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            held.append(pid)
        while not all(stopped(pid) for pid in new):
            if time.monotonic() > deadline:
                release(held)
                raise RuntimeError("the kernel's processes did not stop")
            time.sleep(0.001)


def await_reaped(pids: Collection[int], parents: Collection[int]) -> None:
    """Wait, at most REAP_WAIT, until `pids` are gone from /proc: reaped by their parent among `parents` (whose own code
    reaps them), not only ended. Not for one whose parent cannot reap it now: held still by the judge (a kernel whose
    child made the call itself waited out the whole wait in each memory case), gone, or another (an orphan's)."""
    deadline = time.monotonic() + REAP_WAIT
    while any(_reapable(pid, parents) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.001)


def _reapable(pid: int, parents: Collection[int]) -> bool:
    """Whether `pid` is still there, and its parent is one of `parents` that runs (so will reap it)."""
    parent = procfs.parent(pid)
    return parent is not None and parent in parents and not stopped(parent)


def end(pids: Collection[int], reaped: Collection[int] = ()) -> None:
    """Once `reaped` are gone (`await_reaped`: their parent, among `pids`, reaps them), kill `pids` and wait,
    for at most STOP_WAIT, for them to end. Killed at once, a parent that had just been let go was ended before it
    reaped them (in one memory case of four here), and they were left zombies to the kernel (PID 1 of its namespace)."""
    await_reaped(reaped, pids)
    deadline = time.monotonic() + STOP_WAIT
    while (left := [pid for pid in pids if not ended(pid)]) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)


def runs(held: Collection[int]) -> dict[int, dict | None]:
    """{pid: {thread: (its state, whether it is off the CPU for good, how often it was switched out)}, or None where it
    is gone} of the processes `held`, read once every thread of theirs is stopped and off the CPU for good (waiting at
    most STOP_WAIT: one that stopped but was not yet switched out is switched out once more). `disturbed` tells
    which ran since."""
    deadline = time.monotonic() + STOP_WAIT
    while True:
        found = {pid: _threads(pid) for pid in held}
        settling = any(letter not in "ZX" and not _still(letter, waits) for threads in found.values() if threads
                       for letter, waits, _ in threads.values())
        if not settling or time.monotonic() > deadline:
            return found
        time.sleep(0.001)


def disturbed(before: dict[int, dict | None]) -> list[int]:
    """Those of the processes `runs` read that ran since or ended: a thread switched out once more, one more or fewer,
    or one not stopped now (it runs still, never switched out). A held process is let go or ended only by a signal,
    which a call may have sent (SIGCONT or SIGKILL), or which the kernel sends for it (a process group it orphans,
    a terminal it hangs up): red-team round r59's call let go a helper that computed its score matrix on pages it
    touched before, and ended the kernel's child to have the pages they shared for its own."""
    return [pid for pid, threads in before.items() if _threads(pid) != threads]


def settled(pid: int) -> bool:
    """Whether every thread of process `pid` is stopped and off the CPU for good (False once it is gone). Its first
    thread stopped says nothing of the others, which stop only as they next leave the kernel: a call that only a
    fatal signal interrupts (MADV_POPULATE_WRITE, MAP_POPULATE) runs to its end first, faulting pages in while the
    judge opens the call's window, charged before its peak starts (red-team round r59)."""
    threads = _threads(pid)
    return bool(threads) and all(_still(letter, waits) for letter, waits, _ in threads.values())


def _still(letter: str, waits: bool) -> bool:
    return letter in "Tt" and (waits or not _wchan_shown())


@functools.cache
def _wchan_shown() -> bool:
    """Whether this host's /proc names where a thread waits (`procfs.thread_runs`), as seen once per process on a
    process of its own that sleeps. Linux shows "0" for every thread where it has no symbols to name: there a stopped
    thread is still by its state alone, and the window loses only the check that every thread is off the CPU; taken
    as never still, every memory case of 05 waited for a window that never opened, honest ones too (README)."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        deadline = time.monotonic() + STOP_WAIT
        while time.monotonic() < deadline:
            if any(waits for _, waits, _ in (_threads(sleeper.pid) or {}).values()):
                return True
            time.sleep(0.001)
        return False
    finally:
        sleeper.kill()
        sleeper.wait()


def _threads(pid: int) -> dict | None:
    try:
        return procfs.thread_runs(pid)
    except OSError:
        return None  # gone


def release(held: list[int]) -> None:
    """Let the processes of `hold` go on."""
    for pid in reversed(held):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


@contextmanager
def held_still(monitor: int | None) -> Iterator[None]:
    """The kernel below `monitor` stopped for the block (nothing to hold where it is None)."""
    held = hold(monitor) if monitor is not None else []
    try:
        yield
    finally:
        release(held)
