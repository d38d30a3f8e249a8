"""The one seam between the hidden suites and the code under test.

An `Implementation` wraps a namespace (the reference package, a submission notebook executed
by `submission.py`, or a live kernel's globals) and hands the suites its graded names as
attributes: `impl.softmax(x)`. While a step is graded, `isolated(step)` swaps the graded names
the step builds on for the reference's, so a mistake costs points at its own step only.
"""

import sys
from contextlib import contextmanager

from autograder.harness import CaseFailure
from autograder.steps import STEPS

_REFERENCE = {}


def _reference_namespace():
    """The reference's graded names, imported once. Under the kernel guard the `solutions`
    modules are then dropped from sys.modules, so student code cannot reach them by import."""
    if not _REFERENCE:
        import solutions

        _REFERENCE.update({name: getattr(solutions, name) for name in solutions.__all__})
        if any(type(f).__name__ == "ReferenceBlocker" for f in sys.meta_path):
            for name in [m for m in sys.modules if m.split(".")[0] == "solutions"]:
                del sys.modules[name]
    return dict(_REFERENCE)


class Implementation:
    def __init__(self, namespace, origin, substitute_dependencies=True):
        self._namespace = namespace
        self.origin = origin
        self._substitute = substitute_dependencies

    @classmethod
    def reference(cls):
        return cls(_reference_namespace(), "reference", substitute_dependencies=False)

    @classmethod
    def from_namespace(cls, namespace, origin="notebook kernel"):
        return cls(namespace, origin)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._namespace[name]
        except KeyError:
            raise CaseFailure(
                f"`{name}` is not defined: run the cell that defines it, and keep its name "
                "exactly as given"
            ) from None

    @contextmanager
    def isolated(self, step):
        if not self._substitute:
            yield
            return
        reference = _reference_namespace()
        saved = {}
        for name in STEPS[step].depends_on:
            if name in self._namespace:
                saved[name] = self._namespace[name]
                self._namespace[name] = reference[name]
        try:
            yield
        finally:
            self._namespace.update(saved)
