"""CrossAttention's scores divided by sqrt(num_heads) (self.num_heads for self.head_dim): a rung of its own, and a
note on the input-width rungs wherever a width of x or the context, whole or per head, is num_heads, where the two
give the same scores and the message says both; and on the unscaled rung wherever such a width per head is 1, whose
square root divides by nothing. Its suite is near full, so this lives here."""

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


def or_heads(switches, why, d_q, d_kv, num_heads):
    """`why`, the message of a scale taken from an input's width (`switches`), its cause kept and its advice replaced
    by OR_HEADS where that width is num_heads on this input (d_q and d_kv the widths of x and the context); the
    unscaled rung's cause joined by OR_WIDTH_ONE where such a width is 1, so a divisor of 1 is not blamed alone."""
    if switches.get("scale") == "none":
        ones = [name for name, width in _WIDTHS.items() if width(d_q, d_kv, num_heads) == 1]
        cause, advice = why.split(": ", 1)
        return f"{cause}{OR_WIDTH_ONE}: {advice}" if ones else why
    width = _WIDTHS.get(switches.get("scale"))
    if width is None or width(d_q, d_kv, num_heads) != num_heads:
        return why
    return why.split(";")[0] + OR_HEADS


def with_heads(mistakes):
    """`mistakes` [(switches, why)] and sqrt(num_heads) last, after the input widths it may equal."""
    return [*mistakes, SCALED_BY_HEADS]

