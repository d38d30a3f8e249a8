# Each way a kernel's process could write another's memory, tried on a child of its own: process_vm_writev,
# ptrace, and /proc/PID/mem opened to write. Prints "<way> <errno>" for each (0: it worked), and the same for
# process_vm_readv, which stays allowed (it shows the calls are made as they should be).
import ctypes
import errno
import os
import time

_libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_buffer = ctypes.create_string_buffer(64)
_child = os.fork()
if _child == 0:
    time.sleep(30)
    os._exit(0)


def _vm(call):
    here, there = _IoVec(ctypes.addressof(_buffer), 64), _IoVec(ctypes.addressof(_buffer), 64)
    return 0 if call(_child, ctypes.byref(here), 1, ctypes.byref(there), 1, 0) == 64 else ctypes.get_errno()


def _proc_mem():
    try:
        with open(f"/proc/{_child}/mem", "r+b", buffering=0):
            return 0
    except OSError as error:
        return error.errno or errno.EIO


try:
    for what, result in [("process_vm_writev", _vm(_libc.process_vm_writev)), ("process_vm_readv", _vm(_libc.process_vm_readv)),
                         ("ptrace", 0 if _libc.ptrace(PTRACE_ATTACH, _child, None, None) == 0 else ctypes.get_errno()),
                         ("proc_mem", _proc_mem())]:
        print(what, result)
finally:
    os.kill(_child, 9)
    os.waitpid(_child, 0)
