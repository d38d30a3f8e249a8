"""Sealed submissions: each kernel is one envelope, and nothing crosses between kernels.

Each test grades small hand-made notebooks with `judge_notebook`, as `nbgrader autograde` and
`coursekit autograde` do (the same `JudgedExecute`, the same warm parent), one after another in
this process, so they share one warm parent as the notebooks of one Dask worker do. The hostile
catalogue (`coursekit/catalogue/programs/*/hostile/`) grades the attacks on the verdict through
real nbgrader.
"""

import json
import os

import pytest
from test_judge import notebook, printed, processes_left, program

from autograder.judge import judge_notebook
from autograder.kernel import envelope, owned_folders, sandbox, zygote
from autograder.limits import SCRATCH_BYTES, SHM_BYTES, SUBMISSION_MEMORY, TMP_BYTES
from autograder.reference import reference_source

SEALED = sandbox.available()
needs_sandbox = pytest.mark.skipif(not SEALED, reason="the envelope is the sandbox's")
needs_groups = pytest.mark.skipif(envelope._version() == 0, reason="control groups are root's to make")


def _printed_json(judged, index, tag):
    text = printed(judged, index)
    assert tag in text, text
    return json.loads(text.split(tag, 1)[1])


@needs_sandbox
def test_nothing_one_kernel_writes_is_seen_by_the_next(tmp_path):
    """Two students graded one after the other on one warm parent: the first leaves a file in every
    folder it can write to (its /tmp, /dev, /dev/shm and working folder), the second finds none of
    them anywhere. The root of the warm parent's sandbox, which every kernel forked from it shares,
    is read-only, even remounted in a namespace of the kernel's: a kernel once wrote /etc/left
    there, and the next kernel read it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = judge_notebook(notebook(tmp_path / "a" / "nb.ipynb", [program("leave_traces"), program("find_traces")]))
    left = _printed_json(first, 0, "LEFT")
    assert {"/tmp/trace", "/dev/shm/trace", "/dev/trace"} <= set(left), left
    assert any(place.endswith("/work/trace") for place in left), left
    assert not {"/trace", "/etc/trace", "/usr/trace", "/trace-remounted"} & set(left), left
    assert sorted(_printed_json(first, 1, "FOUND")) == sorted(left), "a kernel sees what it wrote itself"
    second = judge_notebook(notebook(tmp_path / "b" / "nb.ipynb", [program("find_traces")]))
    assert _printed_json(second, 0, "FOUND") == []
    assert not (tmp_path / "a" / "trace").exists(), "the submission folder itself is never written"


@needs_sandbox
def test_no_kernel_sets_the_times_of_a_device_node(tmp_path):
    """A kernel's /dev/null, /dev/zero and the rest are the machine's own nodes, which anyone may
    write and so set the times of to now: a kernel of red-team round r51 set the times of all
    six at moments it chose (kept in nanoseconds), which a later
    kernel (a classmate's, or the notebook's own once let go) and every user of the machine read
    with stat, long after the kernel was gone. They are mounted read-only in every kernel, and
    still read and written as devices (every notebook writes /dev/null)."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("touch_devices"), "print('WROTE', open('/dev/null', 'w').write('x'), len(open('/dev/zero', 'rb').read(3)))"]))
    assert _printed_json(judged, 0, "TOUCHED") == []
    assert "WROTE 1 3" in printed(judged, 1), printed(judged, 1)
    assert processes_left() == []


@needs_sandbox
def test_a_kernel_reads_none_of_the_machines_event_counters(tmp_path):
    """Each of `zygote.MACHINE_COUNTERS` the host has reads empty in a kernel: counts of the whole machine's
    events (pages locked, r39) and its tasks' waits (/proc/pressure, which a stall of the kernel's choosing
    raises for a later reader), each a channel from a kernel that held a reference to one that runs later."""
    present = [name for name in zygote.MACHINE_COUNTERS if os.path.exists(f"/proc/{name}")]
    present += [f"pressure/{name}" for name in sorted(os.listdir("/proc/pressure"))] if os.path.isdir("/proc/pressure") else []
    assert "vmstat" in present
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        f"import json\nprint('READ', json.dumps({{n: len(open('/proc/' + n).read()) for n in {present!r}}}))"]))
    assert _printed_json(judged, 0, "READ") == dict.fromkeys(present, 0)


@needs_sandbox
def test_every_writable_place_is_a_sized_tmpfs_of_its_own(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("fill_disk")]))
    found = _printed_json(judged, 0, "FILLED")
    mib = 1024**2
    for place, size in (("/tmp/big", TMP_BYTES), ("/dev/shm/big", SHM_BYTES), ("big", SCRATCH_BYTES)):
        written, error = found[place]
        assert error == "ENOSPC" and written <= size // mib, (place, found)
    # the last mount there: an overlay whose upper layer, where every write lands, is the sized tmpfs under it
    assert found["work mounted as"] == "overlay", found
    assert processes_left() == []


@needs_sandbox
def test_a_kernel_holds_a_few_terminals_of_the_machines(tmp_path):
    """Red-team round r58: one kernel held all 3,071 terminals the machine lends its kernels' devpts instances, and no
    other kernel could run a `!` line meanwhile. Each kernel's instance holds at most `zygote.TERMINALS`."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", ["HOLD = 100", program("hold_terminals")]))
    assert f"TERMINALS {zygote.TERMINALS}" in printed(judged, 1), printed(judged, 1)


@needs_sandbox
def test_a_kernel_holds_none_of_the_machines_asynchronous_io_contexts(tmp_path):
    """Red-team round r61: one kernel held the machine's whole pool of io_setup's events (fs.aio-max-nr), 16 contexts
    of 4,096, and no other program on the machine, a classmate's kernel graded beside it included, could have one.
    No notebook needs them: io_setup is refused."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", ["HOLD, EVENTS = 64, 4096", program("hold_aio")]))
    assert "REFUSED EPERM" in printed(judged, 1) and "CONTEXTS 0" in printed(judged, 1), printed(judged, 1)


@needs_sandbox
@needs_groups
def test_children_share_the_submissions_memory_budget(tmp_path):
    """Three children of 1.6 GiB each fit under any one process's limit but not together: the
    envelope's budget stops at least one of them."""
    assert 2 * 1.6 * 1024**3 < SUBMISSION_MEMORY < 3 * 1.6 * 1024**3
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("memory_in_children")]))
    text = printed(judged, 0)
    assert "HELD" in text, text
    assert int(text.split("HELD")[1]) <= 2, text
    assert processes_left() == []


@needs_sandbox
@needs_groups
def test_each_kernel_has_its_own_groups_and_they_go_with_it(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", ["print('GROUP', open('/proc/self/cgroup').read())"]))
    groups = printed(judged, 0)
    assert "kernel-judge-warm-" in groups, groups  # memory, pids and cpu: the kernel's own
    # Its own groups, by name: the machine's others come and go with whatever else grades beside this test
    # (CI runs 05's memory-pool attacks in a second pytest at the same time)
    own = {part.split("/")[-1] for part in groups.split() if "kernel-judge-warm-" in part}
    if envelope._version() == 1:
        assert own and not any((envelope.ROOT / "memory" / name).exists() for name in own), own


@pytest.mark.skipif(envelope._version() != 1 or not (envelope.ROOT / "freezer").is_dir(), reason="v1's freezer")
def test_an_envelope_is_removed_once_its_processes_have_ended_however_long_they_take(tmp_path):
    """Red-team round r61 (`tests/programs/slow_to_end.py`, by hand): 100 processes of 65,000 mappings each took more
    than 2 s to end once killed, each tearing its mappings down inside the kernel's CPU budget; the judge, which
    waited 2 s, left the kernel's memory group behind for good (its enclosure's folder, by which a later grading
    process finds what a killed one left, is removed), and the next notebook's kernel started beside them. Here a
    process frozen (v1's freezer: a fatal signal waits until it thaws) ends 3 s after it is killed."""
    import subprocess
    import sys
    import threading
    import time

    frozen = envelope.ROOT / "freezer" / f"test-slow-end-{tmp_path.name}"
    frozen.mkdir()
    child = subprocess.Popen([sys.executable, "-c",
                              "import os, signal, time; os.kill(os.getpid(), signal.SIGSTOP); time.sleep(60)"])
    kept = envelope.Envelope(f"test-slow-end-{tmp_path.name}")
    thaw = threading.Timer(3.0, (frozen / "freezer.state").write_text, ["THAWED"])
    try:
        kept.admit(child.pid)
        (frozen / "cgroup.procs").write_text(str(child.pid))
        (frozen / "freezer.state").write_text("FROZEN")
        thaw.start()
        started = time.monotonic()
        kept.remove()
        assert time.monotonic() - started > 2.5 and child.wait(timeout=10) == -9
        assert not any((root / kept.name).exists() for root in envelope._group_folders())
    finally:
        thaw.cancel()  # not started, or run already: either way the child thaws
        (frozen / "freezer.state").write_text("THAWED")
        child.kill()
        child.wait()
        envelope.remove_abandoned(kept.name)
        frozen.rmdir()


def test_an_envelope_without_groups_still_admits_a_stopped_process():
    """Where no group can be made (grading as an ordinary user), a kernel's monitor is still let go."""
    import signal
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)"])
    try:
        empty = envelope.Envelope.__new__(envelope.Envelope)
        empty.name, empty.version, empty.paths = "none", 0, {}
        empty.admit(child.pid)
        assert child.wait(timeout=10) == 0
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGKILL)



REPORT_KEPT = ("import builtins\n"
               "print('KEPT', hasattr(builtins, 'kept'), 'RECORDED', len(getattr(builtins, 'recorded', '')))")


@needs_sandbox
def test_a_lent_reference_is_gone_once_its_step_is_graded(tmp_path):
    """A wrong softmax: attention_weights is graded with the reference's softmax in its place. The
    student's code keeps it and records its source; later cells find neither (it was lent only in
    the lending kernel, `test_lending.py`), and the step still gets its points."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("wrong_softmax"), ("grade", "softmax"), program("keep_reference"),
        ("grade", "attention_weights"), REPORT_KEPT]))
    assert judged.steps["softmax"].fraction < 1
    assert judged.steps["attention_weights"].fraction == 1, judged.steps["attention_weights"].results
    assert "KEPT False RECORDED 0" in printed(judged, 4), printed(judged, 4)
    assert processes_left() == []


@needs_sandbox
def test_a_dependency_with_full_marks_is_the_students_own(tmp_path):
    correct = "import numpy as np\n" + reference_source(["softmax"]).split("\n", 3)[3]
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        correct, ("grade", "softmax"), program("keep_reference"), ("grade", "attention_weights"), REPORT_KEPT]))
    assert judged.steps["softmax"].fraction == judged.steps["attention_weights"].fraction == 1
    assert "KEPT True RECORDED 0" in printed(judged, 4), "no reference entered; the kernel went on"


@needs_sandbox
def test_the_notebooks_own_time_holds_inside_a_cell_and_ends_what_is_left(tmp_path):
    import time

    from autograder.kernel import warm

    warm.warm_parent()  # started before the clock: it is not the notebook's time
    start = time.monotonic()
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("hang") + "\nhang()", ("grade", "softmax"), "print('late')"]),
                            submission_timeout=4)
    # without the notebook's own limit, the hanging cell alone would run for CELL_TIMEOUT (30 s)
    assert time.monotonic() - start < 20, "the hanging cell was cut to what was left of 4 s"
    assert judged.steps["softmax"].fraction == 0
    assert all("stopped after its 4 s" in r.message for r in judged.steps["softmax"].results)
    assert "not run" in printed(judged, 2)
    assert processes_left() == []


@needs_sandbox
def test_what_a_killed_grading_process_left_is_removed_by_the_next(tmp_path):
    """A grading process killed with SIGKILL (a Dask worker, say) never removes its enclosure:
    the next process to make one removes the folder and its control groups, and leaves alone
    the enclosures of processes that still run."""
    import signal
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    killed = subprocess.run([sys.executable, "-c", (
        "import os, signal\n"
        "from autograder.kernel import sandbox\n"
        "enclosure = sandbox.Enclosure(prefix='judge-test-killed-')\n"
        "print(enclosure.root.name, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    name = killed.stdout.strip()
    folder = Path(tempfile.gettempdir()) / name
    groups = [root / name for root in envelope._group_folders()]
    assert folder.is_dir() and all(g.is_dir() for g in groups), "the killed process left them"
    alive = sandbox.Enclosure(prefix="judge-test-alive-")  # this process's: it still runs
    try:
        owned_folders._swept.discard("judge-")
        sandbox.reap_abandoned()
        assert not folder.exists()
        assert not any(g.exists() for g in groups)
        assert alive.root.is_dir() and all((root / alive.root.name).is_dir() for root in envelope._group_folders())
    finally:
        alive.close()


def test_graders_any_distance_apart_run_their_kernels_as_users_of_their_own():
    """Kernels ran as the user numbered by their grader's process id modulo 100000: where pid_max is higher (4194304,
    as systemd sets it), two Dask workers 100000 apart ran theirs as one user, whose count of processes
    (RLIMIT_NPROC, `sandbox._sandboxed_child`) they shared, so that one's forks could starve the other's kernel."""
    pids = [1, 2, 99_999, 100_000, 100_001, 200_001, sandbox.PID_MAX_LIMIT - 1]
    uids = [sandbox.uid_of_grader(pid) for pid in pids]
    assert len(set(uids)) == len(pids), uids
    assert all(sandbox.SANDBOX_UID_BASE < uid < 2**31 for uid in uids), uids


def test_kernels_users_are_no_accounts_subordinate_ids():
    """useradd gives each new account 65536 subordinate ids (/etc/subuid), from 100000 up: the first account's were
    every kernel's user (100000 + pid), which its owner may map into a user namespace of their own (newuidmap) and
    so signal a kernel graded on the machine. No range useradd hands out by default, nor one this machine lists, holds
    a kernel's user now."""
    import re
    from pathlib import Path

    ranges = [(100_000, 600_100_000 + 65_536)]  # login.defs' SUB_UID_MIN, SUB_UID_MAX (+ one count) by default
    for listed in ("/etc/subuid", "/etc/subgid", "/etc/login.defs"):
        text = Path(listed).read_text() if Path(listed).exists() else ""
        ranges += [(int(first), int(first) + int(count)) for first, count in re.findall(r"^[^:#\s]+:(\d+):(\d+)$", text, re.M)]
        limits = dict(re.findall(r"^(SUB_[UG]ID_(?:MIN|MAX))\s+(\d+)", text, re.M))
        if "SUB_UID_MAX" in limits:
            ranges.append((int(limits.get("SUB_UID_MIN", 100_000)), int(limits["SUB_UID_MAX"]) + 65_536))
    lowest, highest = sandbox.uid_of_grader(1), sandbox.uid_of_grader(sandbox.PID_MAX_LIMIT - 1)
    assert not [(a, b) for a, b in ranges if a <= highest and lowest < b], ranges


@needs_sandbox
@needs_groups
def test_a_group_its_grader_lost_is_removed_once_it_is_old_and_empty(monkeypatch):
    """Two kernels' groups of an earlier run (`kernel-judge-warm-...-job-...`) stayed on this machine, empty, their
    enclosure's folder long gone: neither their grader's `remove` nor `reap_abandoned` (which starts from folders)
    ever found them. A grading process now removes the old, empty groups that no enclosure's folder names; it leaves
    a young one (a kernel's, about to be joined), one that holds a process (a grader whose folders are elsewhere) and
    a living enclosure's."""
    import subprocess

    alive = sandbox.Enclosure(prefix="judge-test-alive-")
    lost, busy, live = "kernel-judge-test-lost-job-x", "kernel-judge-test-busy-job-x", f"kernel-{alive.root.name}-job-x"
    folders = envelope._group_folders()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        for folder in folders:
            for name in (lost, busy, live):
                (folder / name).mkdir()
            (folder / busy / "cgroup.procs").write_text(str(sleeper.pid))
        owned_folders._swept.discard("judge-")
        sandbox.reap_abandoned()
        assert all((f / lost).is_dir() for f in folders), "a young group is left: it may be about to be joined"
        monkeypatch.setattr(envelope, "ORPHAN_AGE", 0.0)
        owned_folders._swept.discard("judge-")
        sandbox.reap_abandoned()
        assert not any((f / lost).exists() for f in folders)
        assert all((f / busy).is_dir() and (f / live).is_dir() for f in folders)
    finally:
        sleeper.kill()
        sleeper.wait()
        for folder in folders:
            for name in (lost, busy, live):
                envelope._remove_group(folder / name)
        alive.close()
