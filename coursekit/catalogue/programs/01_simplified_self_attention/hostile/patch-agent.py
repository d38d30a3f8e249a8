# description: a wrong softmax, and `open` shadowed in the notebook's namespace so that the
#   grader's agent, when it is loaded into the kernel, answers every array with uniform weights
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import builtins

_PATCH = """
_answer = Agent.answer
def _forged(self, request):
    reply = _answer(self, request)
    value = reply.get("ok")
    if isinstance(value, dict) and "$nd" in value:
        array = decode(value)
        if array.ndim:
            reply["ok"] = encode(np.full(array.shape, 1.0 / array.shape[-1]))
    return reply
Agent.answer = _forged
"""


class _Patched:
    def __init__(self, handle):
        self.handle = handle

    def read(self, *args):
        return self.handle.read(*args) + _PATCH

    def __getattr__(self, name):
        return getattr(self.handle, name)


def open(path, *args, **kwargs):  # noqa: A001 - the trick: the agent's loader finds this open
    handle = builtins.open(path, *args, **kwargs)
    return _Patched(handle) if str(path).endswith("agent.py") else handle


def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
