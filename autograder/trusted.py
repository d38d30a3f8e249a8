"""Genuine references to everything grading relies on, taken before student code runs.

Grading happens inside the student's own process (the kernel, or the audit's worker), where a
submission can rebind `np.allclose` or `torch.softmax`. This module is imported first (the
kernel's start-up line in nbgrader_config.py, or the audit before it runs any cell), so the
snapshot holds the real objects: the checks call those, and `tampered()` names whatever a
submission rebound so it can be put back and reported.
"""

import builtins
import math

import numpy as np
import numpy.linalg
import numpy.testing
import torch
import torch.nn.functional
import torch.testing

# (owner, attribute) pairs a submission could rebind to fake a comparison or an oracle.
_WATCHED = {
    np: ("allclose", "isclose", "array_equal", "asarray", "array", "abs", "max", "sum", "exp",
         "isfinite", "isnan", "where", "all", "any", "swapaxes", "var", "mean", "sqrt"),
    numpy.testing: ("assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                    "assert_almost_equal", "assert_equal"),
    numpy.linalg: ("norm",),
    torch: ("allclose", "isclose", "equal", "softmax", "tensor", "as_tensor", "from_numpy",
            "manual_seed", "matmul", "triu", "tril", "ones", "zeros", "randn", "rand",
            "no_grad", "is_tensor"),
    torch.Tensor: ("allclose", "softmax", "numpy", "detach", "clone", "__eq__", "__matmul__",
                   "masked_fill", "transpose", "view", "reshape", "copy_", "backward"),
    torch.testing: ("assert_close",),
    torch.nn.functional: ("softmax", "scaled_dot_product_attention", "dropout", "linear"),
    torch.nn.Linear: ("forward",),
    torch.nn.Dropout: ("forward",),
    torch.nn.Module: ("__call__", "train", "eval", "parameters"),
    torch.nn.MultiheadAttention: ("forward",),
    math: ("isclose", "sqrt", "isfinite", "exp"),
    builtins: ("abs", "float", "int", "isinstance", "len", "max", "min", "sum", "round",
               "print", "getattr", "hasattr", "type", "repr", "range", "zip", "sorted"),
}

_SNAPSHOT = {
    (owner, name): getattr(owner, name)
    for owner, names in _WATCHED.items()
    for name in names
    if hasattr(owner, name)
}


def _label(owner, name):
    return f"{getattr(owner, '__name__', owner)}.{name}"


def tampered():
    """Names of watched attributes that no longer hold their original object."""
    changed = []
    for (owner, name), original in _SNAPSHOT.items():
        if getattr(owner, name, None) is not original:
            changed.append(_label(owner, name))
    return changed


def restore():
    """Put every watched attribute back; returns the names that had been changed."""
    changed = []
    for (owner, name), original in _SNAPSHOT.items():
        if getattr(owner, name, None) is not original:
            changed.append(_label(owner, name))
            setattr(owner, name, original)
    return changed


# The objects the checks use, bound here so a later rebinding of np.* cannot reach them.
asarray = np.asarray
isfinite = np.isfinite
is_tensor = torch.is_tensor
float_ = builtins.float
isinstance_ = builtins.isinstance
