"""The collapsed hints of the content teach in stages and never hand over the answer.

A hint is a `<details>` block in the markdown between one solution cell and the next (the
step's own text). Two rules, checked against the reference in `solutions/`:

- no hint holds a line of the step's reference, or the whole right-hand side of one of its
  assignments or returns: hints name the calls, the student puts them together;
- a step whose reference is more than a few statements gives its hints in stages: the idea,
  then shapes and a plan, then the calls, in that order.
"""

import ast
import inspect
import re
import textwrap

import pytest

from autograder.steps import ASSIGNMENTS, STEPS
from coursekit.build import read_content, role, solved_names

HINT = re.compile(r"<details><summary>(.*?)</summary>(.*?)</details>", re.S)
STAGES = ("idea", "shapes", "calls")  # the words each stage's title holds, in order
STAGED_FROM = 4  # statements in the reference from which a step's hints come in stages
SHORTEST_GIVEAWAY = 16  # characters: shorter pieces (`x.shape[-1]`) are names, not answers


def hints_by_step(assignment):
    """{step: [(title, text)]}: the hints in the markdown before each solution cell, back to the
    previous one."""
    found, pending = {}, []
    for cell in read_content(assignment).cells:
        if cell.cell_type == "markdown":
            pending += HINT.findall(cell.source)
        elif role(cell) == "solution":
            for name in solved_names(cell):
                found[name] = pending
            pending = []
    return found


def _squeeze(text):
    return re.sub(r"\s+", "", text)


def _reference(name):
    import solutions

    return textwrap.dedent(inspect.getsource(getattr(solutions, name)))


def giveaways(name):
    """Pieces of `name`'s reference no hint may hold: each line of a function body, and the
    value of each assignment and return, long enough to be more than a name."""
    source = _reference(name)
    pieces = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return) and node.value is not None:
            pieces.add(ast.get_source_segment(source, node.value))
        if isinstance(node, ast.stmt) and not isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Expr):
            pieces.add(ast.get_source_segment(source, node).split("\n")[0].split("#")[0])
    return {p for p in (_squeeze(p) for p in pieces if p) if len(p) >= SHORTEST_GIVEAWAY}


def statements(name):
    tree = ast.parse(_reference(name))
    return sum(1 for node in ast.walk(tree) if isinstance(node, ast.stmt)
               and not isinstance(node, ast.FunctionDef | ast.ClassDef)
               and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)))


HINTS = {}
for assignment in ASSIGNMENTS:  # a step's own assignment comes first (04 carries 03's code again)
    for name, hints in hints_by_step(assignment).items():
        HINTS.setdefault(name, hints)


def test_every_step_is_found_with_its_hints():
    assert set(HINTS) == set(STEPS)
    assert sum(len(hints) for hints in HINTS.values()) > 40  # the parse finds the hints


@pytest.mark.parametrize("name", list(STEPS))
def test_no_hint_holds_a_piece_of_the_answer(name):
    text = _squeeze(" ".join(body for _, body in HINTS[name]))
    given = sorted(piece for piece in giveaways(name) if piece in text)
    assert given == [], f"the hints of {name} hold these pieces of its reference: {given}"


@pytest.mark.parametrize("name", [n for n in STEPS if statements(n) >= STAGED_FROM])
def test_a_longer_step_gives_its_hints_in_stages(name):
    titles = [title.lower() for title, _ in HINTS[name]]
    stages = [next((i for i, word in enumerate(STAGES) if word in title), None) for title in titles]
    assert len(titles) >= 2 and None not in stages and stages == sorted(stages) and stages[-1] == 2, (
        f"{name}'s hints are titled {titles}: stages of the idea, shapes and a plan, then the calls")
