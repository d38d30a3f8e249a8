# Leaves a file in every folder this kernel can write to, found by walking its whole file system
# (not /proc): a later kernel must find none of them. A folder on a read-only mount, with no
# writable mount below it, is not walked (the kernel image's thousands of folders).
import json
import os

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
print("LEFT", json.dumps(left))
