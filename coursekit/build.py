"""Build `source/<assignment>/<assignment>.ipynb` from `content/<assignment>.md` and `solutions/`.

The content file is prose and given code split into cells by fences:

    ::: markdown            a markdown cell
    ::: code                given code, read-only for students
    ::: solution NAME...    the reference source of NAME (from `solutions`), bodies wrapped in
                            nbgrader solution regions; the student's cell
    ::: checks NAME         visible checks of NAME, read-only
    ::: grade NAME          the graded cell: hidden tests call the autograder suites of NAME
    :::                     closes a cell

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


def grade_cell_source(name):
    points = STEPS[name].points
    return (
        f"# `{name}` is graded here ({points} point{'s' if points != 1 else ''}) by hidden tests\n"
        "# that run when your notebook is collected. Nothing to do in this cell.\n"
        "### BEGIN HIDDEN TESTS\n"
        "from autograder.notebook import grade\n"
        f"grade({name!r}, points={points})\n"
        "### END HIDDEN TESTS"
    )


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

    for kind, args, body in parse_content(text):
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(body))
        elif kind == "code":
            nb.cells.append(nbformat.v4.new_code_cell(
                body, metadata=_meta(unique("given"), locked=True)))
        elif kind == "solution":
            source = "\n\n\n".join(solution_source(name) for name in args)
            nb.cells.append(nbformat.v4.new_code_cell(
                source, metadata=_meta(unique(f"{args[-1]}_solution"), solution=True)))
        elif kind == "checks":
            nb.cells.append(nbformat.v4.new_code_cell(
                body, metadata=_meta(unique(f"{args[0]}_checks"), locked=True)))
        elif kind == "grade":
            (name,) = args
            if STEPS[name].assignment != assignment:
                raise ValueError(f"{name} is graded in {STEPS[name].assignment}, not {assignment}")
            nb.cells.append(nbformat.v4.new_code_cell(
                grade_cell_source(name),
                metadata=_meta(f"{name}_grade", grade=True, locked=True, points=STEPS[name].points)))
        else:
            raise ValueError(f"unknown cell kind {kind!r}")
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
