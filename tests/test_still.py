"""Which held processes ran or ended while a call ran (`still.runs`, `still.disturbed`): red-team round r59's call let
go a helper the judge held still (SIGCONT), which computed its score matrix on pages it touched before and put them back
as they were, and killed the kernel's child, whose pages it then wrote in place: both charged nothing."""

import os
import signal
import subprocess
import sys
import time

import pytest

from autograder.kernel import still

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
