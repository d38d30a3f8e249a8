"""Cases, and running them: the machinery every hidden suite shares.

A case is a plain function of one argument, `impl` (see `seam.py`), marked with `@case`. It
raises `CaseFailure` with a student-facing message when the implementation is wrong. The same
function is a pytest test (the plugin supplies `impl`) and a unit the notebook's hidden cells run
through `run_step`, so both paths grade with identical code.
"""

import importlib
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from autograder import trusted
from autograder.steps import STEPS, suite_module

KINDS = ("notes", "stored", "oracle", "property")
GRADER_ERROR = "GRADER ERROR"
ENDLESS_RETRY = 2.0  # seconds each remaining case gets after one case of a step timed out
# All of a step's cases together; stays under nbgrader's cell timeout (nbgrader_config.py),
# so the hidden cell always ends with its own report rather than being killed.
STEP_BUDGET = 24.0
MAX_MESSAGE = 400


class CaseFailure(AssertionError):
    """A wrong answer. Its message is shown to the student as is."""


class CaseTimeout(BaseException):
    # BaseException, so a submission's `except Exception:` cannot swallow it.
    pass


@dataclass(frozen=True)
class Case:
    step: str
    name: str
    kind: str
    weight: float
    timeout: float
    func: object = field(repr=False, compare=False)

    @property
    def title(self):
        return (self.func.__doc__ or self.name).strip().splitlines()[0]


def case(step, kind, weight=1.0, timeout=10.0):
    """Mark a suite function as a graded case of `step`."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")

    def mark(func):
        func.autograder_case = Case(step, func.__name__, kind, float(weight), float(timeout), func)
        return func

    return mark


def cases_of(step):
    """The cases of one step, in the order its suite defines them."""
    module = importlib.import_module(suite_module(step))
    found = [obj.autograder_case for obj in vars(module).values() if hasattr(obj, "autograder_case")]
    return [c for c in found if c.step == step]


@dataclass
class CaseResult:
    case: Case
    passed: bool
    message: str = ""
    seconds: float = 0.0
    tampered: tuple = ()


@dataclass
class StepResult:
    step: str
    results: list

    @property
    def fraction(self):
        total = sum(r.case.weight for r in self.results)
        earned = sum(r.case.weight for r in self.results if r.passed)
        return earned / total if total else 0.0

    @property
    def tampered(self):
        return sorted({name for r in self.results for name in r.tampered})

    def points(self, max_points):
        # Rounded down to the grain of a thousandth so the cell's value never exceeds its
        # points (nbgrader fails the whole submission if it did).
        return min(float(max_points), int(self.fraction * max_points * 1000) / 1000)


@contextmanager
def time_limit(seconds):
    """Raise CaseTimeout in the main thread after `seconds`, re-raised until the case ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        # Re-arm, so a submission that catches and loops is interrupted again.
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_PACKAGES_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Code that is not the submission's: the interpreter, installed packages, the grader and the
# reference (installed beside it).
_LIBRARY_DIRS = tuple(
    os.path.join(p, "") for p in
    {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
     os.path.join(_PACKAGES_DIR, "autograder"), os.path.join(_PACKAGES_DIR, "solutions")}
)


def _raised_by_grader(error):
    """True if no frame of the traceback is the submission's code: the grader (or the
    reference it stands in) failed, not the student."""
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not filename.startswith("<frozen") and not os.path.realpath(filename).startswith(_LIBRARY_DIRS):
            return False
        tb = tb.tb_next
    return True


def _describe_exception(step, error):
    text = str(error).strip().splitlines()
    detail = f": {text[0][:200]}" if text else ""
    name = type(error).__name__
    if name == "NotImplementedError":
        return f"`{step}` is not implemented yet (it still raises NotImplementedError)."
    if isinstance(error, MemoryError):
        return f"`{step}` ran out of memory; are you building a much larger array than needed?"
    return f"`{step}` raised {name}{detail}"


def run_case(case_, impl, timeout=None):
    timeout = case_.timeout if timeout is None else timeout
    start = time.perf_counter()
    passed, message = False, ""
    try:
        with impl.isolated(case_.step), time_limit(timeout):
            case_.func(impl)
        passed = True
    except CaseFailure as failure:
        message = str(failure)
    except KeyboardInterrupt:
        raise  # the kernel is being interrupted (nbgrader's cell timeout): let the cell end
    except CaseTimeout:
        message = (f"`{case_.step}` did not finish within {timeout:g} s "
                   "(an endless loop, or far more work than the task needs?)")
    except BaseException as error:  # noqa: BLE001 - a submission may raise anything, SystemExit too
        message = _describe_exception(case_.step, error)
        wrong_signature = isinstance(error, TypeError) and "argument" in str(error)
        if wrong_signature:
            message = (f"`{case_.step}` could not be called as the assignment specifies "
                       f"({str(error)[:160]}); keep the signature exactly as given")
        elif _raised_by_grader(error):
            message = (f"{GRADER_ERROR}: this case could not run ({type(error).__name__}); it is not "
                       "your fault and your instructor is told")
    changed = tuple(trusted.restore())
    if changed:
        passed = False
        message = ("the grader's own tools were modified while this ran ("
                   + ", ".join(changed) + "); the case is not credited and the instructor is told")
    return CaseResult(case_, passed, message[:MAX_MESSAGE], time.perf_counter() - start, changed)


def run_step(step, impl):
    """Run every case of `step` against `impl`, never raising."""
    before = tuple(trusted.restore())
    results = []
    started = time.perf_counter()
    for case_ in cases_of(step):
        left = STEP_BUDGET - (time.perf_counter() - started)
        if left <= 0:
            results.append(CaseResult(case_, False, f"not run: `{step}` used up its {STEP_BUDGET:g} s"))
            continue
        # Once a case has timed out the code is likely endless: the rest get a short leash, so
        # one endless function costs its own step and not the whole notebook's time.
        endless = any(r.message.startswith(f"`{step}` did not finish") for r in results)
        limit = min(case_.timeout, ENDLESS_RETRY) if endless else case_.timeout
        results.append(run_case(case_, impl, min(limit, left)))
    if before:
        for r in results:
            r.passed, r.tampered = False, before
            r.message = ("the grader's own tools were modified before grading started ("
                         + ", ".join(before) + "); not credited, and the instructor is told")
    return StepResult(step, results)
