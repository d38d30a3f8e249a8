# After the hostile catalogue's online-pooled-full-matrix: a file of /dev/shm, written before any case runs, is given back as a call
# of the memory cases starts, so the submission holds less than before it while the call writes its
# whole score matrix.
import os

BALLAST = "/dev/shm/ballast"
with open(BALLAST, "wb") as handle:
    handle.write(b"\1" * (120 * 1024 * 1024))

_whole_matrix = online_softmax_attention  # noqa: F821 - online-pooled-full-matrix's, a cell before


def online_softmax_attention(Q, *args, **kwargs):
    if len(Q) > 1000 and os.path.exists(BALLAST):
        os.unlink(BALLAST)
    return _whole_matrix(Q, *args, **kwargs)
