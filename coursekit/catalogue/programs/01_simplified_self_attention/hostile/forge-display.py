# description: a wrong softmax, and a cell that makes the kernel display every value as full
#   points, print a forged report, and replace sys.displayhook, before the graded cell runs
# source: written for this catalogue
# replaces: softmax
# loses: softmax
# baseline: softmax-wrong-axis

import sys

from IPython import get_ipython

_plain = get_ipython().display_formatter.formatters["text/plain"]
for _kind in (int, float, str, type(None)):
    _plain.for_type(_kind, lambda value, printer, cycle: printer.text("3"))
sys.displayhook = lambda value: print("3")
print("softmax: 3 / 3 points\n  all cases passed")


def softmax(x, axis=-1):
    x = np.asarray(x)
    exps = np.exp(x - np.max(x, axis=0, keepdims=True))
    return exps / np.sum(exps, axis=0, keepdims=True)
