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
import types

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
    assert "two\n    lines" in shown  # a traceback logged as a message keeps its lines, indented


def test_a_newline_in_a_students_text_cannot_start_a_log_line_and_a_traceback_is_escaped():
    """r37: a `grade_id` with a newline printed a line of its own, which read as a record
    ("[AutogradeApp | ERROR] ..."); an exception's text, in the traceback a formatter adds, was
    not escaped at all. Every line after a record's first is now indented."""
    forged = "x\n[AutogradeApp | ERROR] every submission scored 0" + ESCAPES
    code = ("import logging, sys; from coursekit import terminal_text; terminal_text.install(); "
            "logging.basicConfig(stream=sys.stdout, format='[%(name)s | %(levelname)s] %(message)s'); "
            f"log = logging.getLogger('AutogradeApp'); log.warning(\"Cell '{{}}' does not exist\".format({forged!r}))\n"
            f"try:\n    raise ValueError({forged!r})\nexcept ValueError:\n    log.exception('grading failed')")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    lines = shown.splitlines()
    assert [line for line in lines if line.startswith("[")] == [
        "[AutogradeApp | WARNING] Cell 'x", "[AutogradeApp | ERROR] grading failed"], shown
    assert not any(c in shown for c in RAW), repr(shown)
    assert "ValueError: x" in shown and "    [AutogradeApp | ERROR] every submission scored 0" in shown


def test_every_dask_worker_installs_it():
    """Workers log what nbgrader finds too; they import the grading task, not nbgrader_config."""
    import inspect

    from coursekit import grading_task

    for task in (grading_task.warm_up, grading_task.judge_submission):
        assert "terminal_text.install()" in inspect.getsource(task), task.__name__


def test_the_course_config_installs_it():
    from coursekit.paths import ROOT

    assert "terminal_text.install()" in (ROOT / "nbgrader_config.py").read_text()


def test_a_name_the_kernel_chose_is_one_escaped_line_of_a_report():
    """r63: a suite's words quote what the kernel describes (a class's __name__ here, a state_dict key elsewhere),
    and a class named with an escape sequence and a newline wrote a flag line of its own into the report."""
    from autograder.harness import Case, StepResult, run_case
    from autograder.judge import format_report
    from autograder.suites.toolkit import modules

    class Module:  # a handle whose `dropout` is of a class the student named
        def describe(self, path=""):
            return {"exists": True, "type": "Drop\ud800\n  FLAGGED FOR THE INSTRUCTOR: GRADER ERROR, not your fault" + ESCAPES}

    case = Case("CausalAttention", "dropout", "property", 1.0, 5.0,
                lambda impl: modules.check_dropout_attribute("CA", Module(), 0.1))
    report = format_report(StepResult("CausalAttention", [run_case(case, impl=types.SimpleNamespace())]), 3)
    assert not any(c in report for c in RAW), repr(report)
    assert [line.split(":")[0] for line in report.splitlines() if "FLAGGED" in line] == ["  all 1 cases failed"], report
    report.encode("utf-8")  # a lone surrogate (a name JSON can carry) left the autograded notebook unwritable


def test_a_students_id_is_one_escaped_line_of_the_results_table(monkeypatch):
    """r63: the exchange takes a folder in the name of a student with no account of their own (nbgrader only warns),
    so a student chooses the id of a submission: one with an escape sequence and a newline cleared the instructor's
    table and wrote a row of its own there, and under it."""
    from coursekit import results_table

    forged = "mallory\x1b[1A\x1b[2K\nalice  " + ESCAPES
    rows = [results_table.StudentResult(forged, "01_simplified_self_attention", True, flags=["late"]),
            results_table.StudentResult(forged, "01_simplified_self_attention", False, problem="no notebook\r")]
    report = types.SimpleNamespace(assignment="01_simplified_self_attention", outcomes=[], failed=[], skipped=[],
                                   workers=0, seconds=1.0)
    monkeypatch.setattr(results_table, "class_results", lambda db_url, report, root: rows)
    shown = results_table.summary("sqlite://", report)
    assert not any(c in shown for c in RAW), repr(shown)
    assert [line.split("\\x1b")[0] for line in shown.splitlines() if "mallory" in line] == ["mallory", "mallory",
                                                                                            "  mallory", "  mallory"]
    assert "alice" not in "".join(line[:7] for line in shown.splitlines())
