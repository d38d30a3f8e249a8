"""CrossAttention's scores divided by sqrt(num_heads) (self.num_heads for self.head_dim): a rung of its own, and a
note on the input-width rungs wherever a width of x or the context, whole or per head, is num_heads, where the two
give the same scores and the message says both; and on the unscaled rung wherever such a width per head is 1, whose
square root divides by nothing. The scores divided by the square root of a number of tokens, the keys' (T_k) or the
queries' (T_q): a note on every scale rung whose divisor equals it on an input (`or_tokens`); every input of the suite
has another divisor equal to sqrt(T_q), so the queries' count is named only so. Its suite is near full, so this lives here."""

import numpy as np

from autograder.suites.toolkit.multihead import SCALED_BY_HEADS

# The input widths each scale switch of multihead.cross_attention divides by the square root of.
_WIDTHS = {"d_q": lambda d_q, d_kv, heads: d_q, "d_q_heads": lambda d_q, d_kv, heads: d_q // heads,
           "d_kv": lambda d_q, d_kv, heads: d_kv, "d_kv_heads": lambda d_q, d_kv, heads: d_kv // heads}
# Said in place of the width rung's advice, which the report would cut (it keeps 400 characters of a message).
OR_HEADS = ("; here that width is num_heads, so sqrt(num_heads) (self.num_heads for self.head_dim) gives the same "
            "scores; divide by sqrt(head_dim), head_dim = d_out // num_heads")


# Said within the unscaled rung where a width per head taken from an input is 1, whose square root divides by nothing.
OR_WIDTH_ONE = (", or divided by the square root of a width taken from x or the context (d_q // num_heads, say), "
                "which is 1 here and gives the same scores")


# A scale written in as a number, whatever the layer's widths: 2 ** 0.5 (a head_dim of 2 seen once), 2, or 8 (the
# square root of GPT-2's head_dim, 64). Each is a rung of its own, last; where a rung before it gives the same scores
# on an input, that rung's cause says it too (OR_FIXED), so neither is blamed alone.
FIXED_DIVISORS = {2 ** 0.5: "2 ** 0.5", 2.0: "2", 8.0: "8"}
FIXED = [(dict(scale=divisor), f"the scores are divided by a fixed number, {name}, written into the code: the scale "
                               "follows the layer, the square root of its heads' width, head_dim = d_out // num_heads")
         for divisor, name in FIXED_DIVISORS.items()]
OR_FIXED = " (or by a fixed number written in, {}, which gives the same scores here)"


def or_heads(switches, why, d_q, d_kv, num_heads, compute=None):
    """`why`, the message of a scale taken from an input's width (`switches`), its cause kept and its advice replaced
    by OR_HEADS where that width is num_heads on this input (d_q and d_kv the widths of x and the context); the
    unscaled rung's cause joined by OR_WIDTH_ONE where such a width is 1, so a divisor of 1 is not blamed alone; and
    any wrong scale's cause joined by OR_FIXED where `compute(**switches)`, the model's output, is also what a fixed
    divisor gives here."""
    return _or_fixed(switches, _or_heads(switches, why, d_q, d_kv, num_heads), compute)


def _or_fixed(switches, why, compute):
    scale = switches.get("scale")
    if compute is None or scale in (None, "head") or isinstance(scale, float):
        return why
    for divisor, name in FIXED_DIVISORS.items():
        try:
            with np.errstate(all="ignore"):
                same = np.allclose(compute(**switches), compute(scale=divisor), equal_nan=True)
        except Exception:  # noqa: BLE001 - a model that cannot run here coincides with nothing
            continue
        if same:  # said before the advice, which a report may cut
            cut = min(i for i in (why.find(";"), why.find(":"), len(why)) if i >= 0)
            return why[:cut] + OR_FIXED.format(name) + why[cut:]
    return why


def _or_heads(switches, why, d_q, d_kv, num_heads):
    if switches.get("scale") == "none":
        ones = [name for name, width in _WIDTHS.items() if width(d_q, d_kv, num_heads) == 1]
        cause, advice = why.split(": ", 1)
        return f"{cause}{OR_WIDTH_ONE}: {advice}" if ones else why
    width = _WIDTHS.get(switches.get("scale"))
    if width is None or width(d_q, d_kv, num_heads) != num_heads:
        return why
    return why.split(";")[0] + OR_HEADS


def with_heads(mistakes):
    """`mistakes` [(switches, why)] and sqrt(num_heads) last, after the input widths it may equal, then the fixed
    divisors, which any of them may equal."""
    return [*mistakes, SCALED_BY_HEADS, *FIXED]



OR_TOKENS = ("; on this input that divisor is also sqrt(T_k), the number of context tokens (keys.shape[-2]), which "
             "gives the same scores: the scale comes from the keys' width, not from their number")
OR_QUERIES = ("; on this input that divisor is also sqrt(T_q), the number of queries (queries.shape[-2]), which gives "
              "the same scores")
_COUNTS = {"tokens": OR_TOKENS, "queries": OR_QUERIES}


def or_tokens(switches, why, compute):
    """`why`, the message of a wrong scale (`switches`), followed by OR_TOKENS or OR_QUERIES where compute(**switches),
    the model's output, is also what a divisor of sqrt(T_k) or sqrt(T_q) gives on this input: the message says both."""
    scale = switches.get("scale")
    if scale is None:
        return why
    for count, note in _COUNTS.items():
        try:
            with np.errstate(all="ignore"):
                same = scale != count and np.allclose(compute(**switches), compute(scale=count), equal_nan=True)
        except Exception:  # noqa: BLE001 - a model that cannot run here coincides with nothing
            same = False
        why += note if same else ""
    return why
