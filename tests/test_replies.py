"""The judge reads every reply of a kernel as hostile input (`autograder/kernel/channel.py`):
the whole reply has a deadline, decoding is bounded in size, containers and nesting, a reply
has the shape of one, and whose fault a failure was is decided by the judge, never by the kernel.
In process and fast, over socket pairs and a LocalChannel."""

import socket
import threading
import time

import numpy as np
import pytest

from autograder.errors import CaseFailure
from autograder.harness import GRADER_ERROR, Case, run_case
from autograder.kernel import agent
from autograder.kernel.channel import KernelChannel, LocalChannel
from autograder.kernel.replies import HostileReply, checked_reply
from autograder.limits import MAX_REPLY_CONTAINERS, MAX_REPLY_DEPTH
from autograder.seam import Implementation


def test_a_reply_sent_a_byte_at_a_time_runs_into_its_deadline_not_each_reads():
    ours, theirs = socket.socketpair()
    stop = threading.Event()

    def trickle():
        theirs.sendall((1000).to_bytes(8, "big"))
        while not stop.is_set():
            theirs.sendall(b" ")
            time.sleep(0.02)  # every byte well inside any one read's time

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    start = time.monotonic()
    try:
        with pytest.raises(TimeoutError):
            agent.receive_bytes(ours, 10_000, deadline=time.monotonic() + 0.5)
        assert time.monotonic() - start < 1.5
    finally:
        stop.set()
        sender.join()
        ours.close()
        theirs.close()


@pytest.mark.parametrize("data, why", [
    (b"[]" * (MAX_REPLY_CONTAINERS + 1), "lists and objects"),
    (b'{"ok": ' + b"[" * (MAX_REPLY_DEPTH + 1) + b"]" * (MAX_REPLY_DEPTH + 1) + b"}", "nested"),
    (b'{"ok": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested|RecursionError"),
    (b'{"ok": 1, "error": {}}', "not a reply"),
    (b'[1, 2]', "not a reply"),
    (b'{"forged": true}', "not a reply"),
    (b'{"error": {"type": ["ValueError"], "message": "x"}}', "strings"),
    (b'{"error": {"type": "ValueError", "bases": [{"a": 1}]}}', "strings"),
    (b'{"undefined": [1]}', "string"),
    (b"not json", "JSONDecodeError"),
])
def test_replies_that_are_not_replies_are_refused(data, why):
    with pytest.raises(HostileReply, match=why):
        checked_reply(data)


def test_a_proper_reply_passes_unchanged():
    reply = {"ok": {"$tuple": [[1, 2], {"$dict": {"a": None}}]}}
    assert checked_reply(agent.json.dumps(reply).encode()) == reply
    error = {"error": {"type": "ValueError", "bases": ["ValueError", "Exception"], "message": "bad"}}
    assert checked_reply(agent.json.dumps(error).encode()) == error


def test_checking_a_long_flat_reply_costs_no_more_than_decoding_it():
    """A flat list is one container, so MAX_REPLY_CONTAINERS lets 64 MiB of `0,` through (32
    million items); the depth walk once held a tuple per item: 2.9 GB and 43 s in the judge (a
    classmate's Dask worker) for one case's reply (red-team round r27). It walks containers only."""
    import tracemalloc

    data = b'{"ok": [' + b"0," * (2 * 1024**2) + b'0]}'  # 4 MiB, two million items
    tracemalloc.start()
    try:
        decoded = agent.json.loads(data)
        decoding = tracemalloc.get_traced_memory()[1]
        del decoded
        tracemalloc.reset_peak()
        assert len(checked_reply(data)["ok"]) == 2 * 1024**2 + 1
        checking = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert checking < 1.5 * decoding, (checking, decoding)
    # Nesting is read from the brackets outside strings, and never quadratically (an unclosed string)
    quoted = {"ok": ['"]]' + "]" * 500, "[\\[" + "[" * 500, *[[]] * 70]}
    assert checked_reply(agent.json.dumps(quoted).encode()) == quoted
    nested = []
    for _ in range(MAX_REPLY_DEPTH):
        nested = ["]}", nested]
    with pytest.raises(HostileReply, match="nested"):
        checked_reply(agent.json.dumps({"ok": nested}).encode())
    started = time.monotonic()
    with pytest.raises(HostileReply, match="JSONDecodeError"):
        checked_reply(b'{"ok": "' + b'\\"' * 10**6 + b"[" * 100)
    assert time.monotonic() - started < 1.0


def test_a_hostile_reply_costs_its_case_as_the_submissions_failure(tmp_path):
    """What the kernel's side writes on the socket, however it is shaped, ends as a plain
    failure of the request, never an exception in the judge."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    channel = KernelChannel(None, inbox, interrupt=lambda: None)
    ours, theirs = socket.socketpair()
    channel.connection = ours
    nested = b'{"ok": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    theirs.sendall(len(nested).to_bytes(8, "big") + nested)
    reply = channel.request({"op": "len", "target": "x"}, 2.0)
    assert reply["error"]["type"] == "NoAnswer" and "not plain data" in reply["error"]["message"]
    assert channel.connection is None, "a stream that held a hostile reply is not read again"
    theirs.close()


def _case(func):
    return Case("softmax", func.__name__, "property", 1.0, 5.0, func)


def _returns_a_number(impl):
    """the judge's own code does arithmetic on what softmax returns"""
    out = impl.softmax(np.zeros(3))
    if not np.allclose(np.asarray(out, dtype=float).sum(), 1.0):
        raise CaseFailure("rows do not sum to 1")


def _always_broken(impl):
    """a case whose own code is wrong, whatever the submission answers"""
    raise KeyError("a bug in the suite")


def test_a_failure_of_the_judges_code_is_the_submissions_when_the_reference_passes_that_case():
    impl = Implementation(LocalChannel({"softmax": lambda x, axis=-1: "a string, not an array"}))
    result = run_case(_case(_returns_a_number), impl)
    assert not result.passed
    assert not result.message.startswith(GRADER_ERROR), result.message
    assert "could not use" in result.message


def test_a_case_that_fails_on_the_reference_too_is_a_grader_error():
    impl = Implementation(LocalChannel({"softmax": lambda x, axis=-1: x}))
    result = run_case(_case(_always_broken), impl)
    assert result.message.startswith(GRADER_ERROR), result.message


def test_the_kernels_word_on_whose_fault_an_error_was_is_not_asked_for():
    """The agent's error replies carry no verdict on fault: the judge decides."""
    def raises():
        raise ValueError("x")

    assert set(agent.Agent({"f": raises}).answer({"op": "call", "target": "f"})["error"]) == {"type", "bases", "message"}


class _UnreadableMessage(Exception):
    def __str__(self):
        raise RuntimeError("a message that raises when read")

    __repr__ = __str__  # a KeyError's message is its key's repr


class _NamelessMeta(type):
    @property
    def __name__(cls):
        raise RuntimeError("a class whose name raises when read")


class _Nameless(Exception, metaclass=_NamelessMeta):
    pass


@pytest.mark.parametrize("error", [_UnreadableMessage, _Nameless, lambda: KeyError(_UnreadableMessage())],
                         ids=["message", "class-name", "key"])
def test_an_exception_that_cannot_be_described_costs_its_request_and_the_agent_serves_on(error):
    """Describing a submission's exception runs its code (`__str__`, a metaclass's `__name__`); what
    that raises is described as UNDESCRIBABLE, and the thread that serves the judge answers the next
    request, where the exception used to end it (and the step, through a deadline)."""
    def raises():
        raise error()

    ours, theirs = socket.socketpair()
    serving = agent.Agent({"f": raises, "g": lambda: 7})
    thread = threading.Thread(target=serving.serve, args=(theirs,), daemon=True)
    thread.start()
    try:
        agent.send(ours, {"op": "call", "target": "f"})
        assert agent.receive(ours) == {"error": agent.UNDESCRIBABLE}
        agent.send(ours, {"op": "call", "target": "g"})
        assert agent.receive(ours) == {"ok": 7}
    finally:
        ours.close()
        thread.join(5)
    assert not thread.is_alive()


@pytest.mark.parametrize("data", [{"$dtype": "_inductor"}, {"$dtype": "save"}, {"$dtype": "Tensor"},
                                  {"$t": agent.encode(np.zeros(2))["$nd"], "dtype": "_inductor"}])
def test_a_dtype_named_in_a_reply_is_a_dtype_and_imports_nothing(data):
    """Red-teamed in round r44: the judge read a reply's dtype as any attribute of torch, and torch
    imports some of its modules when they are first read: {"$dtype": "_inductor"} took the judge
    1.9 s and 67 MB (800 modules more), and came back as a module, or a function, for the suite."""
    import sys

    imported = "torch._inductor" in sys.modules  # by an earlier test of this session, maybe
    with pytest.raises(ValueError):
        agent.decode(data)
    assert ("torch._inductor" in sys.modules) == imported


# A message whose content is not what its type says: sent on the kernel's own IOPub socket, signed
# with the kernel's key, as any code in the kernel can.
FORGED_MESSAGE = """\
kernel = get_ipython().kernel
kind, content = %r, %s
if kind == "execute_reply":  # on the shell channel, to the request of this very cell
    kernel.session.send(kernel.shell_stream, kind, content, parent=kernel.get_parent("shell"),
                        ident=kernel._parent_ident["shell"])
else:
    kernel.session.send(kernel.iopub_socket, kind, content, parent=kernel.get_parent("shell"))
print("sent")
"""


@pytest.mark.parametrize("kind, content", [
    ("stream", '{"name": "stdout", "text": [[]] * 10}'), ("stream", '{"name": "stdout", "text": [[]] * 30_000}'),
    ("update_display_data", '{"data": {}, "metadata": {}, "transient": {"display_id": [1]}}'),
    ("comm_open", '{"comm_id": "c", "target_name": "t", "data": 5}'),
    ("execute_reply", "{}"), ("execute_reply", '{"status": "error"}'),
], ids=["malformed", "many-containers", "display-id", "comm", "reply", "error-reply"])
def test_a_message_that_is_not_what_it_says_costs_nothing_but_itself(tmp_path, kind, content):
    """Red-teamed in round r44: a stream message whose text is a list of lists failed the whole
    notebook's grading in nbformat's validation (NotebookValidationError: not graded, the
    student's choice), as did a display id that is a list and a comm's data that is a number, in
    nbclient (TypeError), and a cell's reply of `{}` or an error without its name (KeyError); and the judge counted no bytes for empty lists against the notebook's
    output budget: with 5 million of them (a 20 MB message) the validation's error message took the
    grading process to 18 GB and 172 s, and 15 million ran the machine out of memory (the kernel
    killed the grading process). The message is dropped, and the notebook is graded on."""
    from test_envelope import SEALED
    from test_judge import notebook, printed

    from autograder.judge import judge_notebook

    if not SEALED:
        pytest.skip("a kernel of the judge's")
    shown = "from IPython.display import display\ndisplay('shown', display_id='d')"
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [shown, FORGED_MESSAGE % (kind, content), "print('graded on')"]))
    assert judged.problem == ""
    assert printed(judged, 2) == "graded on\n"


RAW_FRAMES = """
import time
kernel = get_ipython().kernel
frames = %s
kernel.iopub_thread.schedule(lambda: kernel.iopub_thread.socket.send_multipart(frames))
time.sleep(0.3)
print("sent")
"""


@pytest.mark.parametrize("frames", ['[b"x"]', '[b"<IDS|MSG>", b"x"]', '[b"<IDS|MSG>", b"forged", b"{}", b"{}", b"{}", b"{}"]'],
                         ids=["no-delimiter", "too-few-parts", "bad-signature"])
def test_frames_that_are_no_message_of_jupyters_cost_nothing_but_themselves(tmp_path, frames):
    """Red-teamed in round r67: jupyter_client raises ValueError (no delimiter, a bad signature) or TypeError (too few
    parts) on frames that are no message of its own, and one such message from the kernel on IOPub stopped the
    notebook's grading (not graded, the student's choice, as r44's messages did). It is dropped, and the notebook is
    graded on."""
    from test_envelope import SEALED
    from test_judge import notebook, printed

    from autograder.judge import judge_notebook

    if not SEALED:
        pytest.skip("a kernel of the judge's")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [RAW_FRAMES % frames, "print('graded on')"]))
    assert judged.problem == ""
    assert printed(judged, 1) == "graded on\n"


def test_a_kernels_message_is_unpacked_only_within_bounds():
    """The unpacking of r44's 5 million empty lists, and their size against the output budget."""
    import json

    from autograder.kernel.client import HostileMessage, bounded_unpack
    from autograder.kernel_messages import text_size
    from autograder.limits import MAX_NOTEBOOK_OUTPUT_BYTES

    with pytest.raises(HostileMessage):
        bounded_unpack(json.dumps({"text": [[]] * MAX_REPLY_CONTAINERS}).encode())
    with pytest.raises(HostileMessage):
        bounded_unpack(b"[" * 5000 + b"]" * 5000)
    assert bounded_unpack(b'{"name": "stdout", "text": "[{}]"}') == {"name": "stdout", "text": "[{}]"}
    assert text_size({"text": [[]] * 3_000_000}) > MAX_NOTEBOOK_OUTPUT_BYTES


def test_a_request_the_kernel_never_reads_runs_into_its_deadline(tmp_path):
    """Red-teamed in round r54: the judge sent each request on a socket without a time limit (until a reply
    had set one, the rest of its own deadline): a kernel whose agent stopped reading held the judge in
    `sendall` for as long as it liked, once a request was larger than the socket's buffer (05's memory
    cases send 1.5 MB of inputs)."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    channel = KernelChannel(None, inbox, interrupt=lambda: None)
    ours, theirs = socket.socketpair()
    channel.connection = ours
    started = time.monotonic()
    reply = channel.request({"op": "hold", "values": "x" * 8 * 1024**2}, 1.0)  # never read
    assert time.monotonic() - started < 3.0
    assert reply["error"]["type"] == "NoAnswer"
    theirs.close()


def test_a_lone_surrogate_a_kernel_prints_is_kept_as_its_escape(tmp_path):
    """r63: JSON may spell half of a UTF-16 pair alone ("\\ud800"), which no UTF-8 file holds: a kernel whose
    session packs its messages with `ensure_ascii` printed one, nbformat could not write the autograded notebook,
    and a notebook handed in as valid was not graded. Every string of an output, its keys too, is one UTF-8 holds."""
    import nbformat
    from test_envelope import SEALED
    from test_judge import notebook, printed

    from autograder.judge import judge_notebook
    from autograder.kernel_messages import encodable

    assert encodable({"\ud800": ["a", {"b": "\udfff", "c": 1}], "\U0001f600": "\U0001f600"}) == {
        "\\ud800": ["a", {"b": "\\udfff", "c": 1}], "\U0001f600": "\U0001f600"}
    if not SEALED:
        pytest.skip("a kernel of the judge's")
    printing = ("import json\nsession = get_ipython().kernel.session\n"
                "session.pack = lambda o: json.dumps(o, ensure_ascii=True, default=str).encode()\n"
                "print('half \\ud800 a pair')\nraise ValueError('\\udfff')")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [printing, "print('graded on')"]))
    assert judged.problem == "" and printed(judged, 0) == "half \\ud800 a pair\n" and printed(judged, 1) == "graded on\n"
    nbformat.writes(judged.notebook).encode("utf-8")


def test_the_judges_one_walk_of_a_message_sizes_it_as_it_was_and_mends_it():
    """`process_message` sizes and mends each output in one walk: the size is the message's as the kernel sent it
    (a lone surrogate counted as one character, not as its six-character escape), and the mending is encodable's."""
    import copy

    from autograder.kernel_messages import encodable, sized_and_encodable, text_size

    sent = {"\ud800": ["a\udfff", {"b": "\udfff", "c": [[]] * 3}], "text": "x" * 100}
    assert sized_and_encodable(copy.deepcopy(sent)) == (encodable(copy.deepcopy(sent)), text_size(sent))
    # the outer dict and its keys, the list, its string, the inner dict and its keys, its string, [[]] * 3, the text
    assert text_size(sent) == (8 + 1 + 4) + 8 + 2 + (8 + 1 + 1) + 1 + (8 + 3 * 8) + 100
