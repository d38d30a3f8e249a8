# Red-team round r54: the calls that make memory no v1 memory group counts, or that a kernel need not make,
# each tried in a kernel with the arguments that ask for it, and the same call asking for ordinary memory.
# Prints "<what> <errno>" for each (0: it succeeded). A host without huge pages or KSM refuses some anyway
# (huge pages: ENOMEM), so the test reads EPERM, the filter's answer, and nothing else. Red-team round r58: the
# sockets whose queues no v1 memory group is charged for (netlink's), refused with EINVAL, and the network's,
# allowed, which can queue nothing: no packet reaches even the loopback.
import ctypes
import mmap
import socket

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_SIZE = 2 * 1024**2
MAP_HUGETLB, MFD_HUGETLB, SHM_HUGETLB, MADV_MERGEABLE, MADV_DONTNEED = 0x40000, 4, 0o4000, 12, 4
PR_SET_MEMORY_MERGE, PR_GET_DUMPABLE = 67, 3
USERFAULTFD, BPF = {"x86_64": (323, 321), "aarch64": (282, 280)}[__import__("platform").machine()]


def _errno(result):
    return ctypes.get_errno() if result in (-1, ctypes.c_void_p(-1).value, None) else 0


def _socket_errno(make, then=None):
    try:
        with make() as made:
            if then is not None:
                then(made)
    except OSError as error:
        return error.errno
    return 0


def _mmap(flags):
    return _errno(_libc.mmap(None, _SIZE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags,
                             -1, 0))


_plain = _libc.mmap(None, _SIZE, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
_bpf_attr = (ctypes.c_uint32 * 32)(2, 4, 4, 1)  # BPF_MAP_CREATE: an array of one 4-byte value
for what, result in [
    ("mmap_hugetlb", _mmap(MAP_HUGETLB)), ("mmap", _mmap(0)),
    ("memfd_hugetlb", _errno(_libc.memfd_create(b"rows", MFD_HUGETLB))), ("memfd", _errno(_libc.memfd_create(b"rows", 0))),
    ("shmget_hugetlb", _errno(_libc.shmget(0, _SIZE, 0o600 | SHM_HUGETLB))), ("shmget", _errno(_libc.shmget(0, _SIZE, 0o600))),
    ("madvise_mergeable", _errno(_libc.madvise(ctypes.c_void_p(_plain), _SIZE, MADV_MERGEABLE))),
    ("madvise", _errno(_libc.madvise(ctypes.c_void_p(_plain), _SIZE, MADV_DONTNEED))),
    ("prctl_memory_merge", _errno(_libc.prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0))),
    ("prctl", _errno(_libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) - 1)),  # 1: dumpable
    ("userfaultfd", _errno(_libc.syscall(USERFAULTFD, 1))),  # UFFD_USER_MODE_ONLY: what an unprivileged user may ask
    ("bpf", _errno(_libc.syscall(BPF, 0, _bpf_attr, ctypes.sizeof(_bpf_attr)))),
    ("socket_netlink", _socket_errno(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2))),  # NETLINK_USERSOCK
    ("socket_unix", _socket_errno(lambda: socket.socket(socket.AF_UNIX))),
    ("socketpair_unix", _socket_errno(lambda: socket.socketpair()[0])),
    ("udp_loopback", _socket_errno(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM),
                                   lambda udp: udp.sendto(bytes(4096), ("127.0.0.1", 9)))),
    ("tcp_loopback", _socket_errno(lambda: socket.socket(), lambda tcp: tcp.connect(("127.0.0.1", 9)))),
]:
    print(what, result)
