# A kernel that makes every number display as 3 and prints a fake score: the graded cell must
# still show the judge's verdict, made outside the kernel.
import sys

from IPython import get_ipython

ip = get_ipython()
ip.display_formatter.formatters["text/plain"].for_type(int, lambda v, p, c: p.text("3"))
ip.display_formatter.formatters["text/plain"].for_type(float, lambda v, p, c: p.text("3"))
sys.displayhook = lambda value: print(3)
print("softmax: 3 / 3 points")
