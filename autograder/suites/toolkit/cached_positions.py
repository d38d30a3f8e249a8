"""Where a cached forward puts its new tokens, probed through a cache filled here on a layer with room to spare (as
`cached.explain_shifted_rows` does): `explain_position_from_batch` names the position read from the batch axis
(cache.keys.shape[0]), right only where the batch holds as many sequences as the cache holds tokens. Apart from
`cached`, whose file is full."""

from autograder.errors import CaseFailure, RemoteError
from autograder.suites.toolkit.cached import model
from autograder.suites.toolkit.cases import rng
from autograder.suites.toolkit.checks import to_array
from autograder.suites.toolkit.modules import loaded_module, random_projections, tensor
from autograder.suites.toolkit.properties import close

POSITION_FROM_BATCH = ("the new tokens' position is read from the batch axis (keys.shape[0], the number of "
                       "sequences), not from the number of tokens the cache holds")


def explain_position_from_batch(impl, what, error):
    """A forward that raised, run again through a cache filled here (`explain_shifted_rows`' way) on a layer with
    room to spare: right wherever the batch holds as many sequences as the cache holds tokens, 3 and 3 or 2 and 2,
    and wrong where they differ, 2 and 3, its new tokens sit at the batch size's position."""
    r = rng(1546)
    linears = random_projections(r, 3, 4, False)

    def right(batch, held, size):
        x = r.normal(size=(batch, held + size, 3))
        cache = impl.KVCache()
        try:
            cache.call("update", *(tensor(x[:, :held] @ linears[name][0].T) for name in ("W_key", "W_value")))
            layer = loaded_module(impl, "CachedCausalAttention", (3, 4, 8, 0.0, False), linears, explained=False)
            return close(to_array(layer(tensor(x[:, held:]), cache=cache), what), model(x, linears, [held, size])[:, held:])
        except (RemoteError, CaseFailure):
            return False

    if right(3, 3, 2) and right(2, 2, 3) and not right(2, 3, 2):
        raise CaseFailure(f"{what} raised {error.type_name}; through a cache it is right where the batch holds as many "
                          "sequences as the cache holds tokens (3 and 3, 2 and 2), and fails where they differ (2 "
                          f"sequences, 3 tokens held): {POSITION_FROM_BATCH}") from None
