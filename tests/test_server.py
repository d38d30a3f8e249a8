"""The course as it runs: `coursekit lab` for the instructor and for a student on one machine.

Two real Jupyter servers with nbgrader's extensions, on 127.0.0.1 with token auth, each in its
own temporary folder, sharing a temporary exchange. One student goes through the whole round
with nbgrader's own web APIs, the ones its JupyterLab panels call: the instructor generates and
releases assignment 01 (formgrader), the student fetches it (Assignment List), completes it
with the reference and submits it, the instructor collects and autogrades it (formgrader), and
the score is full. The formgrader's assignments API answers with JSON.
"""

import getpass
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from processes import free_port, stop_groups

from autograder.steps import A01, steps_of
from coursekit import grading, samples

START_TIMEOUT = 60  # seconds for a server to answer
CALL_TIMEOUT = 120  # seconds for one API call (autograde is the slowest)
COURSE_ID = "self-attention"


def coursekit_command():
    script = Path(sys.executable).with_name("coursekit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "coursekit.cli"]


class Server:
    """A running `coursekit lab` and a small client for its REST API."""

    def __init__(self, process, url, token, log):
        self.process, self.url, self.token, self.log = process, url, token, log

    def call(self, method, path, data=None, timeout=CALL_TIMEOUT):
        body = None if data is None else urllib.parse.urlencode(data).encode()
        request = urllib.request.Request(self.url + path, data=body, method=method,
                                         headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type", ""), error.read().decode()

    def json(self, method, path, data=None):
        status, _, text = self.call(method, path, data)
        assert status == 200, f"{method} {path}: {status}\n{text[-2000:]}\n{self.tail()}"
        return json.loads(text)

    def tail(self):
        return "server log:\n" + self.log.read_text()[-3000:] if self.log.exists() else ""


def start_lab(course, env, log, student=None):
    """`coursekit lab` on a free loopback port with a random token, not yet waited for."""
    port, token = free_port(), os.urandom(16).hex()
    command = coursekit_command() + ["lab", "--course", str(course)]
    if student is not None:
        command += ["--student", str(student)]
    command += ["--", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        command.append("--allow-root")  # CI runs as root
    with open(log, "w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    return Server(process, f"http://127.0.0.1:{port}", token, Path(log))


def wait_ready(server, timeout=START_TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        assert server.process.poll() is None, (
            f"coursekit lab exited with {server.process.returncode}\n{server.tail()}")
        try:
            if server.call("GET", "/api/status", timeout=5)[0] == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"no answer in {timeout} s\n{server.tail()}"
        time.sleep(0.3)


def stop(*servers):
    """Each server and every kernel in its session: SIGTERM to all, then SIGKILL what is left."""
    stop_groups([server.process for server in servers])


@contextmanager
def labs(*specs):
    """Start every `coursekit lab` at once, wait until all answer, always shut all down."""
    servers = []
    try:
        for spec in specs:
            servers.append(start_lab(**spec))
        for server in servers:
            wait_ready(server)
        yield servers
    finally:
        stop(*servers)


@pytest.fixture
def machine(tmp_path):
    """A course, a student's folder and an exchange, all temporary, and the environment both
    servers run in (their own Jupyter runtime and data folders)."""
    course = grading.prepare(tmp_path / "course")
    env = dict(os.environ, COURSEKIT_EXCHANGE=str(tmp_path / "exchange"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"),
               MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
    # What the server must find on its own: `coursekit lab` puts the interpreter's bin first.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != Path(sys.executable).parent.resolve()) or "/usr/bin:/bin"
    return course, tmp_path / "student", env


def test_one_student_round_through_nbgrader_on_one_machine(machine, tmp_path):
    course, student_dir, env = machine
    student = getpass.getuser()
    started = time.monotonic()
    phases = {}

    def phase(name):
        phases[name] = round(time.monotonic() - started, 1)

    with labs(dict(course=course, env=env, log=tmp_path / "instructor.log"),
              dict(course=course, env=env, log=tmp_path / "student.log", student=student_dir)) as (instructor, learner):
        phase("servers up")
        # the instructor: generate and release (formgrader)
        for action in ("assign", "release"):
            reply = instructor.json("POST", f"/formgrader/api/assignment/{A01}/{action}")
            assert reply["success"], (action, reply)
        assert (tmp_path / "exchange" / COURSE_ID / "outbound" / A01).is_dir()
        phase("released")

        # the student: list, fetch, complete, submit (Assignment List)
        released = learner.json("GET", f"/assignments?course_id={COURSE_ID}")
        assert released["success"], released
        assert [a["assignment_id"] for a in released["value"] if a["status"] == "released"] == [A01]
        reply = learner.json("POST", "/assignments/fetch", {"course_id": COURSE_ID, "assignment_id": A01})
        assert reply["success"], reply
        notebook = student_dir / A01 / f"{A01}.ipynb"
        samples.write(samples.complete(samples.read(notebook)), notebook)
        reply = learner.json("POST", "/assignments/submit", {"course_id": COURSE_ID, "assignment_id": A01})
        assert reply["success"], reply
        phase("fetched and submitted")

        # the instructor: collect and autograde (formgrader)
        reply = instructor.json("POST", f"/formgrader/api/assignment/{A01}/collect")
        assert reply["success"], reply
        assert (course / "submitted" / student / A01 / f"{A01}.ipynb").exists()
        reply = instructor.json("POST", f"/formgrader/api/submission/{A01}/{student}/autograde")
        assert reply["success"], reply.get("log", reply)
        phase("collected and autograded")
        submission = instructor.json("GET", f"/formgrader/api/submission/{A01}/{student}")
        full = sum(step.points for step in steps_of(A01))
        assert (submission["score"], submission["max_score"]) == (full, full), submission

        # nbgrader sends its JSON as text/html: what counts is that it parses
        status, _, text = instructor.call("GET", "/formgrader/api/assignments")
        assert status == 200, (status, text[-2000:])
        assert A01 in [a["name"] for a in json.loads(text)]
    phase("stopped")
    print(f"one student's round through two servers, seconds since start: {phases}")
