"""One submission's envelope: its processes, memory (files in RAM too) and CPU, counted together
by the kernel's own accounting.

Each kernel gets control groups of its own, made here by the grading process (which must be
root to write them): `memory` (resident memory and tmpfs pages of every process it starts, capped
at SUBMISSION_MEMORY, peak read for the memory cases), `pids` (MAX_PROCESSES processes and threads
together) and `cpu` (SUBMISSION_CPUS cores). A kernel forked by the warm parent starts stopped;
the judge moves it into its groups before it runs a single instruction of its own
(`Envelope.admit`), so nothing it starts is ever counted elsewhere. Cold kernels join in the
child between fork and exec (`procs_files`).

cgroup v1 (separate hierarchies under /sys/fs/cgroup/<controller>) is what these machines have;
cgroup v2 (one unified hierarchy) is used where the grading process may create groups in it.
Where neither is writable (grading as an ordinary user), `Envelope` holds no group: the per-process
limits of `sandbox.py` and the sized tmpfs mounts of `zygote.py` still hold, and the memory cases
sum the peaks of the kernel's processes (`procfs`) instead.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.kernel import procfs
from autograder.limits import MAX_PROCESSES, SUBMISSION_CPUS, SUBMISSION_MEMORY

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


def _version():
    """2 on a unified hierarchy, 1 where the v1 controllers are mounted, 0 where neither is ours."""
    if os.getuid() != 0:
        return 0
    if (ROOT / "cgroup.controllers").exists():
        return 2
    if all((ROOT / c).is_dir() for c in V1_CONTROLLERS):
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


def _v2_settings():
    return {"memory.max": str(SUBMISSION_MEMORY), "memory.swap.max": "0", "pids.max": str(MAX_PROCESSES),
            "cpu.max": f"{CPU_PERIOD_US * SUBMISSION_CPUS} {CPU_PERIOD_US}"}


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
    """Every folder this process may make groups in: one per v1 controller, or the v2 root."""
    version = _version()
    return [ROOT / c for c in V1_CONTROLLERS] if version == 1 else [ROOT] if version == 2 else []


def _remove_group(path):
    """Kill whatever is still in the group at `path`, and remove it."""
    for _ in range(100):  # a PID namespace is torn down asynchronously
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
            time.sleep(0.02)


def remove_abandoned(name):
    """Remove the groups of the enclosure `name` and of its kernels (`kernel-<name>-...`), killing
    what is left in them: for an enclosure whose owning process is gone (killed, so its own
    `remove` never ran)."""
    for folder in _group_folders():
        try:
            found = [p for p in folder.iterdir() if p.name == name or p.name.startswith(f"kernel-{name}-")]
        except OSError:
            continue
        for path in found:
            _remove_group(path)


@dataclass
class Envelope:
    """The control groups of one kernel (and of any kernel that replaces it after a restart)."""

    name: str
    version: int = field(default_factory=_version)
    paths: dict = field(default_factory=dict)  # controller ("memory", "pids", "cpu", or "" in v2) -> folder
    _peak_fd: int | None = field(default=None, repr=False)  # v2: the descriptor a peak was reset through

    def __post_init__(self):
        if self.version == 1:
            for controller, values in _v1_settings().items():
                self._make(ROOT / controller / self.name, values, controller)
        elif self.version == 2:
            try:
                _write(ROOT / "cgroup.subtree_control", "+memory +pids +cpu")
            except OSError:
                pass  # already enabled, or not ours to enable: the group says which below
            self._make(ROOT / self.name, _v2_settings(), "")

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
        return ("memory" if self.version == 1 else "") in self.paths

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
        """Start a new memory peak; the memory in use now (bytes)."""
        if self.version == 1:
            _write(self._memory_file("memory.max_usage_in_bytes", ""), "0")
        else:
            # cgroup v2 (Linux 6.12 on) resets memory.peak for the descriptor that wrote to it:
            # the peak is read back through the same one.
            if self._peak_fd is not None:
                os.close(self._peak_fd)
            self._peak_fd = os.open(self._memory_file("", "memory.peak"), os.O_RDWR)
            os.write(self._peak_fd, b"reset")
        return int(self._memory_file("memory.usage_in_bytes", "memory.current").read_text())

    def peak(self):
        """The most memory the submission's processes and files held at once since the reset."""
        if self.version == 1:
            return int(self._memory_file("memory.max_usage_in_bytes", "").read_text())
        return int(os.pread(self._peak_fd, 64, 0))

    def overruns(self):
        """{"memory": n, "processes": n}: how often each budget stopped the submission so far."""
        found = {}
        if self.counts_memory:
            if self.version == 1:
                oom = _read_counts(self._memory_file("memory.oom_control", ""))
            else:
                oom = _read_counts(self._memory_file("", "memory.events"))
            found["memory"] = oom.get("oom_kill", 0)
        pids = self.paths.get("pids" if self.version == 1 else "")
        if pids is not None:
            found["processes"] = _read_counts(pids / "pids.events").get("max", 0)
        return found

    def remove(self):
        """Kill whatever is still inside, and remove the groups."""
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
        for path in self.paths.values():
            _remove_group(path)
        self.paths = {}
