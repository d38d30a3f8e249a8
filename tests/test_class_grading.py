"""`coursekit autograde` (coursekit/autograde.py) against plain `nbgrader autograde`.

One released course (assignment 01) and one small class: the reference, the untouched release,
a mistake, a hostile submission and a file that is no notebook. Each test grades a copy of that
course directory:

- the command and `nbgrader autograde` give the same score in every grade cell, the same
  comments and the same autograded notebooks (execution timestamps aside), and fail the same
  submission;
- a real `dask scheduler` and two `dask worker` processes on 127.0.0.1 grade the class through
  `--scheduler` and the grades are the local run's, although the first worker is killed
  (SIGKILL) while it holds a submission: the scheduler gives its work to the second;
- a run stopped after k recorded submissions (as if the driver was killed) is finished by a
  second run that grades only the rest and leaves the first k as they were;
- after `nbgrader autograde`, the command grades only what nbgrader left undone: a notebook it
  was killed in the middle of, a submission newer than its grading, the one it failed; and a
  driver killed while it recorded grades leaves that submission to be graded again;
- the console script exits non-zero and names a submission that is not JSON, and why;
- links to a root-only file and to /dev/zero and a FIFO in a submission folder are never
  followed on either path: nothing of them lands in autograded/ or feedback/, and the
  instructor's flags and the student's feedback say what was dropped (coursekit/intake.py);
- a submission folder larger than 64 MiB is graded (a local worker reads it from autograded/);
- a submission that could not be graded (no notebook; the notebook of another assignment, from
  a student whose id is a spreadsheet formula) is blank with its reason in every CSV written
  from the command line, in the table and on a feedback page; `coursekit export` outside a
  course says so and creates nothing;
- `coursekit export`'s three CSVs agree with the gradebook (Canvas's columns included).

The local runs share one embedded cluster (`Cluster`), so its workers start once.
"""

import csv
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from graded_courses import autograded, copy_course
from processes import free_port, stop_groups

from autograder.steps import A03, STEPS, steps_of
from coursekit import autograde, catalogue, classroom, exports, grading, results_table, resume, samples
from coursekit.cluster import Cluster
from coursekit.course_dir import CourseDir
from coursekit.paths import interpreter_bin, released_notebook, with_interpreter_on_path

A = "01_simplified_self_attention"
NOT_JSON = "not-json-file"
WRONG = "=2+3"  # hands in assignment 03's notebook; the id is a formula in a spreadsheet
UNGRADABLE = sorted([NOT_JSON, WRONG])
DUE, AFTER_DUE = "2026-11-20 09:00:00 UTC", "2026-11-21 09:00:00.000000 UTC"
LATE = "patch-np-allclose"  # the hostile submission, handed in a day late
DELETED = "softmax"  # the reference's student deleted this step's graded cell
BIG = 65 * 1024**2  # a data file in the untouched student's folder: over the 64 MiB that once stopped a worker
LINKED = {"secret.txt": "symbolic link", "zeros.npy": "symbolic link", "pipe": "FIFO"}  # in the mistake's folder
# and a timestamp.txt nbgrader cannot parse, which made nbgrader's autograde fail the submission (red-team round r33)
DROPPED = {**LINKED, "timestamp.txt": "not a time nbgrader can read"}
BIN = Path(interpreter_bin())


@pytest.fixture(scope="module")
def secret(tmp_path_factory):
    """A root-only file (as /etc/shadow is) whose text must never reach a student."""
    path = tmp_path_factory.mktemp("root-only") / "shadow"
    path.write_text("root:TOP-SECRET-HASH:19000:0:99999:7:::\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def submitted(tmp_path_factory, secret):
    """A course with assignment 01 released and the class under submitted/ (not graded). The
    reference's student deleted softmax's graded cell (nbgrader puts it back); LATE handed in
    after the due date, with nbgrader's own late penalty on ("zero": a late submission scores 0)."""
    course = grading.prepare(tmp_path_factory.mktemp("class") / "course")
    with (course / "nbgrader_config.py").open("a") as config:
        config.write('\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    release = samples.read(grading.release(course, A))
    code, output = grading._nbgrader(course, "db", "assignment", "add", A, f"--duedate={DUE}")
    assert code == 0, output
    mistake = catalogue.by_assignment(catalogue.MISTAKES, A)[0]
    hostile = next(v for v in catalogue.by_assignment(catalogue.HOSTILE, A) if v.id == "patch-np-allclose")
    deleted = catalogue.transform(f"drop_grade_cell {DELETED}")(classroom.build_submission(release))
    subs = {"reference": deleted, "untouched": release,
            mistake.id: classroom.build_submission(release, mistake),
            hostile.id: classroom.build_submission(release, hostile),
            NOT_JSON: b"this is not a notebook", WRONG: released_notebook(A03).read_bytes()}
    for student, nb in subs.items():
        samples.write(nb, CourseDir(course).submitted_notebook(A, student))
    (CourseDir(course).submitted_notebook(A, LATE).parent / "timestamp.txt").write_text(AFTER_DUE)
    (CourseDir(course).submitted_notebook(A, "untouched").parent / "weights.bin").write_bytes(b"\0" * BIG)
    folder = CourseDir(course).submitted_notebook(A, mistake.id).parent
    os.symlink(secret, folder / "secret.txt")
    os.symlink("/dev/zero", folder / "zeros.npy")
    os.mkfifo(folder / "pipe")
    (folder / "timestamp.txt").write_text("not a date")
    return course


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(workers=2)
    yield cluster
    cluster.close()


@pytest.fixture(scope="module")
def local_run(submitted, cluster, tmp_path_factory):
    course = copy_course(submitted, tmp_path_factory.mktemp("local"), "course")
    return course, autograde.autograde(course, A, cluster=cluster, progress=False)


@pytest.fixture(scope="module")
def plain_run(submitted, tmp_path_factory):
    course = copy_course(submitted, tmp_path_factory.mktemp("plain"), "course")
    code, output = grading._nbgrader(course, "autograde", A)
    return course, code, output


def test_the_command_grades_as_nbgrader_does(local_run, plain_run):
    course, report = local_run
    plain_course, code, output = plain_run
    assert code == 1  # nbgrader too fails the file that is no notebook, and says so
    assert f"There was an error processing assignment '{A}' for student '{NOT_JSON}'" in output
    assert sorted(o.student for o in report.failed) == UNGRADABLE
    problems = {o.student: o.problem for o in report.failed}
    assert "is not a notebook" in problems[NOT_JSON]
    assert "the notebook of another assignment (03_causal_attention)" in problems[WRONG]
    ours, theirs = grading.gradebook_contents(course, A), grading.gradebook_contents(plain_course, A)
    assert len(ours) > 5 * len(steps_of(A))
    assert ours == theirs
    ours, theirs = autograded(course), autograded(plain_course)
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == 6  # the four notebooks, LATE's timestamp.txt, the big file; nothing of the two that failed
    assert len(ours[f"autograded/untouched/{A}/weights.bin"]) == BIG  # graded with it, on a local worker
    for path in ours:
        assert ours[path] == theirs[path], path
    scores = grading.step_scores(course)
    assert scores[("reference", A)] == {s.name: s.points for s in steps_of(A)}  # its deleted cell too
    assert sum(scores[("untouched", A)].values()) == 0


def test_a_deleted_graded_cell_is_restored_and_graded_on_both_paths(local_run, plain_run):
    from coursekit import standing

    for course in (local_run[0], plain_run[0]):
        assert grading.step_scores(course)[("reference", A)][DELETED] == STEPS[DELETED].points
        report = standing.reports(course, A, "reference")[DELETED]
        assert "[passed]" in report and "FAILED" not in report
        assert standing.standing(course, A, "reference").flags == [
            f"{DELETED}: its graded cell was deleted; restored from the release and graded"]


def _coursekit(course, *args):
    return subprocess.run([str(BIN / "coursekit"), *args], cwd=course, env=with_interpreter_on_path(os.environ),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def exported(local_run):
    """`coursekit export` and `coursekit feedback`, from the command line, after the local run."""
    course, _ = local_run
    result = _coursekit(course, "export", "--canvas-id", f"{A}=4711")
    assert result.returncode == 0, result.stdout + result.stderr
    feedback = _coursekit(course, "feedback", A)
    assert feedback.returncode == 0, feedback.stdout + feedback.stderr
    return course, feedback.stdout


def test_exports_for_nbgrader_and_canvas(exported):
    course, _ = exported
    grades, steps, canvas = (course / name for name in ("grades.csv", "step_scores.csv", "canvas_grades.csv"))
    maximum = sum(s.points for s in steps_of(A))
    by_student = {row["student_id"]: row for row in csv.DictReader(grades.open())}
    assert float(by_student["reference"]["score"]) == maximum
    step_rows = [r for r in csv.DictReader(steps.open()) if r["student"] == "reference"]
    assert [r["step"] for r in step_rows] == [s.name for s in steps_of(A)]
    rows = list(csv.reader(canvas.open()))
    assert rows[0] == exports.CANVAS_IDENTITY + [f"{A} (4711)"]
    assert rows[1][0].strip() == "Points Possible" and float(rows[1][5]) == maximum
    by_sis_id = {row[2]: row for row in rows[2:]}
    assert float(by_sis_id["reference"][5]) == maximum and float(by_sis_id["untouched"][5]) == 0
    assert {sid: row[5] and float(row[5]) for sid, row in by_sis_id.items()} == {
        sid: row["score"] and float(row["score"]) for sid, row in by_student.items()}


def test_a_submission_that_could_not_be_graded_is_never_a_score(exported, local_run):
    course, feedback_output = exported
    quoted = "'" + WRONG  # a formula-looking id is text in every CSV (OWASP)
    grades = {row["student_id"]: row for row in csv.DictReader((course / "grades.csv").open())}
    steps = [row for row in csv.DictReader((course / "step_scores.csv").open())]
    canvas = {row[2]: row for row in csv.reader((course / "canvas_grades.csv").open())}
    reasons = {NOT_JSON: "is not a notebook", WRONG: "another assignment (03_causal_attention)"}
    for student, reason in reasons.items():
        shown = quoted if student == WRONG else student
        assert grades[shown]["raw_score"] == grades[shown]["score"] == "" and reason in grades[shown]["flags"]
        theirs = [row for row in steps if row["student"] == shown]
        assert len(theirs) == len(steps_of(A))
        assert all(row["points"] == "" and reason in row["flags"] for row in theirs)
        assert canvas[shown][0] == shown and canvas[shown][5] == ""
        page = (course / "feedback" / student / A / f"{A}.html").read_text()
        assert reason in page and "What you can do" in page
        assert f"{student}: not graded" in feedback_output
    assert WRONG not in {row[0] for row in canvas.values()}  # never unquoted
    table = results_table.summary(CourseDir(course).gradebook_url, local_run[1], course)
    for student, reason in reasons.items():
        row = next(line for line in table.splitlines() if line.startswith(student + " "))
        assert "not graded" in row and "/12" not in row
        assert f"  {student}: " in table.split("Could not be graded", 1)[1] and reason in table


def test_late_work_scores_the_same_in_the_table_every_csv_and_the_feedback(exported, local_run):
    """nbgrader's due date and late penalty ("zero"): LATE's score is 0 everywhere, its raw score kept."""
    course, _ = exported
    raw = sum(grading.step_scores(course)[(LATE, A)].values())
    assert raw > 0 and grading.late_penalties(CourseDir(course).gradebook_url, A)[LATE] == raw
    assert grading.late_penalties(CourseDir(course).gradebook_url, A)["reference"] == 0
    grades = {row["student_id"]: row for row in csv.DictReader((course / "grades.csv").open())}[LATE]
    assert (float(grades["raw_score"]), float(grades["late_submission_penalty"]), float(grades["score"])) == (
        raw, raw, 0.0)
    steps = [row for row in csv.DictReader((course / "step_scores.csv").open()) if row["student"] == LATE]
    assert {float(row["late_penalty"]) for row in steps} == {raw} and all("late" in row["flags"] for row in steps)
    canvas = {row[2]: row for row in csv.reader((course / "canvas_grades.csv").open())}
    assert float(canvas[LATE][5]) == 0
    table = results_table.summary(CourseDir(course).gradebook_url, local_run[1], course)
    row = next(line for line in table.splitlines() if line.startswith(LATE + " "))
    assert f"0/12 (late -{raw:g})" in row
    page = (course / "feedback" / LATE / A / f"{A}.html").read_text()
    assert "(Score: 0.0 / 12.0)" in page and "Late submission penalty" in page


def test_links_in_a_submission_are_never_followed_on_either_path(exported, plain_run, secret):
    """A link to a root-only file, a link to /dev/zero and a FIFO, in the mistake's folder: both
    runs ended (the fixtures returned), nothing of the targets reached autograded/ or feedback/,
    and the instructor and the student are told what was dropped. Its timestamp.txt, which is no
    time, is dropped too, and the submission is graded on both paths."""
    from coursekit import intake, standing

    mistake = catalogue.by_assignment(catalogue.MISTAKES, A)[0].id
    text = secret.read_bytes()
    for course in (exported[0], plain_run[0]):
        dropped = {d.path: d.reason for d in intake.recorded(course, A, mistake)}
        assert dropped.keys() == DROPPED.keys(), dropped
        assert all(DROPPED[name] in reason for name, reason in dropped.items())
        assert standing.standing(course, A, mistake).graded
        assert set(standing.standing(course, A, mistake).flags) >= {f"file dropped: {n} ({r})"
                                                                    for n, r in dropped.items()}
        for folder in ("autograded", "feedback"):
            for path in (course / folder).rglob("*"):
                assert not path.is_symlink() and path.name not in LINKED, path
                if path.is_file():
                    assert b"TOP-SECRET" not in path.read_bytes(), path
    page = (exported[0] / "feedback" / mistake / A / f"{A}.html").read_text()
    assert "Left out of your submission" in page and "secret" in page
    assert text.decode() not in page


def test_export_outside_a_course_says_so_and_creates_nothing(tmp_path):
    result = _coursekit(tmp_path, "export")
    assert result.returncode == 2 and "not a graded course directory" in result.stderr
    assert list(tmp_path.iterdir()) == []


PRELOADS = Path(__file__).with_name("preloads")


def test_a_real_scheduler_and_two_workers_grade_as_the_local_run(local_run, submitted, tmp_path):
    """...with a worker lost mid-task. The class is sent to worker-1 alone; once it holds a
    submission, worker-2 is started and worker-1 killed (SIGKILL, nanny and all): the scheduler
    gives what worker-1 held to worker-2, and the grades are the local run's. (worker-2 joins
    only then so that the scheduler cannot give it every submission before worker-1 has one.)"""
    import threading
    import time

    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = with_interpreter_on_path(os.environ)
    logs = tmp_path / "dask"
    logs.mkdir()
    holding = tmp_path / "worker-1-holds.json"
    env["LOSE_A_TASK_HOLDING"] = str(holding)  # where worker-1's preload says what it holds
    processes = {}

    def start(name, *args):
        log = (logs / f"{name}.log").open("wb")
        processes[name] = subprocess.Popen([str(BIN / "dask"), *args], cwd=logs, env=env, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True)

    def start_worker(name, *args):
        start(name, "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
              "--host", "127.0.0.1", "--name", name, "--memory-limit", "0", *args)

    killed, done = {}, threading.Event()

    def lose_worker_1_once_it_holds_a_task():
        victim = processes["worker-1"]
        while not done.is_set():
            if holding.exists():
                held = json.loads(holding.read_text())
                start_worker("worker-2")
                killed["group_of_task"] = os.getpgid(held["pid"])  # the task's process is alive here
                os.killpg(victim.pid, signal.SIGKILL)
                killed.update(held, code=victim.wait(timeout=30), at=time.monotonic())
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=lose_worker_1_once_it_holds_a_task, daemon=True)
    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        start_worker("worker-1", "--preload", str(PRELOADS / "lose_a_task.py"))
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(1, timeout=120)
        course = copy_course(submitted, tmp_path, "course")
        watcher.start()
        report = autograde.autograde(course, A, scheduler=address, progress=False)
        finished = time.monotonic()
    finally:
        done.set()
        if watcher.is_alive():
            watcher.join(timeout=60)
        stop_groups(list(processes.values()))
    # worker-1 took a submission and was killed while its task ran (its process group, the
    # task's process in it) before the class was graded; worker-2 graded everything.
    assert killed, "worker-1 never started a grading task"
    assert killed["code"] == -signal.SIGKILL and killed["group_of_task"] == processes["worker-1"].pid
    assert killed["at"] < finished
    by_student = {o.student: o for o in report.outcomes}
    lost = by_student[killed["student"]]
    assert lost.ok and lost.worker and lost.worker != killed["worker"], (lost, killed)
    assert sorted(o.student for o in report.failed) == UNGRADABLE
    assert {o.worker for o in report.outcomes if o.ok} == {lost.worker}  # worker-1 finished none
    assert grading.gradebook_contents(course, A) == grading.gradebook_contents(local_run[0], A)
    assert autograded(course) == autograded(local_run[0])


def test_the_workers_exit_without_tearing_their_interpreter_down(cluster):
    """`coursekit/quick_exit.py`; what the plugin does at a worker's end: tests/test_quick_exit.py."""
    plugins = cluster.client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert plugins and all("coursekit-quick-exit" in names for names in plugins.values()), plugins


def test_a_second_run_grades_only_what_the_first_left(local_run, submitted, cluster, tmp_path, monkeypatch):
    course = copy_course(submitted, tmp_path, "course")
    write_marker, done = resume.write_marker, []

    def interrupted_after_two(course_dir, assignment, student, notebooks):
        write_marker(course_dir, assignment, student, notebooks)
        done.append(student)
        if len(done) == 2:
            raise KeyboardInterrupt("Ctrl-C once two submissions are recorded")

    monkeypatch.setattr(resume, "write_marker", interrupted_after_two)
    with pytest.raises(KeyboardInterrupt):
        autograde.autograde(course, A, cluster=cluster, progress=False)
    monkeypatch.setattr(resume, "write_marker", write_marker)
    assert len(done) == 2
    kept = {s: ((course / "autograded" / s / A / f"{A}.ipynb").read_bytes(),
                (course / "autograded" / s / A / f"{A}.ipynb").stat().st_mtime_ns,
                CourseDir(course).marker(A, s).read_bytes()) for s in done}
    recorded = {k: v for k, v in grading.gradebook_contents(course, A).items() if k[0] in done}

    second = autograde.autograde(course, A, cluster=cluster, progress=False)
    assert sorted(second.skipped) == sorted(done)
    everyone = {p.name for p in (course / "submitted").iterdir()}
    assert sorted(o.student for o in second.outcomes) == sorted(everyone - set(done))
    for student, (content, mtime, marker) in kept.items():
        path = course / "autograded" / student / A / f"{A}.ipynb"
        assert (path.read_bytes(), path.stat().st_mtime_ns) == (content, mtime)
        assert CourseDir(course).marker(A, student).read_bytes() == marker
    assert {k: v for k, v in grading.gradebook_contents(course, A).items() if k[0] in done} == recorded
    assert grading.gradebook_contents(course, A) == grading.gradebook_contents(local_run[0], A)
    assert autograded(course) == autograded(local_run[0])

    third = autograde.autograde(course, A, cluster=cluster, progress=False)  # only the failure is left
    assert sorted(o.student for o in third.outcomes) == UNGRADABLE and len(third.skipped) == 4

    # nothing left to grade: no cluster is started (it would cost seconds to start and stop)
    def no_cluster(*args):
        raise AssertionError("a cluster was started with nothing to grade")

    monkeypatch.setattr(autograde, "StartingCluster", no_cluster)
    fourth = autograde.autograde(course, A, students=sorted(everyone - set(UNGRADABLE)), progress=False)
    assert len(fourth.skipped) == 4 and not fourth.outcomes


def test_the_command_finishes_what_nbgrader_autograde_started(plain_run, local_run, cluster, tmp_path):
    """What `nbgrader autograde` recorded is kept; what it left half done is graded again."""
    course = copy_course(plain_run[0], tmp_path, "course")
    mistake = catalogue.by_assignment(catalogue.MISTAKES, A)[0].id
    killed, resubmitted = "untouched", "reference"
    # killed while executing: nbgrader leaves the sanitized notebook (no cell ran) in autograded/
    notebook = course / "autograded" / killed / A / f"{A}.ipynb"
    sanitized = json.loads(notebook.read_text())
    for cell in sanitized["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    notebook.write_text(json.dumps(sanitized))
    # submitted again after it was graded: submitted/ holds the newer timestamp
    # (both before the due date, DUE: on time)
    (course / "autograded" / resubmitted / A / "timestamp.txt").write_text("2026-11-19 08:00:00.000000 UTC")
    (course / "submitted" / resubmitted / A / "timestamp.txt").write_text("2026-11-19 09:00:00.000000 UTC")
    kept = (course / "autograded" / mistake / A / f"{A}.ipynb").read_bytes()

    report = autograde.autograde(course, A, cluster=cluster, progress=False)
    assert sorted(report.skipped) == sorted([mistake, "patch-np-allclose"])
    assert sorted(o.student for o in report.outcomes) == sorted([killed, resubmitted, *UNGRADABLE])
    assert (course / "autograded" / mistake / A / f"{A}.ipynb").read_bytes() == kept
    assert grading.gradebook_contents(course, A) == grading.gradebook_contents(local_run[0], A)
    assert grading.step_scores(course)[(killed, A)] == grading.step_scores(local_run[0])[(killed, A)]


def test_a_driver_killed_while_recording_grades_leaves_the_submission_to_grade_again(
        submitted, cluster, tmp_path, monkeypatch):
    """Killed inside SaveAutoGrades: nothing in autograded/ may look graded, marker or not."""
    from nbgrader.preprocessors import SaveAutoGrades

    course = copy_course(submitted, tmp_path, "course")
    save = SaveAutoGrades.preprocess

    def killed(self, nb, resources):
        raise KeyboardInterrupt("the driver was killed while recording grades")

    monkeypatch.setattr(SaveAutoGrades, "preprocess", killed)
    with pytest.raises(KeyboardInterrupt):
        autograde.autograde(course, A, students=["reference"], cluster=cluster, progress=False)
    monkeypatch.setattr(SaveAutoGrades, "preprocess", save)
    again = autograde.autograde(course, A, students=["reference"], cluster=cluster, progress=False)
    assert [o.student for o in again.outcomes if o.ok] == ["reference"] and not again.skipped
    assert grading.step_scores(course)[("reference", A)] == {s.name: s.points for s in steps_of(A)}


def test_the_command_names_a_submission_it_cannot_grade(submitted, tmp_path):
    course = copy_course(submitted, tmp_path, "course")
    env = with_interpreter_on_path(os.environ)
    result = subprocess.run([str(BIN / "coursekit"), "autograde", A, "--student", NOT_JSON, "missing-student"],
                            cwd=course, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    failures = result.stdout.split("Could not be graded", 1)[1]
    assert f"{NOT_JSON}: {A}.ipynb is not a notebook" in failures
    assert "missing-student: no submission under submitted/missing-student/" in failures
    assert not (course / "autograded" / NOT_JSON / A).exists()
