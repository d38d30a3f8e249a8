"""A kernel that is stuck before a step's cases run costs that step, never the run.

`KernelStuck` is a BaseException, so that no `except Exception` in the kernel's path swallows a
case's timeout. The judge handles it where a case runs, and retries a kernel that does not boot
once, after a restart and a replay. A thread that holds the GIL in C (a regular expression that
backtracks, started in an ordinary cell) is stuck again after the replay: the second boot raised
KernelStuck out of `JudgedExecute.judge`, past nbgrader's and coursekit's `except Exception`,
and `coursekit autograde` stopped for the whole class (red-team round r25).
"""

from autograder import harness
from autograder.errors import KernelStuck

STUCK = "not run: the kernel did not answer, even after a restart (something in it holds the interpreter)"


def judged(judge, step, index):
    """`judge(step, index)`, or the step lost with every case `STUCK` if its kernel is stuck (the
    next step's judging restarts a kernel it finds stuck)."""
    try:
        return judge(step, index)
    except KernelStuck:
        return harness.StepResult(step, [harness.CaseResult(c, False, STUCK) for c in harness.cases_of(step)],
                                  kernel_lost=True)
