# description: merge_heads without the transpose, and a cell that tries the network: the
#   machine's loopback services (a Dask scheduler, Jupyter, ssh), a name lookup, a web request
# source: written for this catalogue
# replaces: merge_heads
# loses: merge_heads
# baseline: merge-heads-no-transpose

import socket
import urllib.request

_reached = []
for _port in (8786, 8888, 22, 80):
    try:
        socket.create_connection(("127.0.0.1", _port), timeout=1).close()
        _reached.append(_port)
    except OSError:
        pass
try:
    socket.getaddrinfo("pypi.org", 443)
    _reached.append("dns")
    urllib.request.urlopen("https://pypi.org", timeout=2)
    _reached.append("https")
except OSError:
    pass
print("reached:", _reached)


def merge_heads(x):
    batch, num_heads, num_tokens, head_dim = x.shape
    return x.reshape(batch, num_tokens, num_heads * head_dim)
