"""Each grading stage on its own, in process and fast: the codec, the seam, the harness, the
report, the channel's file handling and the feedback sanitiser. (`test_judge.py` runs them
against real sandboxed kernels.)"""

import json
import os
import time

import numpy as np
import pytest
import torch

from autograder.errors import RemoteError
from autograder.harness import Case, CaseResult, StepResult, run_step
from autograder.judge import format_report, graded_outputs
from autograder.kernel import agent
from autograder.kernel.channel import KernelChannel, LocalChannel
from autograder.reference import reference_source
from autograder.seam import Handle, Implementation
from autograder.steps import STEPS


def implementation(namespace):
    return Implementation(LocalChannel(namespace))


def wrong_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


# --- the codec: only plain data crosses ---------------------------------------------------

def test_the_codec_round_trips_data_and_keeps_types():
    value = (np.arange(6.0).reshape(2, 3), np.float32(1.5), 3, 2.5, True, None, "s",
             torch.ones(2, dtype=torch.float64), torch.tensor([True, False]), [1, (2, 3)], {"k": 1.0})
    back = agent.decode(json.loads(json.dumps(agent.encode(value))))
    assert isinstance(back, tuple) and np.array_equal(back[0], value[0])
    assert isinstance(back[1], np.float32) and back[1] == 1.5
    assert back[2:7] == (3, 2.5, True, None, "s")
    assert torch.is_tensor(back[7]) and back[7].dtype == torch.float64
    assert back[8].dtype == torch.bool and back[9] == [1, (2, 3)] and back[10] == {"k": 1.0}


def test_the_codec_refuses_objects_and_pickles():
    with pytest.raises(TypeError):
        agent.encode(np.array([object()], dtype=object))
    with pytest.raises(TypeError):
        agent.encode(object())  # not data, and nowhere to register a handle
    # an .npy holding Python objects (a pickle) is refused when read back
    import base64
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        agent.decode({"$nd": base64.b64encode(buffer.getvalue()).decode()})
    with pytest.raises(ValueError):
        agent.decode({"$h": 1})  # a handle where only data may appear
    with pytest.raises(ValueError):
        agent.decode({"$pickle": "..."})


def test_objects_that_are_not_data_cross_as_handles():
    from torch import nn

    impl = implementation({"Linear": nn.Linear})
    layer = impl.Linear(3, 2)
    assert isinstance(layer, Handle) and layer.is_module and layer.type_name == "Linear"
    layer.set_linear("", np.eye(2, 3), np.zeros(2))
    out = layer(torch.tensor([[1.0, 2.0, 3.0]]))
    assert torch.equal(out, torch.tensor([[1.0, 2.0]]))
    assert layer.describe()["weight_shape"] == [2, 3] and not layer.describe("missing")["exists"]


def test_a_functions_gradients_and_a_modules_stray_tensors_cross_as_data():
    from torch import nn

    def detached(scores):
        return torch.softmax(scores, dim=-1).detach()

    def in_place(scores):  # its argument is a copy, so the gradient still reaches the scores (a shift changes none)
        return torch.softmax(scores.add_(1.0), dim=-1)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear, self.mask = nn.Linear(2, 2), torch.ones(2, 2)
            self.register_buffer("kept", torch.ones(2))

    impl = implementation({"softmax": lambda s: torch.softmax(s, dim=-1), "detached": detached,
                           "in_place": in_place, "Layer": Layer})
    scores, cotangent = torch.tensor([[0.5, -1.0, 2.0]]), np.array([[1.0, 0.0, 0.0]], dtype=np.float32)
    leaf = scores.clone().requires_grad_()
    (torch.softmax(leaf, dim=-1) * torch.from_numpy(cotangent)).sum().backward()
    assert torch.allclose(impl.softmax.backward([scores], cotangent, ["0"])["grads"]["0"], leaf.grad)
    assert torch.allclose(impl.in_place.backward([scores], cotangent, ["0"])["grads"]["0"], leaf.grad)
    assert impl.detached.backward([scores], cotangent, ["0"]) == {"differentiable": False}
    assert impl.Layer().describe()["stray_tensors"] == {"mask": "Tensor"}


def test_remote_exceptions_keep_their_name_and_builtin_base():
    def raises(kind):
        raise {"value": ValueError("bad d_out"), "exit": SystemExit(3)}[kind]

    impl = implementation({"f": raises})
    with pytest.raises(ValueError) as info:
        impl.f("value")
    assert isinstance(info.value, RemoteError) and info.value.type_name == "ValueError"
    with pytest.raises(RemoteError) as info:
        impl.f("exit")
    assert info.value.type_name == "SystemExit"


# --- the harness ---------------------------------------------------------------------------

def notebook_namespace(assignment):
    """The reference of `assignment`'s names defined at top level, as a notebook defines them."""
    names = [s.name for s in STEPS.values() if s.assignment == assignment]
    namespace = {}
    exec(reference_source(names), namespace)  # noqa: S102
    return namespace


def test_a_wrong_step_loses_points_with_its_symptom_and_only_there():
    ns = notebook_namespace("01_simplified_self_attention")
    ns["softmax"] = wrong_softmax
    impl = implementation(ns)
    result = run_step("softmax", impl)
    assert 0 < result.fraction < 1
    assert any("normalises along axis" in r.message for r in result.results)
    # attention_weights calls softmax; graded with the reference softmax in its place
    assert run_step("attention_weights", impl, reference_source(["softmax"]), ["softmax"]).fraction == 1.0
    assert ns["softmax"] is wrong_softmax  # and the student's own is put back afterwards
    # without the stand-in, the mistake would cost attention_weights too
    assert run_step("attention_weights", impl).fraction < 1.0


def test_each_worked_example_of_the_notes_is_a_case_of_its_own():
    from autograder.harness import cases_of, run_case

    notes_cases = [c for c in cases_of("softmax") if c.kind == "notes"]
    assert len(notes_cases) == 5 and all(c.name.startswith("test_notes_") for c in notes_cases)
    assert all(c.title.startswith("notes' worked example: ") for c in notes_cases)
    ns = notebook_namespace("01_simplified_self_attention")
    impl = implementation(ns)
    assert all(run_case(c, impl).passed for c in notes_cases)
    # a softmax that is wrong only on two-token inputs fails those examples, and only those
    right = ns["softmax"]
    ns["softmax"] = lambda x, axis=-1: np.full_like(x, 0.5) if np.size(x) == 2 else right(x, axis)
    failed = [c.name for c in notes_cases if not run_case(c, impl).passed]
    assert "test_notes_bat_cave_softmax" in failed and "test_notes_journey_query2_softmax" not in failed


def test_the_reference_of_a_dependency_is_only_its_own_source():
    source = reference_source(["softmax"])
    assert "def softmax" in source and "def attention_weights" not in source
    assert reference_source([]) == ""


def test_an_endless_function_fails_its_cases_on_time(short_case_timeouts):
    short_case_timeouts("dot_product", 2.0)

    def dot_product(a, b):
        while True:
            try:
                pass
            except Exception:  # a submission that swallows exceptions is still stopped
                pass

    start = time.perf_counter()
    result = run_step("dot_product", implementation({"dot_product": dot_product}))
    assert result.fraction == 0
    assert all("did not finish" in r.message for r in result.results)
    assert {r.case.timeout for r in result.results} == {2.0}  # the shortened cases ran
    assert time.perf_counter() - start < 2.0 + 0.4 * (len(result.results) - 1) + 3  # the first in full, the rest short


def test_slow_wrong_code_loses_the_case_for_its_value_when_the_diagnosis_runs_out_of_time(short_case_timeouts):
    """Only the first product, and slow where the diagnosis calls it again: the first-product rung is
    confirmed on a probe of 4 entries, and there the code outlasts the case's time. The report says
    the value was wrong, never that the code did not finish: its own calls did."""
    short_case_timeouts("dot_product", 1.0)

    def dot_product(a, b):
        if len(a) == 4:
            time.sleep(5)
        return float(np.asarray(a, dtype=float)[0] * np.asarray(b, dtype=float)[0])

    (stored,) = [r for r in run_step("dot_product", implementation({"dot_product": dot_product})).results
                 if r.case.kind == "stored"]
    assert not stored.passed
    assert stored.message == ("`dot_product` gave a wrong value, and the grader ran out of this case's 1 s while "
                              "it ran your code again to name the cause (it is slow as well as wrong)")


def test_a_stub_is_reported_once_as_not_implemented():
    def softmax(x, axis=-1):
        raise NotImplementedError()

    result = run_step("softmax", implementation({"softmax": softmax}))
    report = format_report(result, 3)
    assert result.points(3) == 0
    assert "not implemented yet" in report and report.count("not implemented") == 1


def test_a_missing_name_says_so():
    result = run_step("softmax", implementation({}))
    assert result.points(3) == 0 and "`softmax` is not defined" in format_report(result, 3)


def test_a_wrong_signature_is_named_as_such():
    result = run_step("softmax", implementation({"softmax": lambda x: x}))
    assert any("could not be called as the assignment specifies" in r.message for r in result.results)


def test_an_exceptions_own_text_never_repeats_the_values_it_was_given():
    """A submission chooses its exceptions' text: one that writes there what it was sent would
    put the hidden inputs in its report. Their values are left out; the small whole numbers of
    a shape mismatch (NumPy's words) stay."""
    def telling(x, axis=-1):
        raise ValueError(f"given {np.asarray(x).tolist()} and {12345} and {1e-9}")

    def mismatched(x, axis=-1):
        return np.ones((2, 3)) @ np.ones((4, 5))

    told = run_step("softmax", implementation({"softmax": telling}))
    for result in told.results:
        assert "given [" in result.message and not any(char.isdigit() for char in result.message.split("given")[1]), result.message
    shapes = run_step("softmax", implementation({"softmax": mismatched}))
    assert all("(n?,k),(k,m?)->(n?,m?)" in r.message and "size 4 is different from 3" in r.message
               for r in shapes.results), format_report(shapes, 3)


def test_an_exception_is_named_a_shape_mismatch_or_said_to_have_no_name():
    """A raised exception is never shown bare: a shape mismatch (NumPy's or torch's words) is
    named as one, and any other says plainly that the grader cannot name its cause."""
    def mismatched(x, axis=-1):
        return np.ones((2, 3)) @ np.ones((4, 5))

    def lookup(x, axis=-1):
        return {}["missing"]

    def viewed(x):  # merge_heads with .view where the transpose left the memory reordered
        return x.transpose(1, 2).view(x.shape[0], x.shape[2], -1)

    shapes = run_step("softmax", implementation({"softmax": mismatched}))
    other = run_step("softmax", implementation({"softmax": lookup}))
    assert all("raised ValueError, a shape mismatch" in r.message for r in shapes.results), format_report(shapes, 3)
    assert all("raised KeyError, and the grader cannot name the cause" in r.message for r in other.results)
    merged = run_step("merge_heads", implementation({"merge_heads": viewed}))
    assert all("`.view` on a tensor whose memory a transpose reordered" in r.message for r in merged.results), (
        format_report(merged, 2))


def test_graded_outputs_are_the_report_and_the_points():
    def result(passed):
        return CaseResult(Case("softmax", "c", "stored", 1.0, 1.0, None), passed)

    outputs = graded_outputs(StepResult("softmax", [result(True), result(False)]), 3)
    assert [o["output_type"] for o in outputs] == ["stream", "execute_result"]
    assert outputs[0]["name"] == "stdout" and outputs[1]["data"]["text/plain"] == "1.5"


def test_points_never_exceed_the_cell_and_round_down():
    def result(passed):
        return CaseResult(Case("softmax", "c", "stored", 1.0, 1.0, None), passed)

    assert StepResult("softmax", [result(True)] * 3).points(3) == 3
    assert StepResult("softmax", [result(True), result(True), result(False)]).points(1) == 0.666


def test_every_step_has_points_and_its_dependencies_are_steps():
    for step in STEPS.values():
        assert step.points > 0 and set(step.depends_on) <= set(STEPS), step.name


# --- the channel reads only what it should -------------------------------------------------

def test_a_message_past_the_limit_is_refused_before_it_is_read():
    import socket

    ours, theirs = socket.socketpair()
    with ours, theirs:
        agent.send(theirs, {"ok": "x" * 100})
        with pytest.raises(agent.TooLarge):
            agent.receive(ours, limit=10)
        agent.send(theirs, {"ok": 1})
        theirs.close()
        ours.recv(1 << 20)  # the unread rest of the refused message, then the next one
        with pytest.raises(EOFError):
            agent.receive(ours)


def test_the_kernel_channel_listens_where_the_kernel_cannot_write(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    channel = KernelChannel(None, inbox, interrupt=lambda: None)
    assert channel.socket_path.startswith(str(inbox))
    assert channel.request({"op": "len"}, 1.0)["error"]["type"] == "NoAnswer"  # nothing connected


def test_peak_memory_is_measured_from_outside_the_call():
    def holds_a_square(n):
        return float(np.ones((n, n)).sum())

    impl = implementation({"f": holds_a_square})
    _, small = impl.measure_peak("f", 10)
    _, large = impl.measure_peak("f", 4000)  # 128 MB
    assert large > 100e6 > small


def test_procfs_finds_grandchildren_and_tells_a_gone_process():
    import subprocess
    import sys

    from autograder.kernel import procfs

    shell = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'import time; time.sleep(30)' & wait"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                b"time.sleep(30)" in b" ".join(procfs.argv(p)) for p in procfs.descendants(shell.pid)):
            time.sleep(0.05)
        (grandchild,) = list(procfs.descendants(shell.pid))
        assert procfs.children(shell.pid) == [grandchild]
        assert procfs.state(grandchild) in "RS" and procfs.status_bytes(grandchild, "VmRSS") > 0
    finally:
        os.kill(grandchild, 9)
        shell.kill()
        shell.wait()
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its id names no process now
    assert procfs.start_time(gone.pid) is None and procfs.argv(gone.pid) == []
    assert list(procfs.descendants(gone.pid)) == []


# --- feedback ------------------------------------------------------------------------------

def test_feedback_sanitiser_cuts_tracebacks_of_grade_cells_only():
    import nbformat

    from coursekit.nbgrader_plugins import SanitizeGradeCells

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


def test_a_lent_reference_brings_the_references_it_calls():
    """Only attention_weights is lent (the notebook's softmax had full marks), but the reference
    attention_weights calls softmax: the reference's own, defined beside it and not lent."""
    from autograder.reference import with_dependencies

    names = with_dependencies(["attention_weights"])
    assert names == ["softmax", "attention_weights"]
    definitions = {}
    exec(reference_source(names), definitions)  # noqa: S102
    weights = definitions["attention_weights"](np.zeros((2, 2)))
    assert np.allclose(weights, 0.5)


@pytest.mark.parametrize("raise_it", [
    lambda: np.arange(3).unsqueeze(1),
    lambda: __import__("math").sin(np.arange(3.0)),
    lambda: len(None),
    lambda: None.update(1, 2),
    lambda: torch.ones(2, 3).t().view(6),
    lambda: torch.nn.Linear(2, 2).__dict__.get("p", 0.1)(torch.ones(2)),  # a rate kept as the dropout
    lambda: torch.cat(torch.ones(1, 2), torch.ones(1, 2), dim=1),  # a TypeError that is not the step's signature
    lambda: torch.cat(torch.ones(1, 2), torch.ones(1, 2), torch.ones(1, 2), dim=1),
    lambda: torch.ones(1, 2).append(torch.ones(1, 2)),
    lambda: torch.zeros(2, 2).__setitem__((slice(None), 0), np.ones(2)),
    lambda: torch.zeros(2, 2).masked_fill(torch.triu(torch.ones(2, 2), diagonal=1), float("-inf")),
    lambda: torch.where(torch.triu(torch.ones(2, 2), diagonal=1), float("-inf"), torch.zeros(2, 2)),
    lambda: torch.ones(2, 3) / torch.sqrt(torch.ones(2, 3).shape[-1]),
    lambda: torch.ones(2, 6).view(2, 3, 6 / 3),
    lambda: torch.nn.Linear(2, 2).d_out,  # an attribute __init__ never set
    lambda: np.softmax,
    lambda: torch.matmul(np.ones((2, 2)), np.ones((2, 2))),  # worded like the step's own signature
    lambda: np.ones((2, 2)) @ torch.ones(2, 2),
    lambda: max(np.ones((2, 3))),  # Python's max compares whole rows
    lambda: bool(torch.ones(3)),
    lambda: torch.bmm(torch.ones(2, 3), torch.ones(3, 2)),
    lambda: type("Layer", (torch.nn.Module,), {"__init__": lambda self: setattr(self, "W", torch.nn.Linear(2, 2))})(),
    lambda: torch.nn.ModuleList([torch.nn.Identity()])(torch.ones(2)),  # a list of modules called as one
    lambda: torch.nn.Parameter(torch.ones(2, 2, dtype=torch.bool)),  # a mask made a trained parameter
    lambda: np.concatenate([torch.ones(2, requires_grad=True) * 2]),  # NumPy inside a layer's forward
    lambda: torch.zeros(2, 1, 4)[:, :, torch.tensor([1, 2]):],  # a slice bound of several values
    lambda: torch.ones(2, 3) - torch.ones(2, 3).max(dim=-1, keepdim=True),  # (values, indices) used as values
    lambda: np.zeros(2, 3),  # the shape given as two arguments
    lambda: np.max(np.ones((2, 1)), np.ones((2, 1))),  # np.max for np.maximum
    lambda: torch.triu(torch.ones(3, dtype=torch.bool), diagonal=1),  # a vector of ones for the square
    lambda: torch.cat((t for t in [torch.ones(2)]), dim=-1),  # a generator for the list
    lambda: torch.ones(0.0, 0.0),  # a rate passed in a size's place
    lambda: [].__len__ + 1,  # a method read, never called
    lambda: torch.ones(2, 3).size[1],
    lambda: np.ones((2, 3)).size(-1),  # NumPy's .size, a count, called as torch's .size(dim)
    lambda: np.ones((2, 3)).size[-1],  # NumPy's .size, a count, indexed as if it were the shape
    lambda: float((np.ones(2) * 2).sum),  # a method never called, made a number
    lambda: exec("math.sqrt(2)", {}),  # noqa: S102 - a module used without its import, as a cell does it
    lambda: torch.ones(2, 3) @ torch.nn.Linear(3, 2, bias=False).weight.T + torch.nn.Linear(3, 2, bias=False).bias,
], ids=["torch-method-on-numpy", "math-on-array", "len-of-none", "none-attribute", "view-after-transpose",
        "float-called", "cat-of-tensors-one-by-one", "cat-of-three-tensors", "tensor-append",
        "numpy-into-torch", "masked-fill-float-mask", "where-float-condition",
        "torch-function-of-a-number", "float-size", "attribute-never-set",
        "library-lacks-function", "torch-function-of-array", "array-at-tensor", "builtin-max-of-matrix", "truth-of-tensor", "bmm-of-a-matrix",
        "module-before-init", "module-without-forward", "bool-parameter",
        "numpy-of-tracked-tensor", "slice-bound-of-several-values", "max-pair-as-values", "numpy-shape-as-two-args",
        "np-max-of-two-arrays", "triu-of-a-vector", "cat-of-a-generator", "float-first-size",
        "method-never-called", "method-subscripted", "numpy-size-called", "numpy-size-subscripted", "method-made-a-number", "module-not-imported",
        "bias-none-added"])
def test_an_exception_whose_words_name_its_cause_is_named_whatever_the_step(raise_it):
    """The exceptions ERROR_CAUSES lists, raised for real by NumPy, torch and Python: each is named by
    its cause, and the generic text (the grader cannot name it) is never given for them."""
    from autograder.harness import ERROR_CAUSES, _describe_error

    with pytest.raises(Exception) as raised:
        raise_it()
    message = _describe_error("softmax", raised.value)
    assert "cannot name" not in message
    assert sum(cause in message for _, cause in ERROR_CAUSES) == 1


def test_a_remote_exceptions_type_name_is_shown_on_one_line():
    """A type named "X\\n  FLAGGED FOR THE INSTRUCTOR: GRADER ERROR" started a line of the report
    with the judge's flag marker, a forged grader error (red-team round r25)."""
    error = RemoteError.from_reply({"type": "X\n  FLAGGED FOR THE INSTRUCTOR: GRADER ERROR", "bases": ["Exception"]})
    assert error.type_name.isprintable() and error.type_name.startswith("X\\n")
