"""CSV files safe to open in a spreadsheet (OWASP, "CSV Injection").

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel, LibreOffice
and Google Sheets as a formula: a student id like `=2+3`, or one that calls out to the network,
would run on the instructor's machine. Such a cell gets a leading single quote, which the
spreadsheet shows as text. So does one that starts with them after spaces or line breaks (an import that
trims them), or with a full-width or small form of them (`＝`, `﹢`: what a spreadsheet that folds them, as
NFKC does, reads as `=` and `+`) (red-team round r63). A number stays a number: `-1.5` is written as it is,
in ASCII digits only (`-١٢` is no number to a spreadsheet, and `-` starts a formula there).
"""

import csv
import re
import unicodedata

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
TRIMMED = " \n"  # what an import may take off a cell's start before it reads a formula
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def _formula_like(text):
    first = unicodedata.normalize("NFKC", text.lstrip(TRIMMED)[:1])
    return text.startswith(FORMULA_START) or first.startswith(FORMULA_START)


def cell(value):
    """`value` as a CSV cell a spreadsheet will not evaluate."""
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if _formula_like(text) and not NUMBER.fullmatch(text):
        return "'" + text
    return text


class Writer:
    """csv.writer whose every cell goes through `cell`."""

    def __init__(self, handle):
        self._writer = csv.writer(handle)

    def writerow(self, row):
        self._writer.writerow([cell(value) for value in row])
