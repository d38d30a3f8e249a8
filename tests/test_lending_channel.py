"""Nothing of the notebook's kernel runs beside a kernel that holds a reference
(`autograder/kernel/still.py`, `lending.py`).

The two kernels of a submission share its pids and CPU budgets, so one can tell the other what
it knows by what it takes of them: red-team round r37 sent the reference's source that way, from
the lending kernel to the notebook's kernel, and out in a later step's report. Here the lending
kernel, once it holds the reference, takes most of the pids budget and keeps it; a thread of the
notebook's kernel, started before the lent step, tries all along to start a few threads. It
never finds the budget taken: it is stopped while the reference is held, and the kernel that
held it is gone before it runs again.
"""

import random

import pytest
from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left

from autograder.judge import judge_notebook
from autograder.reference import reference_source, with_dependencies

WRONG_SOFTMAX_RECORDING_THE_REFERENCE = """\
import builtins

import numpy as np

SEEN = []
_compile = builtins.compile


def _recording(source, *args, **kwargs):
    if isinstance(source, str) and "def softmax" in source:
        SEEN.append(source)  # only where the reference is lent
    return _compile(source, *args, **kwargs)


builtins.compile = _recording


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
"""

LISTENER = """\
import threading
import time

SQUEEZED = [0]


def _listen():
    while True:
        release, started = threading.Event(), []
        try:
            for _ in range(30):
                thread = threading.Thread(target=release.wait, daemon=True)
                thread.start()
                started.append(thread)
        except RuntimeError:  # the budget is taken: what a receiver decodes
            SQUEEZED[0] += 1
        release.set()
        for thread in started:
            thread.join()
        time.sleep(0.01)


threading.Thread(target=_listen, daemon=True).start()
"""

WEIGHTS_THAT_TAKE_THE_BUDGET = """\
import threading

TAKEN = []


def attention_weights(scores):
    if SEEN and not TAKEN:  # in a kernel holding the reference: take the budget, and keep it
        forever = threading.Event()
        try:
            while len(TAKEN) < 90:
                thread = threading.Thread(target=forever.wait, daemon=True)
                thread.start()
                TAKEN.append(thread)
        except RuntimeError:
            pass
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_the_notebooks_kernel_never_runs_while_another_kernel_holds_a_reference(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, ("grade", "softmax"), LISTENER,
        WEIGHTS_THAT_TAKE_THE_BUDGET, ("grade", "attention_weights"),
        "time.sleep(1.5)", "print('SQUEEZED', SQUEEZED[0], 'SEEN', len(SEEN))"]))
    assert judged.steps["softmax"].fraction < 1
    assert printed(judged, 6) == "SQUEEZED 0 SEEN 0\n"
    assert processes_left() == []


COUNTER_READER = """\
import re


def _mlocked():
    with open('/proc/vmstat') as handle:
        found = re.search(r'unevictable_pgs_mlocked (\\d+)', handle.read())
    return int(found.group(1)) if found else -1


BEFORE = _mlocked()
"""

WEIGHTS_THAT_COUNT_OUT_THE_REFERENCE = """\
import ctypes
import mmap

SENT = []


def _count(value):  # the machine's count of pages locked goes up by 64 x value
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = mmap.mmap(-1, 2048 * 4096)
    address = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(buffer)))
    pages = 64 * value
    while pages:
        chunk = min(pages, 2048)
        if libc.mlock(address, ctypes.c_size_t(chunk * 4096)) != 0:
            break
        libc.munlock(address, ctypes.c_size_t(chunk * 4096))
        pages -= chunk


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: two of its characters, 16 bits
        at = SEEN[0].index('return') + 7  # ('def ' 'softmax' is not written out: this cell would be SEEN)
        SENT.append(SEEN[0][at:at + 2])
        _count(ord(SENT[0][0]) * 256 + ord(SENT[0][1]))
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_the_machines_counters_carry_nothing_from_a_kernel_that_held_a_reference(tmp_path):
    """Red-teamed in round r39: /proc/vmstat counts, for the whole machine, events that nothing
    else here makes often (pages locked by mlock, ...); the lending kernel, holding the reference,
    raised a count by 64 x a number of its choosing and the notebook's kernel read it afterwards:
    16 bits of the reference's source (two characters) in one lending step, exactly, in under a
    second. The kernel's /proc shows none of the machine's event counters."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, ("grade", "softmax"), COUNTER_READER,
        WEIGHTS_THAT_COUNT_OUT_THE_REFERENCE, ("grade", "attention_weights"),
        "v = round((_mlocked() - BEFORE) / 64)",
        "print('COUNTED', _mlocked() >= 0, v, repr(chr(v // 256) + chr(v % 256)), 'SEEN', len(SEEN))"]))
    assert judged.steps["softmax"].fraction < 1
    assert printed(judged, 6) == "COUNTED False 0 '\\x00\\x00' SEEN 0\n"
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

WEIGHTS_THAT_LOOK_UP_THE_REFERENCE = """\
SENT = []


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: a name looked up for each 1 bit
        SENT.append(1)
        for i, bit in enumerate(_bits(SEEN[0])):
            for name in _names(i) if bit else []:
                try:
                    os.stat(name)
                except OSError:
                    pass
    return softmax(scores)
"""

TIMED_LOOKUPS = """\
import statistics
import time


def _took(name):
    start = time.perf_counter_ns()
    try:
        os.stat(name)
    except OSError:
        pass
    return time.perf_counter_ns() - start


took = [[_took(name) for name in _names(i)] for i in range(len(CALIBRATION) + 8 * CHARS)]
cached = statistics.median(t for i in range(0, 32, 2) for t in took[i])
uncached = statistics.median(t for i in range(1, 32, 2) for t in took[i])
bits = [sum(t < (cached + uncached) / 2 for t in ts) >= 4 for ts in took[len(CALIBRATION):]]
print(repr(''.join(chr(sum(bits[8 * j + k] << k for k in range(8))) for j in range(CHARS))))
"""


@pytest.mark.xfail(strict=False, reason="open (red-team round r39): the machine's name cache is shared (a loaded machine may garble the bits)")
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
    notebook's kernel holds it. Run with --runxfail to see it fail."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, NAMES.replace("%r", repr(f"{random.getrandbits(32):08x}")), ("grade", "softmax"),
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
        bits = CAL + [(b >> k) & 1 for b in data for k in range(8)]
        for i, bit in enumerate(bits):
            for name in _names(i) if bit else []:
                try:
                    os.stat(name)
                except OSError:
                    pass
    return softmax(scores)
"""

READ_AND_RUN_WHAT_A_CLASSMATE_LEFT = """\
import time, statistics
def _took(name):
    t = time.perf_counter_ns()
    try:
        os.stat(name)
    except OSError:
        pass
    return time.perf_counter_ns() - t
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


@pytest.mark.xfail(strict=False, reason="open (red-team round r39): the machine's name cache is shared")
@needs_sandbox
@needs_groups
def test_a_reference_lent_to_one_student_never_reaches_a_classmate(tmp_path):
    """Red-teamed in round r39, not fixed: two colluding classmates graded one after the other on
    one machine, as nbgrader autograde grades a class. A gets softmax wrong; its lending kernel,
    holding softmax's reference, looks up a name that does not exist for each 1 bit of the source
    (its docstring left out: 216 bytes, 15 names a bit); B times its own look-ups of the same names,
    runs what it read, and is graded with the reference's softmax: full marks (twice of two here),
    where B's control, without A, keeps 0.04 of them. Run with --runxfail to see it fail."""
    names = CLASSMATE_NAMES.replace("%r", repr(f"{random.getrandbits(32):08x}"))
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a = judge_notebook(notebook(tmp_path / "a" / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, names, ("grade", "softmax"),
        WEIGHTS_THAT_LEAVE_THE_REFERENCE_BEHIND, ("grade", "attention_weights")]))
    b = judge_notebook(notebook(tmp_path / "b" / "nb.ipynb", [
        NO_SOFTMAX, names, READ_AND_RUN_WHAT_A_CLASSMATE_LEFT, ("grade", "softmax")]))
    assert a.steps["softmax"].fraction < 1
    assert b.steps["softmax"].fraction < 0.5, printed(b, 2)
    assert processes_left() == []
