"""The causal block mask's known mistakes in `online_softmax_attention`, as switches of `blockwise.model` with their
messages (its suite is full): a block's mask that ignores the block's offset, is off by one either way, is reversed,
kept the wrong way round, shifted by the start the wrong way, left off the first block, added as blocked * -inf,
taken after the block's maximum, or fills the blocked scores with 0."""

from autograder.suites.toolkit import blockwise

MISTAKES = [
    (dict(mask="local"), "the causal mask of a block compares the query's position with the key's position "
                         "inside the block: use the key's position in the whole sequence (block start + column)"),
    (dict(mask="next"), "the causal block mask is off by one: each query also sees the next key; block key j "
                        "when j > i"),
    (dict(mask="diagonal"), "the causal block mask is off by one: it blocks each query's own key; block key j "
                            "only when j > i"),
    (dict(mask="zero"), "the blocked scores are set to 0, and exp(0 - max) still gives those keys weight: a "
                        "blocked key needs a score of -inf (weight exactly 0)"),
    (dict(mask="kept"), "the causal block mask is applied the wrong way round: the later keys (j > i), which must "
                        "be blocked, keep their scores and every other score is set to -inf (np.where(condition, a, "
                        "b) takes a where the condition holds), so a query may be left with no key at all (nan)"),
    (dict(max_before_mask=True), blockwise.MAX_BEFORE_MASK),
    (dict(mask="additive"), blockwise.ADDITIVE_MASK),
    (dict(mask="open_first"), blockwise.FIRST_BLOCK_OPEN),
    (dict(mask="reversed"), "the causal block mask is reversed: it blocks the keys before each query and keeps "
                            "the later ones; query i attends to keys 0..i"),
    (dict(mask="shifted_on"), "the causal mask of a block is shifted the wrong way by the block's start "
                              "(np.triu(..., k=start + 1)?): a later block's keys sit further on in the sequence, so "
                              "more of them, not fewer, lie after each query; here query i sees keys up to i + 2 start"),
]
