"""The reference, as the judge uses it: a namespace for CI, and source for dependencies.

The judge, the pytest plugin and the catalogue's tools import this; nothing that runs where a
submission runs can (the sandbox hides the package). While a step is graded, the graded names it
builds on (`Step.depends_on`) may be replaced in the student's kernel by the reference's, so a
mistake costs points at its own step only. They travel as source text, only for names whose own
grading in that notebook is over without full marks (or that the notebook does not grade at
all), and only into a kernel where no later cell of the notebook runs with them
(`kernel/lending.py`): the reference of a step never reaches a kernel before that step's verdict
is recorded, and never stays where the student's later code runs.
"""

import inspect

import solutions
from autograder.steps import STEPS

# What the reference's code needs in scope; the only other names its sources use are each other.
_PRELUDE = "import numpy as np\nimport torch\nfrom torch import nn\n"


def reference_namespace():
    """{graded name: reference object}: the code under test in CI."""
    return {name: getattr(solutions, name) for name in solutions.__all__}


def reference_source(names):
    """Python source defining the reference of `names` (and nothing else)."""
    if not names:
        return ""
    blocks = [inspect.getsource(getattr(solutions, name)) for name in names]
    return _PRELUDE + "\n\n".join(blocks)


def with_dependencies(names: list[str]) -> list[str]:
    """`names` and every graded name their reference calls, in STEPS' order: the reference of
    `attention_weights` calls the reference's `softmax`, even where only the former is lent."""
    needed, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += STEPS[name].depends_on
    return [name for name in STEPS if name in needed]


def reference_implementation():
    """The reference behind the same data-only seam the judge uses (what CI grades)."""
    from autograder.kernel.channel import LocalChannel
    from autograder.seam import Implementation

    return Implementation(LocalChannel(reference_namespace()))


def reference_with(cells):
    """The reference with some graded names' cells replaced ({graded name: a cell's source}, run as
    a notebook runs it, after the imports every notebook makes), behind the same seam: how a
    catalogue mistake is graded at its own step in process."""
    from autograder.kernel.channel import LocalChannel
    from autograder.seam import Implementation

    namespace = reference_namespace()
    for name, source in cells.items():
        exec(compile(_PRELUDE + source, f"<cell of {name}>", "exec"), namespace)  # noqa: S102
    return Implementation(LocalChannel(namespace))
