"""CSV files safe to open in a spreadsheet (OWASP, "CSV Injection").

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel, LibreOffice
and Google Sheets as a formula: a student id like `=2+3`, or one that calls out to the network,
would run on the instructor's machine. Such a cell gets a leading single quote, which the
spreadsheet shows as text. A number stays a number: `-1.5` is written as it is.
"""

import csv
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def cell(value):
    """`value` as a CSV cell a spreadsheet will not evaluate."""
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(FORMULA_START) and not NUMBER.fullmatch(text):
        return "'" + text
    return text


class Writer:
    """csv.writer whose every cell goes through `cell`."""

    def __init__(self, handle):
        self._writer = csv.writer(handle)

    def writerow(self, row):
        self._writer.writerow([cell(value) for value in row])
