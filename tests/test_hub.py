"""The course as courses really run: a JupyterHub with one Unix account per person.

The test makes three real accounts (an instructor and two students, removed afterwards, also on
failure), a course directory owned by the instructor, and the two environments the README
names: the students' (`coursekit env student`, built from Debian's interpreter) and the
instructor's (the course installed, `pip install -e`, beside the course: see
instructor_environment). `coursekit permissions` applies the
permission model. JupyterHub (with configurable-http-proxy from npm, `.ci/run` installs it)
serves on loopback and starts each student's server as that student, from the students'
environment.

One round: the instructor releases 01 (nbgrader, as the instructor); each student fetches it
through their server, completes it (one with the reference, one with the catalogue's first
mistake of 01), validates and submits it; the instructor collects, grades with `coursekit
autograde`, writes and releases feedback (`coursekit feedback`, `coursekit release-feedback`);
each student fetches their own feedback. Then each student tries to read what is not theirs:
the solutions, the stored outputs, the gradebook, source/ and submitted/, the exchange's
inbound and feedback folders, the classmate's home and fetched feedback, and to import
`solutions`, `autograder` or `coursekit` from the students' environment. Each must fail, while
the student's own files and the release stay readable.

Needs root (it makes accounts and runs the hub), Debian's /usr/bin/python3.11, and node.
"""

import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager, suppress
from pathlib import Path

import nbformat
import pytest
from processes import free_port, stop_groups
from unix_accounts import CALL_TIMEOUT, accounts, as_user, run

from autograder.steps import A01, steps_of
from coursekit import classroom, grading
from coursekit.catalogue import MISTAKES
from coursekit.environments import GRADER_PACKAGES, student_spec
from coursekit.paths import ROOT

SCRIPTS = Path(__file__).with_name("scripts")
PROXY = Path(sys.prefix) / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
COURSE_ID = "self-attention"
START_TIMEOUT = 180  # seconds for the hub, or a single-user server, to answer
BUILD_TIMEOUT = 1200  # seconds to build the students' environment (torch is unpacked: minutes)
# What the course directory holds besides the checkout's files: built or written by running it.
NOT_COPIED = (".venv", ".git", "__pycache__", "*.egg-info", "gradebook.db", "submitted", "autograded",
              "feedback", "exchange", ".ipynb_checkpoints", "work-run", "build")
STUDENTS = ("ada", "bob", "cy")  # ada and bob go through a round; cy works in the browser
MISTAKE = next(v for v in MISTAKES if v.assignment == A01 and v.graded and not v.transform)


def _need(condition, what):
    if not condition:
        pytest.fail(f"test_hub needs {what}", pytrace=False)


def instructor_environment(folder, course, students_env):
    """The instructor's environment: the course installed (`pip install -e`) in a virtualenv of
    Debian's interpreter. It starts as a hard-linked copy of the students' environment (the same
    packages at the same versions), so that torch is unpacked once per test, less the students'
    Jupyter config; pip adds the course and what only the grader needs. A virtualenv knows itself
    by the place of its pyvenv.cfg; the copied scripts' first lines still name the students'
    python, so the test runs nbgrader as `python -m nbgrader`. It lives beside the course, not in
    it: `coursekit permissions` gives the course's files to the instructor, and hard links would
    carry that to the students' copies."""
    run(["cp", "-al", str(students_env), str(folder)])
    shutil.rmtree(folder / "etc" / "jupyter")
    run([folder / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e",
         str(course)], timeout=BUILD_TIMEOUT)
    return folder


@pytest.fixture(scope="module")
def deployment():
    """Accounts, a course directory, both environments and the permission model, in a folder of
    /tmp every account can pass through (pytest's own temporary folders are root's alone)."""
    _need(os.geteuid() == 0, "root: it creates Unix accounts and runs JupyterHub as root")
    _need(os.access(student_spec().interpreter, os.X_OK), f"{student_spec().interpreter} (Debian's python3.11)")
    _need(PROXY.exists(), f"configurable-http-proxy at {PROXY} (.ci/run installs it with npm)")
    base = Path(tempfile.mkdtemp(prefix="coursekit-hub-", dir="/tmp"))
    base.chmod(0o755)
    timings = {}
    started = time.monotonic()
    try:
        with accounts("instructor", *STUDENTS) as users:
            course, exchange, students_env = base / "course", base / "exchange", base / "students-env"
            shutil.copytree(ROOT, course, ignore=shutil.ignore_patterns(*NOT_COPIED))
            coursekit = [sys.executable, "-m", "coursekit.cli"]
            run([*coursekit, "env", "student", students_env, "--course", course, "--exchange", exchange],
                timeout=BUILD_TIMEOUT)
            timings["students' environment"] = round(time.monotonic() - started, 1)
            venv = instructor_environment(base / "instructor-env", course, students_env)
            timings["instructor's environment"] = round(time.monotonic() - started, 1)
            run([venv / "bin" / "coursekit", "permissions", "--instructor", users["instructor"],
                 "--students", *(users[s] for s in STUDENTS), "--course", course, "--exchange", exchange])
            # The instructor releases 01, as the instructor, with the course's virtualenv.
            for argv in (["generate_assignment", A01, "--force"], ["release_assignment", A01]):
                as_user(users["instructor"], ["python", "-m", "nbgrader", *argv],
                        [venv / "bin"], cwd=course, extra_env=[f"COURSEKIT_EXCHANGE={exchange}"])
            timings["released"] = round(time.monotonic() - started, 1)
            yield dict(base=base, course=course, exchange=exchange, students_env=students_env, venv=venv,
                       users=users, timings=timings)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        print(f"\nhub deployment, seconds since start: {timings}")


class Hub:
    """A running JupyterHub and a client for its REST API and its users' servers."""

    def __init__(self, process, url, token, log):
        self.process, self.url, self.token, self.log = process, url, token, log

    def call(self, method, path, data=None, form=None, timeout=CALL_TIMEOUT):
        headers = {"Authorization": f"token {self.token}"}
        body = None
        if data is not None:
            body, headers["Content-Type"] = json.dumps(data).encode(), "application/json"
        elif form is not None:
            body = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def json(self, method, path, data=None, form=None, ok=(200, 201)):
        status, text = self.call(method, path, data, form)
        assert status in ok, f"{method} {path}: {status}\n{text[-2000:]}\n{self.tail()}"
        return json.loads(text) if text else None

    def tail(self):
        return "hub log:\n" + self.log.read_text()[-4000:] if self.log.exists() else ""

    def start_server(self, user):
        """Start `user`'s server and wait until the hub says it is ready."""
        self.json("POST", f"/hub/api/users/{user}/server", ok=(201, 202, 400))
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            server = self.json("GET", f"/hub/api/users/{user}")["servers"].get("", {})
            if server.get("ready"):
                return
            assert self.process.poll() is None, f"the hub exited\n{self.tail()}"
            assert time.monotonic() < deadline, f"{user}'s server not ready in {START_TIMEOUT} s: {server}\n{self.tail()}"
            time.sleep(0.5)


@contextmanager
def jupyterhub(deployment):
    """JupyterHub on a free loopback port, configured by tests/scripts/jupyterhub_config.py."""
    state = Path(tempfile.mkdtemp(prefix="hub-", dir=deployment["base"]))
    port, token = free_port(), secrets.token_hex(32)
    env = dict(os.environ, HUB_PORT=str(port), HUB_INTERNAL_PORT=str(free_port()),
               HUB_PROXY_API_PORT=str(free_port()), HUB_PROXY=str(PROXY), HUB_STATE=str(state),
               HUB_PASSWORD=secrets.token_hex(8), HUB_USERS=" ".join(deployment["users"].values()),
               HUB_STUDENT_ENV=str(deployment["students_env"]), HUB_START_TIMEOUT=str(START_TIMEOUT),
               HUB_API_TOKEN=token)
    log = state / "hub.log"
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(SCRIPTS / "jupyterhub_config.py")],
                                   cwd=state, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    hub = Hub(process, f"http://127.0.0.1:{port}", token, log)
    hub.password = env["HUB_PASSWORD"]
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert process.poll() is None, f"jupyterhub exited with {process.returncode}\n{hub.tail()}"
            with suppress(OSError):
                if hub.call("GET", "/hub/api/", timeout=5)[0] == 200:
                    break
            assert time.monotonic() < deadline, f"no answer from the hub in {START_TIMEOUT} s\n{hub.tail()}"
            time.sleep(0.3)
        yield hub
    finally:
        for user in deployment["users"].values():  # the hub stops its users' servers on request
            with suppress(Exception):
                hub.call("DELETE", f"/hub/api/users/{user}/server", timeout=30)
        stop_groups([process])
        for user in deployment["users"].values():  # anything a server left behind
            run(["pkill", "--signal", "KILL", "--uid", user], check=False)


def contents(user, path):
    """The Contents API's URL of `path` on `user`'s server (feedback folders' names hold spaces)."""
    return f"/user/{user}/api/contents/{urllib.parse.quote(str(path))}"


def _notebook(hub, user, path):
    return nbformat.from_dict(hub.json("GET", contents(user, path) + "?content=1&type=notebook")["content"])


def _text(hub, user, path):
    return hub.json("GET", contents(user, path) + "?content=1&format=text&type=file")["content"]


def reach(user, targets, deployment):
    """What `user` can reach of `targets`, as tests/scripts/reach.py says, run from the students'
    environment in the user's home."""
    script = deployment["base"] / "reach.py"
    if not script.exists():
        shutil.copy(SCRIPTS / "reach.py", script)
        script.chmod(0o644)
    bin_dir = deployment["students_env"] / "bin"
    output = as_user(user, [bin_dir / "python", script, *map(str, targets)], [bin_dir]).stdout
    return json.loads(output.strip().splitlines()[-1])


def test_a_class_round_on_jupyterhub_where_nobody_reads_what_is_not_theirs(deployment):
    course, exchange, users = deployment["course"], deployment["exchange"], deployment["users"]
    instructor, students = users["instructor"], {users["ada"]: None, users["bob"]: MISTAKE}
    bin_dirs = [deployment["venv"] / "bin"]
    teacher_env = [f"COURSEKIT_EXCHANGE={exchange}"]
    started, phases = time.monotonic(), {}

    def phase(name):
        phases[name] = round(time.monotonic() - started, 1)

    def instructor_runs(*argv):
        return as_user(instructor, argv, bin_dirs, cwd=course, extra_env=teacher_env)

    assert (exchange / COURSE_ID / "outbound" / A01 / f"{A01}.ipynb").is_file()  # released

    with jupyterhub(deployment) as hub:
        phase("hub up")
        for student in students:
            hub.start_server(student)
            # the students' environment has no Formgrader: its API is not there to answer
            assert hub.call("GET", f"/user/{student}/formgrader/api/assignments")[0] == 404
        phase("students' servers up")
        # Each student: fetch, complete, validate, submit, through their own server.
        for student, variant in students.items():
            listed = hub.json("GET", f"/user/{student}/assignments?course_id={COURSE_ID}")
            assert listed["success"], listed
            assert [a["assignment_id"] for a in listed["value"] if a["status"] == "released"] == [A01]
            reply = hub.json("POST", f"/user/{student}/assignments/fetch",
                             form={"course_id": COURSE_ID, "assignment_id": A01})
            assert reply["success"], reply
            path = f"{A01}/{A01}.ipynb"
            work = classroom.build_submission(_notebook(hub, student, path), variant)
            hub.json("PUT", contents(student, path),
                     data={"type": "notebook", "format": "json", "content": work})
            verdict = hub.json("POST", f"/user/{student}/assignments/validate", form={"path": path})
            assert verdict["success"], verdict
            if variant is None:  # the reference passes every visible check: nothing failed or changed
                assert verdict["value"] == {}, verdict
            reply = hub.json("POST", f"/user/{student}/assignments/submit",
                             form={"course_id": COURSE_ID, "assignment_id": A01})
            assert reply["success"], reply
        phase("fetched, validated, submitted")

        # The instructor: collect, grade, feedback, release it.
        instructor_runs("python", "-m", "nbgrader", "collect", A01)
        instructor_runs("coursekit", "autograde", A01, "--course", course)
        instructor_runs("coursekit", "feedback", A01, "--course", course)
        instructor_runs("coursekit", "release-feedback", A01, "--course", course)
        phase("collected, graded, feedback released")
        scores = grading.step_scores(course, [A01])
        full = {s.name: float(s.points) for s in steps_of(A01)}
        for student, variant in students.items():
            got = {step: float(points or 0) for step, points in scores[(student, A01)].items()}
            lost = {step for step in full if got[step] < full[step]}
            assert lost == set(variant.loses if variant else ()), (student, got)

        # Each student fetches their own feedback, and it is theirs.
        feedback = {}
        for student, variant in students.items():
            reply = hub.json("POST", f"/user/{student}/assignments/fetch_feedback",
                             form={"course_id": COURSE_ID, "assignment_id": A01})
            assert reply["success"], reply
            (stamp,) = hub.json("GET", contents(student, f"{A01}/feedback"))["content"]
            html = _text(hub, student, f"{stamp['path']}/{A01}.html")
            assert (MISTAKE.symptom in html) == (variant is MISTAKE), (student, MISTAKE.symptom)
            feedback[student] = Path(pwd.getpwnam(student).pw_dir) / stamp["path"] / f"{A01}.html"
        phase("feedback fetched")

    # Each student tries everything that is not theirs; their own files are the control.
    closed = [course / "solutions" / "simplified_self_attention.py",
              course / "autograder" / "fixtures" / "stored" / "softmax.npz",
              course / "gradebook.db", course / "source", course / "submitted", course / "autograded",
              course / "nbgrader_config.py", exchange / COURSE_ID / "inbound", exchange / COURSE_ID / "feedback",
              *(f"import:{name}" for name in GRADER_PACKAGES)]
    for student in students:
        (classmate,) = set(students) - {student}
        home = Path(pwd.getpwnam(classmate).pw_dir)
        theirs = [home, feedback[classmate], home / ".local" / "share" / "jupyter" / "nbgrader_cache"]
        for path in [*closed, *theirs]:
            assert str(path).startswith("import:") or os.path.exists(path), f"{path} should exist"
        own = [feedback[student], Path(pwd.getpwnam(student).pw_dir) / A01 / f"{A01}.ipynb",
               exchange / COURSE_ID / "outbound" / A01 / f"{A01}.ipynb", "import:torch", "import:nbgrader"]
        answers = reach(student, [*closed, *theirs, *own], deployment)
        readable = [target for target in [*closed, *theirs] if answers[str(target)] == "read"]
        assert not readable, f"{student} can read {readable}"
        assert all(answers[str(target)] == "read" for target in own), answers
    phase("trespassing tried")
    print(f"\nhub round, seconds since start: {phases}")



def test_a_student_logs_in_through_the_hub_and_validates_in_chromium(deployment, tmp_path):
    """cy logs in on the hub's login page, which starts her server; she fetches 01 (Assignment
    List), her work is the reference (written through her server's Contents API, as pasting it
    would), and in JupyterLab she runs every cell and clicks Validate: it passes."""
    from test_browser import chromium, open_notebook, run_everything, validate, write_lab_settings

    student = deployment["users"]["cy"]
    settings = Path(pwd.getpwnam(student).pw_dir) / ".jupyter"  # hers: every cell in the page, no news
    write_lab_settings(settings / "lab" / "user-settings")
    run(["chown", "-R", f"{student}:", settings])
    with jupyterhub(deployment) as hub, chromium(tmp_path / "chromium-profile") as browser:
        page = browser.new_page()
        page.goto(f"{hub.url}/hub/login")
        page.locator("input#username_input").fill(student)
        page.locator("input#password_input").fill(hub.password)
        page.locator("#login_submit").click()
        page.wait_for_url(f"**/user/{student}/lab**", timeout=START_TIMEOUT * 1000)  # her server runs
        reply = hub.json("POST", f"/user/{student}/assignments/fetch",
                         form={"course_id": COURSE_ID, "assignment_id": A01})
        assert reply["success"], reply
        path = f"{A01}/{A01}.ipynb"
        hub.json("PUT", contents(student, path), data={
            "type": "notebook", "format": "json",
            "content": classroom.build_submission(_notebook(hub, student, path))})
        open_notebook(page, f"{hub.url}/user/{student}/lab/workspaces/hub/tree/{path}")
        run_everything(page)
        title, verdict = validate(page)
        assert "Success" in verdict and "failed" not in verdict.lower(), (title, verdict[:2000])


# --- the pieces, each on its own (no accounts, no hub) -------------------------------------------

def test_coursekit_lab_passes_allow_root_to_jupyterlab_only_as_root(monkeypatch):
    from coursekit import cli

    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    assert cli.lab_command(extra=["--no-browser"])[0].count("--allow-root") == 1
    assert cli.lab_command(extra=["--allow-root"])[0].count("--allow-root") == 1
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    assert "--allow-root" not in cli.lab_command(extra=["--no-browser"])[0]


def test_students_config_holds_the_course_id_and_exchange_and_imports_nothing(tmp_path):
    import ast

    from traitlets.config import Config

    from coursekit import environments

    text = environments.student_config(ROOT, tmp_path / "exchange")
    assert not [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Import | ast.ImportFrom)]
    config = Config()
    exec(text, {"get_config": lambda: config})
    assert (config.CourseDirectory.course_id, config.Exchange.root) == (COURSE_ID, str(tmp_path / "exchange"))


def test_the_students_environment_is_compiled_but_for_what_its_interpreter_cannot_compile(tmp_path):
    """`coursekit env student` installs without pip's compiling and compiles afterwards, on every
    core: every module gets its .pyc (students cannot write __pycache__ there), while a file in a
    later Python's syntax stays uncompiled, as pip leaves it (torch ships one), and fails nothing."""
    from coursekit.environments import compile_bytecode

    folder = tmp_path / "env"
    run([sys.executable, "-m", "venv", "--without-pip", folder])
    (site,) = folder.glob("lib/python3.*/site-packages")
    (site / "plain.py").write_text("VALUE = 1\n")
    (site / "later.py").write_text("def identity[T](x: T) -> T:\n    return x\n")  # Python 3.12's syntax
    compile_bytecode(folder)
    assert {path.name.split(".")[0] for path in (site / "__pycache__").glob("*.pyc")} == {"plain"}


def test_permissions_refuse_an_exchange_inside_the_course_and_change_nothing(tmp_path, monkeypatch):
    from coursekit import permissions

    monkeypatch.delenv("COURSEKIT_EXCHANGE", raising=False)
    course = grading.prepare(tmp_path / "course")
    before = course.stat()
    (problem,) = permissions.apply(course, "root")  # no --exchange: exchange/ beside the config
    assert "inside the course directory" in problem
    after = course.stat()
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)


def test_permissions_name_an_interpreter_the_instructor_cannot_run():
    from coursekit.permissions import Account, problems

    base = Path(tempfile.mkdtemp(prefix="coursekit-perm-", dir="/tmp"))
    try:
        base.chmod(0o755)
        (base / "course").mkdir(mode=0o755)
        python = base / "private" / "bin" / "python3"
        python.parent.mkdir(parents=True)
        python.write_text("")
        python.chmod(0o755)
        (base / "private").chmod(0o700)
        nobody = Account("nobody", 65534, 65534, Path("/nonexistent"), frozenset({65534}))
        assert problems(base / "course", nobody, student_spec().interpreter) == []
        (problem,) = problems(base / "course", nobody, python)
        assert str(python) in problem
    finally:
        shutil.rmtree(base)


def test_students_packages_are_pinned_to_the_instructors_versions_and_hold_no_grader():
    import importlib.metadata

    from coursekit.environments import pins

    spec = student_spec()
    assert pins(["numpy", "torch"]) == [f"numpy=={importlib.metadata.version('numpy')}",
                                        f"torch=={importlib.metadata.version('torch')}"]
    assert not set(spec.packages) & {*GRADER_PACKAGES, "self-attention-course"}
