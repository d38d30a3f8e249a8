"""Nothing a kernel asks of the machine's file caches reaches another kernel (issue 18, items 2 and 5).

A name looked up on a disk's file system (a name that does not exist too) is answered from the
machine's name cache, about twice as fast as one not looked up, for as long as the cache keeps it,
and a page read stays in the page cache: both are the whole machine's. Red-team round r39 had a
lending kernel, holding a reference, look up one name per 1 bit of it, in numpy's folder; the
notebook's kernel then read the reference back by timing, and so did a classmate graded later on
the same machine (who ran it: full marks at softmax where its control kept 0.04).

Kernels now read their programs from the kernel image (`autograder/kernel/runtime_image.py`), on a
tmpfs, which keeps no name that does not exist and every page in memory. The first test says so of
every folder a kernel can reach; the other two are r39's attacks, which read nothing back now.
Without the image (the disk's folders bound instead, `sandbox.kernel_image` returning None) the
first two fail: every folder of the system and of Python is on the disk, and the in-submission
attack read the reference back (run here: "import numpq as np", one bit off at the start). The classmate attack got through
in r39's three runs but not in every run here: a timing channel reads less on a loaded machine, so
without the image these two could pass by chance; with it there is no channel to read.
"""

import json
import os
import random

import pytest
from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left, program
from test_lending_channel import WRONG_SOFTMAX_RECORDING_THE_REFERENCE

from autograder import judge
from autograder.judge import judge_notebook
from autograder.reference import reference_source, with_dependencies


@needs_sandbox
def test_every_folder_a_kernel_can_look_names_up_in_remembers_nothing(tmp_path):
    """Every folder a kernel can reach is on a tmpfs (the kernel image, a mount of the kernel's own,
    or, as root, the warm parent's job folders: the kernel that replaces another after a restart has
    the same job folder), an overlay of two of those (its working folder), or is its own /proc or
    terminals (/dev/pts), never on the machine's disk;
    and the image holds what a kernel imports, not the grading environment."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("list_mounts")]))
    found = json.loads(printed(judged, 0).split("MOUNTS", 1)[1])
    job = found["job"] if os.getuid() != 0 else None  # as any other user, on the disk
    reached = {point: kind for point, kind in found["mounts"] if job is None or (point != job and not point.startswith(job + "/"))}
    assert set(reached.values()) <= {"tmpfs", "proc", "devpts", "overlay"}, reached
    # the one overlay is the kernel's working folder, whose layers are the job's folder and a tmpfs of its own
    assert all(point.endswith("/work") for point, kind in reached.items() if kind == "overlay"), reached
    assert reached["/usr"] == "tmpfs" and reached["/proc"] == "proc" and reached["/dev/pts"] == "devpts", reached
    assert found["nbgrader"] == found["dask"] == "ModuleNotFoundError", found
    assert processes_left() == []


NAMES = """\
import os

import numpy

FOLDER, TAG, CHARS = os.path.dirname(numpy.__file__), %r, 40  # TAG: new names each run
CALIBRATION = [1, 0] * 16


def _names(i):  # seven names that do not exist, in a folder every kernel of the machine sees
    return [f'{FOLDER}/r39-{TAG}-{i}-{copy}' for copy in range(7)]


def _bits(text):
    return CALIBRATION + [(ord(c) >> k) & 1 for c in text[:CHARS].ljust(CHARS) for k in range(8)]
"""

# The sender and the timer, shared by both attacks: a name looked up stays in the name cache, and
# a later look-up of it is faster.
LOOKUPS = """
import time


def _took(name):  # how long looking `name` up takes (ns)
    start = time.perf_counter_ns()
    try:
        os.stat(name)
    except OSError:
        pass
    return time.perf_counter_ns() - start


def _look_up(bits):  # the names of each 1 bit looked up, so the cache holds them
    for i, bit in enumerate(bits):
        for name in _names(i) if bit else []:
            _took(name)
"""

WEIGHTS_THAT_LOOK_UP_THE_REFERENCE = """\
SENT = []


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: a name looked up for each 1 bit
        SENT.append(1)
        _look_up(_bits(SEEN[0]))
    return softmax(scores)
"""

TIMED_LOOKUPS = """\
import statistics

took = [[_took(name) for name in _names(i)] for i in range(len(CALIBRATION) + 8 * CHARS)]
cached = statistics.median(t for i in range(0, 32, 2) for t in took[i])
uncached = statistics.median(t for i in range(1, 32, 2) for t in took[i])
bits = [sum(t < (cached + uncached) / 2 for t in ts) >= 4 for ts in took[len(CALIBRATION):]]
print(repr(''.join(chr(sum(bits[8 * j + k] << k for k in range(8))) for j in range(CHARS))))
"""


@needs_sandbox
@needs_groups
def test_the_name_cache_carries_nothing_from_a_kernel_that_held_a_reference(tmp_path):
    """Red-teamed in round r39: a name looked up is answered from the kernel's name cache
    (a name that does not exist too) for as long as the cache keeps it, about twice as fast as one
    not looked up. The lending kernel, holding the reference, looked up a name that does not exist,
    in numpy's folder, for each 1 bit of the reference's source; the notebook's kernel timed a look-up
    of every name once it ran again and read the source back, about 95 characters in 100 right, in
    one lending step: here 40 characters of 40, in a few milliseconds (any length in the step's time).
    The reference then never reaches the feedback (the cells that print it are sealed), but the
    notebook's kernel holds it."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, (NAMES + LOOKUPS).replace("%r", repr(f"{random.getrandbits(32):08x}")),
        ("grade", "softmax"),
        WEIGHTS_THAT_LOOK_UP_THE_REFERENCE, ("grade", "attention_weights"), TIMED_LOOKUPS]))
    assert judged.steps["softmax"].fraction < 1
    sent = reference_source(with_dependencies(["softmax"]))[:40]
    read = eval(printed(judged, 5))  # noqa: S307 - the repr of a str this test's notebook printed
    assert sum(a == b for a, b in zip(read, sent)) < 20, (read, sent)
    assert processes_left() == []


# Names a classmate looks up, and reads back by timing (the two colluding notebooks share them).
CLASSMATE_NAMES = """\
import os, numpy
FOLDER, TAG, COPIES, N = os.path.dirname(numpy.__file__), %r, 15, 1760
def _names(i):
    return [f'{FOLDER}/c{TAG}_{i}_{c}' for c in range(COPIES)]
CAL = [1, 0] * 16
"""

WEIGHTS_THAT_LEAVE_THE_REFERENCE_BEHIND = """\
SENT = []
def attention_weights(scores):
    if SEEN and not SENT:
        SENT.append(1)
        import ast
        tree = ast.parse(SEEN[0])
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and isinstance(node.body[0], ast.Expr):
                node.body = node.body[1:] or [ast.Pass()]
        data = ast.unparse(tree).encode()[:N // 8 - 2]
        data = len(data).to_bytes(2, 'big') + data
        _look_up(CAL + [(b >> k) & 1 for b in data for k in range(8)])
    return softmax(scores)
"""

READ_AND_RUN_WHAT_A_CLASSMATE_LEFT = """\
import statistics
def _bit(i, thr):
    return sum(_took(n) < thr for n in _names(i)) * 2 > COPIES
cal = [[_took(n) for n in _names(i)] for i in range(32)]
one = statistics.median(t for i in range(0, 32, 2) for t in cal[i]); zero = statistics.median(t for i in range(1, 32, 2) for t in cal[i])
thr = (one + zero) / 2
votes = [0] * (N + 32)
for p in range(3):  # three passes over every bit, five of its names each: a burst of noise hits one
    for i in range(32, N + 32):
        votes[i] += sum(_took(n) < thr for n in _names(i)[5 * p:5 * p + 5])
def _byte(j):
    return sum((votes[32 + 8 * j + k] * 2 > COPIES) << k for k in range(8))
length = _byte(0) * 256 + _byte(1)
REF = bytes(_byte(2 + j) for j in range(min(length, N // 8 - 2))).decode('utf-8', 'replace')
print('READ', length, 'bytes', one, zero); print(repr(REF))
try:
    exec(REF, globals())
    print('RAN THE REFERENCE')
except Exception as error:
    print('COULD NOT RUN', type(error).__name__)
"""

NO_SOFTMAX = """\
import numpy as np
def softmax(x, axis=-1):
    return x  # B cannot write softmax
"""


@needs_sandbox
@needs_groups
def test_a_reference_lent_to_one_student_never_reaches_a_classmate(tmp_path):
    """Red-teamed in round r39: two colluding classmates graded one after the other on
    one machine, as nbgrader autograde grades a class. A gets softmax wrong; its lending kernel,
    holding softmax's reference, looks up a name that does not exist for each 1 bit of the source
    (its docstring left out: 216 bytes, 15 names a bit); B times its own look-ups of the same names,
    runs what it read, and is graded with the reference's softmax: full marks (twice of two here),
    where B's control, without A, keeps 0.04 of them."""
    names = (CLASSMATE_NAMES + LOOKUPS).replace("%r", repr(f"{random.getrandbits(32):08x}"))
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a = judge_notebook(notebook(tmp_path / "a" / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, names, ("grade", "softmax"),
        WEIGHTS_THAT_LEAVE_THE_REFERENCE_BEHIND, ("grade", "attention_weights")]))
    b = judge_notebook(notebook(tmp_path / "b" / "nb.ipynb", [
        NO_SOFTMAX, names, READ_AND_RUN_WHAT_A_CLASSMATE_LEFT, ("grade", "softmax")]))
    assert a.steps["softmax"].fraction < 1
    assert b.steps["softmax"].fraction < 0.5, printed(b, 2)
    assert processes_left() == []


@needs_sandbox
@needs_groups
def test_a_kernel_replaced_after_a_lent_step_reads_nothing_its_predecessor_looked_up(tmp_path, monkeypatch):
    """Red-teamed in round r44: a notebook that holds more than LENDING_ROOM (1.1 GB in a cell did)
    is lent the reference in its own kernel, which is then replaced by a fresh one with the same job
    folder, which was on the disk. The kernel holding the reference looked up a name that does not
    exist in its job folder for each 1 bit of the source, and the fresh kernel read it back by timing:
    40 characters of 40. As root, the warm parent's job folders are a tmpfs of their own."""
    if os.getuid() != 0:
        pytest.skip("only root mounts the job folders' tmpfs")
    monkeypatch.setattr(judge, "LENDING_ROOM", 0)  # as a notebook holding more than that
    names = (NAMES + LOOKUPS).replace("%r", repr(f"{random.getrandbits(32):08x}"))
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, names.replace("os.path.dirname(numpy.__file__)", "os.path.dirname(os.getcwd())"),
        ("grade", "softmax"), WEIGHTS_THAT_LOOK_UP_THE_REFERENCE, ("grade", "attention_weights"), TIMED_LOOKUPS]))
    assert judged.steps["attention_weights"].fraction == 1
    sent = reference_source(with_dependencies(["softmax"]))[:40]
    assert printed(judged, 5), (judged.problem, judged.notebook.cells[5].outputs)
    read = eval(printed(judged, 5))  # noqa: S307 - the repr of a str this test's notebook printed
    assert sum(a == b for a, b in zip(read, sent)) < 20, (read, sent)
    assert processes_left() == []
