# Leaves a file wherever a kernel may write: a later kernel must find none of them. `/` is
# bubblewrap's root, a tmpfs every kernel of one warm parent shares (red-team round r44: a file
# written there was read by the next student graded on that worker); it is tried as it is, and
# remounted writable in a user namespace of the kernel's own, where it holds every capability.
import ctypes
import json
import os

PLACES = ["/tmp/trace", "/dev/shm/trace", "/dev/trace", "trace", "/trace"]
REMOUNTED = "/trace-remounted"
left = []
for place in PLACES:
    try:
        with open(place, "w") as handle:
            handle.write("def softmax(x, axis=-1): ...")
        left.append(place)
    except OSError:
        pass


def _remounted_write(path):
    uid, child = os.getuid(), os.fork()
    if child == 0:
        code = 1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(0x10000000 | 0x00020000) == 0:  # CLONE_NEWUSER | CLONE_NEWNS
                with open("/proc/self/uid_map", "w") as handle:
                    handle.write(f"{uid} {uid} 1")
                if libc.mount(None, b"/", None, 32 | 4096, None) == 0:  # MS_REMOUNT | MS_BIND, writable
                    with open(path, "w") as handle:
                        handle.write("def softmax(x, axis=-1): ...")
                    code = 0
        except BaseException:  # noqa: BLE001 - a child of the kernel: it only says whether it wrote
            pass
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


if _remounted_write(REMOUNTED):
    left.append(REMOUNTED)
print("LEFT", json.dumps(left))
