"""CachedCausalAttention's length check: a call expected to be refused (`expect_value_error`), and the check named when
it refuses the wrong way: an assert where ValueError is promised, and a check that counts the call's new tokens only,
told by the same number of tokens given at once to a new cache. It lives apart from `cached`, whose file is full."""

from autograder.errors import CaseFailure, RemoteError

# An assert for the length check (assert len(cache) + t <= context_length) refuses the right calls, before the mask,
# but with AssertionError, which the docstring does not promise (and python -O skips every assert).
ASSERTED_LENGTH = ("is the length checked with an assert? An assert raises AssertionError (and python -O skips it); "
                   "the docstring promises ValueError: raise ValueError(...) when len(cache) + t > context_length")


# if t > context_length: the call's new tokens alone are checked, so a cache is let grow past context_length, and the
# mask, context_length rows, has no rows for the tokens past it.
NEW_TOKENS_ONLY = ("the length check counts only the tokens this call brings, not those the cache already holds: the "
                   "cached keys take room in context_length too, and a cache let grow past it leaves the new tokens "
                   "no rows of the mask")


def refused_otherwise(what, error, same_total=None):
    """The CaseFailure of a call that should raise ValueError (too many tokens for context_length) and raised `error`
    (a RemoteError) instead: an AssertionError is named as an assert; a layer that refuses the same number of tokens
    given at once to a new cache (`same_total()` raises ValueError) checks the new tokens only."""
    if error.type_name == "AssertionError":
        return CaseFailure(f"{what} raised AssertionError where it should raise ValueError: {ASSERTED_LENGTH}")
    if same_total is not None and _refuses(same_total):
        return CaseFailure(f"{what} raised {error.type_name}, though as many tokens given at once with an empty cache "
                           f"are refused with ValueError: {NEW_TOKENS_ONLY}")
    return CaseFailure(f"{what} raised {error.type_name}; it should raise ValueError (check the length "
                       "before using the mask: raise ValueError(...) when len(cache) + t > context_length)")


def _refuses(call):
    """Whether call() raises ValueError (anything else it raises, or no error, is no refusal)."""
    try:
        call()
    except ValueError:
        return True
    except (RemoteError, CaseFailure):
        return False
    return False


def expect_value_error(call, what, same_total=None):
    """call() raises ValueError; same_total, the same number of tokens given to a new cache, names a length check
    that counts the new tokens only (`refused_otherwise`)."""
    try:
        call()
    except ValueError:
        return
    except RemoteError as error:
        raise refused_otherwise(what, error, same_total) from None
    raise CaseFailure(f"{what} did not raise: raise ValueError when the cache would grow past context_length")
