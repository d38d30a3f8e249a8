"""What the report of a step graded with a lent reference may say (`harness.run_case`).

While a dependency's reference is in the kernel, the code under test can read it: its source
passes through `compile`, which the submission may wrap. Whatever the judge quotes from the
kernel's answers then reaches the student's report: the text of an exception (left out since
the issue "Sealed submissions"), but also the name of an exception type the kernel made up (80
characters a case) and any shape, size or type a suite's message names (the shape of an empty
array is up to 63 bits of the kernel's choosing). Red-team round r37 carried the reference
softmax, docstring and all, into the feedback that way. So such a step's failed cases say only
that they failed, in fixed words, and an exception is named by its builtin base (one of a few).
The verdicts (which cases pass) are untouched.
"""

import builtins

from autograder.steps import STEPS

SEALED_FAILURE = ("`{step}` failed this case. It was graded with the course's {built_on} in place of yours (yours "
                  "lost points), and the grader does not describe what your code did here: code that can read the "
                  "reference could write it into that description. Fix yours first: this step's visible checks, "
                  "run with your own, then say what is wrong")


def sealed_failure(step: str) -> str:
    """The one text of a failed case of `step` graded with a lent reference: it names the steps it
    builds on (fixed by the course, never by the kernel) and what to do."""
    built_on = STEPS[step].depends_on if step in STEPS else ()
    names = " or ".join(f"`{name}`" for name in built_on) or "a step it builds on"
    return SEALED_FAILURE.format(step=step, built_on=f"reference of {names}")


def builtin_name(error: BaseException) -> str:
    """The name of the nearest builtin exception type `error` derives from (a RemoteError
    derives from the base the kernel named, one of the builtins)."""
    for kind in type(error).__mro__:
        if getattr(builtins, kind.__name__, None) is kind:
            return kind.__name__
    return "Exception"
