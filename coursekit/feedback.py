"""`coursekit feedback`: the students' feedback, after `coursekit autograde`.

    coursekit feedback ASSIGNMENT [--student ID ...]   # nbgrader generate_feedback

nbgrader's generate_feedback writes a graded submission's page, sanitised by the course's
preprocessors (`coursekit/nbgrader_plugins.py`); a submission that could not be graded gets a page
saying why and what to do (`coursekit/standing.py`).
"""

import sys
from pathlib import Path

from coursekit import grading
from coursekit.course_dir import CourseDir


def run_feedback(args, extra=()):
    course = Path(args.course).resolve()
    if not CourseDir(course).has_gradebook():
        print(f"coursekit feedback: {course} is not a graded course directory (no nbgrader_config.py or no "
              "gradebook.db); run it from the course directory or pass --course DIR", file=sys.stderr)
        return 2
    try:
        folder, ungraded = grading.feedback(course, args.assignment, args.student or ())
    except RuntimeError as error:
        print(f"coursekit feedback: {error}", file=sys.stderr)
        return 1
    print(f"feedback: {folder}")
    for student, problem in sorted(ungraded.items()):
        print(f"  {student}: not graded ({problem}); their page says why and what to do")
    return 0


def add_feedback(subcommands):
    parser = subcommands.add_parser("feedback", help="nbgrader generate_feedback for an assignment",
                                    description="Write feedback (nbgrader generate_feedback --force) for "
                                                "an assignment's autograded submissions.")
    parser.add_argument("assignment")
    parser.add_argument("--student", nargs="+", metavar="ID", help="only these students")
    parser.add_argument("--course", metavar="DIR", default=".", help="the nbgrader course directory")
    parser.set_defaults(run=run_feedback)
