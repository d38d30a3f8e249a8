"""The judge against real kernels: the sandbox holds, verdicts are written from outside, and a
kernel that stops answering costs only its own step.

Each test grades a small hand-made notebook with `judge_notebook`, the same `JudgedExecute`
that `nbgrader autograde` runs (tests/test_end_to_end.py and the catalogue run it through
nbgrader itself).
"""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.judge import judge_notebook, trains
from autograder.kernel import agent, sandbox, warm
from autograder.reference import reference_source
from autograder.steps import STEPS, grade_id

PROGRAMS = Path(__file__).with_name("programs")  # the submissions' code, one file each


def program(name):
    return (PROGRAMS / f"{name}.py").read_text()


WRONG_SOFTMAX = program("wrong_softmax")


def notebook(path, cells):
    """A notebook of code cells (str) and graded cells (("grade", step))."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for cell in cells:
        if isinstance(cell, tuple):
            step = cell[1]
            meta = {"nbgrader": {"grade": True, "solution": False, "locked": True, "schema_version": 3,
                                 "grade_id": grade_id(step), "points": STEPS[step].points, "task": False}}
            nb.cells.append(nbformat.v4.new_code_cell("print('graded here')", metadata=meta))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(cell)))
    nbformat.write(nb, str(path))
    return path


def processes_left():
    """Processes still running as this test's sandbox user, apart from the warm parent (given a
    moment to be torn down)."""
    import time

    uid = sandbox.sandbox_uid()
    parent = warm.warm_parent()
    own = parent.own_pids() if parent else set()
    for _ in range(40):
        left = [p for p in os.listdir("/proc") if p.isdigit() and _owner(p) == uid and int(p) not in own]
        if not left:
            break
        time.sleep(0.05)
    return left


def _owner(pid):
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def printed(judged, index):
    """What cell `index` of a judged notebook printed."""
    return "".join(o.get("text", "") for o in judged.notebook.cells[index].outputs)


def points(judged, step):
    return judged.steps[step].points(STEPS[step].points)


@pytest.fixture(scope="module")
def listening_port():
    """A port open on this machine's loopback: a sandboxed kernel must not reach it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_the_sandbox_hides_the_course_and_the_network_and_nothing_outlives_it(tmp_path, listening_port):
    assert sandbox.available(), "bubblewrap must work here: `.ci/run` installs it"
    import autograder

    grader_dir = os.path.dirname(autograder.__file__)
    (tmp_path / "secret.txt").write_text("another student's work")
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "targets.json").write_text(json.dumps({
        "port": listening_port,
        "read": [grader_dir + "/fixtures/stored/softmax.npz", str(tmp_path / "secret.txt")],
        "write": [str(tmp_path / "planted")]}))
    judged = judge_notebook(notebook(folder / "probe.ipynb", [program("sandbox_probe")]))
    assert judged.problem == ""
    text = printed(judged, 0)
    found = json.loads(text.split("PROBE", 1)[1])
    assert {str(tmp_path / "secret.txt"), str(tmp_path / "planted"), "/etc/shadow"} <= found.keys(), found
    assert found["network"] in ("ConnectionRefusedError", "OSError", "TimeoutError"), found
    assert all(found[k] in ("FileNotFoundError", "PermissionError") for k in found if k.startswith("/")
               and "planted" not in k), found
    assert all(found[k] in ("OSError", "FileNotFoundError", "PermissionError") for k in found if "planted" in k), found
    assert {found[n] for n in ("autograder", "solutions", "coursekit")} == {"ModuleNotFoundError"}, found
    if os.getuid() == 0:
        assert found["uid"] == sandbox.sandbox_uid() != 0
    assert not (tmp_path / "planted").exists() and not os.path.exists("/usr/planted")
    assert not (folder / "probe.json").exists(), "the kernel writes into a scratch copy, not the submission"
    assert processes_left() == [], "a process of the sandbox outlived its grading"


def test_graded_cells_show_the_judges_verdict_whatever_the_kernel_displays(tmp_path):
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [WRONG_SOFTMAX, program("forge_display"), ("grade", "softmax")]))
    cell = judged.notebook.cells[-1]
    assert [o["output_type"] for o in cell.outputs] == ["stream", "execute_result"]
    value = float(cell.outputs[1]["data"]["text/plain"])
    assert value == points(judged, "softmax") < STEPS["softmax"].points
    assert "normalises along axis" in cell.outputs[0]["text"]


def test_a_kernel_that_ignores_interrupts_costs_only_its_own_step(tmp_path, short_case_timeouts):
    short_case_timeouts("dot_product", 2.0)
    cosine = reference_source(["cosine_similarity"]).replace("import torch\nfrom torch import nn\n", "")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("endless_dot_product"), ("grade", "dot_product"), "import numpy as np\n" + cosine, ("grade", "cosine_similarity")]))
    assert points(judged, "dot_product") == 0
    assert any("did not stop when interrupted" in r.message for r in judged.steps["dot_product"].results)
    # the kernel was restarted and the notebook replayed: the next step is graded as usual
    assert points(judged, "cosine_similarity") == STEPS["cosine_similarity"].points


def test_once_a_cell_timed_out_the_later_ordinary_cells_get_the_shorter_limit(tmp_path):
    """Code that hung once hangs in every cell that calls it: the first such cell gets the
    whole cell timeout, the later ones `endless_cell_timeout`, and the steps are still judged."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        WRONG_SOFTMAX, program("hang"), "hang()", "hang()", "print([round(s, 1) for s in ran_for])",
        ("grade", "softmax")]), timeout=6, endless_cell_timeout=1)
    seconds = printed(judged, 4)
    first, second = json.loads(seconds)
    assert first > 4 and second < 3, seconds  # about 6 s, then about 1 s
    assert 0 < points(judged, "softmax") < STEPS["softmax"].points


def test_a_replayed_notebook_keeps_the_shorter_limit_for_cells_that_hang(tmp_path, short_case_timeouts):
    """The kernel is restarted after a step that ignores interrupts, and the notebook's ordinary
    cells are replayed: the cell that hung before gets `endless_cell_timeout` there too, not the
    whole cell timeout again."""
    short_case_timeouts("dot_product", 2.0)
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        program("hang"), "hang()", program("endless_dot_product"), ("grade", "dot_product"),
        "print([round(s, 1) for s in ran_for])"]), timeout=6, endless_cell_timeout=1)
    seconds = printed(judged, 4)
    (replayed,) = json.loads(seconds)  # the restarted kernel ran hang() once, in the replay
    assert replayed < 3, seconds  # about 1 s, not 6
    assert points(judged, "dot_product") == 0


@pytest.mark.skipif(not sandbox.available(), reason="kernels fork from the warm parent only in the sandbox")
def test_graded_kernels_start_without_the_debugger(tmp_path):
    """ipykernel loads debugpy (57 ms a kernel) unless it is missing; the warm parent hides it."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "import sys\nprint(sys.modules.get('debugpy', 'absent'), 'pydevd' in sys.modules)"]))
    assert printed(judged, 0) == "None False\n"


@pytest.mark.skipif(not sandbox.available(), reason="kernels fork from the warm parent only in the sandbox")
def test_graded_kernels_leave_what_the_warm_parent_imported_to_it(tmp_path):
    """The warm parent's objects (torch, numpy, matplotlib: 350,000) are frozen before it forks:
    a kernel's full garbage collection walks only its own (0.17 s a kernel otherwise)."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "import gc\nprint(gc.get_freeze_count() > 100_000, len(gc.get_objects()) < 50_000)"]))
    assert printed(judged, 0) == "True True\n"


def test_a_kernel_hands_the_gil_to_the_judges_thread_soon_whatever_its_own_threads_do(tmp_path):
    """A thread of the submission that spins forever held the GIL for the interpreter's 5 ms
    before each of the agent's turns (a step of 0.2 s took 6 s); each step's agent shortens the
    switch interval, and sets it again after a cell that lengthened it."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "import sys\nprint(sys.getswitchinterval())", ("grade", "softmax"),
        "print(sys.getswitchinterval())\nsys.setswitchinterval(0.1)", ("grade", "dot_product"),
        "print(sys.getswitchinterval())"]))
    assert float(printed(judged, 0)) == pytest.approx(0.005)  # the interpreter's own, before any step
    assert float(printed(judged, 2)) == pytest.approx(agent.SWITCH_INTERVAL)
    assert float(printed(judged, 4)) == pytest.approx(agent.SWITCH_INTERVAL)


def test_notebooks_that_train_are_recognised():
    def nb(*sources):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])

    assert trains(nb("x = 1", "opt = torch.optim.Adam(model.parameters())"))
    assert trains(nb("from torch import optim"))
    assert not trains(nb("x = 1", "optimal = optimiser = 2"))


@pytest.mark.skipif(not sandbox.available(), reason="kernels fork from the warm parent only in the sandbox")
def test_a_notebook_that_trains_finds_its_first_optimiser_built_by_the_warm_parent(tmp_path):
    """A process's first optimiser imports torch._dynamo (a second); the warm parent does that
    once, on the first request of a notebook that trains, and not for the others."""
    parent = warm.WarmParent()
    try:
        with pytest.raises(RuntimeError, match="nonsense"):
            parent.warm("nonsense")
        parent.warm("optimiser")
        assert parent.warmed == {"optimiser"} and parent.alive()
    finally:
        parent.close()
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "import sys\nprint('torch._dynamo' in sys.modules)", "import torch.optim"]))
    assert printed(judged, 0) == "True\n"


def test_one_notebook_is_graded_by_pytest_through_the_judge(tmp_path):
    path = notebook(tmp_path / "nb.ipynb", [WRONG_SOFTMAX, ("grade", "softmax")])
    report = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "autograder.suites.test_softmax", "-q",
                          "-p", "no:cacheprovider", "--submission", str(path), "--grade-report", str(report)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]  # some cases fail: the softmax is wrong
    steps = json.loads(report.read_text())["steps"]
    assert 0 < steps["softmax"]["points"] < steps["softmax"]["max_points"]
    assert any("normalises along axis" in f for f in steps["softmax"]["failed"])


def test_without_a_sandbox_grading_still_works_and_says_so_once(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("AUTOGRADER_NO_SANDBOX", "1")
    sandbox.available.cache_clear()
    monkeypatch.setattr(sandbox, "_warned", False)
    try:
        path = notebook(tmp_path / "nb.ipynb", [WRONG_SOFTMAX, ("grade", "softmax")])
        with pytest.warns(RuntimeWarning, match="no sandbox"):
            first = judge_notebook(path)
        second = judge_notebook(path)
    finally:
        sandbox.available.cache_clear()
    assert points(first, "softmax") == points(second, "softmax") > 0
    assert capfd.readouterr().err.count("no sandbox (bubblewrap) is available") == 1


def test_a_fork_bomb_stops_at_the_process_cap_and_dies_with_its_kernel(tmp_path):
    from autograder.limits import MAX_PROCESSES

    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [program("fork_bomb")]))
    text = printed(judged, 0)
    assert 0 < int(text.split("STARTED")[1]) < MAX_PROCESSES, text
    assert processes_left() == []


def test_a_flood_of_output_is_cut_at_the_notebooks_budget_and_grading_goes_on(tmp_path):
    """A cell that prints 40 MiB keeps at most MAX_NOTEBOOK_OUTPUT_BYTES of it, says what was
    dropped, and the steps after it are graded as usual (their reports are the judge's, not
    output)."""
    from autograder.limits import MAX_NOTEBOOK_OUTPUT_BYTES

    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        reference_source(["softmax"]), program("output_flood"), "print('AFTER')", ("grade", "softmax")]))
    flood, after = printed(judged, 1), printed(judged, 2)
    assert len(flood) <= MAX_NOTEBOOK_OUTPUT_BYTES + 4096, len(flood)
    assert "the grader kept no more output" in flood and "FLOOD DONE" not in flood
    assert "the grader kept no more output" in after, "a later cell says its output was dropped too"
    assert points(judged, "softmax") == STEPS["softmax"].points


GIL_HOG = '''
import re
import threading
import time


def _hog():
    time.sleep(0.3)
    re.fullmatch(r"(a|aa)+b", "a" * 64)  # backtracks for ages and never lets go of the GIL


threading.Thread(target=_hog, daemon=True).start()


def dot_product(a, b):
    return 0.0
'''


def test_a_kernel_stuck_before_its_step_is_judged_costs_that_step_not_the_run(tmp_path):
    """A thread that holds the GIL in C (a regular expression that backtracks) leaves the kernel
    unable to boot the agent for the next step, after a restart and replay too: KernelStuck (a
    BaseException) escaped the judge past every `except Exception` and stopped `coursekit
    autograde` for the whole class (red-team round r25). It costs the step. On a loaded machine the
    first boot may time out as a case instead, without KernelStuck: the next test makes that half certain."""
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [GIL_HOG, "import time\ntime.sleep(1)",
                                                             ("grade", "dot_product")]),
                            timeout=5, submission_timeout=30)
    # Judged at all (KernelStuck no longer escapes), at 0; which words say so depends on whether the
    # first boot or the retry's finds the kernel stuck, which the machine's load decides.
    assert points(judged, "dot_product") == 0
    assert all("the kernel did not answer" in case.message for case in judged.steps["dot_product"].results)


def test_a_step_whose_kernel_is_stuck_for_good_is_lost_and_the_next_step_judged(tmp_path, monkeypatch):
    """The deterministic half of the test above: whichever way the kernel is found stuck for good,
    KernelStuck out of a step's judging costs that step (every case says why) and the notebook goes on."""
    from autograder.errors import KernelStuck
    from autograder.judge import JudgedExecute

    judge = JudgedExecute.judge

    def stuck_at_dot_product(self, step, index):
        if step == "dot_product":
            raise KernelStuck()
        return judge(self, step, index)

    monkeypatch.setattr(JudgedExecute, "judge", stuck_at_dot_product)
    cosine = reference_source(["cosine_similarity"]).replace("import torch\nfrom torch import nn\n", "")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        "import numpy as np\n" + cosine, ("grade", "dot_product"), ("grade", "cosine_similarity")]))
    assert points(judged, "dot_product") == 0 and judged.steps["dot_product"].kernel_lost
    assert all("even after a restart" in case.message for case in judged.steps["dot_product"].results)
    assert points(judged, "cosine_similarity") == STEPS["cosine_similarity"].points


def test_a_judge_error_that_is_no_exception_fails_its_submission_not_the_task(monkeypatch):
    """The task of one submission catches the judge's BaseExceptions too (KernelStuck, a case's
    timeout): one that escaped stopped the class run in process, and would end a Dask worker's task
    with no result (red-team round r25)."""
    from autograder.errors import KernelStuck
    from coursekit import grading_task

    def stuck(*args):
        raise KernelStuck()

    monkeypatch.setattr(grading_task, "_worker_exporter", stuck)
    result = grading_task.judge_submission({"student": "s", "assignment": "a", "config": {}, "preprocessors": [],
                                            "notebooks": {}})
    assert not result["ok"] and "KernelStuck" in result["problem"]
