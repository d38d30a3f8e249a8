"""Imported at kernel start-up during autograding (nbgrader_config.py), before student code.

Takes the snapshot of the genuine tools (`trusted`), and keeps `solutions` out of reach of
student code: it is importable only from the grader's own modules, so a graded function that
imports the reference and returns its answer fails in the kernel (and the audit names it).
"""

import os
import sys

from autograder import trusted  # noqa: F401 - the snapshot is taken on import

_GRADER_DIR = os.path.dirname(os.path.abspath(__file__))
_BLOCKED = ("solutions",)
# Installed side by side, so the reference package's own imports of its modules are allowed.
_TRUSTED_DIRS = (_GRADER_DIR + os.sep, os.path.join(os.path.dirname(_GRADER_DIR), "solutions") + os.sep)


_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(__import__("importlib").__file__))


def _is_import_machinery(filename):
    return filename.startswith("<frozen importlib") or filename.startswith(_IMPORTLIB_DIR)


class ReferenceBlocker:
    """A meta-path finder that refuses `solutions` to any importer outside `autograder/`."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in _BLOCKED:
            return None
        # The importer is the innermost frame outside the import machinery. Only it counts:
        # a student function called by the grader has grader frames further out.
        frame = sys._getframe(1)
        while frame is not None and _is_import_machinery(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is not None and frame.f_code.co_filename.startswith(_TRUSTED_DIRS):
            return None  # the grader's own import: the normal finders handle it
        raise ImportError(f"`{name}` is not available to submissions")


def install():
    if not any(isinstance(f, ReferenceBlocker) for f in sys.meta_path):
        sys.meta_path.insert(0, ReferenceBlocker())
    for name in [m for m in sys.modules if m.split(".")[0] in _BLOCKED]:
        del sys.modules[name]


install()
