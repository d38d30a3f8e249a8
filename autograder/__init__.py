"""Hidden suites, fixtures and grading harness of the self-attention course.

Import order matters for tamper resistance: `autograder.trusted` snapshots the genuine numpy,
torch and builtins objects, so it is imported before anything a submission could touch.
"""

from autograder import trusted  # noqa: F401
