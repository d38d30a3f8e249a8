"""The one home of what the hidden suites share; suites use `toolkit.<name>`, and `checks` and
`cases` by their own names.

- `checks`: comparisons that explain themselves in the student's terms (`expect_close` and its
  diagnosis ladder, shapes, row sums, inputs unchanged). Every message names a symptom and never
  prints an expected value of a hidden case. Its last rung, `differences`, names the kind of
  mistake a wrong value's relation to the right one shows (a constant factor, rows scaled each
  by its own, the right numbers in the wrong places) when the step's ladder names none.
- `cases`: case builders: the notes' worked examples (`notes_cases`) and the stored reference
  outputs (`check_stored`), a ladder whose diagnoses must hold on a probe too (`confirmed`: a scale
  that only coincides with a known divisor on small inputs is not named as it), `causal_blocked`
  and `rng`.
- `batches`: code written for one matrix that a batch breaks (np.dot, which is no batched product; a
  softmax's sums reshaped to a column): its ladders' candidates, and probes on a smaller batch where
  such code runs, which name it when it raises.
- `shifts`: why a softmax of large scores came out nan (no shift, or the whole array's maximum
  subtracted), from the scores and the rows that are nan.
- `modules`: building a student's module through its handle: `construct` calls
  `impl.ClassName(*args)` and checks that a module came back; `load_linear` copies known weights
  into the `nn.Linear` at an attribute path by name, so the order in which a submission creates
  its layers, or how its forward pass combines them, never matters; `loaded_module` does both and
  switches to eval mode. Random weights and inputs.
- `model`: a NumPy model (`softmax`, `attention`, `heads_side_by_side`) of (multi-head, causal)
  attention in float64, whose keyword switches each reproduce one known mistake, so a wrong
  output can be named by its symptom (`symptoms`; `told_apart` names together those that coincide);
  and the mistakes several steps share in their own arithmetic: a hand-written softmax's, one without
  keepdims, a result cut to whole numbers.
- `axis_orders`: the multi-head layers' keys and values entering their products with their axes in the
  wrong order, as switches of `model.attention` and their messages.
- `multihead`: what the two multi-head layers' suites (`MultiHeadAttention`, `CrossAttention`)
  share: their layers' names, records and probes, and the mistakes of their heads.
- `module_ladders`: rungs for the causal layers' forwards that raised, where their suites are full: a
  causal mask built for fewer tokens than context_length; the multi-head layers' heads merged feature by feature.
- `head_probes`: rungs of the multi-head layers where their suites are full: the values not split into heads,
  CrossAttention's scores transposed, out_proj applied to the values, and a layer whose __init__ takes its
  arguments in another order than the task's (probed when it cannot be built).
- `self_attention_slips`: rungs of the `SelfAttention` suite, whose file is full: a hand-written softmax's sums
  taken without keepdim, and the scale written ** 1 / 2.
- `cached`: what the `CachedCausalAttention` suite names a cached forward's mistakes by: a NumPy
  model of attention fed in chunks through a cache, the diagnoses of a forward that raised, and the
  suite's layer handle (`WholeInputs`: a forward without a cache that refused or sliced what fits).
- `block_ties`: ties of online_softmax_attention's ladder (several mistakes giving one output on a case's inputs)
  cut to what the same code shows on probes where the twins differ (its suite and `blockwise` are full).
- `cached_ladders`: the cached layer's ladders (its suite is full): through a cache, and on a whole input without
  one, where a mask slice of one new token's row blocks nothing and is named as that slice.
- `cached_length_checks`: the cached layer's length check refusing the wrong way (an assert; the new tokens counted alone).
- `cache_lengths`: len() of a student's KVCache that raised, named by what __len__ read or returned (its suite is full).
- `properties`: property checks several suites share: causality, the last token, inputs shorter
  than `context_length`, batches, the input left unchanged, gradients, dropout (and a training step with it on).

Modules are reached only through `seam.Handle`s: called (as data, under no_grad), described,
loaded with `set_linear`, switched between train and eval.
"""

# head_probes registers the multi-head layers' explainers of a layer that cannot be built
from autograder.suites.toolkit import cases, checks, head_probes  # noqa: F401  (the suites' shared names)
from autograder.suites.toolkit.axis_orders import keys_axes_mistakes, values_axes_mistakes  # noqa: F401
from autograder.suites.toolkit.model import (  # noqa: F401
    BIASES_LEFT_OUT,
    BIASES_LEFT_OUT_MISTAKE,
    FLOOR_DIVIDED,
    MASK_MISTAKES,
    MULTIPLIED_BY_SQRT,
    NAN_HINT,
    RESIDUAL_ADDED,
    ROLE_MISTAKES,
    SCALE_MISTAKES,
    SCALED_BY_TOKENS,
    SOFTMAX_AXIS_MISTAKES,
    SOFTMAX_TWICE_MISTAKES,
    UNTRANSPOSED_MISTAKES,
    WEIGHTS_TRANSPOSED,
    attention,
    check_stored_outputs,
    explain_by_probe,
    explains_one_head_keys_axes,
    heads_side_by_side,
    softmax,
    symptoms,
    told_apart,
    torch_identity_multihead,
)
from autograder.suites.toolkit.module_ladders import (  # noqa: F401
    FILLED_WITH_PLUS_INF,
    HEADS_FEATURE_MAJOR,
    explain_mask_shorter_than_context,
    explains_one_head_forward,
    merging_feature_major,
)
from autograder.suites.toolkit.modules import (  # noqa: F401
    SIGNATURES,
    check_dropout_attribute,
    check_linear,
    check_mask_is_buffer,
    construct,
    explain_unsteady_forward,
    explains_forward,
    linear_info,
    load_linear,
    loaded_module,
    random_linear,
    random_projections,
    tensor,
)
from autograder.suites.toolkit.properties import (  # noqa: F401
    check_batches,
    check_dropout,
    check_eval_mode_without_dropout,
    check_finite_and_causal,
    check_gradients,
    check_input_unchanged,
    check_last_token,
    check_short_input,
    check_trains_with_dropout,
    close,
    explain_gradients,
    run_on_held,
)
