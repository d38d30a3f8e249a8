"""The hidden suites: `test_<step>.py` grades the step of that name (`autograder.steps`).

How case weights are set. A step's points are shared among its cases by weight
(`harness.StepResult.fraction`), so the weights decide what a mistake costs:

- **Output cases carry the step.** The worked examples of the notes, the stored reference outputs
  and the PyTorch oracle compare whole outputs, so a conceptual error (no mask, no scaling,
  heads mixed, keys from the wrong sequence) fails every one of them. In the attention layers
  (`LAYERS` below) they weigh at least twice all property cases together, so such an error
  keeps at most a third of the step. Where the notes' examples cannot show a conceptual error
  (those of `scaled_dot_product_attention` have no mask, those of `softmax` are single rows),
  they weigh little and the stored outputs carry the step.
- **Each property case checks one rule** (dropout off in eval mode, the mask sliced to T, inputs
  unchanged, gradients reach every layer, a batch item independent of the others). A slip
  breaks one rule and loses that case's weight only, a small share of the step (at most 0.5 of
  about 10 in the layers), so it keeps most of the step.
- Steps left out of `LAYERS` have properties that are themselves the concept taught
  (`KVCache`'s appending, `CachedCausalAttention`'s cache consistency, `online_softmax_attention`
  never holding the score matrix, `dot_product_variance`'s statistics, `sinusoidal_positions`'
  distances), so a property failing there is a conceptual error too.

`tests/test_case_weights.py` checks the first two rules.

Every failed case names a cause or says plainly that the grader cannot: outputs go through
`toolkit.checks.expect_close` with the suite's known mistakes (tried before nan and shape checks), and a
fixed-text message is raised only after its own condition was checked. Every diagnosis and every
fixed-text message that names a cause is some catalogue mistake's symptom, or is listed in
tests/data/fixed_messages.toml (tests/test_catalogue.py).
"""

# The attention layers whose weights follow the rule above.
LAYERS = ("softmax", "scaled_dot_product_attention", "SelfAttention", "CausalAttention",
          "MultiHeadAttentionWrapper", "MultiHeadAttention", "CrossAttention", "padding_mask")
# The largest share of a layer's step one property case may carry: a slip keeps the rest.
MAX_PROPERTY_SHARE = 0.1
