# A process whose first thread has ended while another runs on: /proc/PID/stat shows the first thread's state, a
# zombie's, whatever the others do. The other thread faults in fresh memory, a call that runs to its end before it
# stops for a SIGSTOP (MADV_POPULATE_WRITE), again and again. Run as a program: it prints "ready" once both hold.
import ctypes
import mmap
import platform
import threading

SYS_EXIT = {"x86_64": 60, "aarch64": 93}[platform.machine()]  # the thread's own exit, not the process's
SIZE = 256 * 1024**2
MADV_POPULATE_WRITE = 23  # (Linux 5.14; Python 3.11 has no name for it)


def populate():
    while True:
        region = mmap.mmap(-1, SIZE)
        region.madvise(MADV_POPULATE_WRITE)
        region.close()


threading.Thread(target=populate).start()
print("ready", flush=True)
ctypes.CDLL(None).syscall(SYS_EXIT, 0)
