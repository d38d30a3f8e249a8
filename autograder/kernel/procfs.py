"""What Linux's /proc says about a process, read from outside it.

The judge watches kernels it cannot trust to report on themselves: it finds a kernel under the
sandbox that launched it, checks that a process id still names the same process, and reads
memory peaks. Every reader returns what it found or raises OSError when the process is gone.
"""

import hashlib
import os
import stat

PAGE = os.sysconf("SC_PAGE_SIZE")
# /proc/PID/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst)
PRESENT, FILE_OR_SHARED, EXCLUSIVE = 1 << 63, 1 << 61, 1 << 56
NOT_IN_PAGEMAP = ("[vsyscall]", "[vvar]", "[vvar_vclock]", "[vdso]")
# What a pipe can take in without a page more being charged to anyone: the two pages it keeps from its
# last emptying for its next write (charged to whoever first wrote them), and the rest of its last page
# in use, which a write fills before it takes a new one. Measured on Linux 6.18: 8 KiB a pipe written
# through and emptied before, written again, charged nothing (red-team round r54).
PIPE_ROOM = 3 * PAGE
# /proc/PID/status's counts of the times a thread was switched out (`thread_runs`)
SWITCHES = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (which may hold spaces and parens)."""
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def state(pid):
    """One letter: R running, S sleeping, Z zombie, X dead, ..."""
    return _stat_fields(pid)[0]


def thread_states(pid):
    """The state letter of each thread of process `pid`; OSError when the process is gone. The process's own
    (`state`) is its first thread's alone: a zombie's once that thread has ended, while the others run on."""
    letters = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            letters.append(state(f"{pid}/task/{task}"))
        except (OSError, IndexError):
            continue  # a thread that ended meanwhile
    return letters


def parent(pid):
    """The id of the process's parent; None when it is gone."""
    try:
        return int(_stat_fields(pid)[1])
    except (OSError, ValueError, IndexError):
        return None


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


def own_pages(pid):
    """{address: a digest of its contents} for each page of private memory only process `pid` maps (present,
    not a file's, not shared): the pages another process of the same user can write in place, with
    process_vm_writev or through /proc/PID/mem, without a page more being charged to anyone. Read while
    the process is stopped, and again later (`written_bytes`), it tells what was written into it meanwhile."""
    import numpy as np

    own = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if fields[1][3] != "p" or fields[-1] in NOT_IN_PAGEMAP:  # shared: counted as files in RAM
                continue
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            pagemap.seek(start // PAGE * 8)
            entries = np.frombuffer(pagemap.read((end - start) // PAGE * 8), dtype=np.uint64)
            pages = np.flatnonzero((entries & (PRESENT | EXCLUSIVE | FILE_OR_SHARED)) == (PRESENT | EXCLUSIVE))
            own += (start + pages * PAGE).tolist()
    return _sums(pid, own)


def _sums(pid, addresses):
    """{address: a digest of the page there} for `addresses` (sorted) of process `pid`'s memory, a run of
    neighbours read at once; a page that cannot be read is left out. A cryptographic digest: a CRC's
    last four bytes can be chosen to keep it, so a page could hold 4092 bytes of scores unseen."""
    sums = {}
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as memory:
        first = 0
        for last in range(len(addresses)):
            if last + 1 < len(addresses) and addresses[last + 1] == addresses[last] + PAGE:
                continue
            try:
                memory.seek(addresses[first])
                data = memory.read((last - first + 1) * PAGE)
            except OSError:
                data = b""
            for i in range(len(data) // PAGE):
                sums[addresses[first + i]] = hashlib.blake2b(data[i * PAGE:(i + 1) * PAGE], digest_size=16).digest()
            first = last + 1
    return sums


def own_pages_of(pids):
    """{pid: own_pages(pid)} for those of `pids` still there."""
    found = {}
    for pid in pids:
        try:
            found[pid] = own_pages(pid)
        except OSError:
            continue
    return found


def written_bytes(watched):
    """The bytes of the pages `own_pages_of` found (`watched`) that hold something else now, or cannot be
    read: all of a process's when it is gone (it was stopped: it did not end by itself)."""
    changed = 0
    for pid, before in watched.items():
        try:
            now = _sums(pid, sorted(before))
        except OSError:
            now = {}
        changed += sum(now.get(address) != digest for address, digest in before.items())
    return changed * PAGE


def pipes(pids):
    """The distinct pipes (anonymous or named) that processes `pids` hold open, as (device, inode) pairs;
    a process gone holds none. Any process that can reach one (through /proc/PID/fd, or a name) can
    write into the room it keeps (PIPE_ROOM). Each thread's descriptors are read: a thread started
    without CLONE_FILES has a table of its own, which /proc/PID/fd does not show."""
    found = set()
    for pid in pids:
        try:
            tables = [f"/proc/{pid}/task/{task}/fd" for task in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for table in tables:
            try:
                fds = os.listdir(table)
            except OSError:
                continue
            for fd in fds:
                try:
                    info = os.stat(f"{table}/{fd}")  # what the descriptor is; no pipe is opened
                except OSError:
                    continue
                if stat.S_ISFIFO(info.st_mode):
                    found.add((info.st_dev, info.st_ino))
    return found


def thread_runs(pid):
    """{thread id: (its state letter, whether it is off the CPU for good, how often it was switched out)} for each
    thread of process `pid`; OSError when the process is gone. Off the CPU for good: /proc names where it waits, which
    it does not while the thread still runs or waits on a run queue (one that stopped but is not yet switched out,
    which is switched out once more when it is)."""
    found = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/wchan") as handle:
                waits = handle.read().strip() not in ("", "0")
            fields = status(f"{pid}/task/{task}")  # a thread's own, as a process's
            found[int(task)] = (fields["State"][0], waits, sum(int(fields[key][0]) for key in SWITCHES))
        except (OSError, KeyError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return found


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
