"""`coursekit roster import FILE.csv`: Canvas's roster into nbgrader's gradebook.

    coursekit roster import users.csv          # Canvas's users report (or its gradebook export)

nbgrader knows a student by their login name (the exchange's and JupyterHub's user name); Canvas
matches a row of its gradebook import by its own user id (`ID`), the `SIS User ID` or the
`SIS Login ID`. The import fills, for each student, nbgrader's first and last name, email and
`lms_user_id` (Canvas's `ID`), and keeps the SIS ids and the section in `.coursekit/roster.json`,
so that canvas_grades.csv (`coursekit/exports.py`) carries Canvas's own identifiers.

Two Canvas files are read, told apart by their header (ROSTER_COLUMNS):

- the users report (Admin > Reports > Provisioning, "Users"): `canvas_user_id`, `user_id`,
  `login_id`, `first_name`, `last_name`, `email` ...;
- the gradebook export (Grades > Export): `Student` ("Last, First"), `ID`, `SIS User ID`,
  `SIS Login ID`, `Section` ... (no email; its "Points Possible" row is skipped).

The nbgrader id of a row is its SIS Login ID (`--id-column` names another column).
"""

import csv
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from coursekit.course_dir import CourseDir

# Canvas's column for each field, per file kind (the first kind whose columns are all present wins).
ROSTER_COLUMNS = {
    "users report": {"lms_user_id": "canvas_user_id", "sis_user_id": "user_id", "sis_login_id": "login_id",
                     "first_name": "first_name", "last_name": "last_name", "email": "email"},
    "gradebook export": {"lms_user_id": "ID", "sis_user_id": "SIS User ID", "sis_login_id": "SIS Login ID",
                         "sortable_name": "Student", "section": "Section"},
}


@dataclass
class Person:
    id: str  # nbgrader's student id
    lms_user_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    section: str = ""


def _kind(header):
    for kind, columns in ROSTER_COLUMNS.items():
        if set(columns.values()) <= set(header):
            return kind
    raise ValueError(f"not a Canvas roster: expected the columns of a {' or a '.join(ROSTER_COLUMNS)} "
                     f"({', '.join(c for cs in ROSTER_COLUMNS.values() for c in cs.values())}), got {header}")


def read(path, id_column="SIS Login ID"):
    """[Person] from a Canvas roster CSV (module docstring)."""
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
        header = list(rows[0]) if rows else []
    kind = _kind(header)
    columns = ROSTER_COLUMNS[kind]
    if id_column not in header:  # "SIS Login ID" names the users report's login_id, and so on
        id_column = columns.get(id_column.lower().replace(" ", "_"), id_column)
    people = []
    for row in rows:
        if "Points Possible" in (row.get("Student") or "") or not (row.get(id_column) or "").strip():
            continue  # the gradebook export's second row; a row without an id cannot be matched
        fields = {field: (row.get(column) or "").strip() for field, column in columns.items()}
        last, _, first = fields.pop("sortable_name", "").partition(",")
        fields.setdefault("last_name", last.strip())
        fields.setdefault("first_name", first.strip())
        people.append(Person(id=row[id_column].strip(), **fields))
    return people


def import_roster(course_dir, people):
    """Fill nbgrader's gradebook (names, email, lms_user_id) and .coursekit/roster.json (SIS ids,
    section) -> how many students."""
    from nbgrader.api import Gradebook

    course = CourseDir(course_dir)
    with Gradebook(course.gradebook_url) as gb:
        for person in people:
            gb.update_or_create_student(person.id, first_name=person.first_name or None,
                                        last_name=person.last_name or None, email=person.email or None,
                                        lms_user_id=person.lms_user_id or None)
    path = course.roster
    path.parent.mkdir(parents=True, exist_ok=True)
    known = {p["id"]: p for p in _load(path)}
    known.update({p.id: asdict(p) for p in people})
    path.write_text(json.dumps(sorted(known.values(), key=lambda p: p["id"]), indent=1))
    return len(people)


def _load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return []


def imported(course_dir):
    """{nbgrader id: Person} of the roster imported into this course ({} if none)."""
    return {p["id"]: Person(**p) for p in _load(CourseDir(course_dir).roster)}


def run_roster(args, extra=()):
    course = Path(args.course).resolve()
    if not CourseDir(course).has_gradebook():
        print(f"coursekit roster: {course} is not a course directory with a gradebook (run `nbgrader "
              "generate_assignment` there first, or pass --course DIR)", file=sys.stderr)
        return 2
    try:
        people = read(args.file, args.id_column)
    except (OSError, ValueError, KeyError) as error:
        print(f"coursekit roster: {args.file}: {error}", file=sys.stderr)
        return 1
    print(f"coursekit roster: {import_roster(course, people)} students from {args.file} into {CourseDir(course).gradebook_url}")
    return 0


def add_roster(subcommands):
    parser = subcommands.add_parser("roster", help="import Canvas's roster into nbgrader's gradebook",
                                    description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["import"])
    parser.add_argument("file", help="Canvas's users report or gradebook export (CSV)")
    parser.add_argument("--id-column", default="SIS Login ID",
                        help="the column holding nbgrader's student id (default: %(default)s)")
    parser.add_argument("--course", metavar="DIR", default=".", help="the nbgrader course directory")
    parser.set_defaults(run=run_roster)
