"""The hidden suites, their fixtures, and the judge that runs them against a student's kernel.

Nothing here is ever importable inside a student's kernel: the judge runs outside it and
reaches the submission only through the data-only agent (`autograder.agent`).
"""

from autograder import parse_guard

parse_guard.install()  # before anything here imports a suite (`parse_guard.py` says why)
