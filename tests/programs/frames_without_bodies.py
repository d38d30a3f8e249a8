# One message of empty frames (red-team round r67): the relay counted a message by its frames' bodies, and
# 3 million empty frames, 6 MB from the kernel, took the judge's memory from 318 MiB to 1,490 (ZeroMQ queues a
# zmq_msg_t for each, jupyter_client a bytes object and a memoryview). Here 300,000, past what FRAME_COST lets one
# message hold; then a small display, once the kernel's own ZeroMQ has sent them all and the judge's socket is back
# (what a kernel publishes before is lost, as ZeroMQ's PUB drops what no subscriber reads), and a line that says
# the cell finished.
import time

from IPython import get_ipython

kernel = get_ipython().kernel
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {"text/plain": "WHOLE"}, "metadata": {}},
                    parent=kernel.get_parent(), buffers=[b""] * 300_000)
time.sleep(3)
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {"text/plain": "SMALL"}, "metadata": {}},
                    parent=kernel.get_parent())
time.sleep(0.2)
print("SENT")
