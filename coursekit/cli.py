"""`coursekit`: the course's command line, one subcommand per task.

    coursekit lab                       # JupyterLab for the instructor, in the course directory
    coursekit lab --student DIR         # JupyterLab for a student on this machine, in DIR
    coursekit lab -- --port 8890        # anything after `--` goes to `jupyter lab`
    coursekit autograde ASSIGNMENT      # grade a class on Dask (see coursekit/autograde.py)
    coursekit feedback ASSIGNMENT       # nbgrader generate_feedback for it
    coursekit release-feedback ASSIGNMENT   # nbgrader release_feedback: students fetch their own
    coursekit env student DIR           # the students' environment (coursekit/environments.py)
    coursekit permissions --instructor USER  # the permission model, as root (coursekit/permissions.py)
    coursekit export                    # grades.csv, step_scores.csv, canvas_grades.csv
    coursekit report [ASSIGNMENT ...]   # what the class got wrong: HTML page and CSV
    coursekit roster import FILE.csv    # Canvas's roster into the gradebook (coursekit/roster.py)

nbgrader runs its helpers by name (`alembic` when it creates a gradebook), so JupyterLab must
start with this interpreter's bin directory on PATH; `coursekit lab` puts it there, so nothing
needs activating by hand.

A new subcommand is a function `add_<name>(subcommands)` that adds its parser and sets
`run=callable(args, extra)`, listed in SUBCOMMANDS. `extra` holds the arguments after `--`.
"""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from coursekit.autograde import add_autograde
from coursekit.environments import add_env
from coursekit.exports import add_export
from coursekit.feedback import add_feedback
from coursekit.paths import ROOT, interpreter_bin, with_interpreter_on_path
from coursekit.permissions import add_permissions
from coursekit.report import add_report
from coursekit.roster import add_roster


def environment(student_dir=None, course_dir=ROOT, base=None):
    """The environment JupyterLab runs in: the interpreter's bin directory first on PATH, and
    for a student the course directory on JUPYTER_CONFIG_PATH, so nbgrader's Assignment List
    and Validate read the course id and the exchange from the course's nbgrader_config.py."""
    env = with_interpreter_on_path(os.environ if base is None else base)
    if student_dir is not None:
        env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(
            p for p in [str(course_dir), env.get("JUPYTER_CONFIG_PATH", "")] if p)
    return env


def lab_command(student_dir=None, course_dir=ROOT, extra=()):
    """(argv, working directory, environment) of JupyterLab for the instructor or a student."""
    course_dir = Path(course_dir).resolve()
    if not (course_dir / "nbgrader_config.py").is_file():
        raise SystemExit(f"coursekit lab: {course_dir} has no nbgrader_config.py; pass --course DIR")
    folder = course_dir if student_dir is None else Path(student_dir).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    lab = shutil.which("jupyter-lab", path=interpreter_bin())
    argv = [lab] if lab else [sys.executable, "-m", "jupyterlab"]
    argv += [f"--ServerApp.root_dir={folder}", *extra]
    if os.geteuid() == 0 and "--allow-root" not in argv:
        argv.append("--allow-root")  # the README's set-up is as root; jupyter lab refuses it otherwise
    return argv, folder, environment(None if student_dir is None else folder, course_dir)


def run_lab(args, extra):
    argv, folder, env = lab_command(args.student, args.course, extra)
    os.chdir(folder)  # nbgrader's server extensions read nbgrader_config.py from here
    print(f"coursekit lab: {' '.join(argv)} (in {folder})", flush=True)
    os.execve(argv[0], argv, env)


def add_lab(subcommands):
    parser = subcommands.add_parser(
        "lab", help="start JupyterLab for this course (nbgrader's helpers on PATH)",
        description="Start JupyterLab with nbgrader's extensions for this course: in the course "
                    "directory for the instructor (formgrader), or in a student's folder with the "
                    "course's exchange (Assignment List, Validate). Arguments after -- go to "
                    "jupyter lab.")
    parser.add_argument("--student", metavar="DIR",
                        help="run as a student on this machine, working in DIR (created if missing)")
    parser.add_argument("--course", metavar="DIR", default=str(ROOT),
                        help="the course directory, holding nbgrader_config.py (default: %(default)s)")
    parser.set_defaults(run=run_lab)


def run_release_feedback(args, extra):
    """nbgrader release_feedback: each student's feedback into the exchange, where only they can
    find it (coursekit/permissions.py); they fetch it from the Assignment List."""
    command = [sys.executable, "-m", "nbgrader", "release_feedback", args.assignment, *extra]
    env = with_interpreter_on_path(os.environ)
    for student in [[f"--student={s}"] for s in args.student or ()] or [[]]:  # nbgrader takes one
        code = subprocess.run(command + student, cwd=Path(args.course).resolve(), env=env).returncode
        if code:
            return code
    return 0


def add_release_feedback(subcommands):
    parser = subcommands.add_parser(
        "release-feedback", help="nbgrader release_feedback: students fetch their own feedback",
        description="Put the feedback `coursekit feedback` wrote into the exchange (nbgrader "
                    "release_feedback), where each student fetches their own from the Assignment List.")
    parser.add_argument("assignment")
    parser.add_argument("--student", nargs="+", metavar="ID", help="only these students")
    parser.add_argument("--course", metavar="DIR", default=".", help="the nbgrader course directory")
    parser.set_defaults(run=run_release_feedback)


SUBCOMMANDS = [add_lab, add_autograde, add_feedback, add_release_feedback, add_export, add_report,
               add_roster, add_env, add_permissions]


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    parser = argparse.ArgumentParser(prog="coursekit", description=__doc__.splitlines()[0])
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subcommands)
    args = parser.parse_args(argv)
    return args.run(args, extra)


if __name__ == "__main__":
    sys.exit(main())
