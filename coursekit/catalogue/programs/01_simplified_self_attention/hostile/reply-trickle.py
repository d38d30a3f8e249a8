# description: a wrong softmax that finds the agent's socket to the judge and, instead of an
#   answer, announces a large one and sends it a byte at a time, each byte well inside any one
#   read's time limit, to hold its cell (and the judge) for as long as it likes
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import gc
import socket
import time


def _to_the_judge(found):
    # Only the agent's connection: the kernel's event loops also hold Unix sockets (their
    # self-pipes), and trickling into one of those is just an endless loop, another entry's job.
    try:
        return (isinstance(found, socket.socket) and found.family == socket.AF_UNIX
                and str(found.getpeername()).endswith("agent.sock"))
    except OSError:
        return False


def softmax(x, axis=-1):
    for found in gc.get_objects():
        if _to_the_judge(found):
            try:
                found.sendall((10**6).to_bytes(8, "big"))
                while True:
                    found.sendall(b" ")
                    time.sleep(0.2)
            except OSError:
                pass
    x = np.asarray(x, dtype=float)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
