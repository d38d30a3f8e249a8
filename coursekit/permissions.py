"""Who may read what on a shared machine: the course's permission model, applied by one command.

    coursekit permissions --instructor USER [--students USER ...] [--course DIR] [--exchange DIR]

Run it as root after setting up the course and after each new student account; it only ever
narrows what others may do, and running it again changes nothing. The model (MODEL below is the
same table, as data):

| path | owner | mode | so that |
| --- | --- | --- | --- |
| the course directory: the checkout, with `solutions/`, `autograder/` (hidden suites, stored outputs), the instructor's `.venv`, `nbgrader_config.py` | instructor, everything under it | 0700 | nobody else can even look inside |
| `gradebook.db`, `source/`, `submitted/`, `autograded/`, `feedback/` in it | instructor | group and others: nothing | they stay closed should the course directory be opened to a group of graders |
| the exchange root | root | 1777 | nbgrader requires it writable by all; sticky: nobody removes what is not theirs |
| `<exchange>/<course id>/`, `outbound/` | instructor | 0755 | students read and fetch the releases |
| `inbound/` | instructor | 3733 | students drop submissions, cannot list or remove each other's (nbgrader names each with a random string) |
| `feedback/` | instructor | 0711 | not listable: a student opens only the file named by the hash of the secret nbgrader kept with their own submission (nbgrader issues 1202 and 978) |
| each student's home | the student | 0700 | their work, their fetched feedback and their nbgrader cache (which holds that secret) are theirs |

Students get their own environment (`coursekit env student`) and config: nothing they run needs
the course directory. The instructor runs the course's virtualenv, so it must have been built
from an interpreter the instructor can execute (not one under /root): the command checks that.
"""

import grp
import os
import pwd
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from coursekit.paths import ROOT

INSTRUCTOR_ONLY = ("gradebook.db", "source", "submitted", "autograded", "feedback")


@dataclass(frozen=True)
class Rule:
    where: str  # a path relative to the exchange's course folder ("." is that folder)
    mode: int


# The exchange's course folder, as the table above has it; the root is EXCHANGE_ROOT_MODE.
EXCHANGE_RULES = (Rule(".", 0o755), Rule("outbound", 0o755), Rule("inbound", 0o3733), Rule("feedback", 0o711))
EXCHANGE_ROOT_MODE = 0o1777
COURSE_MODE = 0o700
HOME_MODE = 0o700


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: Path
    groups: frozenset

    @classmethod
    def named(cls, name):
        entry = pwd.getpwnam(name)
        groups = {g.gr_gid for g in grp.getgrall() if name in g.gr_mem} | {entry.pw_gid}
        return cls(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), frozenset(groups))


def can_traverse(path, account):
    """Whether `account` may pass through every directory on the way to `path`, and into it (a
    folder) or run it (a file): the x bit that applies to them on each."""
    path = Path(path).resolve()
    for step in [*reversed(path.parents), path]:
        info = step.stat()
        if info.st_uid == account.uid:
            bit = stat.S_IXUSR
        elif info.st_gid in account.groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if account.uid != 0 and not info.st_mode & bit:
            return False
    return True


def _own_tree(folder, account):
    for path, dirs, files in os.walk(folder):
        for name in [path, *(os.path.join(path, n) for n in dirs + files)]:
            os.lchown(name, account.uid, account.gid)


def _close_tree(folder):
    """Group and others lose every right under `folder`."""
    for path, dirs, files in os.walk(folder):
        for name in [path, *(os.path.join(path, n) for n in dirs + files)]:
            if not os.path.islink(name):
                os.chmod(name, stat.S_IMODE(os.lstat(name).st_mode) & 0o700)


def close_course(course_dir, instructor):
    """The course directory: the instructor's alone, its gradebook and grading folders doubly so."""
    course_dir = Path(course_dir).resolve()
    _own_tree(course_dir, instructor)
    os.chmod(course_dir, COURSE_MODE)
    for name in INSTRUCTOR_ONLY:
        if (course_dir / name).exists():
            _close_tree(course_dir / name)


def open_exchange(root, course_id, instructor):
    """The exchange's folders with the owners and modes of EXCHANGE_RULES (created if missing)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    os.chown(root, 0, 0)
    os.chmod(root, EXCHANGE_ROOT_MODE)
    for rule in EXCHANGE_RULES:
        folder = root / course_id / rule.where
        folder.mkdir(parents=True, exist_ok=True)
        os.chown(folder, instructor.uid, instructor.gid)
        os.chmod(folder, rule.mode)


def close_homes(students):
    for student in students:
        os.chmod(student.home, HOME_MODE)


def problems(course_dir, instructor, interpreter):
    """What would keep the instructor from working: a course or an interpreter out of reach."""
    found = []
    if not can_traverse(course_dir, instructor):
        found.append(f"{instructor.name} cannot reach {course_dir}: move the course somewhere its "
                     "parent folders let them through (not under /root)")
    if not can_traverse(Path(interpreter).resolve(), instructor):
        found.append(f"{instructor.name} cannot run {interpreter} (it is {Path(interpreter).resolve()}): "
                     "build the course's virtualenv from an interpreter every account can run, "
                     "e.g. /usr/bin/python3.11")
    return found


def apply(course_dir, instructor, students=(), exchange=None):
    """The whole model (module docstring); returns what would still keep the instructor from working."""
    from coursekit.environments import course_settings

    course_dir = Path(course_dir).resolve()
    course_id, root = course_settings(course_dir, exchange)
    if Path(root).resolve().is_relative_to(course_dir):
        return [f"the exchange {root} is inside the course directory, which students cannot enter: "
                "pass --exchange DIR (and set COURSEKIT_EXCHANGE to it), e.g. /srv/nbgrader/exchange"]
    instructor = Account.named(instructor)
    close_course(course_dir, instructor)
    open_exchange(root, course_id, instructor)
    close_homes([Account.named(s) for s in students])
    venv_python = course_dir / ".venv" / "bin" / "python"
    return problems(course_dir, instructor, venv_python if venv_python.exists() else sys.executable)


def run_permissions(args, extra=()):
    if os.geteuid() != 0:
        print("coursekit permissions: run it as root (it changes owners)", file=sys.stderr)
        return 1
    found = apply(args.course, args.instructor, args.students or (), args.exchange)
    for problem in found:
        print(f"coursekit permissions: {problem}", file=sys.stderr)
    if Path(args.course).resolve() != ROOT:
        print(f"coursekit permissions: note: this coursekit runs from {ROOT}, outside the course "
              "directory; close that folder too if it holds solutions/ and autograder/", file=sys.stderr)
    return 1 if found else 0


def add_permissions(subcommands):
    parser = subcommands.add_parser(
        "permissions", help="apply the course's permission model (as root)",
        description="Close the course directory to everyone but the instructor, set up the exchange so "
                    "that students can fetch, submit and fetch their own feedback only, and close each "
                    "student's home (coursekit/permissions.py has the table).")
    parser.add_argument("--instructor", required=True, metavar="USER", help="the account that grades")
    parser.add_argument("--students", nargs="+", metavar="USER", help="student accounts whose homes to close")
    parser.add_argument("--course", metavar="DIR", default=str(ROOT),
                        help="the course directory, holding nbgrader_config.py (default: %(default)s)")
    parser.add_argument("--exchange", metavar="DIR",
                        help="the exchange root (default: the course's, COURSEKIT_EXCHANGE or exchange/ beside it)")
    parser.set_defaults(run=run_permissions)
