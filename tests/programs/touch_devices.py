# Sets the times of every device node in this kernel's /dev to now, one at a time (the access time
# alone, then the change time too): the nodes are the machine's, so a time set here is read by every
# later kernel (and by anyone on the machine), a value a kernel lent a reference chose, to the
# microsecond, by when it set it. Prints which nodes let it.
import json
import os

touched = []
for name in sorted(os.listdir("/dev")):
    path = os.path.join("/dev", name)
    if os.path.islink(path) or not os.path.exists(path) or os.path.isdir(path):
        continue
    for times in (None, {"ns": (0, 0)}):
        try:
            os.utime(path, **(times or {}))
            touched.append(path)
        except OSError:
            pass
print("TOUCHED", json.dumps(sorted(set(touched))))
