# Three children, each holding 1.6 GiB (each under any one process's limit, 4.8 GiB together,
# over the submission's budget); each says so on a pipe once it holds it, then holds on until
# the kernel lets go. The OOM killer takes the process that holds the most, a child, so the kernel
# survives to report how many held their memory at once: those still alive when it lets go,
# which then exit by themselves. A child killed after it said so does not count (the killer
# may take an earlier one to make room for a later one). No fixed wait, which a loaded machine
# could outrun or the cell's time limit cut: the kernel waits until each child holds or is gone.
import os
import time

import numpy as np

held_pipe, release_pipe = os.pipe(), os.pipe()
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(release_pipe[1])
        held = np.ones(200 * 1024**2, dtype=np.float64)  # 1.6 GiB, every page touched
        os.write(held_pipe[1], b"x")
        os.read(release_pipe[0], 1)  # returns once the kernel closes its end
        os._exit(0)
    children.append(pid)
os.close(held_pipe[1])
os.close(release_pipe[0])
os.set_blocking(held_pipe[0], False)
said, status = 0, {}
while said + len(status) < len(children) and len(status) < len(children):
    try:
        said += len(os.read(held_pipe[0], 16))
    except BlockingIOError:
        pass
    for pid in children:
        if pid not in status:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status[pid] = code
    time.sleep(0.05)
os.close(release_pipe[1])
for pid in children:
    if pid not in status:
        status[pid] = os.waitpid(pid, 0)[1]
print("HELD", sum(os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0 for code in status.values()))
