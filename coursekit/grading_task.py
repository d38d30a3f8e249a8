"""The worker's part of `coursekit autograde` (part B in `coursekit/autograde.py`): one Dask task
per submission, plain data in and plain data out.

The task gets the sanitized notebooks and the folder's other files as bytes, and the course's
nbgrader configuration; it runs the configured autograde preprocessors that come before the
gradebook ones (the judge first) on a copy of the folder, and returns the judged notebooks as
text with a timing breakdown. It never sees the course directory or the gradebook.
"""

import copy
import os
import time
import traceback
from collections import Counter

from autograder.errors import CaseTimeout
from autograder.kernel import owned_folders
from autograder.limits import CELL_TIMEOUT, SUBMISSION_TIMEOUT
from coursekit import intake

# What a task's time is spent on, per notebook (the benchmark's breakdown).
TIMING_KEYS = ("setup", "kernel_start", "imports", "cells", "judging", "kernel_stop", "other")


def _imports_only_prefix(source):
    """True if a cell's first statement is an import: such a cell counts as `imports`."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return bool(body) and isinstance(body[0], (ast.Import, ast.ImportFrom))


class SubmissionTimeout(Exception):
    pass


def _timed(execute_class, deadline):
    """`execute_class` (nbgrader's Execute, or the judge) with a timing breakdown and a deadline
    for the whole notebook. It inherits the configuration of the class it extends."""
    from autograder.judge import JudgedExecute
    from autograder.steps import graded_step

    if issubclass(execute_class, JudgedExecute):
        # The judge keeps the notebook's time itself: once it is spent, each cell left is marked
        # not run and the notebook is graded, as under `nbgrader autograde`. This deadline, which
        # starts earlier (before the kernel), is then only a backstop, a cell's time later: at the
        # same moment it failed the whole notebook where nbgrader's path graded it (a thread that
        # holds the interpreter in C: 0 points through the command, 6.6 through nbgrader).
        deadline += CELL_TIMEOUT

    class Timed(execute_class):
        timings = None

        def preprocess(self, nb, resources=None, km=None):
            self.timings = Counter()
            return super().preprocess(nb, resources, km)

        def _clock(self, key, function, *args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.timings[key] += time.perf_counter() - start

        def start_new_kernel(self, **kwargs):
            return self._clock("kernel_start", super().start_new_kernel, **kwargs)

        def start_new_kernel_client(self):
            return self._clock("kernel_start", super().start_new_kernel_client)

        def _cleanup_kernel(self):
            return self._clock("kernel_stop", super()._cleanup_kernel)

        def preprocess_cell(self, cell, resources, index):
            if time.monotonic() > deadline:
                raise SubmissionTimeout(f"grading stopped after {SUBMISSION_TIMEOUT} s (cell {index})")
            if cell.cell_type != "code":
                return super().preprocess_cell(cell, resources, index)
            kind = ("judging" if graded_step(cell) else
                    "imports" if _imports_only_prefix(cell.source) else "cells")
            return self._clock(kind, super().preprocess_cell, cell, resources, index)

    Timed.__name__ = Timed.__qualname__ = f"Timed{execute_class.__name__}"
    return Timed


def _worker_exporter(config, preprocessors, deadline):
    """An exporter configured as nbgrader's Autograde converter configures its own, holding the
    worker's share of the preprocessors."""
    from nbconvert.preprocessors import ExecutePreprocessor
    from nbgrader.converters import Autograde
    from traitlets.config import Config
    from traitlets.utils.importstring import import_item

    converter = Autograde(coursedir=None, config=Config(copy.deepcopy(config)))
    exporter = converter.exporter_class(parent=converter, config=converter.config)
    exporter._preprocessors = []
    timed = []
    for name in preprocessors:
        cls = import_item(name)
        executes = issubclass(cls, ExecutePreprocessor)
        exporter.register_preprocessor(_timed(cls, deadline) if executes else cls)
        if executes:
            timed.append(exporter._preprocessors[-1])
    return exporter, timed


def judge_submission(payload):
    """The Dask task: run the worker's preprocessors on one sanitized submission.

    `payload`: plain data (see `ClassAutograde.prepare` in `coursekit/converter.py`): the
    submission's other files as `files` (bytes) or, on the driver's machine, as a `folder` to copy. Returns plain data:
    {"ok", "notebooks": {name: judged notebook JSON}, "problem", "seconds", "timings", "worker"}.
    """
    from nbgrader import utils

    from coursekit import terminal_text

    terminal_text.install()  # as warm_up does, for a worker whose first task this is
    start = time.perf_counter()
    deadline = time.monotonic() + SUBMISSION_TIMEOUT
    result = {"ok": False, "notebooks": {}, "problem": "", "timings": {}, "worker": _worker_name()}
    timings = Counter()
    try:
        # A worker killed in the middle leaves its folder: the next task of any worker removes it.
        with owned_folders.temporary("coursekit-autograde-") as tmp:
            folder = tmp / payload["student"] / payload["assignment"]
            folder.mkdir(parents=True)
            if "folder" in payload:  # autograded/ on this machine: copied as intake copies
                intake.safe_copy(payload["folder"], folder)
            for relative, data in payload.get("files", {}).items():
                target = folder / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            began = time.perf_counter()  # the worker's first task imports the grader (torch too)
            exporter, timed = _worker_exporter(payload["config"], payload["preprocessors"], deadline)
            timings["setup"] += time.perf_counter() - began
            for name, text in payload["notebooks"].items():  # in nbgrader's order
                path = folder / f"{name}.ipynb"
                path.write_text(text, encoding="utf-8")
                resources = copy.deepcopy(payload["resources"][name])
                with utils.setenv(NBGRADER_EXECUTION="autograde"):
                    output, _ = exporter.from_filename(str(path), resources=resources)
                path.write_text(output, encoding="utf-8")  # later notebooks see it, as in nbgrader
                result["notebooks"][name] = output
                for executor in timed:
                    timings.update(executor.timings or {})
        result["ok"] = True
    # CaseTimeout (KernelStuck among them) is a BaseException: one the judge let out stopped the
    # class run in process, or a Dask worker's task; it is this submission's failure like any other.
    except (Exception, CaseTimeout) as error:  # noqa: BLE001 - the submission's failure is data for the driver
        result["problem"] = describe(error)
        result["traceback"] = traceback.format_exc()[-4000:]
    result["seconds"] = time.perf_counter() - start
    timings["other"] = max(0.0, result["seconds"] - sum(timings.values()))
    result["timings"] = {k: round(timings.get(k, 0.0), 4) for k in TIMING_KEYS}
    return result


def _worker_name():
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def describe(error):
    """An exception in one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


def warm_up():
    """A worker's first task: the grader's imports (torch with them) and the judge's warm parent
    (`warm.warm_parent`), started from the thread that will run the grading tasks, while the
    driver is still preparing the first submissions."""
    import nbgrader.converters  # noqa: F401

    from autograder import judge  # noqa: F401 - the judge, and torch and numpy with it
    from autograder.kernel import warm
    from coursekit import terminal_text

    terminal_text.install()  # a worker logs what nbgrader finds in a submission too

    try:
        warm.warm_parent()
    except Exception:  # noqa: BLE001 - the first grading task will start it, or say why not
        pass
    return _worker_name()
