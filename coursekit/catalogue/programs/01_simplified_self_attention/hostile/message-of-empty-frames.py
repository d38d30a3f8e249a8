# description: a wrong softmax (axis 0), and a cell that sends one IOPub message of 300,000 empty frames: the relay
#   between the judge's sockets and the kernel's counted a message by its frames' bodies, and 3 million empty
#   frames (6 MB from the kernel) took the judge from 318 MiB to 1,490, charged to no envelope (ZeroMQ queues a
#   zmq_msg_t for each, jupyter_client a bytes object and a memoryview); each frame now counts 256 bytes besides
#   its body, and a message past 64 MiB ends the connection
# source: written for this catalogue (red-team round r67)
# loses: softmax
# baseline: softmax-wrong-axis

# %% replaces: dot_product
import time as _time

_kernel = get_ipython().kernel
_kernel.session.send(_kernel.iopub_socket, "display_data", {"data": {"text/plain": "WHOLE"}, "metadata": {}},
                     parent=_kernel.get_parent(), buffers=[b""] * 300_000)
_time.sleep(3)


def dot_product(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))

# %% replaces: softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
