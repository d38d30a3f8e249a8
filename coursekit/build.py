"""Build `source/<assignment>/<assignment>.ipynb` from `content/<assignment>.md` and `solutions/`.

A content file is a notebook in jupytext's MyST Markdown format (`format_name: myst`): it opens
in JupyterLab through jupytext, renders in Jupyter Book, and runs as it stands, against the
reference. Markdown cells are separated by `+++`; each `{code-cell}` has one role, given by its
one tag:

    (no tag)              given code, read-only for students
    :tags: [include]      `%run FILE`: replaced by the code of content/FILE (helpers every
                          notebook shares)
    :tags: [solution]     `from solutions import NAME, ...`: replaced by the reference source of
                          each NAME, bodies wrapped in nbgrader solution regions; the student's cell
    :tags: [checks]       visible checks of the step named by `:step: NAME`; they go into NAME's
                          graded cell
    :tags: [grade]        empty; becomes the graded cell of `:step: NAME`: a comment saying what
                          a pass promises, the checks before it, and the hidden-tests region

A graded cell holds the step's visible checks, so running it, and nbgrader's Validate, fail until
the step works, and say which step. Autograding never runs a graded cell's source: the judge
(`autograder/judge.py`) runs the step's hidden cases on reaching the cell. So the checks are not
executed while grading, and no later cell may need a name they define (`tests/test_consistency.py`).

Reference code exists only in `solutions/`; this module copies it in, so a notebook and the
package can never disagree. `python -m coursekit.build --check` fails when a committed source
notebook is not what this produces.
"""

import argparse
import ast
import inspect
import json
import sys
import textwrap

import nbformat

from autograder.steps import ASSIGNMENTS, STEPS
from coursekit.generated import regenerate_or_check
from coursekit.paths import CONTENT, source_notebook

ROLES = ("include", "solution", "checks", "grade")  # a code cell's tag; untagged code is "given"


def _wrap_body(lines, node, base_indent):
    """Lines of one function with its body (after the docstring and any super().__init__())
    inside a solution region."""
    body = node.body
    start = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        start = 1  # the docstring stays: it is the student's specification
    if start < len(body) and "super().__init__()" in ast.unparse(body[start]):
        start += 1
    first = body[start].lineno - 1
    last = node.end_lineno
    indent = " " * (base_indent + 4)
    return lines[:first] + [f"{indent}### BEGIN SOLUTION"] + lines[first:last] + [f"{indent}### END SOLUTION"], last


def solution_source(name):
    """The reference definition of `name` with its bodies marked as nbgrader solutions."""
    import solutions  # here, not at the top: reading notebooks (samples, classroom) needs no torch

    source = textwrap.dedent(inspect.getsource(getattr(solutions, name)))
    lines = source.splitlines()
    tree = ast.parse(source).body[0]
    functions = [tree] if isinstance(tree, ast.FunctionDef) else [
        node for node in tree.body if isinstance(node, ast.FunctionDef)
    ]
    out, done = [], 0
    for fn in functions:
        wrapped, last = _wrap_body(lines[: fn.end_lineno], fn, fn.col_offset)
        out.extend(wrapped[done:])
        done = last
    out.extend(lines[done:])
    return "\n".join(out)


def _meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def grade_cell_source(name, checks):
    """The graded cell of `name`: what a pass promises, the visible checks, the hidden region."""
    points = STEPS[name].points
    _check_checks(name, checks)
    header = textwrap.fill(
        f"Graded cell of `{name}` ({points} point{'s' if points != 1 else ''}). Run it to check "
        f"your `{name}`; Validate runs these same checks and names each step that fails them. "
        "Passing them means your code reproduces these examples, not that it earns full points: "
        "when your notebook is collected, the grader runs more cases, hidden from you, and scores "
        "this cell by the share your code passes. The checks also call your earlier functions: "
        "if several steps fail, fix the first one first.",
        width=88, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False,
    ) + "\n\n"
    return (
        header
        + checks
        + "\n### BEGIN HIDDEN TESTS\n"
        f"# {name}'s hidden cases are run by the grader (autograder/judge.py), not by this cell.\n"
        "### END HIDDEN TESTS"
    )


def _check_checks(name, checks):
    """A checks block must make its graded cell fail exactly when a check fails: it may not end
    in an expression whose value nbgrader would read as partial credit."""
    if not checks.strip():
        raise ValueError(f"the checks block of {name} is empty")
    last = ast.parse(checks).body[-1]
    if isinstance(last, ast.Expr) and not (
            isinstance(last.value, ast.Call) and getattr(last.value.func, "id", "") == "print"):
        raise ValueError(f"the checks of {name} end in an expression; nbgrader would read its value "
                         "as the cell's score: end with print(...)")


def read_content(assignment):
    """The content notebook of `assignment`, as jupytext reads it."""
    text = (CONTENT / f"{assignment}.md").read_text()
    import jupytext  # only the builder reads content

    return jupytext.reads(text, fmt="md:myst")


def role(cell):
    """"markdown", "given", or the one tag of a code cell, which must be one of ROLES: an
    unknown tag is more likely a typo than a wish to have the cell copied as given code."""
    if cell.cell_type != "code":
        return cell.cell_type
    tags = cell.metadata.get("tags", [])
    if len(tags) > 1 or not set(tags) <= set(ROLES):
        raise ValueError(f"a code cell's tags {tags} are not one of {ROLES} (or none, for given code):\n"
                         + cell.source[:200])
    return tags[0] if tags else "given"


def step_of(cell):
    """The step a checks or grade cell belongs to (its `:step:` option)."""
    if "step" not in cell.metadata:
        raise ValueError(f"a {role(cell)} cell needs a `:step: NAME` option:\n{cell.source[:200]}")
    return cell.metadata["step"]


def solved_names(cell):
    """The names a solution cell imports: `from solutions import NAME, ...` is what the content
    notebook runs, so it is also where the builder learns which references to copy in."""
    body = ast.parse(cell.source).body
    if not (len(body) == 1 and isinstance(body[0], ast.ImportFrom) and body[0].module == "solutions"
            and not any(alias.asname for alias in body[0].names)):
        raise ValueError(f"a solution cell holds exactly `from solutions import NAME, ...`, not:\n"
                         f"{cell.source}")
    return [alias.name for alias in body[0].names]


def included_source(cell):
    """The code of content/FILE for an include cell, which runs `%run FILE` in the content notebook."""
    words = cell.source.split()
    if len(words) != 2 or words[0] != "%run":
        raise ValueError(f"an include cell holds exactly `%run FILE`, not: {cell.source!r}")
    return (CONTENT / words[1]).read_text().strip("\n")


def build_notebook(assignment):
    content = read_content(assignment)
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": content.metadata["kernelspec"], "language_info": {"name": "python"}}
    counts = {}

    def unique(base):
        counts[base] = counts.get(base, 0) + 1
        return base if counts[base] == 1 else f"{base}_{counts[base]}"

    def given(source):
        return nbformat.v4.new_code_cell(source, metadata=_meta(unique("given"), locked=True))

    pending_checks = None  # (name, body) of a checks cell waiting for its grade cell
    graded = set()
    for cell in content.cells:
        kind = role(cell)
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(cell.source))
        elif kind == "given":
            nb.cells.append(given(cell.source))
        elif kind == "include":
            nb.cells.append(given(included_source(cell)))
        elif kind == "solution":
            names = solved_names(cell)
            source = "\n\n\n".join(solution_source(name) for name in names)
            nb.cells.append(nbformat.v4.new_code_cell(
                source, metadata=_meta(unique(f"{names[-1]}_solution"), solution=True)))
        elif kind == "checks":
            if pending_checks is not None:
                raise ValueError(f"checks of {pending_checks[0]} are not followed by its grade cell")
            pending_checks = (step_of(cell), cell.source)
        elif kind == "grade":
            name = step_of(cell)
            if cell.source.strip():
                raise ValueError(f"the grade cell of {name} is built, not written: leave it empty")
            if STEPS[name].assignment != assignment:
                raise ValueError(f"{name} is graded in {STEPS[name].assignment}, not {assignment}")
            if pending_checks is None or pending_checks[0] != name:
                raise ValueError(f"the grade cell of {name} needs a checks cell of {name} before it")
            nb.cells.append(nbformat.v4.new_code_cell(
                grade_cell_source(name, pending_checks[1]),
                metadata=_meta(f"{name}_grade", grade=True, locked=True, points=STEPS[name].points)))
            graded.add(name)
            pending_checks = None
        else:
            raise ValueError(f"unknown cell type {kind!r}")
    if pending_checks is not None:
        raise ValueError(f"checks of {pending_checks[0]} are not followed by its grade cell")
    missing = {s.name for s in STEPS.values() if s.assignment == assignment} - graded
    if missing:
        raise ValueError(f"{assignment} has no grade cell for {sorted(missing)}")
    # Stable ids keep regenerated notebooks byte-identical.
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
    return nb


def render(nb):
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if source/ is stale")
    parser.add_argument("assignments", nargs="*", default=list(ASSIGNMENTS))
    args = parser.parse_args(argv)
    outputs = {source_notebook(a): render(build_notebook(a)) for a in args.assignments}
    return regenerate_or_check(outputs, "python -m coursekit.build", args.check)


if __name__ == "__main__":
    sys.exit(main())
