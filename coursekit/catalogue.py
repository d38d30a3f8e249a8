"""Catalogues of submissions the grading must get right, kept as data.

Each `Variant` is one student's submission to one assignment: the release completed with the
reference, except for `replace` (graded name -> that solution cell's whole source), plus
optional extra top-level code, or a `transform` of the finished notebook (for broken files).

- MISTAKES: plausible errors. Every step in `loses` must lose points, with `symptom` in that
  step's report; every other step keeps full marks.
- CORRECT: other correct styles. Full marks everywhere.
- HOSTILE: attacks and breakage. No step in `loses` may keep full marks, no other step may
  gain, grading of everyone else goes on, and when `flagged` the instructor's report names it.
"""

from dataclasses import dataclass, field

from autograder.steps import A01, A02, A03, A04  # noqa: F401 - used by the entries


@dataclass(frozen=True)
class Variant:
    id: str
    assignment: str
    description: str
    replace: dict = field(default_factory=dict)
    loses: tuple = ()
    symptom: str = ""  # a phrase the losing step's report must contain
    extra_cell: str = ""  # top-level code in a cell of its own, after the solution cells
    transform: object = None  # callable(notebook dict) -> notebook dict, or bytes for the file
    flagged: bool = False


MISTAKES = [
    Variant("softmax-wrong-axis", A01, "softmax normalises over axis 0",
            {"softmax": "def softmax(x, axis=-1):\n    e = np.exp(x - np.max(x, axis=0, keepdims=True))\n"
                        "    return e / np.sum(e, axis=0, keepdims=True)\n"},
            loses=("softmax",), symptom="normalises along axis"),
    Variant("scores-unscaled", A02, "scaled_attention_scores forgets to divide by sqrt(d_k)",
            {"scaled_attention_scores": "def scaled_attention_scores(Q, K):\n"
                                        "    return Q @ np.swapaxes(K, -1, -2)\n"},
            loses=("scaled_attention_scores",), symptom="sqrt(d_k)"),
    Variant("mask-includes-diagonal", A03, "causal_mask blocks the diagonal too",
            {"causal_mask": "def causal_mask(num_tokens):\n"
                            "    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool))\n"},
            loses=("causal_mask",), symptom="diagonal"),
    Variant("split-heads-no-transpose", A04, "split_heads reshapes without moving the head axis",
            {"split_heads": "def split_heads(x, num_heads):\n    b, t, d = x.shape\n"
                            "    return x.reshape(b, num_heads, t, d // num_heads)\n"},
            loses=("split_heads",), symptom="transpose"),
]

CORRECT = []

HOSTILE = []


def all_variants():
    return [*MISTAKES, *CORRECT, *HOSTILE]


def by_assignment(variants, assignment):
    return [v for v in variants if v.assignment == assignment]
