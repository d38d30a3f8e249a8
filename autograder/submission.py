"""Load a submitted notebook's code into a fresh namespace, outside Jupyter and nbgrader.

Cells run in order as the kernel would run them, except the graded test cells (the grader's
own). A cell that raises or runs too long is recorded and skipped, as nbgrader's
`allow_errors` does. IPython magics and shell lines are dropped.
"""

import json
import os
from dataclasses import dataclass, field

from autograder.harness import CaseTimeout, time_limit

CELL_TIMEOUT = 30.0


@dataclass
class LoadedSubmission:
    namespace: dict
    errors: list = field(default_factory=list)  # (cell index, message)
    fatal: str = ""  # why nothing could be loaded (not JSON, wrong format)


def code_cells(nb):
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        yield index, source


def _strip_magics(source):
    return "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )


def load(path, cell_timeout=CELL_TIMEOUT):
    try:
        with open(path, encoding="utf-8") as handle:
            nb = json.load(handle)
    except (OSError, ValueError) as error:
        return LoadedSubmission({}, fatal=f"the notebook could not be read as JSON ({error})")
    if not isinstance(nb, dict) or nb.get("nbformat") != 4:
        return LoadedSubmission({}, fatal="the file is not an nbformat 4 notebook")
    os.environ.setdefault("MPLBACKEND", "Agg")
    namespace = {"__name__": "__submission__"}
    loaded = LoadedSubmission(namespace)
    for index, source in code_cells(nb):
        try:
            code = compile(_strip_magics(source), f"<cell {index}>", "exec")
            with time_limit(cell_timeout):
                exec(code, namespace)  # noqa: S102 - running the submission is the point
        except CaseTimeout:
            loaded.errors.append((index, f"did not finish within {cell_timeout:g} s"))
        except BaseException as error:  # noqa: BLE001 - SystemExit included
            loaded.errors.append((index, f"{type(error).__name__}: {str(error)[:200]}"))
    return loaded
