"""What `coursekit autograde` says: each message once, on every path; and on Ctrl-C in its
terminal, one line that says how far it got and how to finish, no traceback, a non-zero exit (the
same command again finishes, and the gradebook is then a clean run's)."""

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from processes import stop_groups

from autograder.kernel import sandbox
from coursekit import autograde, catalogue, class_run, classroom, cli, grading, samples
from coursekit.course_dir import CourseDir
from coursekit.paths import interpreter_bin, with_interpreter_on_path

A = "01_simplified_self_attention"
COMMAND = [str(Path(interpreter_bin()) / "coursekit"), "autograde", A]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Three submissions (a job for the command's own process): the reference twice and a mistake."""
    course = grading.prepare(tmp_path_factory.mktemp("interrupt") / "course")
    release = samples.read(grading.release(course, A))
    mistake = catalogue.by_assignment(catalogue.MISTAKES, A)[0]
    subs = {"ada": classroom.build_submission(release), "bob": classroom.build_submission(release, mistake),
            "cy": classroom.build_submission(release)}
    for student, nb in subs.items():
        samples.write(nb, CourseDir(course).submitted_notebook(A, student))
    return course


def grades(course):
    from nbgrader.api import Gradebook

    with Gradebook(CourseDir(course).gradebook_url) as gb:
        return {(s.student.id, g.name): g.score for s in gb.assignment_submissions(A)
                for nb in s.notebooks for g in nb.grades}


def interrupt_once_one_is_recorded(course, timeout=120):
    """Start the command as a terminal would (its own process group), and Ctrl-C (SIGINT to the
    group) once the first submission is recorded -> (exit status, stdout, stderr)."""
    env = with_interpreter_on_path(os.environ)
    process = subprocess.Popen(COMMAND, cwd=course, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        markers = CourseDir(course).marker(A, "*")
        while not list(markers.parent.glob(markers.name)):
            assert process.poll() is None and time.monotonic() < deadline, "nothing was recorded"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        stop_groups([process])
    return process.returncode, out, err


def test_ctrl_c_says_in_one_line_how_far_it_got_and_the_same_command_finishes(course, tmp_path):
    clean = shutil.copytree(course, tmp_path / "clean", symlinks=True)
    autograde.autograde(clean, A, progress=False)
    status, out, err = interrupt_once_one_is_recorded(course)

    assert status != 0, out + err  # what it said when the Ctrl-C came too late (once in CI, beside the other lane)
    text = out + err
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    said = [line for line in re.split(r"[\r\n]", text) if "interrupted" in line]
    assert len(said) == 1, text
    done, total = map(int, re.search(r"(\d+) of (\d+) submissions", said[0]).groups())
    assert 1 <= done < total == 3 and "Run the same command again" in said[0]

    again = subprocess.run(COMMAND, cwd=course, env=with_interpreter_on_path(os.environ), capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"{3 - done} graded, {done} already graded (skipped)" in again.stdout
    assert grades(course) == grades(clean) and grades(clean)


def said(text):
    """The lines of a command's output that say something (not the progress bar or a rule)."""
    lines = [line.strip() for line in re.split(r"[\r\n]", text)]
    return [line for line in lines if line and "nb/s" not in line and "%|" not in line and set(line) != {"-"}]


def test_each_message_is_said_once(course, tmp_path, monkeypatch, capfd):
    """On a cluster (whose workers once each said the no-sandbox warning, twice), with a file
    that is not a notebook and a student with no submission; and where nbgrader finds nothing."""
    course = shutil.copytree(course, tmp_path / "course", symlinks=True)
    CourseDir(course).submitted_notebook(A, "bad").parent.mkdir(parents=True)
    CourseDir(course).submitted_notebook(A, "bad").write_text("not a notebook")
    monkeypatch.setenv("AUTOGRADER_NO_SANDBOX", "1")  # the warning every process used to say
    monkeypatch.setattr(sandbox, "_warned", False)  # whatever this test process said before
    monkeypatch.setattr(class_run, "in_process_max", lambda workers: 0)  # the embedded cluster
    sandbox.available.cache_clear()  # what this test process found before (a sandbox)
    try:
        status = cli.main(["autograde", A, "--course", str(course), "--student", "ada", "bad", "ghost",
                           "--workers", "2", "--force"])
    finally:
        sandbox.available.cache_clear()
    out, err = capfd.readouterr()
    lines = said(out + err)
    assert status == 1 and "on 2 workers" in out, out + err
    assert {line: lines.count(line) for line in lines if lines.count(line) > 1} == {}
    assert sum("no sandbox" in line for line in lines) == 1
    assert any(line.startswith("bad: ") for line in lines) and any(line.startswith("ghost: ") for line in lines)

    status = cli.main(["autograde", "02_trainable_self_attention", "--course", str(course)])
    out, err = capfd.readouterr()
    assert status == 2 and sum("No notebooks were matched" in line for line in said(out + err)) == 1, out + err
