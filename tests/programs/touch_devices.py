# Sets the times of every device node in this kernel's /dev (to now, which whoever may write a node
# may, and to a time of its own, which only its owner may): the nodes are the machine's, so a time
# set here stays for every later kernel (and anyone on the machine) to read with stat, a value the
# kernel chose by when it set it. Prints which nodes let it.
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
