"""What a process logs shows a student's text, never obeys it (red-team round r37).

nbgrader logs what it finds in a submission as it is: a cell's `grade_id` the gradebook does not
know ("Cell '...' does not exist in the database"), a changed attribute's new value ("got: ...").
Those are the student's to write, and `nbgrader autograde` printed them to the instructor's
terminal, where an escape sequence is obeyed: colours, a cleared line, a link (OSC 8), and on some
terminals a write to the clipboard (OSC 52). `install()` (from nbgrader_config.py, so in every
nbgrader app of the course) makes every log record's message show each unprintable character as
its escape, as the flags do (`autograder.errors.one_line`), its newlines kept (tracebacks are
logged as messages). What a formatter adds itself (an exception's traceback) is not covered.
"""

import logging

from autograder.errors import printable


def install():
    """From now on, in this process, every log record's message is shown with its unprintable
    characters escaped. Installing twice changes nothing."""
    made = logging.getLogRecordFactory()
    if getattr(made, "shows_text", False):
        return

    def factory(*args, **kwargs):
        record = made(*args, **kwargs)
        try:
            record.msg, record.args = printable(record.getMessage()), ()
        except Exception:  # noqa: BLE001 - a message that does not format is logging's to report
            pass
        return record

    factory.shows_text = True
    logging.setLogRecordFactory(factory)
