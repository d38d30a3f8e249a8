"""Grading from a notebook's hidden test cell: `grade("softmax", points=3)`.

Runs the step's hidden suite against the kernel's own namespace, prints a report the student
sees in the feedback (case titles and symptoms only: no expected values, no test source, no
tracebacks), and returns the points as the cell's value for nbgrader's partial credit.
"""

import io
import os
import sys
import tempfile
import warnings
from contextlib import contextmanager, redirect_stderr

from autograder.harness import GRADER_ERROR, run_step
from autograder.seam import Implementation

FLAG = "FLAGGED FOR THE INSTRUCTOR"


@contextmanager
def _quiet_stderr():
    """Swallow everything written to stderr: nbgrader zeroes a test cell that writes there.

    Python-level writes (warnings, print(file=sys.stderr)) and C-level writes to fd 2 both go
    to a scratch file; the report says if the submission wrote any.
    """
    captured = {"text": ""}
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.dup2(scratch.fileno(), 2)
        buffer = io.StringIO()
        try:
            with redirect_stderr(buffer):
                yield captured
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)
            scratch.seek(0)
            captured["text"] = buffer.getvalue() + scratch.read().decode("utf-8", "replace")


def format_report(result, max_points):
    points = result.points(max_points)
    lines = [f"{result.step}: {points:g} / {max_points:g} points"]
    failed = [r for r in result.results if not r.passed]
    if failed and len(failed) == len(result.results) and len({r.message for r in failed}) == 1:
        # One cause (not implemented, not defined, a crash on import) fails every case: say it once.
        lines.append(f"  all {len(failed)} cases failed: {failed[0].message}")
        return "\n".join(lines + _flag_lines(result))
    for r in result.results:
        mark = "passed" if r.passed else "FAILED"
        lines.append(f"  [{mark}] {r.case.title}")
        if not r.passed and r.message:
            lines.append(f"           {r.message}")
    return "\n".join(lines + _flag_lines(result))


def _flag_lines(result):
    lines = []
    if result.tampered:
        lines.append(f"  {FLAG}: grading tools were modified: {', '.join(result.tampered)}")
    broken = [r.case.name for r in result.results if r.message.startswith(GRADER_ERROR)]
    if broken:
        lines.append(f"  {FLAG}: {GRADER_ERROR} in {', '.join(broken)}")
    return lines


def grade(step, points, namespace=None):
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    impl = Implementation.from_namespace(namespace)
    with _quiet_stderr() as stderr:
        result = run_step(step, impl)
    report = format_report(result, points)
    if stderr["text"].strip():
        report += "\n  (your code wrote to stderr while being graded; that output was discarded)"
    print(report)
    return result.points(points)
