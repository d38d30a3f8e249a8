"""Sample submissions: the release with its solution cells filled in.

A submission is built from the released notebook exactly as a student would make it: only
solution cells change. `reference_cell(name)` is the reference definition without the
solution markers; a variant replaces the cell of one graded name with its own source.
"""

import copy
import json
from pathlib import Path

import nbformat

from autograder.steps import is_solution
from coursekit.build import solution_source


def reference_cell(names):
    """The reference source of a solution cell holding `names`, as a student would type it."""
    text = "\n\n\n".join(solution_source(n) for n in names)
    return "\n".join(line for line in text.splitlines() if "### BEGIN SOLUTION" not in line
                     and "### END SOLUTION" not in line)


def solution_cells(nb):
    """(cell, graded names it defines) for each solution cell of a notebook."""
    for cell in nb.cells:
        if cell.cell_type == "code" and is_solution(cell):
            yield cell, _defined_names(cell.source)


def _defined_names(source):
    import ast

    names = []
    for line in source.splitlines():
        if line.startswith(("def ", "class ")):
            try:
                node = ast.parse(line.rstrip(":") + ": pass").body[0]
            except SyntaxError:
                continue
            names.append(node.name)
    return names


def complete(release_nb, replacements=None):
    """A copy of the release with every solution cell filled: by `replacements[name]` (the whole
    cell's source) where given, else by the reference."""
    replacements = replacements or {}
    nb = copy.deepcopy(release_nb)
    for cell, names in solution_cells(nb):
        overridden = [n for n in names if n in replacements]
        if overridden:
            # one program may replace several names of this cell: its text goes in once
            cell.source = "\n\n\n".join(dict.fromkeys(replacements[n] for n in overridden))
            rest = [n for n in names if n not in replacements]
            if rest:
                cell.source += "\n\n\n" + reference_cell(rest)
        else:
            cell.source = reference_cell(names)
    return nb


def read(path):
    return nbformat.read(str(path), as_version=4)


def write(nb, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, (bytes, str)):
        path.write_bytes(nb if isinstance(nb, bytes) else nb.encode())
    elif isinstance(nb, dict) and not isinstance(nb, nbformat.NotebookNode):
        path.write_text(json.dumps(nb))
    else:
        nbformat.write(nb, str(path))
