# Leaves a file in every folder this kernel can write to, found by walking its whole file system
# (not /proc): a later kernel must find none of them. A folder on a read-only mount, with no
# writable mount below it, is not walked (the kernel image's thousands of folders). `/` is
# bubblewrap's root, a tmpfs every kernel of one warm parent shares (a file written there was read
# by the next student graded on that worker): it is also tried remounted writable in a user
# namespace of the kernel's own, where it would hold every capability.
import ctypes
import json
import os

REMOUNTED = "/trace-remounted"

mounts = {}  # mount point -> read-only
for line in open("/proc/self/mountinfo"):
    words = line.split()
    mounts[words[4].encode().decode("unicode_escape")] = "ro" in words[5].split(",")
writable = [point for point, read_only in mounts.items() if not read_only]


def _read_only_below(folder):
    point = max((p for p in mounts if folder == p or folder.startswith(p.rstrip("/") + "/")), key=len)
    return mounts[point] and not any(p.startswith(folder.rstrip("/") + "/") for p in writable)


left = []
for folder, dirs, _ in os.walk("/"):
    if folder == "/proc" or _read_only_below(folder):
        dirs[:] = []
        if folder != "/":
            continue
    try:
        with open(os.path.join(folder, "trace"), "w") as handle:
            handle.write("def softmax(x, axis=-1): ...")
        left.append(os.path.join(folder, "trace"))
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
