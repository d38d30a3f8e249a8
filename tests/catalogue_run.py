"""The catalogue's graded run, in a process of its own, begun with the test session.

Each assignment's catalogue is graded once (`coursekit.matrix.grade_catalogue`, one
`grade_class` call), one assignment after another, on one cluster whose workers start and warm
up once. It runs while the tests that do not read it run (conftest.py puts the ones that do
last): on CI's two cores those mostly use one. A process, not a thread: CPython 3.11's AST
constructor keeps one recursion count per interpreter, and two threads parsing at once (the
tests parse sources too) end in "AST constructor recursion depth mismatch".
"""

import multiprocessing
import traceback

from autograder.steps import ASSIGNMENTS

STOP = "stop"


def _grade(course, assignments, connection):
    """In the child: grade the catalogue of each of `assignments`, sending (assignment,
    results, problem) after each, until every one is graded or the parent says STOP."""
    from coursekit import matrix
    from coursekit.cluster import Cluster

    cluster = Cluster(workers=2)
    try:
        for assignment in assignments:
            if connection.poll():  # the session ended before its tests read the rest
                break
            try:
                connection.send((assignment, matrix.grade_catalogue(course, assignment, cluster=cluster), None))
            except Exception:  # noqa: BLE001 - said by every test that reads this assignment
                connection.send((assignment, None, traceback.format_exc()))
                break
    finally:
        cluster.close()
        connection.close()


class CatalogueRun:
    """run(assignment) -> {student: StudentResult}, once the background process has graded it."""

    def __init__(self, course, assignments=ASSIGNMENTS):
        context = multiprocessing.get_context("spawn")  # no copy of the test process's threads
        self.graded, self.problem = {}, None
        self._connection, child = context.Pipe()
        self._process = context.Process(target=_grade, args=(str(course), list(assignments), child), name="catalogue")
        self._process.start()
        child.close()

    def _receive(self):
        """Take the next assignment's results; False once the process has no more to send."""
        try:
            assignment, graded, problem = self._connection.recv()
        except (EOFError, OSError):  # it has ended (a STOP it never read resets the pipe)
            return False
        if problem is None:
            self.graded[assignment] = graded
        else:
            self.problem = f"grading the catalogue of {assignment} failed:\n{problem}"
        return True

    def __call__(self, assignment):
        while assignment not in self.graded and self.problem is None and self._receive():
            pass
        if assignment not in self.graded:
            raise RuntimeError(self.problem or f"the catalogue's run ended before {assignment}")
        return self.graded[assignment]

    def close(self):
        """Stop after the assignment being graded, take what it sends, and wait for the process."""
        try:
            self._connection.send(STOP)
        except OSError:
            pass  # it has ended already
        while self._receive():
            pass
        self._process.join()
        self._connection.close()
