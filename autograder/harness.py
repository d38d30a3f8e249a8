"""Cases, and running them: the machinery every hidden suite shares.

A case is a plain function of one argument, `impl` (see `seam.py`), marked with `@case`. It
raises `CaseFailure` with a student-facing message when the implementation is wrong. The same
function is a pytest test (the plugin supplies `impl`) and a unit the judge runs through
`run_step` against a student's kernel, so both paths grade with identical code.
"""

import functools
import importlib
import time
from dataclasses import dataclass, field
from typing import TypedDict

from autograder.errors import CaseFailure, CaseTimeout, KernelStuck, RemoteError
from autograder.limits import CASE_TIMEOUT, ENDLESS_RETRY, STEP_BUDGET
from autograder.steps import STEPS, suite_module

CASE_KINDS = ("notes", "stored", "oracle", "property")
GRADER_ERROR = "GRADER ERROR"
MAX_MESSAGE = 400
RECORD_KEY = "autograder"  # the graded cell's metadata key that holds StepResult.as_record()

__all__ = ["CaseFailure", "CaseTimeout", "case", "case_family", "cases_of", "run_case", "run_step"]


@dataclass(frozen=True)
class Case:
    step: str
    name: str
    kind: str
    weight: float
    timeout: float
    func: object = field(repr=False, compare=False)
    doc: str = ""  # the first line of a family member's own docstring (a partial has none)

    @property
    def title(self):
        return (self.doc or self.func.__doc__ or self.name).strip().splitlines()[0]


def _check_mark(step, kind):
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}")
    if kind not in CASE_KINDS:
        raise ValueError(f"kind must be one of {CASE_KINDS}")


def case(step, kind, weight=1.0, timeout=CASE_TIMEOUT):
    """Mark a suite function of `impl` as a graded case of `step`."""
    _check_mark(step, kind)

    def mark(func):
        func.autograder_case = Case(step, func.__name__, kind, float(weight), float(timeout), func)
        return func

    return mark


def case_family(step, kind, members, weight=1.0, timeout=CASE_TIMEOUT):
    """Mark a suite function of (`impl`, `member`) as one graded case per member.

    `members` maps a name suffix to (argument, docstring). Each member is a case of its own,
    named `<function>_<suffix>` and weighted `weight`; pytest sees one parametrized test
    (the plugin's `pytest_generate_tests`).
    """
    _check_mark(step, kind)

    def mark(func):
        func.autograder_family = {
            suffix: Case(step, f"{func.__name__}_{suffix}", kind, float(weight), float(timeout),
                         functools.partial(func, member=argument), doc)
            for suffix, (argument, doc) in members.items()
        }
        return func

    return mark


def cases_of(step):
    """The cases of one step, in the order its suite defines them."""
    module = importlib.import_module(suite_module(step))
    found = []
    for obj in vars(module).values():
        if hasattr(obj, "autograder_case"):
            found.append(obj.autograder_case)
        found.extend(getattr(obj, "autograder_family", {}).values())
    return [c for c in found if c.step == step]


class CaseRecord(TypedDict):
    """One case's verdict as data, as the judge stores it in its graded cell's metadata."""
    case: str
    title: str
    kind: str
    weight: float
    passed: bool
    message: str  # the student-facing diagnosis ("" when passed): never an expected value


class StepRecord(TypedDict):
    """A step's verdicts as data: `cell.metadata["autograder"]` of a graded cell (coursekit/report)."""
    step: str
    cases: list[CaseRecord]
    grader_errors: list[str]
    kernel_lost: bool


@dataclass
class CaseResult:
    case: Case
    passed: bool
    message: str = ""
    seconds: float = 0.0


@dataclass
class StepResult:
    step: str
    results: list
    kernel_lost: bool = False  # the kernel stopped answering: the judge restarts it

    @property
    def fraction(self):
        total = sum(r.case.weight for r in self.results)
        earned = sum(r.case.weight for r in self.results if r.passed)
        return earned / total if total else 0.0

    @property
    def grader_errors(self):
        return [r.case.name for r in self.results if r.message.startswith(GRADER_ERROR)]

    def points(self, max_points):
        # Rounded down to the grain of a thousandth so the cell's value never exceeds its
        # points (nbgrader fails the whole submission if it did).
        return min(float(max_points), int(self.fraction * max_points * 1000) / 1000)

    def summary(self):
        """The step's result as data: what reports, exports and tests read."""
        max_points = STEPS[self.step].points
        return {"points": self.points(max_points), "max_points": max_points,
                "failed": [f"{r.case.name}: {r.message}" for r in self.results if not r.passed],
                "grader_errors": self.grader_errors}

    def as_record(self) -> StepRecord:
        """Every case's verdict as JSON-ready data: what the report of a class reads, so that it
        never parses the text a student reads."""
        cases = [CaseRecord(case=r.case.name, title=r.case.title, kind=r.case.kind, weight=r.case.weight,
                            passed=r.passed, message=r.message) for r in self.results]
        return StepRecord(step=self.step, cases=cases, grader_errors=self.grader_errors,
                          kernel_lost=self.kernel_lost)


def _describe_error(step, error):
    text = str(error).strip().splitlines()
    detail = f": {text[0][:200]}" if text else ""
    name = getattr(error, "type_name", type(error).__name__)
    if name == "NotImplementedError":
        return f"`{step}` is not implemented yet (it still raises NotImplementedError)."
    if isinstance(error, MemoryError) or name in ("MemoryError", "OutOfMemoryError"):
        return f"`{step}` ran out of memory; are you building a much larger array than needed?"
    if isinstance(error, TypeError) and "argument" in str(error):
        return (f"`{step}` could not be called as the assignment specifies ({str(error)[:160]}); "
                "keep the signature exactly as given")
    if isinstance(error, RemoteError) and not error.submission:
        # Raised with no frame of the submission's code on the stack: e.g. a library call the
        # grader made. Not the student's fault.
        return f"{GRADER_ERROR}: this case could not run ({name}); it is not your fault and your instructor is told"
    return f"`{step}` raised {name}{detail}"


def run_case(case_, impl, timeout=None):
    """Run one case against `impl`; never raises, except KernelStuck (the kernel must go)."""
    timeout = case_.timeout if timeout is None else timeout
    start = time.perf_counter()
    impl.deadline = time.monotonic() + timeout
    passed, message = False, ""
    try:
        case_.func(impl)
        passed = True
    except CaseFailure as failure:
        message = str(failure)
    except KernelStuck:
        raise
    except CaseTimeout:
        message = (f"`{case_.step}` did not finish within {timeout:g} s "
                   "(an endless loop, or far more work than the task needs?)")
    except RemoteError as error:
        message = _describe_error(case_.step, error)
    except Exception as error:  # noqa: BLE001 - the judge's own code failed: not the student's fault
        message = (f"{GRADER_ERROR}: this case could not run ({type(error).__name__}); it is not "
                   "your fault and your instructor is told")
    finally:
        impl.deadline = None
    return CaseResult(case_, passed, message[:MAX_MESSAGE], time.perf_counter() - start)


def run_step(step, impl, reference_source="", reference_names=()):
    """Run every case of `step` against `impl`, never raising.

    `reference_names` (defined by `reference_source`) stand in for the submission's own while
    the step is graded, so a mistake in them costs points at their own step only.
    """
    cases = cases_of(step)
    results = []
    started = time.perf_counter()
    try:
        impl.deadline = time.monotonic() + STEP_BUDGET
        impl.begin(reference_source, reference_names)
        impl.deadline = None
        for case_ in cases:
            left = STEP_BUDGET - (time.perf_counter() - started)
            if left <= 0:
                results.append(CaseResult(case_, False, f"not run: `{step}` used up its {STEP_BUDGET:g} s"))
                continue
            # Once a case has timed out the code is likely endless: the rest get a short leash, so
            # one endless function costs its own step and not the whole notebook's time.
            endless = any(r.message.startswith(f"`{step}` did not finish") for r in results)
            limit = min(case_.timeout, ENDLESS_RETRY) if endless else case_.timeout
            results.append(run_case(case_, impl, min(limit, left)))
        impl.deadline = time.monotonic() + STEP_BUDGET
        impl.end()
    except KernelStuck:
        message = (f"`{step}` did not finish, and did not stop when interrupted; the kernel was "
                   "restarted (an endless loop that catches KeyboardInterrupt?)")
        done = {r.case.name for r in results}
        results += [CaseResult(c, False, message) for c in cases if c.name not in done]
        return StepResult(step, results, kernel_lost=True)
    except (CaseTimeout, Exception) as error:  # noqa: BLE001 - begin/end: the kernel's agent failed
        message = f"`{step}` could not be graded: the kernel did not answer properly ({type(error).__name__})"
        done = {r.case.name for r in results}
        results += [CaseResult(c, False, message) for c in cases if c.name not in done]
    finally:
        impl.deadline = None
    return StepResult(step, results)
