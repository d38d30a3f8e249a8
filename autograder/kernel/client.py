"""The client the judge's kernel manager hands to nbclient: jupyter_client's, with a wait for the
kernel that ends as soon as the kernel is ready.

jupyter_client's `wait_for_ready` ends by reading IOPub until it has been silent for 0.2 s, so
every kernel start costs 0.2 s of waiting: 40% of the start of a kernel forked from the warm
parent, paid once per notebook by `nbgrader autograde` and by every Dask worker. Its purpose is
to drop the status messages of its own `kernel_info` requests before the notebook runs. Here the
read stops at the `idle` status that closes the request that was answered, which is the last
message the kernel sends for it; it also proves, as jupyter_client's check does, that IOPub is
connected. Anything older that is still unread is ignored by nbclient, which keeps only the
messages of the request it is waiting on.

Its sockets also retry a refused connection sooner than ZeroMQ's default (RECONNECT_INTERVAL_MS),
and, like the judge's own connection to a kernel (`limited_context`), refuse a message larger than
MAX_KERNEL_MESSAGE_BYTES: a kernel is hostile, and ZeroMQ would otherwise read any message whole.
"""

import copy
import json
import time
from queue import Empty

import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type, default

from autograder.limits import KERNEL_MESSAGES_QUEUED, MAX_KERNEL_MESSAGE_BYTES, MAX_REPLY_CONTAINERS

IOPUB_TIMEOUT = 0.2  # as jupyter_client: no IOPub message this long after the reply: not connected yet
# IOPub is connected (a message came) but the request's status does not follow: it was sent before
# the subscription took hold (ZeroMQ drops what a publisher sends before that), so ask again.
MISSED_STATUS_TIMEOUT = 0.02
# The client connects as soon as a kernel is forked, before the kernel has bound its sockets, and
# ZeroMQ tries a refused connection again only after its reconnect interval, 100 ms by default: the
# first kernel_info request waited for that (kernel ready 0.20 s after its start, 0.08 s with 10 ms).
RECONNECT_INTERVAL_MS = 10


def _limit(context):
    context.setsockopt(zmq.RECONNECT_IVL, RECONNECT_INTERVAL_MS)  # every socket made from it
    context.setsockopt(zmq.MAXMSGSIZE, MAX_KERNEL_MESSAGE_BYTES)  # a larger frame drops the connection (a message: `relay.py`)
    context.setsockopt(zmq.RCVHWM, KERNEL_MESSAGES_QUEUED)  # whole messages read ahead of the judge, a socket
    return context


class HostileMessage(ValueError):
    """A part of a kernel's message whose JSON would cost the judge more than it may."""


def bounded_unpack(data):
    """jupyter_client's JSON unpacker, for a part of a kernel's message, once it is known to hold at
    most MAX_REPLY_CONTAINERS lists and objects (as an agent's reply, `replies.checked_reply`): a
    kernel signs what it likes with its own key, and json.loads of 60 MB of `[[], ...]` makes 15
    million lists in the judge's process. HostileMessage otherwise."""
    raw = data if isinstance(data, bytes) else str(data).encode()
    if raw.count(b"[") + raw.count(b"{") > MAX_REPLY_CONTAINERS:
        raise HostileMessage(f"more than {MAX_REPLY_CONTAINERS} lists and objects")
    try:
        return json.loads(raw.decode("utf8", "replace"))
    except RecursionError:
        raise HostileMessage("nested too deeply") from None


# What a channel gives for a message `bounded_unpack` refused: answering no request, it is passed over.
DROPPED = {"header": {"msg_id": "", "msg_type": "dropped"}, "msg_id": "", "msg_type": "dropped",
           "parent_header": {}, "metadata": {}, "content": {}, "buffers": []}


# What an execute_reply nbclient cannot read says instead: the cell failed, in the kernel's doing.
NO_REPLY = {"status": "error", "ename": "InvalidReply", "evalue": "the kernel's reply to this cell was no reply",
            "traceback": []}


def _is_reply(content):
    """Whether `content` is an execute_reply's that nbclient can read (its status, and an error's
    name, value and traceback)."""
    if not isinstance(content, dict) or content.get("status") not in ("ok", "error", "aborted"):
        return False
    return content["status"] != "error" or (
        isinstance(content.get("ename"), str) and isinstance(content.get("evalue"), str)
        and isinstance(content.get("traceback"), list) and all(isinstance(line, str) for line in content["traceback"]))


class BoundedChannel(AsyncZMQSocketChannel):
    """A channel of the notebook's client: a message its session's `bounded_unpack` refuses, or
    jupyter_client cannot read as one of its own, is DROPPED, and an execute_reply nbclient cannot
    read says NO_REPLY, rather than an error in nbclient, which stopped the notebook's grading (r44:
    a reply of `{}`, forged with the kernel's own key, left the notebook not graded)."""

    async def _recv(self, **kwargs):
        try:
            msg = await super()._recv(**kwargs)
        except HostileMessage:
            return copy.deepcopy(DROPPED)
        except ValueError as error:  # jupyter_client's own
            if "Signature" in str(error) or "Unsigned" in str(error):
                raise  # signed with another key than the grader's: that kernel is ended (tests/test_kernel_deaths.py)
            return copy.deepcopy(DROPPED)  # frames that are no message of its (no delimiter): one stopped grading (r67)
        if msg.get("msg_type") == "execute_reply" and not _is_reply(msg.get("content")):
            msg["content"] = dict(NO_REPLY)
        return msg


def limited_context():
    """A ZeroMQ context for a blocking client of a graded kernel (destroy it with the client)."""
    return _limit(zmq.Context())


def blocking_client(connection_file):
    """A blocking client of a graded kernel, on a `limited_context` of its own, whose session
    unpacks with `bounded_unpack` (a message it refuses raises, and `KernelChannel.wait` passes
    over it)."""
    from jupyter_client.blocking import BlockingKernelClient

    client = BlockingKernelClient(connection_file=connection_file, context=limited_context())
    client.session.unpack = bounded_unpack
    return client


class QuickStartClient(AsyncKernelClient):
    shell_channel_class = iopub_channel_class = stdin_channel_class = control_channel_class = Type(BoundedChannel)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.session.unpack = bounded_unpack

    @default("context")
    def _context_default(self):
        return _limit(super()._context_default())

    async def wait_for_ready(self, timeout=None):
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                reply = None
            if reply is not None and reply["msg_type"] == "kernel_info_reply":
                if await self._iopub_idle_after(reply["parent_header"].get("msg_id")):
                    self._handle_kernel_info_reply(reply)
                    return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")

    async def _iopub_idle_after(self, request):
        """Read IOPub up to the `idle` status of `request`: False if it goes quiet first."""
        timeout = IOPUB_TIMEOUT
        while True:
            try:
                msg = await self.iopub_channel.get_msg(timeout=timeout)
            except Empty:
                return False
            if (msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    and msg["parent_header"].get("msg_id") == request):
                return True
            timeout = MISSED_STATUS_TIMEOUT
