"""Text a student chose reaches the instructor's terminal, logs and files as text, never as a
terminal's commands: no escape sequence (colours, a cleared line, OSC 8 links, OSC 52, which
some terminals let write the clipboard), carriage return or bidi override (red-team round r37).

- A cell's nbgrader metadata is the student's: a `grade_id` the gradebook does not know is
  logged by nbgrader's OverwriteCells as it is ("Cell '...' does not exist in the database"), and
  `nbgrader autograde` printed it, escapes and all, to the instructor's terminal.
- A step's report quotes the first line of the student's own exception: it reaches the feedback,
  the class report's CSV and the terminal of whoever prints them.
"""

import subprocess
import sys

from autograder.errors import RemoteError
from autograder.harness import _describe_error

ESCAPES = "\x1b]52;c;cjM3\x07\x1b[2K\r\x1b[31mRED\x1b[0m\x1b]8;;https://example.invalid\x07LINK\x1b]8;;\x07\u202eBIDI"
RAW = ("\x1b", "\x07", "\r", "\u202e")


def test_an_exceptions_text_in_a_report_is_shown_not_obeyed():
    error = RemoteError.from_reply({"type": "ValueError", "bases": ["ValueError"], "message": ESCAPES})
    message = _describe_error("softmax", error)
    assert not any(c in message for c in RAW), repr(message)
    assert "RED" in message and "LINK" in message and "\\x1b" in message


def test_a_log_record_shows_a_students_text_escaped():
    """What nbgrader logs (the course's nbgrader_config.py installs this in every nbgrader app)."""
    code = ("import logging, sys; from coursekit import terminal_text; terminal_text.install(); "
            "terminal_text.install(); logging.basicConfig(stream=sys.stdout, format='%(message)s'); "
            f"logging.getLogger('nbgrader').warning(\"Cell '%s' does not exist\", {ESCAPES!r}); "
            "logging.getLogger('x').error('two\\nlines')")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert not any(c in shown for c in RAW), repr(shown)
    assert "Cell '\\x1b]52;c;cjM3\\x07" in shown
    assert "two\nlines" in shown  # a traceback logged as a message keeps its lines


def test_the_course_config_installs_it():
    from coursekit.paths import ROOT

    assert "terminal_text.install()" in (ROOT / "nbgrader_config.py").read_text()
