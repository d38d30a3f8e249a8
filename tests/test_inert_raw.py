"""A raw cell the student added is shown as its text, never rendered as markup (r37).

nbconvert's HTML templates insert a raw cell (no raw_mimetype, or text/html) through bleach: no
script runs, but elements with any `class` and `id` survive. In the formgrader, where the
instructor grades signed in, an added raw cell drew the page's own success box ("All tests
passed", `alert alert-success`) and an element with a graded cell's id ahead of the cell's own
(the formgrader's script finds a grade's input by that id). `InertContent` shows a raw cell that
is not as released the way it shows such a Markdown cell: as its text, in a code block.
"""

from nbformat.v4 import new_notebook, new_raw_cell
from test_inert_content import _render, released  # noqa: F401 - `released` is a fixture

from coursekit.inert_content import InertContent

FAKE = '<div class="alert alert-success" id="dot_product_grade">All tests passed</div>'


def _with_raw():
    return new_notebook(cells=[new_raw_cell(FAKE), new_raw_cell(FAKE, metadata={"raw_mimetype": "text/html"})])


def test_an_added_raw_cell_is_shown_as_text(released):  # noqa: F811
    element = '<div class="alert alert-success" id="dot_product_grade">'
    assert _render(_with_raw()).count(element) == 2  # what the stage is for
    nb, _ = InertContent(course_root=str(released))(_with_raw(), {"nbgrader": {"assignment": "a"}})
    page = _render(nb)
    assert element not in page and "&lt;div class=" in page
    assert page.count("All tests passed") == 2 and [c.cell_type for c in nb.cells] == ["markdown", "markdown"]
    assert nb.cells[0].source.startswith("*A raw cell that is not as released")
