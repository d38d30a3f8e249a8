"""Nothing a submission shows runs in the instructor's browser (`coursekit/inert_content.py`).

The formgrader and the feedback page render the autograded notebook with nbconvert's HTML
templates. A page is searched for what a browser would run: a script whose text holds the
payload's mark, or an event handler (onerror, onload) or a javascript: link that holds it. Each
attack shows there before the stage and nowhere after it, and the course's own prose keeps its
headings. Through real nbgrader, with the hostile catalogue's `active-content`, at the end.
"""

import base64
import html.parser

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from coursekit import grading
from coursekit.inert_content import InertContent

MARK = "ACTIVE_CONTENT_RAN"
PROSE = "# Softmax\n\nEach row sums to 1 where `j > i` is blocked."
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()


class _Active(html.parser.HTMLParser):
    """The places of a page where MARK would run: script text, event handlers and javascript: links."""

    def __init__(self):
        super().__init__()
        self.found, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        self.found += [f"<{tag} {name}={value!r}>" for name, value in attrs if value and MARK in value and (
            name.startswith("on") or value.strip().lower().startswith("javascript:"))]

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and MARK in data:
            self.found.append(f"<script>{data.strip()}")


def active(page):
    parser = _Active()
    parser.feed(page)
    return parser.found


def _render(nb):
    return HTMLExporter(template_name="classic").from_notebook_node(nbformat.from_dict(nb))[0]


def _hostile_notebook():
    shows = new_code_cell("show()", execution_count=1)
    shows.outputs = [
        new_output("display_data", data={"application/javascript": f"window.{MARK} = 1", "text/plain": "js"}),
        new_output("display_data", data={"text/html": f"<script>window.{MARK} = 2</script>"}),
        new_output("display_data", data={"image/svg+xml": f"<svg onload='window.{MARK} = 3'></svg>"}),
        new_output("display_data", data={"text/markdown": f"<img src=x onerror='window.{MARK} = 4'>"}),
        new_output("display_data", data={"image/png": f"x\" onerror=\"window.{MARK} = 5"}),
        new_output("display_data", data={"image/png": PNG, "text/plain": "a plot"}),
        new_output("stream", name="stdout", text="plain <b>text</b>\n"),
    ]
    counted = new_code_cell("1", execution_count=2)
    edited = new_markdown_cell(f"{PROSE}\n<img src=x onerror='window.{MARK} = 7'>\n```\ncode\n```")
    return new_notebook(cells=[new_markdown_cell(PROSE), shows, counted, edited])


@pytest.fixture
def released(tmp_path):
    """A course folder whose release of assignment `a` has the course's prose."""
    path = tmp_path / "release" / "a" / "a.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell(PROSE), new_code_cell("show()")]), path)
    return tmp_path


def test_every_attack_runs_before_the_stage_and_none_after_it(released):
    before = active(_render(_hostile_notebook()))
    # JavaScript, HTML, a Markdown output, an edited Markdown cell (nbconvert cleans SVG itself, and escapes an
    # image's data, so the forged PNG, 5, is inert there; the stage drops it for any other renderer)
    assert {n for n in "1234567" if any(f"{MARK} = {n}" in place for place in before)} == set("1247"), before
    nb, _ = InertContent(course_root=str(released))(_hostile_notebook(), {"nbgrader": {"assignment": "a"}})
    page = _render(nb)
    assert active(page) == []
    assert "<h1" in page and page.count("<h1") == 1  # the released prose is rendered, the edited copy is not
    assert MARK in page  # the edited cell is shown, as text


def test_what_can_only_be_shown_is_kept_and_the_rest_is_named(released):
    nb, _ = InertContent(course_root=str(released))(_hostile_notebook(), {"nbgrader": {"assignment": "a"}})
    outputs = nb.cells[1].outputs
    assert outputs[0].data == {"text/plain": "js\n[not kept by the grader: a application/javascript output, which "
                                             "a browser would run or render as markup]"}
    assert [sorted(o.data) for o in outputs[1:6]] == [["text/plain"]] * 4 + [["image/png", "text/plain"]]
    assert outputs[5].data["image/png"] == PNG and outputs[6].text == "plain <b>text</b>\n"
    assert nb.cells[1].execution_count == 1 and nb.cells[2].execution_count == 2
    assert nb.cells[0].source == PROSE and nb.cells[3].source.endswith("\n````")  # longer than the ``` inside


def test_an_execution_count_is_a_whole_number_or_none(released):
    """nbconvert interpolates it unescaped (nbformat's validation would refuse a string only when it writes)."""
    nb = _hostile_notebook()
    nb.cells[2]["execution_count"] = f"<script>window.{MARK} = 6</script>"
    nb.cells[1].outputs.append({"output_type": "execute_result", "execution_count": "<b>", "data": {}, "metadata": {}})
    nb, _ = InertContent(course_root=str(released))(nb, {"nbgrader": {"assignment": "a"}})
    assert nb.cells[2].execution_count is None and nb.cells[1].outputs[-1].execution_count is None


def test_without_a_release_every_markdown_cell_is_shown_as_text(tmp_path):
    nb, _ = InertContent(course_root=str(tmp_path))(_hostile_notebook(), {"nbgrader": {"assignment": "a"}})
    assert "<h1" not in _render(nb) and active(_render(nb)) == []


def test_through_nbgrader_neither_the_autograded_notebook_nor_the_feedback_runs_anything(course, catalogue_results):
    """`active-content`: JavaScript, HTML, SVG, Markdown and a forged PNG displayed by its softmax cell, and a
    Markdown cell of raw HTML added at the end."""
    assignment, student = "01_simplified_self_attention", "active-content"
    assert catalogue_results(assignment)[student].graded
    grading.feedback(course, assignment, [student])
    autograded = nbformat.read(course / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    feedback = (course / "feedback" / student / assignment / f"{assignment}.html").read_text()
    for page in (_render(autograded), feedback):
        assert active(page) == []
        assert MARK in page and "<h1" in page  # the added cell shown as text; the course's prose rendered
