"""Cases, and running them: the machinery every hidden suite shares.

A case is a plain function of one argument, `impl` (see `seam.py`), marked with `@case`. It
raises `CaseFailure` with a student-facing message when the implementation is wrong. The same
function is a pytest test (the plugin supplies `impl`) and a unit the judge runs through
`run_step` against a student's kernel, so both paths grade with identical code.
"""

from __future__ import annotations

import functools
import importlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from autograder.error_causes import ERROR_CAUSES, SHAPE_MISMATCH, error_cause  # noqa: F401 - suites read them here
from autograder.errors import (
    CaseFailure,
    CaseTimeout,
    DiagnosisTimeout,
    KernelStuck,
    RemoteError,
    one_line,
    printable,
)
from autograder.limits import CASE_TIMEOUT, ENDLESS_RETRY, MAX_MESSAGE, SEVERAL_FIT, STEP_BUDGET
from autograder.sealed_reports import builtin_name, sealed_failure
from autograder.steps import STEPS, suite_module

if TYPE_CHECKING:
    from autograder.seam import Implementation

CASE_KINDS = ("notes", "stored", "oracle", "property")
GRADER_ERROR = "GRADER ERROR"
RECORD_KEY = "autograder"  # the graded cell's metadata key that holds StepResult.as_record()

__all__ = ["CaseFailure", "CaseTimeout", "case", "case_family", "cases_of", "run_case", "run_step"]


@dataclass(frozen=True)
class Case:
    step: str
    name: str
    kind: str
    weight: float
    timeout: float
    func: Callable[[Any], None] = field(repr=False, compare=False)
    doc: str = ""  # the first line of a family member's own docstring (a partial has none)

    @property
    def title(self) -> str:
        return (self.doc or self.func.__doc__ or self.name).strip().splitlines()[0]


def _check_mark(step: str, kind: str) -> None:
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}")
    if kind not in CASE_KINDS:
        raise ValueError(f"kind must be one of {CASE_KINDS}")


def case(step: str, kind: str, weight: float = 1.0, timeout: float = CASE_TIMEOUT) -> Callable[[Callable], Callable]:
    """Mark a suite function of `impl` as a graded case of `step`."""
    _check_mark(step, kind)

    def mark(func):
        func.autograder_case = Case(step, func.__name__, kind, float(weight), float(timeout), func)
        return func

    return mark


def case_family(step: str, kind: str, members: Mapping[str, tuple[Any, str]], weight: float = 1.0,
                timeout: float = CASE_TIMEOUT) -> Callable[[Callable], Callable]:
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


def cases_of(step: str) -> list[Case]:
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


KERNEL_LOST = "the kernel stopped answering and was restarted"


def instructor_flags(record: StepRecord) -> list[str]:
    """What a step's verdicts flag for the instructor, from its record. The judge's report shows
    them; the instructor's flags (`coursekit/standing.py`) read the record, never the report's text,
    which quotes the student's own words (an exception's message once forged a flag there)."""
    errors = record.get("grader_errors")
    errors = [e for e in errors if isinstance(e, str)] if isinstance(errors, list) else []
    flags = [f"{GRADER_ERROR} in {', '.join(errors)}"] if errors else []
    return flags + ([KERNEL_LOST] if record.get("kernel_lost") is True else [])


@dataclass
class CaseResult:
    case: Case
    passed: bool
    message: str = ""
    seconds: float = 0.0


class StepSummary(TypedDict):
    """A step's result as data (`StepResult.summary`)."""

    points: float
    max_points: float
    failed: list[str]
    grader_errors: list[str]


@dataclass
class StepResult:
    step: str
    results: list[CaseResult]
    kernel_lost: bool = False  # the kernel stopped answering: the judge restarts it

    @property
    def fraction(self) -> float:
        total = sum(r.case.weight for r in self.results)
        earned = sum(r.case.weight for r in self.results if r.passed)
        return earned / total if total else 0.0

    @property
    def grader_errors(self) -> list[str]:
        return [r.case.name for r in self.results if r.message.startswith(GRADER_ERROR)]

    def points(self, max_points: float) -> float:
        # Rounded down to the grain of a thousandth so the cell's value never exceeds its
        # points (nbgrader fails the whole submission if it did).
        return min(float(max_points), int(self.fraction * max_points * 1000) / 1000)

    def summary(self) -> StepSummary:
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


# The numbers a report never repeats from an exception's own text: any with a fraction or an
# exponent, and whole numbers of four digits or more. The submission writes that text, and could
# write there the hidden inputs it was sent (issue "Sealed submissions", item 5); the shapes,
# axes and sizes that NumPy's and torch's messages name stay readable.
EXCEPTION_VALUE = re.compile(r"\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d{4,}")


def exception_line(error: object, limit: int = 200) -> str:
    """The first line of the text of the code under test's exception (or of any text its kernel sent), as a report
    may quote it: escaped, without the numbers EXCEPTION_VALUE names; "" where there is none. Every suite quotes
    through it: r63's backward, whose error text held the case's inputs to six decimals, was quoted whole."""
    lines = EXCEPTION_VALUE.sub("…", printable(str(error))).strip().splitlines()
    return lines[0][:limit] if lines else ""


def _describe_error(step: str, error: BaseException, show_details: bool = True) -> str:
    """What the student reads for an exception of the code under test. Without `show_details`
    (a step run with a dependency's reference in the kernel) the exception's own text is left out:
    code that can see the reference could write it there, and the report is the student's. With
    it, the text is shown without the values it holds (EXCEPTION_VALUE)."""
    shown = EXCEPTION_VALUE.sub("…", printable(str(error)))  # no terminal escapes either (`errors.py`)
    text = shown.strip().splitlines() if show_details else []
    detail = f": {text[0][:200]}" if text else ""
    name = error_name(error) if show_details else builtin_name(error)  # the kernel's own choice (`sealed_reports`)
    # The error's words pick one of these fixed texts even where they are not shown: a kernel
    # that forged them could only choose which fixed text its own step gets. They come before the
    # signature's TypeError: torch's own functions word a wrong call of theirs with "argument" too,
    # and before the stub's NotImplementedError: torch raises one for a module without a forward.
    said = str(error)
    cause = error_cause(said)
    if name == "NotImplementedError" and cause is None:
        return f"`{step}` is not implemented yet (it still raises NotImplementedError)."
    if isinstance(error, MemoryError) or name in ("MemoryError", "OutOfMemoryError"):
        budget = f" ({text[0]})" if text and "budget" in text[0] else ""
        return f"`{step}` ran out of memory{budget}; are you building a much larger array than needed?"
    if cause is not None:
        return f"`{step}` raised {name}: {cause}"
    if isinstance(error, TypeError) and "argument" in said:
        said = f" ({shown[:160]})" if show_details else ""
        return f"`{step}` could not be called as the assignment specifies{said}; keep the signature exactly as given"
    if any(phrase in said for phrase in SHAPE_MISMATCH):
        return (f"`{step}` raised {name}, a shape mismatch: two arrays it combines do not fit (compare each "
                f"one's shape with the docstring's){detail}")
    return f"`{step}` raised {name}, and the grader cannot name the cause{detail}"


def error_name(error: BaseException) -> str:
    """The exception's type name: a RemoteError's is the type the submission raised."""
    return getattr(error, "type_name", type(error).__name__)


def _judged_failure(case_: Case, error: BaseException) -> str:
    """The message for an exception of the judge's own code while it ran `case_`. Whose fault it
    was is decided here, from what the judge sees, never from what the kernel says: the case is
    run against the reference, in this process. If it passes there, what the submission answered
    made the judge's code fail (a value of the wrong kind, say), and the case is the student's to
    lose; if it fails there too, the grader itself is wrong."""
    if not _fails_on_reference(case_):
        return (f"`{case_.step}` answered something the grader could not use ({type(error).__name__}): "
                "check the type and shape of what it returns")
    return (f"{GRADER_ERROR}: this case could not run ({type(error).__name__}); it is not your fault "
            "and your instructor is told")


@functools.cache
def _fails_on_reference(case_: Case) -> bool:
    from autograder.reference import reference_implementation

    try:
        case_.func(reference_implementation())
    except Exception:  # noqa: BLE001 - any failure of the reference is the grader's
        return True
    return False


def run_case(case_: Case, impl: Implementation, timeout: float | None = None, show_details: bool = True) -> CaseResult:
    """Run one case against `impl`; never raises, except KernelStuck (the kernel must go).
    `show_details`: whether the code under test's own exception text may reach the report."""
    timeout = case_.timeout if timeout is None else timeout
    start = time.perf_counter()
    impl.deadline = time.monotonic() + timeout
    passed, message = False, ""
    try:
        case_.func(impl)
        passed = True
    except CaseFailure as failure:  # the suite's words quote the answer: none beside a reference (`sealed_reports`)
        message = str(failure) if show_details else sealed_failure(case_.step)
    except KernelStuck:
        raise
    except DiagnosisTimeout:  # the code's own call finished: slow and wrong is wrong, not endless
        message = (f"`{case_.step}` gave a wrong value, and the grader ran out of this case's {timeout:g} s "
                   "while it ran your code again to name the cause (it is slow as well as wrong)")
    except CaseTimeout:
        message = (f"`{case_.step}` did not finish within {timeout:g} s "
                   "(an endless loop, or far more work than the task needs?)")
    except RemoteError as error:
        message = _describe_error(case_.step, error, show_details)
    except Exception as error:  # noqa: BLE001 - the judge's own code failed: whose fault, it decides
        message = _judged_failure(case_, error)
    finally:
        impl.deadline = None
    causes = min(3, 1 + message.count("; or ")) if SEVERAL_FIT in message else 1
    # One line, escaped: a suite's words quote names the kernel chose (a class's __name__, a state_dict key), and
    # r63's class named with an escape sequence and a newline wrote its own flag line into the report
    return CaseResult(case_, passed, one_line(message)[:MAX_MESSAGE * causes], time.perf_counter() - start)


def run_step(step: str, impl: Implementation, reference_source: str = "", reference_names: Sequence[str] = (),
             budget: float = STEP_BUDGET) -> StepResult:
    """Run every case of `step` against `impl`, never raising.

    `reference_names` (defined by `reference_source`) stand in for the submission's own while
    the step is graded, so a mistake in them costs points at their own step only. The kernel that
    held them is the judge's to discard afterwards, and no exception text of such a step reaches
    its report. The step gets STEP_BUDGET seconds, or `budget` if that is less (what is left of the
    notebook's own time).
    """
    budget = min(budget, STEP_BUDGET)
    cases = cases_of(step)
    results = []
    started = time.perf_counter()
    try:
        impl.deadline = time.monotonic() + budget
        impl.begin(reference_source, reference_names)
        impl.deadline = None
        for case_ in cases:
            left = budget - (time.perf_counter() - started)
            if left <= 0:
                results.append(CaseResult(case_, False, f"not run: `{step}` used up its {budget:g} s"))
                continue
            # Once a case has timed out the code is likely endless: the rest get a short leash, so
            # one endless function costs its own step and not the whole notebook's time.
            endless = any(r.message.startswith(f"`{step}` did not finish") for r in results)
            limit = min(case_.timeout, ENDLESS_RETRY) if endless else case_.timeout
            results.append(run_case(case_, impl, min(limit, left), show_details=not reference_names))
        impl.deadline = time.monotonic() + budget
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
