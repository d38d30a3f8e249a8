"""The hidden suites: `test_<step>.py` grades the step of that name (`autograder.steps`).

How case weights are set. A step's points are shared among its cases by weight
(`harness.StepResult.fraction`), so the weights decide what a mistake costs, and credit follows
the size of the misconception: a conceptual error (the step's central computation wrong or
missing: no mask, no scaling, heads mixed) keeps at most a third of its step
(`CONCEPTUAL_MAX_KEPT`); a slip (right computation, wrong in one situation or one secondary
part: the mask not sliced to T, dropout in the wrong place, the input changed in place) keeps
at least half (`SLIP_MIN_KEPT`). A case's weight is chosen for that:

- **Output cases carry the step.** The worked examples of the notes, the stored reference outputs
  and the PyTorch oracle compare whole outputs, so a conceptual error (no mask, no scaling,
  heads mixed, keys from the wrong sequence) fails every one of them. In the attention layers
  (`LAYERS` below) they weigh at least twice all property cases together, so such an error
  keeps at most a third of the step. Where the notes' examples cannot show a conceptual error
  (those of `scaled_dot_product_attention` have no mask, those of `softmax` are single rows,
  `MultiHeadAttention`'s has head_dim 1, where no scale shows, `CausalAttention`'s a batch of two
  with d_out 2, where sqrt(2) written in, or the batch size read for d_k, is the right scale),
  they weigh little and the stored outputs carry the step.
- **Output cases are split by kind of input** where a slip tells the kinds apart: one sequence
  and a batch, a mask of the weights' full shape and one that must broadcast, d_in == d_out and
  d_in != d_out, layers with and without a bias, one new token and a prompt through a cache, a softmax
  along the last axis and along another (`check_stored`'s `where`). A wrong central computation
  fails every kind; a slip that fails on one kind keeps the others' weight.
  The kinds weigh as the notes use them, not the same: `SelfAttention`'s worked examples and most
  of its cases give one sequence, so a slip that fails only a batch keeps most of the step, and
  one that raises on one sequence (transpose(1, 2), right for a batch) keeps 0.10 of it
  (`misconception_sizes.toml` says why each such slip is sized as it is).
- **Each property case checks one rule** (dropout off in eval mode, the mask sliced to T, inputs
  unchanged, gradients reach every layer, a batch item independent of the others). A slip
  breaks one rule and loses that case's weight only, a small share of the step (at most 0.5 of
  about 10 in the layers), so it keeps most of the step. So an output case reads what its
  comparison needs and leaves a rule with a case of its own to that case: `padding_mask`'s stored
  and oracle cases grade what each query of each sequence has blocked, as scores (batch, T, T)
  see the mask, and its shape case the exact shape (batch, 1, T).
- Steps left out of `LAYERS` weigh the case that sees their concept: `online_softmax_attention`'s
  memory cases (which check rows of the output too) carry two thirds of it, since a full score
  matrix gives right numbers; the causal one weighs more, since a wrong causal rule passes the
  other. `KVCache`'s keys and values (its stored outputs, the torch.cat oracle and the long
  generation) carry three quarters of it; `len()`, a slip in a secondary part, is graded by its two
  cases alone (the stored lengths and the length property), which every other case reads as
  evidence at most, so a wrong `__len__` keeps the keys and values it has right.
  `sinusoidal_positions`' stored outputs carry most of it,
  since a wrong frequency still puts each pair on the unit circle and turns it by shifts, as its
  properties check; `dot_product_variance`'s stored and theory cases weigh twice its
  properties, which a wrong variance passes. `CachedCausalAttention`'s cache-consistency
  properties are outputs through a cache, and weigh as outputs.

Every catalogue mistake is sized in `coursekit/catalogue/misconception_sizes.toml` (conceptual,
slip, or partial with its reason where honestly neither). `tests/test_case_weights.py` checks
the first two rules, and each sized mistake's points in docs/grading_matrix.md against its size;
it lists any mistake not yet sized.

Every failed case names a cause or says plainly that the grader cannot: outputs go through
`toolkit.checks.expect_close` with the suite's known mistakes (tried before nan and shape checks), and a
fixed-text message is raised only after its own condition was checked. Every diagnosis and every
fixed-text message that names a cause is some catalogue mistake's symptom, or is listed in
tests/data/fixed_messages.toml (tests/test_catalogue.py).
"""

from fractions import Fraction

# The attention layers whose weights follow the rule above.
LAYERS = ("softmax", "scaled_dot_product_attention", "SelfAttention", "CausalAttention",
          "MultiHeadAttentionWrapper", "MultiHeadAttention", "CrossAttention", "padding_mask")
# The largest share of a layer's step one property case may carry: a slip keeps the rest.
MAX_PROPERTY_SHARE = 0.1
# What a catalogue mistake may keep of the step it loses, by the size of its misconception
# (coursekit/catalogue/misconception_sizes.toml): a conceptual error at most, a slip at least.
CONCEPTUAL_MAX_KEPT = Fraction(1, 3)
SLIP_MIN_KEPT = Fraction(1, 2)
