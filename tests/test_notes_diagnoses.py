"""A wrong worked example of the notes is named by its step's diagnosis ladder, as the stored
outputs are: each catalogue mistake below, graded in process against its step's notes cases,
fails them with the mistake's own symptom, never with "the grader cannot name the cause"."""

import pytest

from autograder.harness import cases_of, run_case
from autograder.kernel.channel import LocalChannel
from autograder.reference import reference_source, with_dependencies
from autograder.seam import Implementation
from autograder.steps import STEPS
from autograder.suites.toolkit.checks import UNNAMED
from coursekit import catalogue

# One mistake per step whose notes cases had no ladder, and every mistake of the causal mask
# the notes' 6 x 6 pattern can show.
MISTAKES = [
    "attention-context-from-scores",  # simplified_self_attention: (context, weights) replayed
    "attention-tuple-swapped",
    "qkv-swapped",  # project_qkv: one item, and Q and K combined (attn_scores_2)
    "sdpa-unscaled",  # scaled_dot_product_attention: both items of the tuple wrong at once
    "sdpa-weights-transposed",
    "selfattn-keys-values-swapped",  # SelfAttention: the model on each example's own layers
    "selfattn-unscaled",
    "online-causal-block-offset",  # online_softmax_attention: the block model replayed
    "online-unscaled",
    "mask-includes-diagonal",  # causal_mask
    "mask-lower-triangle",
    "mask-allowed-true",
    "mask-offset-two",
    "mask-offset-below",
    # step mistakes (step_mistakes.toml) whose worked examples said "cannot name the cause" (round r47)
    "online-scale-keys-in-block",  # the scale of a shorter last block, which only the example's blocks have
    "wrapper-heads-built-in-forward",  # fresh heads: the example's output is no function of the layer
    # round r64: nameless, or blamed on another cause (the projections, for keys and values swapped by the cache)
    "sdpa-scores-floor-division",
    "online-return-in-loop",
    "cached-update-unpacked-swapped",
]
CATALOGUE = (*catalogue.MISTAKES, *catalogue.STEP_MISTAKES)


def _implementation(variant):
    """The reference of the variant's assignment, with the variant's cells defined over it."""
    # the assignment's names and those they call from earlier ones (04's wrapper builds 03's CausalAttention)
    names = with_dependencies([s.name for s in STEPS.values() if s.assignment == variant.assignment])
    namespace = {}
    exec(reference_source(names), namespace)  # noqa: S102 - the reference and a catalogue cell
    for source in variant.replace.values():
        exec(source, namespace)  # noqa: S102
    return Implementation(LocalChannel(namespace))


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_wrong_worked_example_is_named_by_its_ladder(mistake):
    variant = next(v for v in CATALOGUE if v.id == mistake)
    (step,) = variant.loses
    impl = _implementation(variant)
    results = [run_case(c, impl) for c in cases_of(step) if c.kind == "notes"]
    failed = [r.message for r in results if not r.passed]
    assert failed, f"{mistake} passes every worked example of {step}"
    assert not [m for m in failed if UNNAMED in m], failed
    assert any(variant.symptom in m for m in failed), failed


def test_the_reference_passes_every_worked_example_of_those_steps():
    """The replayed ladders change no verdict: the reference passes as before."""
    for assignment in {v.assignment for v in CATALOGUE if v.id in MISTAKES}:
        names = [s.name for s in STEPS.values() if s.assignment == assignment]
        namespace = {}
        exec(reference_source(with_dependencies(names)), namespace)  # noqa: S102
        impl = Implementation(LocalChannel(namespace))
        for name in names:
            notes = [c for c in cases_of(name) if c.kind == "notes"]
            assert all(run_case(c, impl).passed for c in notes), name
