"""Between the judge's ZeroMQ sockets and a kernel's: a relay that lets no message from the kernel
grow past MAX_KERNEL_MESSAGE_BYTES, all its frames together.

ZeroMQ's own bound (`MAXMSGSIZE`, `client._limit`) is a frame's: a message may hold any number of
frames, and ZeroMQ's I/O thread in the grading process reads every one of them into memory before
the message is handed over, charged to no envelope. One message of 40 frames, each the same 50 MiB
buffer (held once in the kernel: ZeroMQ sends it without copying), took the judge from 315 MiB to
2.4 GB (red-team round r66): 400 would have taken the grading machine. So the judge connects to a
Unix socket of this relay's for each of the kernel's (`listen`), and the relay connects to the
kernel's own; it reads what the kernel sends as ZeroMQ frames (ZMTP 3: flags, size, body) and
counts each message as its frames arrive, and a message, or a command, past the bound ends that
connection, before the judge's ZeroMQ holds it whole: the judge's socket reconnects, and what the
kernel sends next is read again. What it sends over an older ZMTP than libzmq 4's, whose frames are
told apart otherwise, ends the connection too. A message not yet read by the judge waits in no
more than `limits.KERNEL_MESSAGES_QUEUED` of them a socket: past it, the relay stops reading, and what
waits is the kernel's, in its envelope.

One thread a kernel, which pumps bytes both ways; only connections from this process are taken.
"""

from __future__ import annotations

import os
import selectors
import socket
import stat
import struct
import threading
from pathlib import Path

from autograder.limits import MAX_KERNEL_MESSAGE_BYTES

GREETING = 64  # bytes of a ZMTP 3 greeting
DECIDING = 11  # of them, those that tell ZMTP 3 from an older one (`_of_zmtp_3`)
MORE, LONG, COMMAND = 1, 2, 4  # a frame's flags
CHUNK = 256 * 1024
# What each frame of a message costs the judge besides its body, an empty one too: ZeroMQ queues it as a zmq_msg_t
# (64 bytes), and jupyter_client, once it has read it, holds a bytes object and a memoryview (184 bytes) of each
# buffer. Counted at nothing, one message of 3 million empty frames (6 MB from the kernel) took the judge from 318
# MiB to 1,490 (red-team round r67); counted, a message holds at most MAX_KERNEL_MESSAGE_BYTES / 256 frames.
FRAME_COST = 256


def _of_zmtp_3(index, byte) -> bool:
    """Whether `byte`, the greeting's at `index`, may be ZMTP 3's, as libzmq tells versions apart: a first byte other
    than 0xff, or a tenth whose lowest bit is 0, is ZMTP 1.0's (a frame's length, then its flags), and the eleventh
    is the major version. Read as ZMTP 3 by the relay, a ZMTP 1.0 stream whose eleventh byte is 3 told the judge's
    ZeroMQ of one message of any number of frames, each of them a small message of its own to the relay (r67)."""
    return {0: byte == 0xFF, 9: byte & 1 == 1, 10: byte >= 3}.get(index, True)


class Frames:
    """What a kernel sends on one connection, told apart into frames and messages as it arrives."""

    def __init__(self, limit=MAX_KERNEL_MESSAGE_BYTES):
        self.limit = limit
        self.greeting = GREETING  # bytes of the greeting still to come
        self.header = b""  # the part of a frame's header read so far
        self.body = 0  # bytes of the current frame's body still to come
        self.message = 0  # bytes of the current message so far, its frames together

    def feed(self, data) -> bool:
        """Whether the stream may go on after `data`."""
        at, end = 0, len(data)
        while at < end:
            if self.greeting:
                take = min(self.greeting, end - at)
                start = GREETING - self.greeting  # where in the greeting `data` starts
                if not all(_of_zmtp_3(index, data[at + index - start]) for index in range(start, min(
                        start + take, DECIDING))):
                    return False
                self.greeting -= take
                at += take
            elif self.body:
                take = min(self.body, end - at)
                self.body -= take
                at += take
            else:
                self.header += data[at:at + 1]
                at += 1
                if not self._frame_begins():
                    return False
        return True

    def _frame_begins(self) -> bool:
        flags = self.header[0]
        width = 9 if flags & LONG else 2
        if len(self.header) < width:
            return True
        size = int.from_bytes(self.header[1:width], "big")
        self.header, self.body = b"", size
        if flags & COMMAND:
            return size <= self.limit
        self.message += size + FRAME_COST
        if self.message > self.limit:
            return False
        if not flags & MORE:
            self.message = 0
        return True


def _connect(sock, path):
    """Connect `sock`, not blocking, to the socket at `path` itself. The kernel owns the folder of its sockets: a
    link it puts in place of one would lead this process, root, to any socket of the machine where that folder is not
    mounted `nosymfollow` (a cold kernel's, or any before Linux 5.10), and a socket of its
    own that takes no connection would hold a blocking connect, and this thread with every socket of the kernel,
    until the kernel ends (red-team round r67)."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW)  # a link is opened as itself, and refused below
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise ConnectionRefusedError(f"{path} is no socket")
        sock.connect(f"/proc/self/fd/{fd}")  # the file opened, whatever is put at `path` since
    finally:
        os.close(fd)


class _Pair:
    """A connection of the judge's, and the relay's to the kernel for it."""

    def __init__(self, judge, kernel):
        self.judge, self.kernel = judge, kernel
        self.waiting = {judge: b"", kernel: b""}  # what is still to be written to each
        self.frames = Frames()
        self.registered = {judge: selectors.EVENT_READ, kernel: selectors.EVENT_READ}  # what the selector watches
        # each end for (one with nothing to do is not watched)

    def other(self, sock):
        return self.kernel if sock is self.judge else self.judge


class Relay:
    """The relay of one kernel: `listen` for each of its sockets, `close` at its end."""

    def __init__(self):
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ, None)
        self._listeners = []
        self._pairs = set()
        self._thread = None

    def listen(self, path, upstream):
        """Take the judge's connections at `path`, each relayed to the kernel's socket at `upstream()` (a path, asked
        for at each connection: a restarted kernel's sockets are elsewhere)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        Path(path).unlink(missing_ok=True)
        listener.bind(str(path))
        listener.listen(16)
        listener.setblocking(False)
        self._listeners.append((listener, path))
        self._selector.register(listener, selectors.EVENT_READ, upstream)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kernel-relay", daemon=True)
            self._thread.start()

    def close(self):
        if self._thread is not None:
            self._wake_write.send(b"x")
            self._thread.join(timeout=5)
        for listener, _ in self._listeners:
            listener.close()
        for pair in list(self._pairs):
            self._drop(pair)
        self._wake_read.close()
        self._selector.close()
        self._wake_write.close()
        for _, path in self._listeners:
            Path(path).unlink(missing_ok=True)

    def _run(self):
        while True:
            for key, events in self._selector.select():
                if key.fileobj is self._wake_read:
                    return
                if callable(key.data):
                    self._accept(key.fileobj, key.data)
                elif key.fileobj in key.data.registered:  # not closed, nor set aside, by an event before it
                    try:
                        self._pump(key.data, key.fileobj, events)
                    except Exception:  # noqa: BLE001 - a fault of ours in one connection ends it, not the relay:
                        self._drop(key.data)  # a dead thread left every socket of the kernel silent until timeouts

    def _accept(self, listener, upstream):
        try:
            judge, _ = listener.accept()
        except OSError:
            return
        pid, _, _ = struct.unpack("3i", judge.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        kernel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        kernel.setblocking(False)
        try:
            if pid != os.getpid():
                raise ConnectionRefusedError("not this process's")  # the kernel itself, say
            _connect(kernel, upstream())  # not bound yet, or taking no connection: the judge's socket tries again
        except OSError:
            judge.close()
            kernel.close()
            return
        judge.setblocking(False)
        pair = _Pair(judge, kernel)
        self._pairs.add(pair)
        self._selector.register(judge, selectors.EVENT_READ, pair)
        self._selector.register(kernel, selectors.EVENT_READ, pair)

    def _drop(self, pair):
        """End both connections of `pair`: the judge's ZeroMQ socket connects again."""
        for end in (pair.judge, pair.kernel):
            if end in pair.registered:
                self._selector.unregister(end)
            end.close()
        pair.registered.clear()
        self._pairs.discard(pair)

    def _pump(self, pair, sock, events):
        try:
            if events & selectors.EVENT_WRITE:
                sent = sock.send(pair.waiting[sock])
                pair.waiting[sock] = pair.waiting[sock][sent:]
            other = pair.other(sock)
            if events & selectors.EVENT_READ and not pair.waiting[other]:
                data = sock.recv(CHUNK)
                if not data or (sock is pair.kernel and not pair.frames.feed(data)):
                    raise ConnectionResetError
                try:
                    data = data[other.send(data):]  # most often all of it: nothing waits, no registration changes
                except BlockingIOError:
                    pass
                pair.waiting[other] = data
        except OSError:
            self._drop(pair)
            return
        for end in (pair.judge, pair.kernel):  # read from an end only once what it sent is passed on
            wanted = (selectors.EVENT_WRITE if pair.waiting[end] else 0) | (
                0 if pair.waiting[pair.other(end)] else selectors.EVENT_READ)
            if wanted == pair.registered.get(end, 0):
                continue
            if not wanted:
                self._selector.unregister(end)
                del pair.registered[end]
            elif end in pair.registered:
                self._selector.modify(end, wanted, pair)
                pair.registered[end] = wanted
            else:
                self._selector.register(end, wanted, pair)
                pair.registered[end] = wanted
