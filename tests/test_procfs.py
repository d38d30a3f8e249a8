"""What the judge reads of a stopped process's own memory (`procfs.own_pages`, `written_bytes`): the pages
another process of the same user can write in place, charged to no one (red-team round r48)."""

import mmap
import os
import signal
import time

import numpy as np

from autograder.kernel import procfs

PAGES = 64


def _stopped_process_with(flags):
    """A child that holds a touched buffer of PAGES pages mapped with `flags`, stopped; and the buffer's
    address in it (the same as here: it was made before the fork)."""
    buffer = mmap.mmap(-1, PAGES * procfs.PAGE, flags=flags | mmap.MAP_ANONYMOUS)
    buffer[:] = b"x" * len(buffer)
    address = np.frombuffer(buffer, dtype=np.uint8).ctypes.data
    pid = os.fork()
    if pid == 0:
        buffer[:] = b"y" * len(buffer)  # the child's own pages now (a copy of each, for a private buffer)
        os.kill(os.getpid(), signal.SIGSTOP)
        os._exit(0)
    while procfs.state(pid) != "T":
        time.sleep(0.01)
    return pid, address


def _write(pid, address, data):
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as memory:
        memory.seek(address)
        memory.write(data)


def _end(pid):
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def test_pages_written_into_a_stopped_process_are_counted_and_rewriting_the_same_bytes_is_not():
    pid, address = _stopped_process_with(mmap.MAP_PRIVATE)
    try:
        watched = procfs.own_pages_of([pid])
        assert {address + i * procfs.PAGE for i in range(PAGES)} <= set(watched[pid])
        assert procfs.written_bytes(watched) == 0
        _write(pid, address, b"z" * 10 * procfs.PAGE)
        _write(pid, address + 20 * procfs.PAGE, b"y" * procfs.PAGE)  # what it held already
        assert procfs.written_bytes(watched) == 10 * procfs.PAGE
    finally:
        _end(pid)


def test_shared_memory_is_not_watched_here_it_counts_as_files_in_ram():
    pid, address = _stopped_process_with(mmap.MAP_SHARED)
    try:
        assert address not in procfs.own_pages_of([pid])[pid]
    finally:
        _end(pid)


def test_a_watched_process_that_is_gone_counts_every_page_it_held():
    pid, _ = _stopped_process_with(mmap.MAP_PRIVATE)
    watched = procfs.own_pages_of([pid])
    _end(pid)
    assert procfs.written_bytes(watched) == len(watched[pid]) * procfs.PAGE > 0
