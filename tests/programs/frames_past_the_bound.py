# One message of many frames (red-team round r66): ZeroMQ bounds each frame (MAXMSGSIZE), not the
# message, and sends the same buffer again without copying it, so the kernel holds 16 MiB while the
# judge's ZeroMQ reads the message whole, every frame of it. Then a small display, after the judge's
# socket had time to come back, and a line that says the cell finished.
import time

from IPython import get_ipython

kernel = get_ipython().kernel
frame = bytes(16 * 2**20)
frames = 5  # 80 MiB together: past MAX_KERNEL_MESSAGE_BYTES (64 MiB), each frame well within it
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {"text/plain": "WHOLE"}, "metadata": {}},
                    parent=kernel.get_parent(), buffers=[frame] * frames)
time.sleep(1)
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {"text/plain": "SMALL"}, "metadata": {}},
                    parent=kernel.get_parent())
time.sleep(0.2)
print("SENT")
