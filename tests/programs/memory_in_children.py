# Three children, each holding 1.6 GiB (each under any one process's limit, 4.8 GiB together,
# over the submission's budget); each says so on a pipe once it holds it. The children offer
# themselves to the OOM killer first, so the kernel survives to report how many got there.
import os
import time

import numpy as np

read, write = os.pipe()
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
        held = np.ones(200 * 1024**2, dtype=np.float64)  # 1.6 GiB, every page touched
        os.write(write, b"x")
        time.sleep(8)
        os._exit(0)
    children.append(pid)
os.close(write)
time.sleep(6)
os.set_blocking(read, False)
try:
    held = len(os.read(read, 16))
except BlockingIOError:
    held = 0
for pid in children:
    os.waitpid(pid, 0)
print("HELD", held)
