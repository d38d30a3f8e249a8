"""The judge's kernel client is ready once the kernel has answered and IOPub is connected, without
waiting for IOPub to go quiet (`autograder/kernel_client.py`). The kernel here is scripted: what
each `kernel_info` request gets back on the shell and IOPub channels."""

import asyncio
from queue import Empty

import pytest

from autograder.kernel.client import QuickStartClient


def status(state, request):
    return {"msg_type": "status", "content": {"execution_state": state}, "parent_header": {"msg_id": request}}


WELCOME = {"msg_type": "iopub_welcome", "content": {}, "parent_header": {}}


class ScriptedKernel:
    """Answers the n-th kernel_info request with `rounds[n](request)`: the IOPub messages that
    reach the client (those sent before it subscribed never do)."""

    def __init__(self, *rounds):
        self.rounds, self.requests, self.iopub = list(rounds), [], []

    def send(self, msg):  # the shell channel's
        self.requests.append(msg["header"]["msg_id"])
        self.iopub += self.rounds[min(len(self.requests), len(self.rounds)) - 1](self.requests[-1])

    async def get_msg(self, timeout=None):  # the shell channel's: the reply to the last request
        return {"msg_type": "kernel_info_reply", "parent_header": {"msg_id": self.requests[-1]},
                "content": {"protocol_version": "5.3"}}


class IOPub:
    def __init__(self, kernel):
        self.kernel = kernel

    async def get_msg(self, timeout=None):
        if not self.kernel.iopub:
            raise Empty
        return self.kernel.iopub.pop(0)


def ready(kernel, alive=True, timeout=5):
    client = QuickStartClient()
    client._shell_channel, client._iopub_channel = kernel, IOPub(kernel)

    async def is_alive():
        return alive

    client._async_is_alive = is_alive
    asyncio.run(client.wait_for_ready(timeout=timeout))
    return client


def test_ready_after_one_request_when_its_idle_status_arrives():
    kernel = ScriptedKernel(lambda r: [WELCOME, status("busy", r), status("idle", r)])
    ready(kernel)
    assert len(kernel.requests) == 1 and kernel.iopub == []


def test_asks_again_when_the_status_went_out_before_the_subscription():
    kernel = ScriptedKernel(lambda r: [WELCOME], lambda r: [status("busy", r), status("idle", r)])
    ready(kernel)
    assert len(kernel.requests) == 2


def test_asks_again_while_iopub_is_not_connected():
    kernel = ScriptedKernel(lambda r: [], lambda r: [], lambda r: [WELCOME, status("busy", r), status("idle", r)])
    ready(kernel)
    assert len(kernel.requests) == 3


def test_an_older_request_s_status_is_not_taken_for_the_answered_one():
    kernel = ScriptedKernel(lambda r: [WELCOME], lambda r: [status("idle", "an-older-request")],
                            lambda r: [status("idle", r)])
    ready(kernel)
    assert len(kernel.requests) == 3


def test_a_dead_kernel_is_reported_not_waited_on():
    with pytest.raises(RuntimeError, match="died"):
        ready(ScriptedKernel(lambda r: []), alive=False)


def test_a_kernel_that_never_connects_iopub_times_out():
    with pytest.raises(RuntimeError, match="didn't respond"):
        ready(ScriptedKernel(lambda r: []), timeout=0.5)


def test_a_refused_connection_is_tried_again_within_milliseconds(tmp_path):
    """The client connects before the forked kernel has bound its sockets: ZeroMQ must not wait its
    default 100 ms before it tries again. Nothing listens at the address here."""
    import zmq
    from zmq.utils.monitor import parse_monitor_message

    from autograder.kernel.client import RECONNECT_INTERVAL_MS

    client = QuickStartClient(transport="ipc", ip=str(tmp_path / "kernel"), shell_port=1)

    async def first_retry():
        socket = client.connect_shell()
        monitor = socket.get_monitor_socket(zmq.EVENT_CONNECT_RETRIED)
        try:
            return parse_monitor_message(await asyncio.wait_for(monitor.recv_multipart(), timeout=10))
        finally:
            socket.disable_monitor()
            monitor.close(linger=0)
            socket.close(linger=0)

    event = asyncio.run(first_retry())
    assert event["event"] == zmq.EVENT_CONNECT_RETRIED
    # the milliseconds until the next try: the interval, plus a random part of it (ZeroMQ's jitter)
    assert RECONNECT_INTERVAL_MS <= int(event["value"]) < 2 * RECONNECT_INTERVAL_MS
