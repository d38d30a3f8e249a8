"""Regrade submissions outside any kernel: one warmed-up process forks a child per notebook.

    python -m autograder.regrade --out results.json NOTEBOOK:ASSIGNMENT [...]

The parent imports the grader, its suites and their fixtures once, takes the genuine-tools
snapshot and blocks the reference (`guard`), and only then forks. Each child loads one
submission into a fresh namespace and runs the hidden suites through the same harness the
kernel uses, under a memory cap, with stdout/stderr discarded; the parent kills a child that
overruns its time. A submission's changes die with its child, so it cannot touch the next one.
This is the audit's fast path; `pytest --submission` does the same for one notebook.
"""

import argparse
import json
import os
import resource
import select
import signal
import sys
import time

os.environ.setdefault("MPLBACKEND", "Agg")

from autograder import guard, trusted  # noqa: E402,F401 - snapshot and blocker before any submission
from autograder.harness import cases_of, run_step  # noqa: E402
from autograder.seam import Implementation, _reference_namespace  # noqa: E402
from autograder.steps import STEPS, steps_of  # noqa: E402
from autograder.submission import load  # noqa: E402

TIMEOUT = 240.0
MEMORY_LIMIT = 6 * 1024**3


def grade_notebook(path, assignment):
    """{"steps": {step: {points, max_points, failed, tampered}}, "load_errors": [...]}"""
    loaded = load(path)
    # Tools rebound by the notebook's top-level code are put back and reported once, so the
    # first step graded is not the one blamed for them.
    rebound = trusted.restore()
    impl = Implementation(loaded.namespace, f"submission {path}")
    steps = {}
    for step in steps_of(assignment):
        result = run_step(step.name, impl)
        steps[step.name] = {"points": result.points(step.points), "max_points": step.points,
                            "failed": [f"{r.case.name}: {r.message}" for r in result.results if not r.passed],
                            "tampered": result.tampered}
    errors = [list(e) for e in loaded.errors] + ([[-1, loaded.fatal]] if loaded.fatal else [])
    return {"steps": steps, "load_errors": errors, "rebound_at_load": rebound}


def _child(path, assignment, write_fd):
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    try:
        payload = grade_notebook(path, assignment)
    except BaseException as error:  # noqa: BLE001 - reported, never raised past the fork
        payload = {"error": f"{type(error).__name__}: {str(error)[:200]}"}
    data = json.dumps(payload).encode()
    while data:
        data = data[os.write(write_fd, data):]
    os._exit(0)


def regrade_all(items, workers=2, timeout=TIMEOUT):
    """[(path, assignment)] -> [result dict, or {"error": why}] in the same order."""
    for step in STEPS:  # import every suite (and its fixtures) once, before forking
        cases_of(step)
    _reference_namespace()
    results = [None] * len(items)
    pending = list(enumerate(items))
    running = {}  # read fd -> (index, pid, started, chunks)
    while pending or running:
        while pending and len(running) < workers:
            index, (path, assignment) = pending.pop(0)
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                _child(path, assignment, write_fd)
            os.close(write_fd)
            running[read_fd] = (index, pid, time.monotonic(), [])
        ready, _, _ = select.select(list(running), [], [], 0.5)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if chunk:
                running[fd][3].append(chunk)
                continue
            index, pid, _, chunks = running.pop(fd)
            os.close(fd)
            _, status = os.waitpid(pid, 0)
            try:
                results[index] = json.loads(b"".join(chunks))
            except ValueError:
                results[index] = {"error": f"the regrade process died (status {status}) before reporting"}
        for fd, (index, pid, started, _) in list(running.items()):
            if time.monotonic() - started > timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(fd)
                running.pop(fd)
                results[index] = {"error": f"regrade stopped after {timeout:g} s"}
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("items", nargs="+", help="NOTEBOOK:ASSIGNMENT")
    args = parser.parse_args(argv)
    items = [tuple(item.rsplit(":", 1)) for item in args.items]
    with open(args.out, "w") as handle:
        json.dump(regrade_all(items, args.workers), handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
