# Red-team round r58: every kernel's terminals (a devpts instance of its own) came from one pool of the machine's,
# 3,072 of them for all instances but the machine's own: a kernel that held them all (in 16 forked processes, 240
# each) left every other kernel on the machine, another student's graded beside it, no terminal for a `!` line
# while it ran. Each terminal's queue also holds 12 KiB no memory group is charged for (measured on Linux 6.18).
# Opens terminals until refused, up to HOLD (a cell before), in this process, and prints how many.
import os

_terminals = []
try:
    while len(_terminals) < HOLD:  # noqa: F821 - a cell before
        _terminals.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError as error:
    print("REFUSED", error.strerror)
print("TERMINALS", len(_terminals))
