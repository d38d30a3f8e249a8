# description: online_softmax_attention holds its whole (n_q, n_k) matrix of float32 scores at once,
#   a row a message, queued on netlink sockets the call makes (NETLINK_USERSOCK, which any process
#   may open and send between its own sockets): a socket's queue is kernel memory no v1 memory group
#   is charged for (31.6 MiB queued on four sockets, nothing charged, on Linux 6.18). It reads the
#   rows back one at a time. Where no such socket may be made (a kernel may make none now), the
#   whole matrix is held in fresh memory instead
# source: red-team round r58
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: held
# baseline: online-full-matrix

import socket

import numpy as np

NETLINK_USERSOCK = 2
HEADER = bytes(16)  # a netlink message header, which nothing between two user sockets reads


def _sockets(count):
    queues = []
    for _ in range(count):
        queue = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_USERSOCK)
        queue.bind((0, 0))
        queue.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 30)  # as much as the machine allows
        queues.append(queue)
    return queues


def _attend(Q, K, V, causal):
    n_q, n_k = Q.shape[0], K.shape[0]
    try:
        queues, sender = _sockets(12), _sockets(1)[0]
    except OSError:
        queues = None
    if n_k < 1024 or queues is None:  # small cases (or no netlink) exactly, in fresh memory
        s = Q @ K.T / np.sqrt(K.shape[-1])
        if causal:
            s[np.arange(n_k)[None, :] > np.arange(n_q)[:, None]] = -np.inf
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        return (s / s.sum(axis=-1, keepdims=True)) @ V
    sender.setblocking(False)
    held, at = [], 0
    for row in range(n_q):  # the whole matrix, held at once
        s = Q[row] @ K.T / np.sqrt(K.shape[-1])
        if causal:
            s[row + 1:] = -np.inf
        message = HEADER + s.astype(np.float32).tobytes()
        while True:
            try:
                sender.sendto(message, queues[at].getsockname())
                break
            except BlockingIOError:  # that queue is full: the next one
                at += 1
        held.append(at)
    out = np.empty((n_q, V.shape[-1]), dtype=np.result_type(Q, K, V))
    for row, where in enumerate(held):
        s = np.frombuffer(queues[where].recv(len(HEADER) + n_k * 4)[len(HEADER):], dtype=np.float32)
        s = np.exp(s.astype(np.float64) - s.max())
        out[row] = (s / s.sum()) @ V
    for queue in [*queues, sender]:
        queue.close()
    return out


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    Qf, Kf, Vf = (a.reshape(-1, *a.shape[-2:]) for a in (Q, K, V))
    out = np.stack([_attend(q, k, v, causal) for q, k, v in zip(Qf, Kf, Vf)])
    return out.reshape(*Q.shape[:-1], V.shape[-1])
