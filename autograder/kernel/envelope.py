"""One submission's envelope: its processes, memory (files in RAM too) and CPU, counted together
by the kernel's own accounting.

Each kernel gets control groups of its own, made here by the grading process (which must be
root to write them): `memory` (resident memory and tmpfs pages of every process it starts, capped
at SUBMISSION_MEMORY, peak read for the memory cases), `pids` (MAX_PROCESSES processes and threads
together) and `cpu` (SUBMISSION_CPUS cores). A kernel forked by the warm parent starts stopped;
the judge moves it into its groups before it runs a single instruction of its own
(`Envelope.admit`), so nothing it starts is ever counted elsewhere. Cold kernels join in the
child between fork and exec (`procs_files`).

cgroup v1 (separate hierarchies under /sys/fs/cgroup/<controller>) is what these machines have.
On cgroup v2 (one unified hierarchy) the groups are made inside the grading process's own group,
the subtree delegated to it (root's, a systemd service's with `Delegate=yes`, a container's), with
the controllers that subtree offers. v2 lets a group hand controllers down only while it holds no
process itself, so a grading process that sits in its delegated group first moves into a leaf of
its own there (`grading-<pid>`), as systemd asks of delegated subtrees; its kernels' groups are
that leaf's siblings. A controller the subtree does not offer is a budget the envelope does not
claim (`budgets`), never an error. Where no group can be made (grading as an ordinary user on
v1), `Envelope` holds none: the per-process limits of `sandbox.py` and the sized tmpfs mounts of
`zygote.py` still hold, and the memory cases sum the peaks of the kernel's processes (`procfs`).
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from autograder.kernel import procfs
from autograder.limits import MAX_PROCESSES, SUBMISSION_CPUS, SUBMISSION_MEMORY

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu")
V2_CONTROLLERS = ("memory", "pids", "cpu")  # those of them a v2 subtree offers are used
LEAF_PREFIX = "grading-"  # the leaf a grading process moves into on v2 (`_enable_v2`)
# v1: the memory group inside a kernel's own that holds all its processes while one call is measured
# (`Envelope.reset_peak`): its peak counts only what is charged during the call.
CALL_GROUP = "call"
KERNEL_GROUP_PREFIX = "kernel-"  # then the enclosure's name and the job's (`kernel_group`)
CPU_PERIOD_US = 100_000
# Seconds for a group's killed processes to end before it is left: each tears down what it holds, inside the
# kernel's CPU budget, and 100 of 65,000 mappings each took more than the 2 s once waited, which left the group
# behind for good and the next notebook's kernel starting beside them (red-team round r61)
END_WAIT = 30.0
# An empty group of ours that no enclosure's folder names, made this many seconds ago or more, is one its grading
# process lost (its folder gone, its `remove` never run): swept by `remove_orphans`. A younger one may be a
# kernel's, made a moment before its first process joins.
ORPHAN_AGE = 600.0


def _own_v2_group():
    """This process's group in the unified hierarchy (the `0::` line of /proc/self/cgroup)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = [line[3:].strip() for line in lines if line.startswith("0::")]
    return ROOT / paths[0].lstrip("/") if paths else None


def _v2_base():
    """The group the kernels' groups go in: this process's own, or, when that is a leaf a
    grading process moved into (this one, or the one that started it), the leaf's parent."""
    own = _own_v2_group()
    return own.parent if own is not None and own.name.startswith(LEAF_PREFIX) else own


def _version():
    """2 on a unified hierarchy whose subtree here is ours to divide, 1 where the v1 controllers
    are mounted and this is root, 0 where no group can be made."""
    if (ROOT / "cgroup.controllers").exists():
        base = _v2_base()
        writable = base is not None and all(os.access(p, os.W_OK) for p in (base, base / "cgroup.subtree_control"))
        return 2 if writable else 0
    if os.getuid() == 0 and all((ROOT / c).is_dir() for c in V1_CONTROLLERS):
        return 1
    return 0


def _v1_settings():
    return {
        "memory": {"memory.limit_in_bytes": str(SUBMISSION_MEMORY),
                   # with swap accounting on, swap may not stretch the budget either
                   "memory.memsw.limit_in_bytes": str(SUBMISSION_MEMORY)},
        "pids": {"pids.max": str(MAX_PROCESSES)},
        "cpu": {"cpu.cfs_period_us": str(CPU_PERIOD_US),
                "cpu.cfs_quota_us": str(CPU_PERIOD_US * SUBMISSION_CPUS)},
    }


def _v2_settings(controllers):
    """The budgets of a v2 group with `controllers` enabled: one per controller the subtree offers."""
    settings = {"memory": {"memory.max": str(SUBMISSION_MEMORY), "memory.swap.max": "0"},
                "pids": {"pids.max": str(MAX_PROCESSES)},
                "cpu": {"cpu.max": f"{CPU_PERIOD_US * SUBMISSION_CPUS} {CPU_PERIOD_US}"}}
    return {key: value for c in controllers for key, value in settings.get(c, {}).items()}


def _words(path):
    try:
        return set(Path(path).read_text().split())
    except OSError:
        return set()


@functools.cache
def _enable_v2(base):
    """Hand the wanted controllers `base` offers down to the groups made in it; those handed down.

    v2's rule "no internal processes": a group (other than the root) that hands controllers down
    holds no process. When `base` holds this process, it moves into a leaf of its own, once."""
    wanted = [c for c in V2_CONTROLLERS if c in _words(base / "cgroup.controllers")]
    request = " ".join(f"+{c}" for c in wanted)
    if wanted and not set(wanted) <= _words(base / "cgroup.subtree_control"):
        try:
            _write(base / "cgroup.subtree_control", request)
        except OSError as error:
            if error.errno != errno.EBUSY:
                return frozenset()
            try:
                leaf = base / f"{LEAF_PREFIX}{os.getpid()}"
                leaf.mkdir(exist_ok=True)
                _write(leaf / "cgroup.procs", str(os.getpid()))
                _write(base / "cgroup.subtree_control", request)
            except OSError:  # other processes sit in `base` too: not ours to move
                return frozenset()
    return frozenset(_words(base / "cgroup.subtree_control") & set(wanted))


def _write(path, value):
    with open(path, "w") as handle:
        handle.write(value)


def _read_counts(path):
    """A cgroup file of "key value" lines ({} when unreadable)."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v) for k, _, v in (line.partition(" ") for line in lines) if v.strip().isdigit()}


def _group_folders():
    """Every folder this process may make groups in: one per v1 controller, or its v2 subtree."""
    version = _version()
    return [ROOT / c for c in V1_CONTROLLERS] if version == 1 else [_v2_base()] if version == 2 else []


def _move_processes(source, target):
    """Every process of the group `source` into the group `target`, those forked meanwhile too."""
    for _ in range(100):
        try:
            pids = (source / "cgroup.procs").read_text().split()
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                _write(target / "cgroup.procs", pid)
            except OSError:
                pass  # ended meanwhile


def _remove_group(path, deadline=None):
    """Kill whatever is still in the group at `path`, and remove it once they have ended: by `deadline` (a
    `time.monotonic()`; END_WAIT from now if None), or it is left."""
    deadline = time.monotonic() + END_WAIT if deadline is None else deadline
    while True:  # a PID namespace is torn down asynchronously
        try:
            path.rmdir()
            return
        except OSError:
            try:
                pids = (path / "cgroup.procs").read_text().split()
            except OSError:
                return
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def kernel_group(enclosure, job):
    """The name of the group of a kernel forked by the warm parent of `enclosure` (its folder's name) for
    the job folder `job`: named after both, so the enclosure's groups are found by name once it is gone."""
    return f"{KERNEL_GROUP_PREFIX}{enclosure}-{job}"


def _belongs_to(group, enclosure):
    """Whether the group named `group` is the enclosure's own or one of its kernels' (`kernel_group`)."""
    return group == enclosure or group.startswith(kernel_group(enclosure, ""))


def remove_abandoned(name):
    """Remove the groups of the enclosure `name` and of its kernels (`kernel_group`), killing
    what is left in them: for an enclosure whose owning process is gone (killed, so its own
    `remove` never ran)."""
    deadline = time.monotonic() + END_WAIT  # one wait for them all: they were all killed at once
    for folder in _group_folders():
        try:
            found = [p for p in folder.iterdir() if _belongs_to(p.name, name)]
        except OSError:
            continue
        for path in found:
            _remove_group(path, deadline)
        for leaf in folder.glob(f"{LEAF_PREFIX}*"):  # v2: the leaves of grading processes now gone
            try:
                leaf.rmdir()  # only an empty one goes: a live process's leaf holds that process
            except OSError:
                pass


def remove_orphans(enclosures, prefix):
    """Remove the empty groups named after enclosures (`prefix...`, `kernel-prefix...`) that are none of
    `enclosures` (names of the enclosure folders there are), made ORPHAN_AGE ago or more. Nothing is killed: a
    group that holds a process is in use (by a grader whose folders are elsewhere, say) and `rmdir` leaves it."""
    now = time.time()
    for folder in _group_folders():
        try:
            paths = [p for p in folder.iterdir() if p.name.startswith((prefix, KERNEL_GROUP_PREFIX + prefix))]
        except OSError:
            continue
        for path in paths:
            if any(_belongs_to(path.name, e) for e in enclosures):
                continue
            with suppress(OSError):
                if now - path.stat().st_mtime >= ORPHAN_AGE:
                    path.rmdir()


@dataclass
class Envelope:
    """The control groups of one kernel (and of any kernel that replaces it after a restart)."""

    name: str
    version: int = field(default_factory=_version)
    paths: dict = field(default_factory=dict)  # controller ("memory", "pids", "cpu", or "" in v2) -> folder
    budgets: frozenset = frozenset()  # the controllers whose budgets hold: "memory", "pids", "cpu"
    _peak_fd: int | None = field(default=None, repr=False)  # v2: the descriptor a peak was reset through
    _oom_kills_in_calls: int = 0  # v1: those counted in call groups (`reset_peak`) already removed

    def __post_init__(self):
        if self.version == 1:
            for controller, values in _v1_settings().items():
                self._make(ROOT / controller / self.name, values, controller)
            self.budgets = frozenset(self.paths)
        elif self.version == 2:
            base = _v2_base()
            self.budgets = _enable_v2(base)
            self._make(base / self.name, _v2_settings(self.budgets), "")
            if "" not in self.paths:
                self.budgets = frozenset()

    def _make(self, path, values, controller):
        try:
            path.mkdir()
        except OSError:
            return
        self.paths[controller] = path
        for key, value in values.items():
            try:
                _write(path / key, value)
            except OSError:
                if key.startswith(("memory.memsw", "memory.swap")):
                    continue  # no swap accounting on this machine: nothing to stretch
                raise

    @property
    def counts_memory(self):
        """Whether the memory budget holds (and its overruns are counted)."""
        return "memory" in self.budgets

    @functools.cached_property
    def measures_peak(self):
        """Whether the group's memory peak can be restarted and read: v1's can; v2's from Linux
        6.12 on (before that it only ever grows, and the memory cases read `procfs` instead)."""
        if not self.counts_memory:
            return False
        if self.version == 1:
            return True
        try:
            self.reset_peak()
            return True
        except OSError:
            return False

    @property
    def procs_files(self):
        """Where a process writes its id to join every group (a cold kernel, before exec)."""
        return [str(path / "cgroup.procs") for path in self.paths.values()]

    def admit(self, pid):
        """Move process `pid` (stopped by itself, as the warm parent's monitors start) into every
        group, then let it go on."""
        for _ in range(500):  # it stops itself right after the fork
            if procfs.state(pid) in ("T", "t"):
                break
            time.sleep(0.002)
        for procs in self.procs_files:
            _write(procs, str(pid))
        os.kill(pid, signal.SIGCONT)

    # memory
    def _memory_file(self, v1, v2):
        return self.paths["memory" if self.version == 1 else ""] / (v1 if self.version == 1 else v2)

    def reset_peak(self):
        """Start a new memory peak; the memory in use now (bytes), from which it is counted.

        On v1 every process of the submission moves into a fresh group inside its own (`CALL_GROUP`),
        until the peak is read: a page stays charged to the group it was charged to, so the new group's
        peak counts only what is charged from now on. Against the whole group's, a call made room by
        giving back what the submission held before it (arrays freed as it began), then filled that
        room with a whole score matrix unseen (red-team round r46)."""
        if self.version == 1:
            self._leave_call_group()
            call = self._call_group
            call.mkdir()
            _move_processes(self.paths["memory"], call)
            return int((call / "memory.usage_in_bytes").read_text())
        else:
            # cgroup v2 (Linux 6.12 on) resets memory.peak for the descriptor that wrote to it:
            # the peak is read back through the same one.
            if self._peak_fd is not None:
                os.close(self._peak_fd)
                self._peak_fd = None
            self._peak_fd = os.open(self._memory_file("", "memory.peak"), os.O_RDWR)
            os.write(self._peak_fd, b"reset")
        return self.usage()

    def usage(self):
        """The memory the submission's processes and files hold now (bytes)."""
        return int(self._memory_file("memory.usage_in_bytes", "memory.current").read_text())

    @property
    def _call_group(self):
        """v1: the group `reset_peak` moves the submission's processes into, inside its memory group."""
        return self.paths["memory"] / CALL_GROUP

    def shared(self):
        """The memory the submission holds in files in RAM (its tmpfs mounts) and in shared mappings (bytes):
        what a call can write into without being charged a page more (what its kernels changed of the submission
        folder included: what was handed in and left as it was is the judge's, `zygote._working_copy`). Each pipe it holds open counts the room it keeps
        (`procfs.PIPE_ROOM`): 3,200 pipes, written through once by an earlier cell, held a whole score
        matrix that passed both of 05's memory cases (red-team round r54)."""
        stat = _read_counts(self._memory_file("memory.stat", "memory.stat"))
        in_pipes = len(procfs.pipes(self.processes())) * procfs.PIPE_ROOM
        return stat.get("total_shmem" if self.version == 1 else "shmem", 0) + in_pipes

    def processes(self):
        """The ids of every process in the submission's memory group (and, on v1, the call group inside it)."""
        found = []
        for procs in self._memory_file("", "").glob("**/cgroup.procs"):
            with suppress(OSError, ValueError):
                found += [int(pid) for pid in procs.read_text().split()]
        return found

    def peak(self):
        """The most memory the submission's processes and files held at once since the reset (v1: what
        was charged since; its processes then go back to the submission's own group)."""
        if self.version == 1:
            call = self._call_group
            if not call.is_dir():
                return 0
            peak = int((call / "memory.max_usage_in_bytes").read_text())
            self._leave_call_group()
            return peak
        return int(os.pread(self._peak_fd, 64, 0))

    def _leave_call_group(self):
        """v1: the processes of the call group (`reset_peak`) back in the submission's group, and the
        group removed (what it was charged is the submission's: the kernel moves it up)."""
        call = self._call_group
        if not call.is_dir():
            return
        self._oom_kills_in_calls += _read_counts(call / "memory.oom_control").get("oom_kill", 0)
        _move_processes(call, self.paths["memory"])
        _remove_group(call)

    def overruns(self):
        """{"memory": n, "processes": n}: how often each budget stopped the submission so far."""
        found = {}
        if self.counts_memory:
            if self.version == 1:
                groups = [self.paths["memory"], self._call_group]  # v1 counts a kill in its own group
                kills = self._oom_kills_in_calls + sum(_read_counts(g / "memory.oom_control").get("oom_kill", 0) for g in groups)
            else:
                kills = _read_counts(self._memory_file("", "memory.events")).get("oom_kill", 0)
            found["memory"] = kills
        pids = self.paths.get("pids" if self.version == 1 else "")
        if pids is not None and "pids" in self.budgets:
            found["processes"] = _read_counts(pids / "pids.events").get("max", 0)
        return found

    def remove(self):
        """Kill whatever is still inside, and remove the groups."""
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        deadline = time.monotonic() + END_WAIT  # one wait for them all: they were all killed at once
        if "memory" in self.paths and self.version == 1:
            _remove_group(self._call_group, deadline)  # first: a group holding another is not removed
        for path in self.paths.values():
            _remove_group(path, deadline)
        self.paths = {}
