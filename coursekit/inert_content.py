"""What the instructor's browser shows of a submission runs nothing.

nbgrader's formgrader, where an instructor grades while signed in, and the feedback page both
render the autograded notebook with nbconvert's HTML templates. Those insert a cell's HTML,
JavaScript, SVG and Markdown outputs as they are, interpolate fields such as the execution
count unescaped, and render a Markdown cell's raw HTML. Every output was produced by the
student's kernel, and every Markdown cell is the student's to edit (nbgrader locks none of
them). So a submission could run script in the formgrader with the instructor's session, and
set its own manual grade through the formgrader's API. nbconvert's `sanitize_html` would also
escape the headings and paragraphs of the course's own prose, which is why it is not used.

This stage of the autograde pipeline (`nbgrader_config.py`: after the gradebook's stages, so on
the machine that holds the course and its release) keeps what can only be shown:
- of each display and result, its plain text and its bitmap images (PNG, JPEG, GIF) whose data
  is base64; any other kind (HTML, JavaScript, SVG, Markdown, LaTeX, widgets) is named in one
  line in its place;
- streams as stdout or stderr text, errors as lines of text, and execution counts only as
  whole numbers;
- Markdown and raw cells exactly as released; any other one, edited or added, is shown as its
  text in a code block, with a line saying why (nbconvert inserts a raw cell as markup).
What the judge wrote in graded cells is plain text already and stays as it is.
"""

import json
import re

import nbformat
from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from traitlets import Bool, Unicode

from coursekit.course_dir import CourseDir

SHOWN = ("text/plain", "image/png", "image/jpeg", "image/gif")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
OUTPUT_NOTE = "[not kept by the grader: a {kinds} output, which a browser would run or render as markup]"
MARKDOWN_NOTE = ("*A {kind} cell that is not as released, shown as its text: the grader renders no "
                 "Markdown or HTML a submission wrote.*\n\n")


def _text(value):
    """nbformat allows a string or a list of strings; anything else the kernel sent is shown as JSON."""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return "".join(value)
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def _count(value):
    return value if type(value) is int else None


def inert_output(output):
    """The output with only what can be shown, or None for one of no known kind."""
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return {"output_type": "stream", "name": name, "text": _text(output.get("text", ""))}
    if kind == "error":
        lines = output.get("traceback")
        return {"output_type": "error", "ename": _text(output.get("ename", "")),
                "evalue": _text(output.get("evalue", "")),
                "traceback": [_text(line) for line in lines] if isinstance(lines, list) else []}
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    kept = {mime: _text(data[mime]) for mime in SHOWN if mime in data}
    kept = {mime: value for mime, value in kept.items()
            if mime == "text/plain" or _BASE64.fullmatch(value)}
    dropped = sorted(set(data) - set(kept))
    if dropped:
        note = OUTPUT_NOTE.format(kinds=", ".join(str(mime)[:60] for mime in dropped[:5]))
        kept["text/plain"] = kept["text/plain"] + "\n" + note if "text/plain" in kept else note
    inert = {"output_type": kind, "data": kept, "metadata": {}}
    if kind == "execute_result":
        inert["execution_count"] = _count(output.get("execution_count"))
    return inert


def as_text(source, kind="Markdown"):
    """Markdown that shows `source` literally: a fenced code block whose fence no run of backticks
    in it can close."""
    longest = max((len(run) for run in re.findall(r"`+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{MARKDOWN_NOTE.format(kind=kind)}{fence}text\n{source}\n{fence}"


def released_markdown(course_root, assignment):
    """The sources of the released notebook's Markdown cells (none when it cannot be read)."""
    try:
        released = json.loads(CourseDir(course_root).release_notebook(assignment).read_text())
        return {_text(cell.get("source", "")) for cell in released["cells"]
                if cell.get("cell_type") in ("markdown", "raw")}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


class InertContent(Preprocessor):
    """Outputs reduced to what can only be shown, and Markdown cells not as released shown as text."""

    course_root = Unicode(".", help="the course directory (nbgrader_config.py sets it)").tag(config=True)
    enabled = Bool(True).tag(config=True)  # nbconvert registers a plain Preprocessor disabled

    def preprocess(self, nb, resources):
        released = released_markdown(self.course_root, resources.get("nbgrader", {}).get("assignment", ""))
        nb.metadata.pop("widgets", None)  # nbconvert would load the widgets' script for saved widget state
        for index, cell in enumerate(nb.cells):
            # A raw cell is inserted as markup too (bleach keeps any class and id): r37 drew the
            # formgrader's own success box, and an element with a graded cell's id, with one.
            if cell.get("cell_type") in ("markdown", "raw") and _text(cell.get("source", "")) not in released:
                kind = "Markdown" if cell.get("cell_type") == "markdown" else "raw"
                nb.cells[index] = new_markdown_cell(as_text(_text(cell.get("source", "")), kind),
                                                    metadata=cell.get("metadata", {}))
                if "id" in cell:
                    nb.cells[index]["id"] = cell["id"]
            elif cell.get("cell_type") == "code":
                cell["execution_count"] = _count(cell.get("execution_count"))
                cell["outputs"] = [nbformat.from_dict(kept) for kept in map(inert_output, cell.get("outputs", []))
                                   if kept is not None]
        return nb, resources
