# After the hostile catalogue's online-handed-in-buffer: an earlier cell writes one byte of the file handed in
# back as it was (so the kernel holds its own copy of the file before any case), and the call, once its score
# matrix has been written into that file and used, puts back what was handed in (zeros) before it ends. Every
# page of the copy then holds what was handed in again: a comparison with the original sees nothing.
import mmap
import os

_ZEROS = bytes(1024**2)
with open("scores.bin", "r+b") as _handle:
    _handle.write(_handle.read(1))
_attend = online_softmax_attention  # noqa: F821 - the catalogue entry's, in the cell before


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    out = _attend(Q, K, V, block_size, causal)
    if os.getpid() != _KERNEL:  # noqa: F821 - the cell before
        with open("scores.bin", "r+b") as handle:
            scores = mmap.mmap(handle.fileno(), 0)
        for start in range(0, len(scores), len(_ZEROS)):
            scores[start:start + len(_ZEROS)] = _ZEROS[:len(scores) - start]
    return out
