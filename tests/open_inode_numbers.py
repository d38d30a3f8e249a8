"""OPEN (red-team round r46): the machine's count of inode numbers carries a lent reference's
characters from the lending kernel to the notebook's kernel.

Not part of CI: `pytest tests/open_inode_numbers.py` runs it (the file name keeps pytest from
collecting it otherwise). It asserts what must hold, so it FAILS today (README, "Not guaranteed").

Pipes, sockets, /proc's files of a process, memfds and message queues take their inode number from
one counter of the machine's (Linux's get_next_ino: a batch of 1024 numbers per CPU, drawn from a
shared count), and any process reads it from a pipe of its own (fstat's st_ino). The notebook's
kernel reads it before a lending step; the lending kernel, holding the reference, pinned to the
same CPU, makes 8192 pipes for each unit of a character of it; the notebook's kernel, let go, reads
it again: the character, exactly ('e', 101 units; with 4096 pipes a unit, 415,020 numbers, 101 x 4096
+ 1,324, beside other jobs at a load of 11, in 1.5 s of pipes). Neither a filter nor a namespace hides the count, and a process cannot
be kept from making pipes or reading /proc. What would close it: numbers drawn by the judge between
the lending kernel's end and the notebook's release, as many as the step's time could make (seconds
a step), or a lending kernel that runs after the notebook's kernel has ended (the older way, a
replacement kernel, as with cold kernels).
"""

from test_envelope import needs_groups, needs_sandbox
from test_judge import printed
from test_lending_channel import _lent_then_read

INODE_READER = """\
import os

os.sched_setaffinity(0, {0})


def _next_inode():  # the next inode number this CPU hands out (pipes, sockets, /proc's files)
    read, write = os.pipe()
    number = os.fstat(read).st_ino
    os.close(read)
    os.close(write)
    return number


BEFORE = _next_inode()
"""

WEIGHTS_THAT_PIPE_OUT_THE_REFERENCE = """\
SENT = []
UNIT = 8192


def attention_weights(scores):
    if SEEN and not SENT:  # in a kernel holding the reference: UNIT pipes for each unit of a character
        SENT.append(SEEN[0][SEEN[0].index('return') + 7])
        os.sched_setaffinity(0, {0})
        for _ in range(UNIT * ord(SENT[0])):
            for end in os.pipe():
                os.close(end)
    return softmax(scores)
"""


@needs_sandbox
@needs_groups
def test_no_kernel_counts_the_inode_numbers_another_took(tmp_path):
    judged = _lent_then_read(tmp_path, INODE_READER, WEIGHTS_THAT_PIPE_OUT_THE_REFERENCE,
                             "units = round((_next_inode() - BEFORE) / UNIT)",
                             "print('UNITS', units, 'SEEN', len(SEEN))")
    assert judged.steps["attention_weights"].fraction == 1
    assert printed(judged, 6) == "UNITS 0 SEEN 0\n"
