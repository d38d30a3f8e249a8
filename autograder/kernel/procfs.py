"""What Linux's /proc says about a process, read from outside it.

The judge watches kernels it cannot trust to report on themselves: it finds a kernel under the
sandbox that launched it, checks that a process id still names the same process, and reads
memory peaks. Every reader returns what it found or raises OSError when the process is gone.
"""

import os


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (which may hold spaces and parens)."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def state(pid):
    """One letter: R running, S sleeping, Z zombie, X dead, ..."""
    return _stat_fields(pid)[0]


def start_time(pid):
    """When the process started, in clock ticks since boot; None when it is gone. With the id,
    it names one process: ids are reused once a process is gone."""
    try:
        return int(_stat_fields(pid)[19])
    except (OSError, ValueError, IndexError):
        return None


def status(pid):
    """/proc/PID/status as {field: [words]}."""
    fields = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.split()
    return fields


def status_bytes(pid, field):
    """A memory field of /proc/PID/status (VmRSS, VmHWM, ...) in bytes."""
    words = status(pid).get(field)
    if not words:
        raise OSError(f"no {field} for process {pid}")
    return int(words[0]) * 1024


def private_bytes(pid):
    """The memory the process alone maps (Private_Clean and Private_Dirty of /proc/PID/smaps_rollup), in
    bytes; 0 when it is gone. A page mapped by another process too is shared, and writing it makes a copy."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            return sum(int(line.split()[1]) * 1024 for line in handle if line.startswith(("Private_Clean:",
                                                                                         "Private_Dirty:")))
    except (OSError, ValueError, IndexError):
        return 0


def argv(pid):
    """The command line as bytes; [] when the process is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:
        return []


def children(pid):
    """The ids of the process's children, whichever of its threads started them."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def descendants(pid):
    """The process's descendants, nearest first (breadth first)."""
    todo = children(pid)
    while todo:
        child = todo.pop(0)
        yield child
        todo += children(child)
