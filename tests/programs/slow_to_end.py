# Red-team round r61: processes that take long to end once killed. Each holds as many mappings as Linux lets one
# process hold (max_map_count, 65,530: a page each, read-only and writable in turn, so none merge), which its end
# tears down one by one, inside the kernel's CPU budget; one process maps them and forks the rest, which copy
# them at the kernel's speed. Killed, 100 of them took more than the judge's 2 s to end, and their groups were
# left behind (with no folder for a later grading process to find them by); the next student's kernel started
# beside them. Forks up to PROCESSES (a cell before) and prints how many mappings they hold, and its groups.
import ctypes
import os
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ, PROT_WRITE, MAP_PRIVATE_ANONYMOUS, FAILED = 1, 2, 0x22, 2**64 - 1
_report, _told = os.pipe()
if os.fork() == 0:
    mapped = 0
    while _libc.mmap(None, 4096, PROT_READ | (PROT_WRITE * (mapped % 2)), MAP_PRIVATE_ANONYMOUS, -1, 0) not in (None, FAILED):
        mapped += 1
    forked = 1
    while forked < PROCESSES:  # noqa: F821 - a cell before
        try:
            if os.fork() == 0:
                break
        except OSError:
            break
        forked += 1
    else:
        os.write(_told, b"%d %d\n" % (forked, mapped))
    while True:
        time.sleep(100)
print("PROCESSES AND MAPPINGS", os.read(_report, 64).decode().strip())
print("GROUPS", open("/proc/self/cgroup").read())
