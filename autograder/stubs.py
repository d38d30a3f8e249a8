"""Steps still as released: nothing to lend them.

A step whose dependency lost points is judged with the dependency's reference in a lending
kernel (`kernel/lending.py`), which costs a second kernel and a replay of the notebook. A step
that is still the released stub (`raise NotImplementedError()`) raises before it could call
anything lent, so it scores the same without: it is judged in the notebook's own kernel, like a
step that borrows nothing, and an untouched notebook starts no lending kernel at all.

Two questions, asked at two times:
- `untouched_steps`, from the notebook file before anything runs: which steps' solution cells are
  as released (nbgrader's checksum of the cell), so that no lending kernel is started for them
  ahead of time;
- `still_a_stub`, from the kernel when the step is judged: whether the object of that name
  (wherever the student defined it) can only raise. Only this one decides how the step is judged;
  a notebook that defines the step in another cell gets its lending kernel then, started late.

Neither answer can raise a grade: a kernel that says "stub" when it is not has its step judged
with its own dependencies, as every step whose dependencies scored full marks is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nbgrader.utils import compute_checksum

from autograder.errors import CaseTimeout
from autograder.steps import STEPS, nbgrader_metadata

SOLUTION_SUFFIX = "_solution"  # a step's solution cell is `<step>_solution` (coursekit/build.py)

# What a function may do and still never return: fetch names and attributes, call, raise. With
# no jump and no return among its instructions, it can only end at its `raise`. The names are the
# released stubs' own: `raise NotImplementedError()`, after `super().__init__()` in a class.
STUB_OPS = frozenset({
    "RESUME", "NOP", "CACHE", "PUSH_NULL", "COPY_FREE_VARS", "MAKE_CELL", "LOAD_CLOSURE",
    "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_FAST", "LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR",
    "PRECALL", "CALL", "POP_TOP", "RAISE_VARARGS",
})
STUB_NAMES = frozenset({"NotImplementedError", "super", "__init__"})


def untouched_steps(cells: Iterable[Any]) -> set[str]:
    """The graded steps whose solution cell is unchanged since release, by nbgrader's checksum
    (which `nbgrader autograde` restores from the gradebook before the judge runs)."""
    untouched = set()
    for cell in cells:
        try:
            meta = nbgrader_metadata(cell)
            grade_id = str(meta.get("grade_id", ""))
            step = grade_id.removesuffix(SOLUTION_SUFFIX)
            if meta.get("solution") and step != grade_id and step in STEPS and compute_checksum(cell) == meta.get("checksum"):
                untouched.add(step)
        except (AttributeError, KeyError, TypeError, ValueError):
            continue  # a cell too damaged to read is no stub we can vouch for
    return untouched


def only_raises(description: Any) -> bool:
    """Whether the agent's description of a function (`op_describe`'s `code`) shows one that
    raises whatever it is given, touching no name but the released stub's."""
    code = description.get("code") if isinstance(description, dict) else None
    if not isinstance(code, dict):
        return False
    names, ops = code.get("names"), code.get("ops")
    if not isinstance(names, list) or not isinstance(ops, list):
        return False
    return ("RAISE_VARARGS" in ops and all(isinstance(op, str) and op in STUB_OPS for op in ops)
            and all(isinstance(name, str) and name in STUB_NAMES for name in names))


def still_a_stub(impl: Any, step: str) -> bool:
    """Whether `step` in the code under test (`seam.Implementation`) raises before it could call
    anything: a function that only raises, or a class whose `__init__` only raises. Anything
    unexpected (not defined, no answer in `impl.deadline`, not data) says no: the step is then
    lent as before, and a kernel stuck here is replaced when the judge next needs it."""
    try:
        graded = getattr(impl, step)
        whole = graded.describe()
        if only_raises(whole):
            return True
        return isinstance(whole, dict) and whole.get("type") == "type" and only_raises(graded.describe("__init__"))
    except (Exception, CaseTimeout):  # noqa: BLE001 - whatever went wrong (a hang too), lend as before
        return False
