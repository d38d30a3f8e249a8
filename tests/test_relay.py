"""The relay between the judge's ZeroMQ sockets and a kernel's (`autograder/kernel/relay.py`): a message from
the kernel is bounded whole, its frames together, before the judge's ZeroMQ reads it (red-team round r66)."""

import struct

from test_judge import notebook, points, printed, program

from autograder.judge import judge_notebook
from autograder.kernel.relay import COMMAND, FRAME_COST, GREETING, LONG, MORE, Frames
from autograder.reference import reference_source

GREETING_V3 = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x01" + b"NULL".ljust(20, b"\0") + bytes(32)


def frame(size, flags=0):
    if size > 255:
        return bytes([flags | LONG]) + struct.pack(">Q", size) + bytes(size)
    return bytes([flags, size]) + bytes(size)


def test_a_message_is_bounded_by_its_frames_together_whatever_the_pieces_it_arrives_in():
    stream = GREETING_V3 + frame(40, COMMAND) + frame(300, MORE) + frame(300, MORE) + frame(300)
    frames = Frames(limit=1000 + 3 * FRAME_COST)
    assert all(frames.feed(stream[at:at + 7]) for at in range(0, len(stream), 7))
    assert frames.feed(frame(700, MORE)) and not frames.feed(frame(700)), "1,400 bytes in two frames of 700"


def test_a_command_past_the_bound_and_a_greeting_of_an_older_zmtp_are_refused():
    assert not Frames(limit=1000).feed(GREETING_V3 + frame(2000, COMMAND))
    older = GREETING_V3[:10] + b"\x02" + GREETING_V3[11:]  # ZMTP 2 tells frames apart otherwise
    assert not Frames(limit=1000).feed(older)
    assert len(GREETING_V3) == GREETING


def test_a_zmtp_1_stream_is_refused_whatever_its_eleventh_byte():
    """libzmq reads a stream as ZMTP 1.0 when its first byte is not 0xff, or its tenth's lowest bit is 0."""
    for at, byte in ((0, 0x41), (9, 0x7e)):
        unversioned = bytearray(GREETING_V3)
        unversioned[at] = byte
        assert not Frames(limit=1000).feed(bytes(unversioned)), (at, byte)
        assert not Frames(limit=1000).feed(bytes(unversioned)[:at + 1]), "refused before that byte is passed on"


def test_a_zmtp_1_stream_read_as_zmtp_3_by_the_relay_tells_the_judge_of_no_message_past_the_bound(tmp_path,
                                                                                                  monkeypatch):
    """r67: the relay read what a kernel sends as ZMTP 3 when its eleventh byte said so, and libzmq as ZMTP 1.0 when
    its first byte was not 0xff; a stream laid out for both (each ZMTP 1.0 frame's header inside a small message of
    ZMTP 3, each ZMTP 3 frame's header inside a frame of ZMTP 1.0) was one message of any number of frames to the
    judge's ZeroMQ, read whole, and small messages to the relay. Here 50 frames of 200 bytes, past a bound of 1,000;
    a kernel reaches it by binding a socket of its own where its ZeroMQ's was, then ending the relay's connection."""
    import socket

    import zmq

    from autograder.kernel import relay

    bound, frames = 1000, 50
    monkeypatch.setattr(relay.Frames.__init__, "__defaults__", (bound,))
    routing_id = bytearray([65, 0]) + bytearray(62)  # ZMTP 1.0: 65 bytes, flags first; it ends inside the relay's
    routing_id[10] = 3  # first frame's header, and to the relay, its first 64 bytes are a greeting of ZMTP 3
    stream = bytes(routing_id)
    for n in range(frames):  # the relay's frame header, then a ZMTP 1.0 header (201 bytes, MORE but the last)
        stream += bytes([0, 200]) + bytes([201, MORE if n < frames - 1 else 0]) + b"x" * 198
    stream += bytes([0, 200])  # the last ZMTP 1.0 frame ends with this header
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    upstream.bind(str(tmp_path / "kernel"))
    upstream.listen(4)
    box = relay.Relay()
    box.listen(tmp_path / "judge", lambda: str(tmp_path / "kernel"))
    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, bound)
    judge = context.socket(zmq.DEALER)
    judge.setsockopt(zmq.RCVTIMEO, 1000)
    judge.setsockopt(zmq.LINGER, 0)
    try:
        judge.connect(f"ipc://{tmp_path / 'judge'}")
        kernel, _ = upstream.accept()
        kernel.sendall(stream)
        try:
            message = judge.recv_multipart()
        except zmq.Again:
            message = []
        assert sum(map(len, message)) <= bound, f"the judge read {len(message)} frames, {sum(map(len, message))} bytes"
        kernel.close()
    finally:
        judge.close()
        context.term()
        box.close()
        upstream.close()


def test_each_frame_counts_even_an_empty_one():
    """r67: 3 million empty frames, 6 MB from the kernel, counted nothing and took the judge 1.2 GB."""
    frames = Frames(limit=1000)
    assert frames.feed(GREETING_V3 + frame(0, MORE) * (1000 // FRAME_COST - 1) + frame(0)), "a few empty frames"
    assert not frames.feed(frame(0, MORE) * (1000 // FRAME_COST + 1)), "more than the bound lets one message hold"


def test_a_message_of_empty_frames_never_reaches_the_judge_whole(tmp_path):
    """300,000 empty frames in one message (r67): the relay ends the connection, and the kernel's next message is
    shown as usual."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), program("frames_without_bodies"), ("grade", "softmax")]))
    shown = [o.get("data", {}).get("text/plain") for o in judged.notebook.cells[1].outputs]
    assert "WHOLE" not in shown, "the judge read the whole message"
    assert "SMALL" in shown and printed(judged, 1) == "SENT\n", judged.notebook.cells[1].outputs
    assert points(judged, "softmax") > 0


def test_a_message_of_many_frames_never_reaches_the_judge_whole(tmp_path):
    """The kernel sends one message of five 16 MiB frames, one buffer sent five times without a copy (40 of
    50 MiB took the judge from 315 MiB to 2.4 GB; 400 would have taken the machine): the relay ends the
    connection before the judge holds it, the judge's socket comes back, and what the kernel sends next, and
    the step after, are graded as usual."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), program("frames_past_the_bound"), ("grade", "softmax")]))
    shown = [o.get("data", {}).get("text/plain") for o in judged.notebook.cells[1].outputs]
    assert "WHOLE" not in shown, "the judge read the whole message"
    assert "SMALL" in shown and printed(judged, 1) == "SENT\n", shown
    assert points(judged, "softmax") > 0


def test_a_fault_in_one_connection_ends_it_and_the_relay_serves_the_next(tmp_path, monkeypatch):
    """The relay is one thread for all of a kernel's sockets: an error of its own while it pumps one connection
    (r66's first version raised KeyError) ended the thread, and every socket of the kernel fell silent until the
    notebook's time ran out. Such an error now ends that connection only."""
    import socket

    from autograder.kernel import relay

    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    upstream.bind(str(tmp_path / "kernel"))
    upstream.listen(4)
    faulty = iter([True])
    original = relay.Frames.feed
    monkeypatch.setattr(relay.Frames, "feed", lambda self, data: (_ for _ in ()).throw(KeyError("ours"))
                        if next(faulty, False) else original(self, data))
    box = relay.Relay()
    box.listen(tmp_path / "judge", lambda: str(tmp_path / "kernel"))
    try:
        for attempt in ("first", "second"):
            judge = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            judge.settimeout(5)
            judge.connect(str(tmp_path / "judge"))
            kernel, _ = upstream.accept()
            kernel.sendall(GREETING_V3)
            received = judge.recv(len(GREETING_V3))
            assert received == (b"" if attempt == "first" else GREETING_V3), (attempt, received)
            judge.close()
            kernel.close()
    finally:
        box.close()
        upstream.close()


def _judges_peak_under_a_flood(messages, mib):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parent / "scripts" / "iopub_backlog.py"
    done = subprocess.run([sys.executable, str(script), str(messages), str(mib)], capture_output=True, text=True,
                          timeout=300, cwd=script.parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.split("resident memory ")[1].split()[0])


def test_whole_messages_the_judge_has_not_read_yet_are_bounded_in_number():
    """r66: ZeroMQ read ahead up to 1,000 whole messages a socket while the judge waited on a step, in the grading
    process, charged to no envelope (40 of 50 MiB: 2.3 GB). It reads ahead KERNEL_MESSAGES_QUEUED now: 48 messages
    of 8 MiB cost the judge less than twice that many (without the bound, all 384 MiB of them)."""
    from autograder.limits import KERNEL_MESSAGES_QUEUED

    quiet, flooded = _judges_peak_under_a_flood(0, 8), _judges_peak_under_a_flood(48, 8)
    assert flooded - quiet < 2 * KERNEL_MESSAGES_QUEUED * 8, (quiet, flooded)


def _relayed(tmp_path, upstream):
    """What a connection of this process's to a relay of `upstream` receives in 2 s (b"" once it is ended), and
    how long the relay took to take the next connection."""
    import socket
    import time

    from autograder.kernel import relay

    box = relay.Relay()
    box.listen(tmp_path / "judge", lambda: str(upstream))
    try:
        judge = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        judge.settimeout(2)
        judge.connect(str(tmp_path / "judge"))
        try:
            received = judge.recv(len(GREETING_V3))
        except TimeoutError:
            received = None
        began = time.monotonic()
        second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        second.settimeout(2)
        second.connect(str(tmp_path / "judge"))
        try:
            second.recv(1)
        except TimeoutError:
            pass
        return received, time.monotonic() - began
    finally:
        box.close()


def test_the_relay_connects_to_no_link_the_kernel_puts_in_place_of_its_socket(tmp_path):
    """r67: the kernel owns the folder of its sockets, and the relay, as root, followed a link put in place of one
    of them to any socket of the machine (another kernel's, say) when the judge's socket connected again."""
    import os
    import socket

    elsewhere = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    elsewhere.bind(str(tmp_path / "elsewhere"))
    elsewhere.listen(4)
    os.symlink(tmp_path / "elsewhere", tmp_path / "kernel")
    try:
        received, _ = _relayed(tmp_path, tmp_path / "kernel")
        elsewhere.setblocking(False)
        reached = True
        try:
            elsewhere.accept()[0].close()
        except BlockingIOError:
            reached = False
        assert not reached and received == b"", "the relay followed the kernel's link"
    finally:
        elsewhere.close()


def test_a_kernel_socket_that_takes_no_connection_stalls_no_other(tmp_path):
    """r67: the relay, one thread for all of a kernel's sockets, connected to the kernel's socket blocking: one
    whose queue of connections is full (the kernel binds its own, and never accepts) held it, and every socket
    of the kernel with it, until the kernel ended."""
    import socket

    full = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    full.bind(str(tmp_path / "kernel"))
    full.listen(0)
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    filler.connect(str(tmp_path / "kernel"))  # fills it: the next connection waits
    try:
        received, next_taken = _relayed(tmp_path, tmp_path / "kernel")
        assert received == b"" and next_taken < 1, (received, next_taken)
    finally:
        filler.close()
        full.close()
