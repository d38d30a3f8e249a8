# description: a wrong softmax, and everything that could hold up the kernel's end: atexit
#   handlers, a __del__, a weakref finalizer and a SIGTERM handler that each spin forever, SIGHUP
#   ignored, and a thread that is not a daemon and never ends; the kernel still ends when its
#   grading does, and nothing waits for it
# source: red-team round r27
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import atexit
import signal
import threading
import time
import weakref


def _spin(*_):
    while True:
        try:
            time.sleep(1)
        except BaseException:  # noqa: BLE001 - neither KeyboardInterrupt nor SystemExit ends it
            pass


atexit.register(_spin)
signal.signal(signal.SIGTERM, _spin)
signal.signal(signal.SIGHUP, signal.SIG_IGN)


class _Held:
    def __del__(self):
        _spin()


_held = _Held()
_anchor = type("Anchor", (), {})()
weakref.finalize(_anchor, _spin)
threading.Thread(target=_spin, daemon=False).start()


def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
