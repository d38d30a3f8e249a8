"""What a process logs shows a student's text, never obeys it (red-team round r37).

nbgrader logs what it finds in a submission as it is: a cell's `grade_id` the gradebook does not
know ("Cell '...' does not exist in the database"), a changed attribute's new value ("got: ...").
Those are the student's to write, and `nbgrader autograde` printed them to the instructor's
terminal, where an escape sequence is obeyed: colours, a cleared line, a link (OSC 8), and on some
terminals a write to the clipboard (OSC 52). `install()` (from nbgrader_config.py, so in every
nbgrader app of the course, and from `grading_task`, so in every Dask worker) makes every log
record show each unprintable character as its escape, as the flags do
(`autograder.errors.one_line`): its message, and the traceback a formatter adds. Newlines are
kept (tracebacks are logged as messages, and nbgrader formats the student's text into its
message before logging it), but every line after a record's first is indented, so a newline in a
`grade_id` cannot start a line that reads as a record of its own ("[AutogradeApp | ERROR] ...").
"""

import logging

from autograder.errors import printable

CONTINUED = "    "  # starts every line of a record after its first


def shown(text):
    """`text` as a log shows it: escaped (`printable`), each line after the first indented."""
    return printable(text).replace("\n", "\n" + CONTINUED)


def install():
    """From now on, in this process, every log record is shown as `shown` says. Installing twice
    changes nothing."""
    made = logging.getLogRecordFactory()
    if getattr(made, "shows_text", False):
        return

    def factory(*args, **kwargs):
        record = made(*args, **kwargs)
        try:
            record.msg, record.args = shown(record.getMessage()), ()
        except Exception:  # noqa: BLE001 - a message that does not format is logging's to report
            pass
        if record.exc_info and record.exc_info[0] is not None:  # what the formatter would add
            record.exc_text = CONTINUED + shown(logging.Formatter().formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = CONTINUED + shown(record.stack_info)
        return record

    factory.shows_text = True
    logging.setLogRecordFactory(factory)
