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

import ast
import functools
import inspect
import json
from pathlib import Path

import solutions
from autograder.steps import STEPS, nbgrader_metadata

# What the reference's code needs in scope; the only other names its sources use are each other.
_PRELUDE = "import numpy as np\nimport torch\nfrom torch import nn\n"
# nbgrader's source notebooks, built from the course's content (where coursekit.paths.SOURCE points); a cell
# graded in process runs after the imports of its own notebook's first cell, as it runs in that notebook.
_SOURCE_NOTEBOOKS = Path(__file__).resolve().parents[1] / "source"


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


@functools.cache
def notebook_imports(assignment):
    """The imports of `assignment`'s notebook as a student gets them, as source: the top-level import
    statements of its given cells (neither a solution nor a test), in order, each once. A graded cell of
    that notebook may use these names without importing them: notebook 02 imports torch.nn.functional
    as F, 04 does not."""
    notebook = json.loads((_SOURCE_NOTEBOOKS / assignment / f"{assignment}.ipynb").read_text())
    statements = []
    for cell in notebook["cells"]:
        meta = nbgrader_metadata(cell)
        if cell["cell_type"] != "code" or meta.get("solution") or meta.get("grade"):
            continue
        source = "".join(cell["source"])
        statements += [ast.get_source_segment(source, node) for node in ast.parse(source).body
                       if isinstance(node, (ast.Import, ast.ImportFrom))]
    return "".join(f"{statement}\n" for statement in dict.fromkeys(statements))


def reference_with(cells):
    """The reference with some graded names' cells replaced ({graded name: a cell's source}, run as
    a notebook runs it, after its notebook's imports), behind the same seam: how a catalogue
    mistake is graded at its own step in process."""
    from autograder.kernel.channel import LocalChannel
    from autograder.seam import Implementation

    namespace = reference_namespace()
    for name, source in cells.items():
        cell = notebook_imports(STEPS[name].assignment) + source
        exec(compile(cell, f"<cell of {name}>", "exec"), namespace)  # noqa: S102
    return Implementation(LocalChannel(namespace))
