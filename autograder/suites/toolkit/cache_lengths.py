"""len() of a student's KVCache, for its suite: a call that raised is named by what __len__ read (the truth of a
tensor, the shape of None, of an empty placeholder or of a list of updates) or returned (None, a torch.Size)."""

import re

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit import checks
from autograder.suites.toolkit.modules import first_line


def length(cache, what):
    """len(cache), or a CaseFailure naming why it raised: what __len__ read or returned."""
    try:
        return len(cache)
    except RemoteError as error:
        if "Boolean value of Tensor" in str(error):
            raise CaseFailure(f"len({what}) raised {error.type_name}: does __len__ ask for the truth of a tensor "
                              "(if self.keys:)? A tensor of several values is neither true nor false, and an empty "
                              "cache holds no tensor yet: test `is None`") from None
        if "'NoneType' object has no attribute" in str(error):
            raise CaseFailure(f"len({what}) raised {error.type_name}: __len__ reads the shape of what the cache holds, "
                              "but a cache that holds nothing yet has no tensor (None) to read it from: its length "
                              "is 0 then") from None
        returned = re.search(r"'([\w.]+)' object cannot be interpreted as an integer", str(error))
        if returned:  # __len__ gave something other than a whole number
            raise CaseFailure(f"len({what}) raised {error.type_name}: __len__ returned a {returned.group(1)}, "
                              f"{NOT_A_LENGTH.get(returned.group(1), 'not a whole number')}: len() takes one int, "
                              "the number of tokens held, 0 when nothing is stored yet") from None
        axes = cache.describe("keys.ndim").get("value") if error.type_name == "IndexError" else None
        if isinstance(axes, int) and axes < 2:  # a placeholder such as torch.empty(0), with no token axis to read
            raise CaseFailure(f"len({what}) raised {error.type_name}: the cache's keys are a tensor of {axes} "
                              "axis, with no token axis (dim 1) to read: an empty placeholder (torch.empty(0), "
                              "torch.tensor([])) has one axis; a cache that holds nothing has length 0 (keep None "
                              "until the first update, or test .numel() == 0)") from None
        held = re.search(r"'(list|tuple)' object has no attribute '(shape|size)'", str(error))
        if held:  # the updates kept in a list (torch.cat of it each time), read as if it were one tensor
            raise CaseFailure(f"len({what}) raised {error.type_name}: __len__ reads .{held.group(2)} of a Python "
                              f"{held.group(1)}, as if the cache held one tensor: the updates are kept in a list, "
                              "which has no shape; the tokens held are those of every tensor in it") from None
        if "has no len()" in str(error):  # no __len__ at all
            raise CaseFailure(f"len({what}) raised {error.type_name}: define __len__ to return the number of "
                              "tokens held (0 when nothing is stored yet)") from None
        raise CaseFailure(f"len({what}) raised {error.type_name} in __len__ ({first_line(error)}), and "
                          f"{checks.UNNAMED}: __len__ returns the number of tokens held (0 when nothing is stored "
                          "yet)") from None


# What a value __len__ returned instead of an int says about it.
NOT_A_LENGTH = {"NoneType": "perhaps for an empty cache (return 0 there, not None)",
                 "torch.Size": "the whole shape of the keys, not the size of one of its axes (dim 1, the tokens)"}
