"""`coursekit export`: the gradebook as CSV files, after `coursekit autograde`.

    coursekit export [--canvas-id ASSIGNMENT=ID ...]    # grades.csv, step_scores.csv, canvas_grades.csv

`export` writes, in the course directory:

- `grades.csv`: nbgrader's own export (`nbgrader export`, through `coursekit.nbgrader_plugins.GradesCsv`, which
  nbgrader_config.py installs), one row per student and assignment, with a last column `flags`;
- `step_scores.csv`: one row per student, assignment and step (`grading.export_step_scores`),
  with the submission's late penalty and flags;
- `canvas_grades.csv`: for Canvas's gradebook import (Grades > Import). Its columns:

  | column | from nbgrader's gradebook |
  | --- | --- |
  | Student | "last name, first name"; the student id where the gradebook has no name |
  | ID | the student's `lms_user_id` (Canvas's user id), empty if unknown |
  | SIS User ID | the roster's (`coursekit roster import`); without one, the nbgrader student id |
  | SIS Login ID | the roster's; without one, the student's email, empty if unknown |
  | Section | the roster's; without one, empty (Canvas keeps the section it has) |
  | NAME (ID), one per assignment | the submission's score less its late penalty (grades.csv's `score`); empty where there is no submission, or it could not be graded |

  Canvas identifies a student by any of ID, SIS User ID or SIS Login ID. An assignment column
  is headed "NAME (CANVAS_ID)" when `--canvas-id NAME=CANVAS_ID` says which Canvas assignment it
  is, so its scores go to that assignment; headed "NAME" alone, Canvas offers to create a new
  assignment of that name. The second row, "Points Possible", holds each assignment's maximum.

A submission that could not be graded (`coursekit/standing.py`) is never exported as a score: its
score cells are empty, and grades.csv and step_scores.csv say why in `flags`. Every cell goes
through `coursekit/csvsafe.py`, so no cell is a formula when the file is opened in a spreadsheet.
"""

import sys
from pathlib import Path

from coursekit import csvsafe, grading, roster, standing
from coursekit.course_dir import CourseDir

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_column(assignment, canvas_ids):
    canvas_id = canvas_ids.get(assignment)
    return f"{assignment} ({canvas_id})" if canvas_id else assignment


def export_canvas(course_dir, canvas_ids=None):
    """canvas_grades.csv (module docstring) from nbgrader's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    canvas_ids = canvas_ids or {}
    course = CourseDir(course_dir)
    path = course.export("canvas_grades.csv")
    with Gradebook(course.gradebook_url) as gb, path.open("w", newline="") as handle:
        assignments = sorted(gb.assignments, key=lambda a: (a.duedate is None, a.duedate or 0, a.name))
        writer = csvsafe.Writer(handle)
        writer.writerow(CANVAS_IDENTITY + [canvas_column(a.name, canvas_ids) for a in assignments])
        writer.writerow(["    Points Possible", "", "", "", ""] + [f"{a.max_score:g}" for a in assignments])
        people = roster.imported(course_dir)
        for student in sorted(gb.students, key=lambda s: s.id):
            name = ", ".join(p for p in (student.last_name, student.first_name) if p) or student.id
            person = people.get(student.id)
            row = ([name, student.lms_user_id or "", person.sis_user_id, person.sis_login_id, person.section]
                   if person else [name, student.lms_user_id or "", student.id, student.email or "", ""])
            for assignment in assignments:
                try:
                    submission = gb.find_submission(assignment.name, student.id)
                except MissingEntry:
                    row.append("")
                    continue
                penalty = submission.late_submission_penalty or 0.0
                if standing.standing(course_dir, assignment.name, student.id, penalty).graded:
                    row.append(f"{max(0.0, submission.score - penalty):g}")  # as grades.csv's `score`
                else:
                    row.append("")  # Canvas leaves an empty cell ungraded
            writer.writerow(row)
    return path


def export_all(course_dir, canvas_ids=None):
    """grades.csv, step_scores.csv and canvas_grades.csv in the course directory."""
    grades = grading.export_grades(course_dir)
    steps = grading.export_step_scores(course_dir, grading.step_scores(course_dir))
    canvas = export_canvas(course_dir, canvas_ids)
    return grades, steps, canvas


def _canvas_ids(pairs):
    ids = {}
    for pair in pairs or []:
        name, sep, canvas_id = pair.partition("=")
        if not sep or not name or not canvas_id:
            raise SystemExit(f"coursekit export: --canvas-id takes ASSIGNMENT=CANVAS_ID, not {pair!r}")
        ids[name] = canvas_id
    return ids


def run_export(args, extra=()):
    course = Path(args.course).resolve()
    if not CourseDir(course).has_gradebook():  # nbgrader would create an empty gradebook there and export nothing
        print(f"coursekit export: {course} is not a graded course directory (no nbgrader_config.py or no "
              "gradebook.db); run it from the course directory or pass --course DIR", file=sys.stderr)
        return 2
    try:
        for path in export_all(course, _canvas_ids(args.canvas_id)):
            print(path)
    except RuntimeError as error:
        print(f"coursekit export: {error}", file=sys.stderr)
        return 1
    return 0


def add_export(subcommands):
    parser = subcommands.add_parser(
        "export", help="grades.csv, step_scores.csv and canvas_grades.csv",
        description="Export the gradebook: nbgrader's grades.csv, per-step scores (step_scores.csv) and "
                    "a CSV for Canvas's gradebook import (canvas_grades.csv).")
    parser.add_argument("--canvas-id", nargs="+", metavar="ASSIGNMENT=ID",
                        help="the Canvas assignment id of an nbgrader assignment (column 'NAME (ID)')")
    parser.add_argument("--course", metavar="DIR", default=".", help="the nbgrader course directory")
    parser.set_defaults(run=run_export)
