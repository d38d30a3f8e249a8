"""Every graded step: its name (= the SPEC name the student implements), assignment and points.

This table is the single source of the points: the notebook builder writes them into the
graded cells' nbgrader metadata, and the judge scores each graded cell out of them.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    name: str
    assignment: str
    points: int
    # Other graded names the step may call. While the step is graded they are swapped for the
    # reference, so a mistake costs points at its own step only.
    depends_on: tuple[str, ...] = ()


# The SPEC's attribute names of the three projections, in every class from SelfAttention on.
PROJECTIONS = ("W_query", "W_key", "W_value")

A01 = "01_simplified_self_attention"
A02 = "02_trainable_self_attention"
A03 = "03_causal_attention"
A04 = "04_multi_head_attention"
A05 = "05_efficient_attention"
ASSIGNMENTS = (A01, A02, A03, A04, A05)

STEPS = {
    step.name: step
    for step in (
        Step("dot_product", A01, 1),
        Step("cosine_similarity", A01, 1, ("dot_product",)),
        Step("cosine_similarity_matrix", A01, 2, ("dot_product", "cosine_similarity")),
        Step("softmax", A01, 3),
        Step("attention_scores", A01, 1, ("dot_product",)),
        Step("attention_weights", A01, 1, ("softmax",)),
        Step("context_vectors", A01, 1),
        Step(
            "simplified_self_attention",
            A01,
            2,
            ("softmax", "attention_scores", "attention_weights", "context_vectors"),
        ),
        Step("project_qkv", A02, 2),
        Step("scaled_attention_scores", A02, 2),
        Step("scaled_dot_product_attention", A02, 4, ("scaled_attention_scores",)),
        Step("dot_product_variance", A02, 2),
        Step("SelfAttention", A02, 4),
        Step("causal_mask", A03, 2),
        Step("masked_softmax", A03, 3),
        Step("CausalAttention", A03, 5, ("causal_mask", "masked_softmax")),
        Step("padding_mask", A03, 2),
        Step(
            "MultiHeadAttentionWrapper",
            A04,
            3,
            ("CausalAttention", "causal_mask", "masked_softmax"),
        ),
        Step("split_heads", A04, 2),
        Step("merge_heads", A04, 2),
        Step(
            "MultiHeadAttention",
            A04,
            6,
            ("split_heads", "merge_heads", "causal_mask", "masked_softmax"),
        ),
        Step("CrossAttention", A04, 5, ("split_heads", "merge_heads")),
        Step("sinusoidal_positions", A05, 2),
        Step("online_softmax_attention", A05, 5),
        Step("KVCache", A05, 3),
        Step("CachedCausalAttention", A05, 5, ("KVCache",)),
    )
}


def steps_of(assignment):
    return [step for step in STEPS.values() if step.assignment == assignment]


def suite_module(step_name):
    """Dotted name of the hidden suite that grades `step_name`."""
    return f"autograder.suites.test_{step_name}"


GRADE_SUFFIX = "_grade"


def grade_id(step_name):
    """The nbgrader grade_id of `step_name`'s graded cell."""
    return f"{step_name}{GRADE_SUFFIX}"


# nbgrader.utils has is_solution and is_grade too, but importing it costs seconds (it imports
# nbgrader's whole app); these read the same metadata, for the tools that never run nbgrader.
def nbgrader_metadata(cell):
    """A cell's nbgrader metadata ({} for a cell nbgrader does not manage)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def is_solution(cell):
    """An nbgrader solution cell: the one a student writes into."""
    return bool(nbgrader_metadata(cell).get("solution"))


def graded_step(cell):
    """The step a notebook cell grades (an nbgrader test cell whose id names a step), or None."""
    meta = nbgrader_metadata(cell)
    if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
        return None
    grade_id_ = str(meta.get("grade_id", ""))
    step = grade_id_[: -len(GRADE_SUFFIX)] if grade_id_.endswith(GRADE_SUFFIX) else None
    return step if step in STEPS else None
