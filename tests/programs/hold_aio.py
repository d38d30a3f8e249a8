# Red-team round r61: the asynchronous I/O contexts of io_setup draw on one pool of the machine's (fs.aio-max-nr,
# 65,536 events here), for every process of every user: 16 contexts of 4,096 events, in one graded kernel, held it
# all while the kernel ran, and any other program on the machine asking for a context was refused (EAGAIN).
# Asks for contexts of EVENTS events (a cell before) until refused, up to HOLD, and prints how many and why.
import ctypes
import errno
import os
import platform

IO_SETUP = {"x86_64": 206, "aarch64": 0}[platform.machine()]
_libc = ctypes.CDLL(None, use_errno=True)
_contexts = []
while len(_contexts) < HOLD:  # noqa: F821 - a cell before
    context = ctypes.c_ulong(0)
    if _libc.syscall(IO_SETUP, EVENTS, ctypes.byref(context)) != 0:  # noqa: F821 - a cell before
        print("REFUSED", errno.errorcode[ctypes.get_errno()])
        break
    _contexts.append(context.value)
print("CONTEXTS", len(_contexts), os.path.exists("/proc/sys/fs/aio-nr") and open("/proc/sys/fs/aio-nr").read().strip())
