"""Build `source/<assignment>/<assignment>.ipynb` from `content/<assignment>.md` and `solutions/`.

The content file is prose and given code split into cells by fences:

    ::: markdown            a markdown cell
    ::: code                given code, read-only for students
    ::: include FILE        given code read from content/FILE (helpers every notebook shares)
    ::: solution NAME...    the reference source of NAME (from `solutions`), bodies wrapped in
                            nbgrader solution regions; the student's cell
    ::: checks NAME         visible checks of NAME; they go into NAME's graded cell
    ::: grade NAME          the graded cell of NAME: a comment saying what a pass promises, the
                            checks block before it, and the hidden-tests region
    :::                     closes a cell

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
from pathlib import Path

import nbformat

import solutions
from autograder.steps import ASSIGNMENTS, STEPS

ROOT = Path(__file__).resolve().parent.parent
FENCE = ":::"


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


def parse_content(text):
    """[(kind, args, body)] from a content file."""
    cells, current = [], None
    for line in text.splitlines():
        if line.startswith(FENCE):
            words = line[len(FENCE):].split()
            if current is not None:
                cells.append((current[0], current[1], "\n".join(current[2]).strip("\n")))
                current = None
            if words:
                current = (words[0], words[1:], [])
        elif current is not None:
            current[2].append(line)
        elif line.strip():
            raise ValueError(f"text outside a cell: {line!r}")
    if current is not None:
        raise ValueError("last cell is not closed with ':::'")
    return cells


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


def build_notebook(assignment):
    text = (ROOT / "content" / f"{assignment}.md").read_text()
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    counts = {}

    def unique(base):
        counts[base] = counts.get(base, 0) + 1
        return base if counts[base] == 1 else f"{base}_{counts[base]}"

    pending_checks = None  # (name, body) of a checks block waiting for its grade cell
    for kind, args, body in parse_content(text):
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(body))
        elif kind == "code":
            nb.cells.append(nbformat.v4.new_code_cell(
                body, metadata=_meta(unique("given"), locked=True)))
        elif kind == "include":
            (filename,) = args
            shared = (ROOT / "content" / filename).read_text().strip("\n")
            nb.cells.append(nbformat.v4.new_code_cell(
                shared, metadata=_meta(unique("given"), locked=True)))
        elif kind == "solution":
            source = "\n\n\n".join(solution_source(name) for name in args)
            nb.cells.append(nbformat.v4.new_code_cell(
                source, metadata=_meta(unique(f"{args[-1]}_solution"), solution=True)))
        elif kind == "checks":
            (name,) = args
            if pending_checks is not None:
                raise ValueError(f"checks of {pending_checks[0]} are not followed by its grade cell")
            pending_checks = (name, body)
        elif kind == "grade":
            (name,) = args
            if STEPS[name].assignment != assignment:
                raise ValueError(f"{name} is graded in {STEPS[name].assignment}, not {assignment}")
            if pending_checks is None or pending_checks[0] != name:
                raise ValueError(f"the grade cell of {name} needs a `checks {name}` block before it")
            nb.cells.append(nbformat.v4.new_code_cell(
                grade_cell_source(name, pending_checks[1]),
                metadata=_meta(f"{name}_grade", grade=True, locked=True, points=STEPS[name].points)))
            pending_checks = None
        else:
            raise ValueError(f"unknown cell kind {kind!r}")
    if pending_checks is not None:
        raise ValueError(f"checks of {pending_checks[0]} are not followed by its grade cell")
    graded = {args[0] for kind, args, _ in parse_content(text) if kind == "grade"}
    missing = {s.name for s in STEPS.values() if s.assignment == assignment} - graded
    if missing:
        raise ValueError(f"{assignment} has no grade cell for {sorted(missing)}")
    # Stable ids keep regenerated notebooks byte-identical.
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
    return nb


def notebook_path(assignment):
    return ROOT / "source" / assignment / f"{assignment}.ipynb"


def render(nb):
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if source/ is stale")
    parser.add_argument("assignments", nargs="*", default=list(ASSIGNMENTS))
    args = parser.parse_args(argv)
    stale = []
    for assignment in args.assignments:
        text = render(build_notebook(assignment))
        path = notebook_path(assignment)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale (run `python -m coursekit.build`):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
