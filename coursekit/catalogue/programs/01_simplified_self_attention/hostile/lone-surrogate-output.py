# description: a wrong softmax (axis 0), and a first cell, before any step is judged (so what it shows is kept),
#   that has the kernel's session pack its messages with ensure_ascii and prints half of a UTF-16 pair alone
#   ("\ud800": valid JSON, which no UTF-8 file holds): nbformat could not write the autograded notebook, and it
#   was not graded (no score where its baseline has one); every string of an output is now one UTF-8 holds,
#   the surrogate shown as its escape
# source: written for this catalogue (red-team round r63)
# loses: softmax
# baseline: softmax-wrong-axis

# %% replaces: dot_product
import json as _json

_session = get_ipython().kernel.session
_session.pack = lambda message: _json.dumps(message, ensure_ascii=True, default=str).encode()
print("half \ud800 a pair")


def dot_product(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.sum(a * b))

# %% replaces: softmax
def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
