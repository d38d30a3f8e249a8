"""Which held processes ran or ended while a call ran (`still.runs`, `still.disturbed`): red-team round r59's call let
go a helper the judge held still (SIGCONT), which computed its score matrix on pages it touched before and put them back
as they were, and killed the kernel's child, whose pages it then wrote in place: both charged nothing."""

import os
import signal
import subprocess
import sys
import time

import pytest

from autograder.kernel import procfs, still

LET_GO = {
    "untouched": lambda pid: None,
    "let go and stopped again": lambda pid: (os.kill(pid, signal.SIGCONT), time.sleep(0.05), os.kill(pid, signal.SIGSTOP),
                                            time.sleep(0.05)),
    "let go": lambda pid: (os.kill(pid, signal.SIGCONT), time.sleep(0.05)),  # running still, maybe never switched out
    "ended": lambda pid: (os.kill(pid, signal.SIGKILL), time.sleep(0.05)),
}


@pytest.mark.parametrize("what", list(LET_GO), ids=list(LET_GO))
def test_a_held_process_that_ran_or_ended_is_told(what):
    # threads that keep waking while they run: a thread switched in again is told, whichever
    code = "import threading, time\nfor _ in range(3): threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(int, 1)]).start()\ntime.sleep(60)"
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(0.3)
        os.kill(process.pid, signal.SIGSTOP)  # as `still.hold` stops it
        while not still.stopped(process.pid):
            time.sleep(0.001)
        before = still.runs([process.pid])
        LET_GO[what](process.pid)
        assert still.disturbed(before) == ([] if what == "untouched" else [process.pid])
    finally:
        process.kill()
        process.wait()


POPULATING = """
import ctypes, mmap, os, signal, threading
size = 1 << 30
region = mmap.mmap(-1, size)
region.madvise(mmap.MADV_NOHUGEPAGE)  # a page at a time: long enough to be seen
address = ctypes.addressof(ctypes.c_char.from_buffer(region))
resident = lambda: int(open("/proc/self/statm").read().split()[1]) * mmap.PAGESIZE
before = resident()
threading.Thread(target=ctypes.CDLL(None).madvise, args=(ctypes.c_void_p(address), ctypes.c_size_t(size), 23)).start()
while resident() < before + (64 << 20):  # under way
    pass
os.kill(os.getpid(), signal.SIGSTOP)  # MADV_POPULATE_WRITE (23) goes on: only a fatal signal interrupts it
"""


def test_a_process_is_settled_only_once_every_thread_stopped():
    """A call's process that stops itself while a thread of its faults pages in shows as stopped, its first thread's
    state, while that thread goes on: the window opened on it then, and what it faulted in as the peak restarted was
    charged before it (`KernelChannel._call_process`)."""
    process = subprocess.Popen([sys.executable, "-c", POPULATING])
    try:
        while procfs.state(process.pid) not in "Tt":  # its first thread has stopped
            time.sleep(0.001)
        assert not still.settled(process.pid) and not still.stopped(process.pid)
        deadline = time.monotonic() + 30
        while not still.settled(process.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert still.settled(process.pid)
    finally:
        process.kill()
        process.wait()


def test_where_proc_never_names_where_a_thread_waits_a_stopped_process_is_settled_by_its_state(monkeypatch):
    """A host whose /proc shows "0" as every thread's wait (no symbols): the window opens on the stopped state alone,
    not never (every memory case of 05 failed then, honest ones too)."""
    shown = still.procfs.thread_runs
    monkeypatch.setattr(still.procfs, "thread_runs", lambda pid: {t: (letter, False, switches)
                                                                  for t, (letter, _, switches) in shown(pid).items()})
    still._wchan_shown.cache_clear()
    process = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(process.pid, signal.SIGSTOP)
        while not still.stopped(process.pid):
            time.sleep(0.001)
        assert not still._wchan_shown()
        assert still.settled(process.pid)
    finally:
        still._wchan_shown.cache_clear()
        process.kill()
        process.wait()


def test_a_process_whose_first_thread_ended_is_held_only_once_its_other_threads_stopped():
    """`still.hold`, which keeps the notebook's kernel still while a reference is lent (`lending.py`), asked each
    process's first thread alone: a process whose first thread had ended showed a zombie's state, so it counted as
    stopped (and ended) at once while its other thread ran on (10 tries of 10 here, that thread faulting memory in).
    Every thread is asked now."""
    program = os.path.join(os.path.dirname(__file__), "programs", "first_thread_gone.py")
    monitor = subprocess.Popen(["sh", "-c", f"{sys.executable} {program}; :"], stdout=subprocess.PIPE, text=True)
    try:
        assert monitor.stdout.readline().strip() == "ready"
        (pid,) = procfs.descendants(monitor.pid)
        while "Z" not in procfs.thread_states(pid):  # its first thread has ended; the other runs on
            time.sleep(0.001)
        assert not still.ended(pid)
        held = still.hold(monitor.pid)
        states = procfs.thread_states(pid)
        still.release(held)
        assert held == [pid] and sorted(states) == ["T", "Z"], states
    finally:
        for pid in procfs.descendants(monitor.pid):
            os.kill(pid, signal.SIGKILL)
        monitor.wait()
