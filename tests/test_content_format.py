"""content/<assignment>.md is a jupytext MyST notebook, and the builder refuses what it cannot mean."""

import jupytext
import pytest

from autograder.steps import ASSIGNMENTS, STEPS
from coursekit import build
from coursekit.paths import CONTENT, source_notebook

A03 = STEPS["causal_mask"].assignment


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_content_is_a_myst_notebook_with_a_kernelspec_and_known_roles(assignment):
    path = CONTENT / f"{assignment}.md"
    nb = jupytext.read(path)  # the format comes from the file's own header, as in JupyterLab
    assert nb.metadata["jupytext"]["text_representation"]["format_name"] == "myst"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        assert build.role(cell) in {"markdown", "given", *build.ROLES}, cell.source[:200]
        if build.role(cell) in ("checks", "grade"):
            assert build.step_of(cell) in STEPS
        if build.role(cell) == "solution":
            assert all(name in STEPS for name in build.solved_names(cell))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_content_is_what_jupytext_writes(assignment):
    """Saving a content file from JupyterLab (through jupytext) leaves it unchanged."""
    text = (CONTENT / f"{assignment}.md").read_text()
    assert jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst") == text


def _first(nb, role):
    return next(cell for cell in nb.cells if build.role(cell) == role)


def _drop_first(nb, role):
    nb.cells.remove(_first(nb, role))


def _drop_first_step(nb):
    step = build.step_of(_first(nb, "grade"))
    nb.cells = [cell for cell in nb.cells if cell.metadata.get("step") != step]


def _regrade_first_step_as(nb, other_step):
    for cell in nb.cells[: nb.cells.index(_first(nb, "grade")) + 1]:
        if "step" in cell.metadata:
            cell.metadata["step"] = other_step


# Each entry breaks the content of assignment 03 one way; the builder must say what is wrong.
BROKEN = {
    "unknown tag": (lambda nb: _first(nb, "given").metadata.update(tags=["solutoin"]), "tags"),
    "two roles": (lambda nb: _first(nb, "solution").metadata.update(tags=["solution", "checks"]), "tags"),
    "solution not an import": (lambda nb: _first(nb, "solution").update(source="def causal_mask(n): ..."),
                               "from solutions import"),
    "include not %run": (lambda nb: _first(nb, "include").update(source="import common"), "%run"),
    "checks without grade": (lambda nb: _drop_first(nb, "grade"), "not followed by its grade cell"),
    "grade without checks": (lambda nb: _drop_first(nb, "checks"), "needs a checks cell"),
    "grade without step": (lambda nb: _first(nb, "grade").metadata.pop("step"), ":step:"),
    "grade with a body": (lambda nb: _first(nb, "grade").update(source="assert True"), "leave it empty"),
    "graded in another assignment": (lambda nb: _regrade_first_step_as(nb, "softmax"), "is graded in"),
    "step without grade cell": (_drop_first_step, "no grade cell"),
    "checks ending in an expression": (lambda nb: _first(nb, "checks").update(
        source=_first(nb, "checks").source + "\nm"), "end in an expression"),
}


def test_the_unbroken_content_builds(monkeypatch):
    content = build.read_content(A03)
    monkeypatch.setattr(build, "read_content", lambda assignment: content)
    assert build.render(build.build_notebook(A03)) == source_notebook(A03).read_text()


@pytest.mark.parametrize("name", BROKEN)
def test_the_builder_rejects_broken_content(name, monkeypatch):
    breaks, message = BROKEN[name]
    content = build.read_content(A03)
    breaks(content)
    monkeypatch.setattr(build, "read_content", lambda assignment: content)
    with pytest.raises(ValueError, match=message):
        build.build_notebook(A03)
