"""`ast.parse` with garbage collection held off, on the CPython releases whose AST constructor keeps
its recursion depth in state the whole interpreter shares (3.11 before 3.11.8, CPython gh-106905).

On those releases a parse that turns its tree into Python objects records the depth it started at,
and checks it again at the end. An allocation inside may start a garbage collection, and the
collection runs finalizers: Python code, which can parse too (an asyncio task whose exception was
never retrieved logs it, and on 3.11 formatting a traceback parses each line for its carets). The
inner parse resets the shared depth, and the outer one raises `SystemError: AST constructor
recursion depth mismatch` for a tree it built correctly. In the grader that was the import of a
step's suite (pytest rewrites its asserts with `ast.parse`) while nbclient's tasks from a cell whose
kernel had ended were collected: the notebook was reported as not graded ('grading stopped'),
found in tests/test_kernel_deaths.py run whole.

With collection held off the constructor runs no Python code, so nothing can parse inside it, and
no other thread runs while it builds the tree (it never gives up the interpreter lock). Nothing is
caught or retried: every error is raised as the interpreter raises it.
"""

import ast
import functools
import gc
import sys

FIXED_IN = (3, 11, 8)  # the first 3.11 release that counts the depth per call


def has_the_race(version: tuple[int, ...] = tuple(sys.version_info[:3])) -> bool:
    return (3, 11) <= version < FIXED_IN


def without_collection(parse):
    @functools.wraps(parse)
    def guarded(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return parse(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    guarded.unguarded = parse
    return guarded


def install() -> None:
    """Replace `ast.parse` for every caller in this process (pytest's assert rewriting, traceback,
    ours), once, where the race exists."""
    if has_the_race() and not hasattr(ast.parse, "unguarded"):
        ast.parse = without_collection(ast.parse)
