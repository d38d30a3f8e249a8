# description: online_softmax_attention keeps the whole score matrix in a buffer of the kernel its cell
#   made and touched before any case ran, which the call's forked child does not map (MADV_DONTFORK), and
#   writes it there in place, with process_vm_writev (or through /proc/<pid>/mem), while the kernel is
#   stopped: no page copied, none charged, and what it put back no comparison of pages could tell (a kernel may
#   not write another process's memory now: process_vm_writev is refused, and /proc is read-only)
# source: red-team round r48
# replaces: online_softmax_attention
# loses: online_softmax_attention
# symptom: raised PermissionError
# baseline: online-full-matrix

import ctypes
import mmap
import os

import numpy as np

_N = 3072
_MAP = mmap.mmap(-1, _N * _N * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
_MAP.madvise(mmap.MADV_DONTFORK)
_POOL = np.frombuffer(_MAP, dtype=np.float32)
_POOL[:] = 1  # touched: charged before any case
_ADDRESS = _POOL.ctypes.data
_KERNEL = os.getpid()
_libc = ctypes.CDLL(None, use_errno=True)
_THROUGH = globals().get("REMOTE_WAY", "process_vm")  # or "proc_mem": an earlier cell chooses


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def _move(local, offset, write):
    """Copy the array `local` to (or from) the kernel's pool at `offset` bytes."""
    if _THROUGH == "proc_mem":
        with open(f"/proc/{_KERNEL}/mem", "r+b", buffering=0) as memory:
            memory.seek(_ADDRESS + offset)
            if write:
                memory.write(local.tobytes())
            else:
                local[...] = np.frombuffer(memory.read(local.nbytes), dtype=local.dtype).reshape(local.shape)
        return
    here = _IoVec(local.ctypes.data, local.nbytes)
    there = _IoVec(_ADDRESS + offset, local.nbytes)
    call = _libc.process_vm_writev if write else _libc.process_vm_readv
    if call(_KERNEL, ctypes.byref(here), 1, ctypes.byref(there), 1, 0) != local.nbytes:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def online_softmax_attention(Q, K, V, block_size=64, causal=False):
    if os.getpid() == _KERNEL:  # not measured: the plain way
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if causal:
            scores = np.where(np.triu(np.ones(scores.shape[-2:], dtype=bool), 1), -np.inf, scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return weights / weights.sum(axis=-1, keepdims=True) @ V
    n_q, n_k = Q.shape[0], K.shape[0]
    for start in range(0, n_q, 64):  # the whole matrix, written a block of rows at a time
        rows = (Q[start:start + 64] @ K.T / np.float32(np.sqrt(K.shape[-1]))).astype(np.float32)
        _move(np.ascontiguousarray(rows), start * n_k * 4, True)
    out = np.empty((n_q, V.shape[1]), dtype=np.float32)
    for start in range(0, n_q, 64):  # read back a block at a time
        rows = np.empty((min(64, n_q - start), n_k), dtype=np.float32)
        _move(rows, start * n_k * 4, False)
        if causal:
            rows[np.arange(n_k)[None, :] > np.arange(start, start + len(rows))[:, None]] = -np.inf
        weights = np.exp(rows - rows.max(axis=-1, keepdims=True))
        out[start:start + len(rows)] = weights / weights.sum(axis=-1, keepdims=True) @ V
    return out
