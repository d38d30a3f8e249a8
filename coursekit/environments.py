"""The course's two environments, one per audience, and the students' nbgrader config.

    coursekit env student DIR [--exchange DIR]   # the students' virtualenv, with their config
    coursekit env config [--exchange DIR] [--to FILE]   # only the config (/etc/jupyter/...)

The instructor's environment is this project installed (`pip install -e .`): the grader, the
reference `solutions`, the hidden suites and stored outputs, `coursekit`. The students'
environment holds what a student's kernel and JupyterLab need (`student_env.toml`), pinned to the
versions installed here, and none of that. It never reads the course directory: the course's
own `nbgrader_config.py` imports the grader, so students get a config of their own, generated
from the course's (its course id and exchange, nothing else), in the environment's own Jupyter
config folder (`DIR/etc/jupyter`, which every Jupyter program started from DIR reads) or in
`/etc/jupyter` for every Jupyter on the machine.
"""

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from coursekit.paths import ROOT

SPEC = Path(__file__).with_name("student_env.toml")
PROJECT = "self-attention-course"  # this project's distribution name (pyproject.toml)
SYSTEM_CONFIG = Path("/etc/jupyter/nbgrader_config.py")
GRADER_PACKAGES = ("solutions", "autograder", "coursekit")  # never in the students' environment


@dataclass(frozen=True)
class StudentSpec:
    packages: tuple
    interpreter: str
    disabled_server_extensions: tuple
    disabled_lab_extensions: tuple


def student_spec(path=SPEC):
    data = tomllib.loads(Path(path).read_text())
    return StudentSpec(tuple(data["packages"]), data["interpreter"],
                       tuple(data["disabled_server_extensions"]), tuple(data["disabled_lab_extensions"]))


def _declared(name):
    """This project's requirement on `name` (pyproject.toml, extras included), or the bare name."""
    from packaging.requirements import Requirement

    for line in importlib.metadata.requires(PROJECT) or []:
        requirement = Requirement(line)
        if requirement.name.lower() == name.lower():
            return f"{requirement.name}{requirement.specifier}"
    return name


def pins(packages):
    """Each package at the version installed in this (the instructor's) environment; a package not
    installed here as this project declares it."""
    pinned = []
    for name in packages:
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(_declared(name))
    return pinned


def course_settings(course_dir=ROOT, exchange=None):
    """(course id, exchange root) as the course's nbgrader_config.py sets them, with
    COURSEKIT_EXCHANGE=`exchange` when given."""
    from traitlets.config.loader import PyFileConfigLoader

    saved = os.environ.get("COURSEKIT_EXCHANGE")
    if exchange is not None:
        os.environ["COURSEKIT_EXCHANGE"] = str(exchange)
    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    finally:
        if saved is None:
            os.environ.pop("COURSEKIT_EXCHANGE", None)
        else:
            os.environ["COURSEKIT_EXCHANGE"] = saved
    return config.CourseDirectory.course_id, config.Exchange.root


def student_config(course_dir=ROOT, exchange=None):
    """The text of the students' nbgrader_config.py: the course id and the exchange, no import."""
    course_id, root = course_settings(course_dir, exchange)
    return (f'"""Students\' nbgrader config, written by `coursekit env` from the course\'s own: the course id\n'
            f'and the exchange. It imports nothing: students cannot read the course directory."""\n\n'
            f"c = get_config()  # noqa: F821 - provided by nbgrader\n"
            f"c.CourseDirectory.course_id = {course_id!r}\n"
            f"c.Exchange.root = {str(root)!r}\n")


def write_student_config(to, course_dir=ROOT, exchange=None):
    to = Path(to)
    to.parent.mkdir(parents=True, exist_ok=True)
    to.write_text(student_config(course_dir, exchange))
    to.chmod(0o644)
    return to


def _run(argv):
    process = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed:\n{process.stdout[-3000:]}")


def compile_bytecode(folder):
    """Every module of the virtualenv in `folder` compiled by its own interpreter, on every core:
    students cannot write __pycache__ there, so without it each import would compile again.
    pip compiles one file at a time, after unpacking each wheel; this gives the same files
    sooner. A file this interpreter cannot compile stays uncompiled, as pip leaves it (torch
    ships one in Python 3.12's syntax); compileall then exits with 1, which is no failure."""
    folder = Path(folder)
    argv = [folder / "bin" / "python", "-m", "compileall", "-qq", "-j", "0", str(folder / "lib")]
    process = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(map(str, argv))} failed:\n{process.stdout[-3000:]}")


def build_student(folder, course_dir=ROOT, exchange=None, interpreter=None, spec=None):
    """The students' virtualenv in `folder`: made from an interpreter every account can run,
    the packages of student_env.toml at this environment's versions (their bytecode compiled),
    nbgrader's instructor-side extensions off, and the students' nbgrader config in
    folder/etc/jupyter. Readable by all."""
    spec = spec or student_spec()
    folder = Path(folder).resolve()
    interpreter = interpreter or spec.interpreter
    _run([interpreter, "-m", "venv", str(folder)])
    python, bin_dir = folder / "bin" / "python", folder / "bin"
    _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
          *pins(spec.packages)])
    compile_bytecode(folder)
    # One command per kind, each taking every extension: a Jupyter command takes seconds to start.
    if spec.disabled_server_extensions:
        _run([bin_dir / "jupyter", "server", "extension", "disable", "--sys-prefix",
              *spec.disabled_server_extensions])
    if spec.disabled_lab_extensions:
        for action in ("disable", "lock"):  # lock: no re-enabling
            _run([bin_dir / "jupyter", "labextension", action, "--level=sys_prefix", *spec.disabled_lab_extensions])
    write_student_config(folder / "etc" / "jupyter" / "nbgrader_config.py", course_dir, exchange)
    _run(["chmod", "-R", "a+rX", str(folder)])
    return folder


def run_env(args, extra=()):
    course = Path(args.course).resolve()
    try:
        if args.audience == "student":
            folder = build_student(args.folder, course, args.exchange, args.python)
            print(f"students' environment: {folder} (JupyterLab: {folder / 'bin' / 'jupyter-lab'})")
        else:
            print(f"students' nbgrader config: {write_student_config(args.to, course, args.exchange)}")
    except RuntimeError as error:
        print(f"coursekit env: {error}", file=sys.stderr)
        return 1
    return 0


def add_env(subcommands):
    parser = subcommands.add_parser(
        "env", help="build the students' environment, or write only their nbgrader config",
        description="Build the students' virtualenv (numpy, torch, matplotlib, nbgrader, JupyterLab at "
                    "this environment's versions; nothing of the grader), or write only the students' "
                    "nbgrader config. The instructor's environment is `pip install -e .` of the course.")
    audiences = parser.add_subparsers(dest="audience", required=True, metavar="WHAT")
    student = audiences.add_parser("student", help="the students' virtualenv in FOLDER")
    student.add_argument("folder", metavar="FOLDER", help="where to build it, e.g. /opt/self-attention-student")
    student.add_argument("--python", metavar="PATH",
                         help=f"the interpreter to build it from (default: {student_spec().interpreter})")
    config = audiences.add_parser("config", help="only the students' nbgrader_config.py")
    config.add_argument("--to", metavar="FILE", default=str(SYSTEM_CONFIG),
                        help="where to write it (default: %(default)s, read by every Jupyter on the machine)")
    for sub in (student, config):
        sub.add_argument("--exchange", metavar="DIR",
                         help="the exchange students and instructor share (default: the course's, "
                              "COURSEKIT_EXCHANGE or exchange/ beside the course)")
        sub.add_argument("--course", metavar="DIR", default=str(ROOT),
                         help="the course directory, holding nbgrader_config.py (default: %(default)s)")
    parser.set_defaults(run=run_env)
