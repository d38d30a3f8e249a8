"""Each grading stage on its own, in-process and fast."""

import json
import os
import sys
import time

import numpy as np
import pytest

from autograder import trusted
from autograder.harness import run_step
from autograder.notebook import grade
from autograder.seam import Implementation
from autograder.steps import STEPS
from autograder.submission import load
from coursekit.audit import scan_source


def reference_namespace():
    import solutions

    return {name: getattr(solutions, name) for name in solutions.__all__}


@pytest.mark.parametrize("step", list(STEPS))
def test_reference_earns_every_case(step):
    result = run_step(step, Implementation.from_namespace(reference_namespace()))
    assert [r.message for r in result.results if not r.passed] == []
    assert result.points(STEPS[step].points) == STEPS[step].points


def test_a_wrong_step_loses_points_with_its_symptom_and_only_there():
    ns = reference_namespace()

    def softmax(x, axis=-1):
        e = np.exp(x - np.max(x, axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)

    ns["softmax"] = softmax
    impl = Implementation.from_namespace(ns)
    result = run_step("softmax", impl)
    assert 0 < result.fraction < 1
    assert any("normalises along axis" in r.message for r in result.results)
    # attention_weights calls softmax, but is graded with the reference softmax in its place
    assert run_step("attention_weights", impl).fraction == 1.0
    assert ns["softmax"] is softmax  # and the student's own is put back afterwards


def test_an_endless_function_fails_its_cases_on_time():
    def dot_product(a, b):
        while True:
            try:
                pass
            except Exception:  # a submission that swallows exceptions is still stopped
                pass

    start = time.perf_counter()
    result = run_step("dot_product", Implementation.from_namespace({"dot_product": dot_product}))
    assert result.fraction == 0
    assert all("did not finish" in r.message for r in result.results)
    assert time.perf_counter() - start < sum(r.case.timeout for r in result.results) + 5


def test_a_stub_is_reported_once_as_not_implemented(capsys):
    def softmax(x, axis=-1):
        raise NotImplementedError()

    assert grade("softmax", 3, namespace={"softmax": softmax}) == 0
    out = capsys.readouterr().out
    assert "not implemented yet" in out and out.count("not implemented") == 1


def test_a_missing_name_says_so(capsys):
    assert grade("softmax", 3, namespace={}) == 0
    assert "`softmax` is not defined" in capsys.readouterr().out


def test_tampering_inside_a_graded_function_is_undone_and_flagged(capsys):
    genuine = np.allclose

    def softmax(x, axis=-1):
        np.allclose = lambda *a, **k: True
        return np.zeros_like(x)

    assert grade("softmax", 3, namespace={"softmax": softmax}) == 0
    assert np.allclose is genuine
    assert "FLAGGED FOR THE INSTRUCTOR" in capsys.readouterr().out


def test_tampering_before_grading_is_undone_and_flagged(capsys):
    genuine = np.testing.assert_allclose
    np.testing.assert_allclose = lambda *a, **k: None
    ns = reference_namespace()
    assert grade("softmax", 3, namespace=ns) == 0
    assert np.testing.assert_allclose is genuine
    assert "numpy.testing.assert_allclose" in capsys.readouterr().out


def test_grading_writes_nothing_to_stderr_even_when_the_submission_does(capfd):
    import warnings

    ns = reference_namespace()
    reference_softmax = ns["softmax"]

    def softmax(x, axis=-1):
        print("debug", file=sys.stderr)
        os.write(2, b"c-level noise\n")
        warnings.warn("careful")
        return reference_softmax(x, axis)

    ns["softmax"] = softmax
    assert grade("softmax", 3, namespace=ns) == 3
    captured = capfd.readouterr()
    assert captured.err == ""
    assert "wrote to stderr" in captured.out


def test_points_never_exceed_the_cell_and_round_down():
    from autograder.harness import Case, CaseResult, StepResult

    def result(passed):
        return CaseResult(Case("softmax", "c", "stored", 1.0, 1.0, None), passed)

    assert StepResult("softmax", [result(True)] * 3).points(3) == 3
    assert StepResult("softmax", [result(True), result(True), result(False)]).points(1) == 0.666


def test_the_guard_keeps_the_reference_from_student_code_but_not_from_the_grader():
    import autograder.guard  # noqa: F401
    from autograder.seam import _reference_namespace

    assert "softmax" in _reference_namespace()
    code = compile("import solutions", "<student cell>", "exec")
    with pytest.raises(ImportError, match="not available to submissions"):
        exec(code, {})


def _write_notebook(path, cells, nbformat=4):
    path.write_text(json.dumps({"nbformat": nbformat, "nbformat_minor": 5, "metadata": {},
                                "cells": [{"cell_type": "code", "source": c, "metadata": {},
                                           "outputs": [], "execution_count": None} for c in cells]}))
    return path


def test_loading_a_submission_survives_exits_loops_and_errors(tmp_path, monkeypatch):
    import autograder.submission as submission

    monkeypatch.setattr(submission, "CELL_TIMEOUT", 1.0)
    path = _write_notebook(tmp_path / "nb.ipynb", [
        "import sys\nsys.exit(3)", "while True:\n    pass", "1/0", "%matplotlib inline\nx = 41", "y = x + 1"])
    loaded = load(path, cell_timeout=1.0)
    assert loaded.namespace["y"] == 42
    messages = dict(loaded.errors)
    assert "SystemExit" in messages[0] and "did not finish" in messages[1] and "ZeroDivisionError" in messages[2]


def test_loading_a_broken_file_reports_why(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{ not json")
    assert "JSON" in load(bad).fatal
    assert "nbformat 4" in load(_write_notebook(tmp_path / "old.ipynb", ["x = 1"], nbformat=3)).fatal


def test_the_scan_names_what_hostile_code_does():
    found = scan_source(
        "import numpy as np, sys, torch\n"
        "np.allclose = lambda *a, **k: True\n"
        "torch.nn.functional.scaled_dot_product_attention = None\n"
        "def f(x):\n    import solutions\n    return solutions.softmax(x)\n"
        "data = np.load('/x/autograder/fixtures/stored/softmax.npz')\n"
        "sys.exit(0)\n")
    assert {"rebinds np.allclose", "rebinds torch.nn.functional.scaled_dot_product_attention",
            "imports solutions", "calls sys.exit()"} <= set(found)
    assert any(f.startswith("reads grader files") for f in found)
    assert scan_source("import numpy as np\ndef softmax(x):\n    return np.exp(x) / np.exp(x).sum()\n") == []


def test_feedback_sanitiser_cuts_tracebacks_of_grade_cells_only():
    import nbformat

    from coursekit.feedback import SanitizeGradeCells

    error = nbformat.v4.new_output("error", ename="ImportError", evalue="boom",
                                   traceback=["secret hidden line", "ImportError: boom"])
    graded = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False, "points": 1,
                                                                  "grade_id": "x", "locked": True}})
    graded.outputs = [error]
    student = nbformat.v4.new_code_cell("")
    student.outputs = [nbformat.v4.new_output("error", ename="E", evalue="v", traceback=["keep me"])]
    nb = nbformat.v4.new_notebook(cells=[graded, student])
    nb, _ = SanitizeGradeCells().preprocess(nb, {})
    assert nb.cells[0].outputs[0]["traceback"] == ["ImportError: boom"]
    assert nb.cells[1].outputs[0]["traceback"] == ["keep me"]


def test_trusted_snapshot_restores_what_was_rebound():
    import torch

    genuine = torch.softmax
    torch.softmax = lambda *a, **k: None
    assert "torch.softmax" in trusted.restore()
    assert torch.softmax is genuine and trusted.tampered() == []
