"""pytest plugin: supplies `impl` to the hidden suites and turns results into points.

    pytest --pyargs autograder.suites                    # the reference (what CI runs)
    pytest --pyargs autograder.suites --submission nb.ipynb --grade-report scores.json

Every suite function marked with `@case` runs through `harness.run_case`, the same path the
notebook's hidden cells use, so timeouts, exception handling and messages are identical.
"""

import json
from collections import defaultdict

import pytest

from autograder import trusted  # noqa: F401 - snapshot the genuine tools before any submission runs
from autograder.harness import StepResult, run_case
from autograder.seam import Implementation
from autograder.steps import STEPS

_results = defaultdict(list)


def pytest_addoption(parser):
    group = parser.getgroup("autograder")
    group.addoption("--submission", default=None, help="grade this notebook instead of the reference")
    group.addoption("--grade-report", default=None, help="write per-step points as JSON here")


def pytest_configure(config):
    config.addinivalue_line("markers", "autograder_case: a weighted hidden-suite case")
    config._autograder_impl = None
    config._autograder_load_errors = []


def _implementation(config):
    if config._autograder_impl is None:
        path = config.getoption("--submission")
        if path is None:
            config._autograder_impl = Implementation.reference()
        else:
            from autograder import guard  # noqa: F401 - the reference is out of the submission's reach
            from autograder.submission import load

            loaded = load(path)
            config._autograder_load_errors = loaded.errors + ([(-1, loaded.fatal)] if loaded.fatal else [])
            config._autograder_impl = Implementation(loaded.namespace, f"submission {path}")
    return config._autograder_impl


@pytest.fixture
def impl(request):
    return _implementation(request.config)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    case = getattr(pyfuncitem.obj, "autograder_case", None)
    if case is None:
        return None
    result = run_case(case, _implementation(pyfuncitem.config))
    _results[case.step].append(result)
    if not result.passed:
        pytest.fail(f"[{case.step}] {result.message}", pytrace=False)
    return True


def step_scores():
    return {
        step: {"points": StepResult(step, results).points(STEPS[step].points),
               "max_points": STEPS[step].points,
               "failed": [f"{r.case.name}: {r.message}" for r in results if not r.passed],
               "tampered": StepResult(step, results).tampered}
        for step, results in _results.items()
    }


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--grade-report")
    if path:
        report = {"steps": step_scores(),
                  "load_errors": [list(e) for e in session.config._autograder_load_errors]}
        with open(path, "w") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
