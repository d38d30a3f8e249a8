"""How much memory one call of online_softmax_attention may hold at once, and what holding more says: the two
verdicts of 05's memory cases on a call's peak, measured from outside the kernel (`seam.measure_peak`)."""

from autograder.errors import CaseFailure


def held_too_much(what, peak, num_tokens):
    """The CaseFailure of a call on `num_tokens` queries and keys that held `peak` bytes at once, more than half an
    (n_q, n_k) array of float32 scores. Less than one such array is no whole float32 scores or weights: it is a few
    (n_q, n_k) arrays of True/False (a byte an entry), a mask made whole before the blocks are cut, or whole
    scores in float16 (two bytes an entry), which pass every check of the values (red-team round r54)."""
    scores = num_tokens * num_tokens * 4 / 2**20
    if peak < num_tokens * num_tokens * 4:
        return CaseFailure(f"{what} held {peak / 2**20:.0f} MiB at once, less than whole float32 scores "
                           f"({scores:.0f} MiB): {NARROWER_SCORES}{WHOLE_MASK}")
    return CaseFailure(f"{what} held {peak / 2**20:.0f} MiB at once, as much as a whole (n_q, n_k) array of "
                       f"scores or weights ({scores:.0f} MiB in float32): keep only one block "
                       "of scores (n_q, block_size) at a time, with the running maximum, sum and output")


def grows_as_the_square(what, peak, half_peak, num_tokens):
    """The CaseFailure of a causal call on `num_tokens` tokens that held `peak` bytes at once, and `half_peak` on half
    as many, where the memory grows as the square of the tokens (None if it does not). Under `held_too_much`'s
    limit a whole (n_q, n_k) mask of True/False (a byte an entry, 9 MiB at 3072 tokens) fits beside a lean loop
    (14.5 MiB in all, a torch style), and it landed on the limit itself beside the reference's (18.0 to 18.3 MiB),
    so the style of the rest decided, by chance, whether it failed. Held memory grows as a + b n + c n²: twice the
    tokens hold 2 (a + b n) + 4 c n², so peak - 2 half_peak is 2 c n² less a. The honest styles of the catalogue
    measure c < -0.4 byte an entry of (n_q, n_k) (their fixed part, a), whole masks of True/False 0.53 to 0.58: a
    quarter byte parts them."""
    if peak - 2 * half_peak <= num_tokens * num_tokens / 8:
        return None
    return CaseFailure(f"{what} held {peak / 2**20:.1f} MiB at once, and {half_peak / 2**20:.1f} MiB on half as many "
                       "tokens: more than twice the memory for twice the tokens, so something of size (n_q, n_k) "
                       "is held: is the causal mask made for every query and key at once (or the scores kept whole "
                       "in a narrower type)? Make only each block's part, (n_q, block_size)")


# Both questions fit in a case's message (limits.MAX_MESSAGE) after the call's description.
NARROWER_SCORES = "are the scores kept whole in a narrower type (float16: half the bytes), or "
WHOLE_MASK = ("is a mask (the causal one, say) made for every query and key at once? Either is an (n_q, n_k) "
              "array: make only each block's part, (n_q, block_size)")
