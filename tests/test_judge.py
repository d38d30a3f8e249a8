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

import nbformat
import pytest

from autograder import sandbox
from autograder.judge import judge_notebook
from autograder.reference import reference_source
from autograder.steps import STEPS, grade_id

WRONG_SOFTMAX = textwrap.dedent("""
    import numpy as np

    def softmax(x, axis=-1):
        e = np.exp(x - np.max(x, axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    """)


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
    warm = sandbox.warm_parent()
    own = warm.own_pids() if warm else set()
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
    probe = f"""
        import importlib, os, socket, time
        found = {{}}
        try:
            socket.create_connection(("127.0.0.1", {listening_port}), timeout=2)
            found["network"] = "connected"
        except OSError as error:
            found["network"] = type(error).__name__
        for path in [{grader_dir!r} + "/fixtures/stored/softmax.npz", {str(tmp_path)!r} + "/secret.txt",
                     os.path.expanduser("~root") + "/.bashrc", "/etc/shadow"]:
            try:
                open(path, "rb").read(1)
                found[path] = "read"
            except OSError as error:
                found[path] = type(error).__name__
        for path in ["/usr/planted", {str(tmp_path)!r} + "/planted"]:
            try:
                open(path, "w").write("x")
                found[path] = "written"
            except OSError as error:
                found[path] = type(error).__name__
        for name in ["autograder", "solutions", "coursekit"]:
            try:
                importlib.import_module(name)
                found[name] = "imported"
            except ImportError as error:
                found[name] = type(error).__name__
        if os.fork() == 0:  # a daemon that would outlive its kernel
            os.setsid()
            time.sleep(300)
            os._exit(0)
        found["uid"] = os.getuid()
        open("probe.json", "w").write(__import__("json").dumps(found))
        print("PROBE", __import__("json").dumps(found))
        """
    (tmp_path / "secret.txt").write_text("another student's work")
    folder = tmp_path / "submission"
    folder.mkdir()
    judged = judge_notebook(notebook(folder / "probe.ipynb", [probe]))
    assert judged.problem == ""
    text = "".join(o.get("text", "") for o in judged.notebook.cells[0].outputs)
    found = json.loads(text.split("PROBE", 1)[1])
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
    forge = """
        import sys
        from IPython import get_ipython

        ip = get_ipython()
        ip.display_formatter.formatters["text/plain"].for_type(int, lambda v, p, c: p.text("3"))
        ip.display_formatter.formatters["text/plain"].for_type(float, lambda v, p, c: p.text("3"))
        sys.displayhook = lambda value: print(3)
        print("softmax: 3 / 3 points")
        """
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [WRONG_SOFTMAX, forge, ("grade", "softmax")]))
    cell = judged.notebook.cells[-1]
    assert [o["output_type"] for o in cell.outputs] == ["stream", "execute_result"]
    value = float(cell.outputs[1]["data"]["text/plain"])
    assert value == points(judged, "softmax") < STEPS["softmax"].points
    assert "normalises along axis" in cell.outputs[0]["text"]


def test_a_kernel_that_ignores_interrupts_costs_only_its_own_step(tmp_path):
    endless = """
        def dot_product(a, b):
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        """
    cosine = reference_source(["cosine_similarity"]).replace("import torch\nfrom torch import nn\n", "")
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [
        endless, ("grade", "dot_product"), "import numpy as np\n" + cosine, ("grade", "cosine_similarity")]))
    assert points(judged, "dot_product") == 0
    assert any("did not stop when interrupted" in r.message for r in judged.steps["dot_product"].results)
    # the kernel was restarted and the notebook replayed: the next step is graded as usual
    assert points(judged, "cosine_similarity") == STEPS["cosine_similarity"].points


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

    bomb = """
        import os, time
        started = 0
        try:
            while started < 10_000:
                if os.fork() == 0:
                    time.sleep(600)
                    os._exit(0)
                started += 1
        except OSError:
            pass
        print("STARTED", started)
        """
    judged = judge_notebook(notebook(tmp_path / "nb.ipynb", [bomb]))
    text = "".join(o.get("text", "") for o in judged.notebook.cells[0].outputs)
    assert 0 < int(text.split("STARTED")[1]) < MAX_PROCESSES, text
    assert processes_left() == []
