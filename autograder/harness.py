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

from autograder.errors import CaseFailure, CaseTimeout, DiagnosisTimeout, KernelStuck, RemoteError, printable
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


# Exceptions whose own words name their cause, whatever the step: (how NumPy, torch or Python
# word it, the cause the student reads).
def error_cause(said: str) -> str | None:
    """The cause ERROR_CAUSES gives for an exception worded `said`, or None: its own words name it."""
    return next((cause for phrases, cause in ERROR_CAUSES if any(phrase in said for phrase in phrases)), None)


ERROR_CAUSES = (
    (("axes don't match array",),
     "a transpose given its axes one by one (K.transpose(0, 2, 1), np.transpose(K, (1, 0))) fits arrays of "
     "exactly that many axes; to swap the last two, whatever comes before them: np.swapaxes(K, -1, -2)"),
    (("view size is not compatible with input tensor's size and stride",),
     "`.view` on a tensor whose memory a transpose reordered; use .reshape, or call .contiguous() before .view"),
    (("'float' object is not callable",),
     "it calls a number as if it were a function; does an attribute that should hold a module (an "
     "nn.Dropout, say) hold the number it was built from?"),
    # NumPy's .size is the count of entries, a whole number, where torch's x.size(dim) is a method
    (("'int' object is not callable",),
     "it calls a whole number as if it were a function: is it NumPy's .size, the count of an array's "
     "entries (torch's x.size(dim) is a method; NumPy reads the size of one axis as x.shape[dim]), or an "
     "attribute that should hold a module, holding the number it was built from?"),
    (("'numpy.ndarray' object has no attribute", "can't assign a numpy.ndarray to a torch"),
     "torch and NumPy mixed: a torch method called on a NumPy array, or a NumPy array written into a torch "
     "tensor; NumPy arrays have their own functions (np.expand_dims for .unsqueeze, .reshape for .view, "
     "np.concatenate for torch.cat): stay in one library"),
    # torch's own functions word a NumPy argument like a wrong call ("argument 'input'"), so the
    # signature's text would blame the step's own parameters
    (("must be Tensor, not numpy.ndarray", "'numpy.ndarray' and 'Tensor'", "'Tensor' and 'numpy.ndarray'"),
     "torch and NumPy mixed: a torch function (torch.matmul, torch.softmax, ...) given a NumPy array, or a NumPy "
     "array and a tensor combined by an operator (@, *); NumPy's functions take arrays and torch's take tensors: "
     "stay in the library the step's inputs come from"),
    (("cannot assign module before Module.__init__() call", "cannot assign parameters before Module.__init__()"),
     "an nn.Module's __init__ assigns a layer before calling super().__init__(): that call sets up where a "
     "module keeps its layers, so it comes first"),
    (("batch1 must be a 3D tensor", "batch2 must be a 3D tensor"),
     "torch.bmm takes 3-d batches only, so a single sequence (num_tokens, d_in) fails; @ (torch.matmul) "
     "multiplies the last two axes and works with or without a batch"),
    (("truth value of an array with more than one element is ambiguous",
      "Boolean value of Tensor with more than one value is ambiguous"),
     "an array used where Python needs one True or False: `if array:`, `and`/`or` between arrays, or Python's "
     "built-in max, min or sorted on arrays, which compare whole rows; NumPy's and torch's own functions "
     "(np.maximum of two arrays, np.max of one, .any(), &, |) work entry by entry"),
    (("unexpected keyword argument 'dim'", "unexpected keyword argument 'keepdim'"),
     "a NumPy function given torch's keywords (dim=, keepdim=): NumPy names them axis= and keepdims=; stay in "
     "one library's words"),
    (("only length-1 arrays can be converted", "only 0-dimensional arrays can be converted",
      "only one element tensors can be converted"),
     "a function of the math module called on an array; math.sin, math.exp and friends take one number, "
     "np.sin and np.exp (or torch's) work on every entry"),
    (("must be tuple of Tensors, not Tensor", "cat() takes from 1 to 2 positional arguments",
      "stack() takes from 1 to 2 positional arguments"),
     "torch.cat and torch.stack take the tensors to join as ONE list (or tuple), then dim; here they were "
     "passed one by one, or a single tensor in place of the list"),
    (("must be tuple of Tensors, not generator",),
     "torch.cat and torch.stack got a generator, (f(t) for t in ...), where they take a list (or tuple) of "
     "tensors: build it in square brackets, [head(x) for head in self.heads]"),
    # torch's tensor makers word a float as their first size like a wrong call of theirs
    (("ones() takes 1 positional argument but", "zeros() takes 1 positional argument but",
      "empty() takes 1 positional argument but"),
     "a tensor maker (torch.ones, torch.zeros, torch.empty) got a size that is a float: a size computed with / "
     "(// keeps it whole), or a float passed where a count belongs (a dropout rate in context_length's place, "
     "say: are the arguments passed on in the order of each signature?)"),
    (("'Tensor' object has no attribute 'append'", "'Tensor' object has no attribute 'extend'"),
     "a list's method called on a tensor: a tensor has a fixed size and cannot grow in place; joining "
     "tensors (torch.cat) makes a new, longer one, which is kept in place of the old"),
    (("must be tuple of ints,but got float", "must be tuple of ints, not float"),
     "a size given to view, reshape or a tensor constructor is a float: / always gives one, even where the "
     "division is exact; sizes are whole numbers (//)"),
    (("must be Tensor, not int", "must be Tensor, not float"),
     "a torch function (torch.sqrt, torch.exp, ...) got a plain Python number, such as a size read from .shape; "
     "it takes a tensor: on a plain number use math.sqrt or ** 0.5"),
    (('is missing the required "forward" function',),
     "a module without a forward method was called: an nn.ModuleList (or nn.ModuleDict) only holds modules "
     "and has no forward of its own, so call each module in it; in a class of your own, check that forward "
     "is spelled so and indented inside the class"),
    (("Only Tensors of floating point and complex dtype can require gradients",),
     "an nn.Parameter (or requires_grad) made of a bool or integer tensor: only floats can be trained; a "
     "mask is no trained weight: keep it with self.register_buffer (or as a plain tensor)"),
    (("Can't call numpy() on Tensor that requires grad",),
     "NumPy was given a tensor that autograd tracks (np.concatenate, np.exp ... on a layer's output): NumPy "
     "cuts the path the gradients take back to the weights, so a layer's forward stays in torch (torch.cat, "
     "torch.exp ...)"),
    (("only integer tensors of a single element can be converted to an index",),
     "a tensor of several values was used where one index is expected (a slice bound such as x[:, lengths:], "
     "or range(t)): an index or a slice bound is one number, so take the values one at a time"),
    (("~ (operator.invert) is only implemented on integer and Boolean-type tensors",),
     "~ inverts a bool (or integer) tensor only, and this one holds floats: torch.ones (and torch.tril or triu of it) "
     "makes floats unless given dtype=torch.bool; build the mask as bool, or compare (== 0) where ~ was meant"),
    (("too many values to unpack", "not enough values to unpack"),
     "something was unpacked into more or fewer names than it holds: a shape holds one size per axis, so `b, "
     "num_tokens = x.shape` fails on an x of three axes; name every axis (`b, num_tokens, _ = x.shape`) or index "
     "the one needed (x.shape[1])"),
    (("only supports boolean masks", "where expected condition to be a boolean tensor"),
     "masked_fill (or torch.where) got a mask of numbers, not of True/False: it takes a torch.bool mask; a "
     "mask built from torch.ones (torch.triu of it, say) holds floats, so keep the mask bool"),
    (("'torch.return_types.",),
     "tensor.max(dim=...) (and .min, .sort, .topk) returns a pair, (values, indices), not the values alone: take "
     "its .values, or use torch.amax (torch.amin), which returns the values only"),
    (("as a data type",),
     "NumPy's array makers (np.zeros, np.ones, np.empty, np.full) take the shape as ONE tuple, np.zeros((rows, "
     "cols)): a second number is read as the dtype (torch.zeros takes the sizes one by one, NumPy does not)"),
    (("only integer scalar arrays can be converted to a scalar index",),
     "an array was given where one whole number belongs: np.max(a, b) (np.min too) reads b as the axis, not as a "
     "second array to compare (the entry-by-entry larger of two arrays is np.maximum(a, b)); and a Python list "
     "cannot be indexed by an array"),
    (("input tensor must have at least 2 dimensions",),
     "torch.triu (or tril) got a tensor of one axis, which has no diagonal: the triangle is cut from a matrix, so "
     "make it (num_tokens, num_tokens), torch.ones(num_tokens, num_tokens), not torch.ones(num_tokens)"),
    # 'method', 'method-wrapper' (a built-in's __len__) and 'builtin_function_or_method' (a tensor's .size)
    (("method' and '", "method-wrapper' and '", "and 'method", "and 'builtin_function_or_method'", "method' object is not subscriptable",
      "method-wrapper' object is not subscriptable"),
     "a method is used without calling it (cache.__len__ for len(cache), x.size for x.size()): a method gives its "
     "value only when it is called, with parentheses"),
    # x @ W.weight.T + W.bias by hand: a layer made with bias=False (qkv_bias=False) keeps None as its bias
    (("and 'NoneType'", "'NoneType' and '"),
     "None is added to (or multiplied with) a value: the .bias of a layer made with bias=False (qkv_bias=False) "
     "is None, so x @ W.weight.T + W.bias fails where calling the layer, W(x), adds a bias only where there is "
     "one; or an optional argument left None (mask=None) is used as if it were given (test `is None` first)"),
    (("'NoneType' object has no attribute", "object of type 'NoneType' has no len()",
      "'NoneType' object is not subscriptable"),
     "something is None where a value was expected: an optional argument (cache=None, mask=None) used "
     "as if it were given (test `is None` first), or the result of a method that works in place and "
     "returns nothing"),
    # last: the kinds of object above have causes of their own
    (("object has no attribute", "module 'numpy' has no attribute", "module 'torch' has no attribute"),
     "it reads an attribute that does not exist: a module's own (self.name) must be set in __init__ and spelled "
     "alike where it is read, and NumPy's and torch's names differ (np.softmax does not exist, say)"),
)
# How NumPy and torch word an operation on arrays whose shapes do not fit: the other kind of
# exception the grader can name without knowing the code.
SHAPE_MISMATCH = ("must match the size of tensor", "Sizes of tensors must match", "Expected size for first two dimensions",
                  "shapes cannot be multiplied", "could not be broadcast", "mismatch in its core dimension",
                  "size mismatch", "is invalid for input of size", "does not match the broadcast shape",
                  "could not broadcast input array")


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
    return CaseResult(case_, passed, message[:MAX_MESSAGE * causes], time.perf_counter() - start)


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
