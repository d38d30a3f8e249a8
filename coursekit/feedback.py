"""Feedback: what a student may see of a graded test cell, what was left out of their
submission, and a page for a submission that could not be graded at all."""

import html
import re
import string
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell
from nbgrader import utils
from traitlets import Bool, Unicode

from coursekit.course_dir import CourseDir


class SanitizeGradeCells(Preprocessor):
    """In graded test cells, keep the grader's report but cut tracebacks to their last line.

    A traceback from a hidden cell would quote hidden test code and the grader's paths; the
    exception's name and message are enough to act on. Runs after ClearHiddenTests.
    """

    enabled = Bool(True).tag(config=True)  # nbconvert registers a plain Preprocessor disabled: it never ran

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell):
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        return cell, resources


class IntakeNote(Preprocessor):
    """At the top of the feedback, what was left out of the submission and why (coursekit/intake.py):
    the student sees that a link or an oversized file was not graded, not a silent absence."""

    course_root = Unicode(".", help="the course directory (nbgrader_config.py sets it)").tag(config=True)
    enabled = Bool(True).tag(config=True)  # nbconvert registers a plain Preprocessor disabled

    def preprocess(self, nb, resources):
        from coursekit import intake

        info = resources.get("nbgrader", {})
        dropped = intake.recorded(self.course_root, info.get("assignment", ""), info.get("student", ""))
        if dropped:
            items = "\n".join(f"- {_markdown_text(str(d))}" for d in dropped)
            nb.cells.insert(0, new_markdown_cell(
                "**Left out of your submission** (graded without them; hand in plain files only):\n\n" + items))
        return nb, resources


def _markdown_text(text):
    """`text` shown literally in Markdown (a file name is the student's to choose)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", html.escape(text, quote=False))


UNGRADED_PAGE = Path(__file__).with_name("ungraded_feedback.html")  # the page's template


def ungraded_page(assignment, student, where):
    """The feedback page of a submission that could not be graded: what went wrong, what to do."""
    fill = {"assignment": assignment, "student": student, "problem": where.problem, "advice": where.advice}
    return string.Template(UNGRADED_PAGE.read_text()).substitute({k: html.escape(v) for k, v in fill.items()})


def write_ungraded_pages(root, assignment, students=()):
    """feedback/<student>/<assignment>/<assignment>.html for each submission under submitted/ that
    could not be graded -> {student: problem}."""
    from coursekit import standing

    course = CourseDir(root)
    folders = course.submissions(assignment)
    written = {}
    for folder in folders:
        student = folder.parent.name
        if students and student not in students:
            continue
        where = standing.standing(root, assignment, student)
        if where.graded:
            continue
        page = course.feedback_page(assignment, student)
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(ungraded_page(assignment, student, where), encoding="utf-8")
        written[student] = where.problem
    return written
