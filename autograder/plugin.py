"""pytest plugin: supplies `impl` to the hidden suites and turns results into points.

    pytest --pyargs autograder.suites                    # the reference, in process (what CI runs)
    pytest --pyargs autograder.suites --submission nb.ipynb --grade-report scores.json

With `--submission`, the notebook runs in a sandboxed kernel and the judge grades each step
where its graded cell stands (`autograder.judge`), exactly as `nbgrader autograde` does; each
pytest item then reports its case's verdict. Against the reference every case runs through
`harness.run_case` and the same data-only channel the judge uses.
"""

import json

import pytest

from autograder.harness import StepResult, run_case
from autograder.reference import reference_namespace
from autograder.seam import Implementation


def pytest_addoption(parser):
    group = parser.getgroup("autograder")
    group.addoption("--submission", default=None, help="grade this notebook instead of the reference")
    group.addoption("--grade-report", default=None, help="write per-step points as JSON here")


def pytest_configure(config):
    config.addinivalue_line("markers", "autograder_case: a weighted hidden-suite case")
    config._autograder = {"impl": None, "judged": None, "results": {}}


def _state(config):
    state = config._autograder
    path = config.getoption("--submission")
    if path is None and state["impl"] is None:
        from autograder.kernel.channel import LocalChannel

        state["impl"] = Implementation(LocalChannel(reference_namespace()))
    if path is not None and state["judged"] is None:
        from autograder.judge import judge_notebook

        state["judged"] = judge_notebook(path)
    return state


@pytest.fixture
def impl(request):
    return _state(request.config)["impl"]


def pytest_generate_tests(metafunc):
    """A case family (`harness.case_family`) is one pytest test per member."""
    family = getattr(metafunc.function, "autograder_family", None)
    if family is not None:
        metafunc.parametrize("member", list(family), ids=list(family))


def _case_of(item):
    family = getattr(item.obj, "autograder_family", None)
    if family is not None:
        return family[item.callspec.params["member"]]
    return getattr(item.obj, "autograder_case", None)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    case = _case_of(pyfuncitem)
    if case is None:
        return None
    state = _state(pyfuncitem.config)
    if state["judged"] is not None:
        step = state["judged"].steps.get(case.step)
        result = next((r for r in step.results if r.case.name == case.name), None) if step else None
        if result is None:
            pytest.fail(f"[{case.step}] not graded: {state['judged'].problem or 'no graded cell for this step'}",
                        pytrace=False)
    else:
        result = run_case(case, state["impl"])
    state["results"].setdefault(case.step, []).append(result)
    if not result.passed:
        pytest.fail(f"[{case.step}] {result.message}", pytrace=False)
    return True


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--grade-report")
    if path:
        state = session.config._autograder
        report = {"steps": {step: StepResult(step, results).summary()
                            for step, results in state["results"].items()}}
        if state["judged"] is not None:
            report["problem"] = state["judged"].problem
        with open(path, "w") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
