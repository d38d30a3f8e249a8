"""The envelope on cgroup v2, on the kernel's own unified hierarchy.

These machines grade on cgroup v1, but the hierarchy v2 uses is there too (with the controllers
v1 does not hold): mounted at a folder of the test's own, it is a real v2 tree, with v2's rules
(a group that hands controllers down holds no process), on which `envelope.py` runs unchanged
with its root pointed there. Where memory, pids and cpu are not offered, the test hands down the
controllers that are, to show the delegation itself.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.kernel import envelope


@pytest.fixture
def unified(tmp_path, monkeypatch):
    """The unified hierarchy, mounted under tmp_path, with `envelope` looking there."""
    if os.getuid() != 0:
        pytest.skip("mounting a cgroup hierarchy is root's")
    where = tmp_path / "unified"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "cgroup2", "none", str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"this machine has no cgroup v2 hierarchy to mount ({mounted.stderr.strip()})")
    monkeypatch.setattr(envelope, "ROOT", where)
    envelope._enable_v2.cache_clear()
    try:
        yield where
    finally:
        envelope._enable_v2.cache_clear()
        subprocess.run(["umount", str(where)], check=True)


def _group_of(pid):
    """The v2 group of process `pid`, as /proc shows it."""
    lines = open(f"/proc/{pid}/cgroup").read().splitlines()
    return next(line[3:] for line in lines if line.startswith("0::"))


def test_a_subtree_without_the_controllers_gives_groups_that_claim_no_budget(unified, monkeypatch):
    """No controller offered: the kernel still gets a group of its own (its processes are found
    and killed with it), and the envelope claims no budget it cannot hold (the memory cases
    then sum the processes' peaks)."""
    monkeypatch.setattr(envelope, "V2_CONTROLLERS", ())
    assert envelope._version() == 2
    box = envelope.Envelope("kernel-v2-test-plain")
    child = subprocess.Popen([sys.executable, "-c", "import os, signal, time\n"
                              "os.kill(os.getpid(), signal.SIGSTOP)\ntime.sleep(60)"])
    try:
        assert box.budgets == frozenset() and not box.counts_memory and not box.measures_peak
        assert box.overruns() == {}
        box.admit(child.pid)
        group = box.paths[""]
        assert _group_of(child.pid) == "/" + str(group.relative_to(unified)), "admitted into its own group"
        box.remove()
        assert child.wait(timeout=10) == -signal.SIGKILL, "what is left in the group dies with it"
        assert not group.exists()
    finally:
        if child.poll() is None:
            child.kill()
        box.remove()


DELEGATED_GRADER = Path(__file__).parent / "scripts" / "delegated_grader.py"


def _grader(unified, controller, mode):
    run = subprocess.run([sys.executable, str(DELEGATED_GRADER), str(unified), controller, mode],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return [json.loads(line) for line in run.stdout.splitlines()]


def test_a_grading_process_in_its_delegated_group_moves_into_a_leaf_and_divides_the_rest(unified):
    """A grading process started inside the group delegated to it (a service, a container) may
    not hand controllers down while it sits there: it moves into a leaf of its own, and its
    kernels' groups, beside that leaf, get the controllers."""
    offered = (unified / "cgroup.controllers").read_text().split()
    if not offered:
        pytest.skip("the unified hierarchy offers no controller here")
    controller = next((c for c in envelope.V2_CONTROLLERS if c in offered), offered[0])
    delegated = unified / "delegated"
    delegated.mkdir()
    root_control = unified / "cgroup.subtree_control"
    was_on = controller in root_control.read_text().split()
    root_control.write_text(f"+{controller}")
    try:
        made, removed = _grader(unified, controller, "make")
        assert made["version"] == 2 and made["budgets"] == [controller]
        assert made["own"].startswith("/delegated/grading-"), made
        assert made["group"] == str(delegated / "kernel-v2-test") and controller in made["enabled"], made
        assert removed["removed"]
        (reaped,) = _grader(unified, controller, "reap")  # the next process of the same grading
        assert reaped["leaves"] == [reaped["own"].rsplit("/", 1)[1]], "only a live process's leaf stays"
    finally:
        for leaf in delegated.glob("*"):
            if leaf.is_dir():
                leaf.rmdir()
        (delegated / "cgroup.subtree_control").write_text(f"-{controller}")
        delegated.rmdir()
        if not was_on:
            root_control.write_text(f"-{controller}")
