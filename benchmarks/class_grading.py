"""Grade a generated class with `coursekit autograde` and with plain `nbgrader autograde`.

    python benchmarks/class_grading.py [--students 40] [--assignments A ...] [--workers N]
                                       [--cold] [--regrade K] [--out benchmarks/results.md] [--keep DIR]

For each assignment (01 to 05; by default every assignment with a source folder), a class of
`--students` submissions built from the catalogues
(`coursekit.catalogue`, `classroom.build_submission`): 40% correct (the reference and the
catalogue's other correct styles), 30% mistakes, 10% broken (the untouched release, a file
that is not JSON) and 20% hostile. One course directory is released and submitted, then copied
twice; on the same machine, one after the other per assignment:

1. `nbgrader autograde ASSIGNMENT`: nbgrader alone, one notebook after another, with the course's
   configuration: the same judge as the command, kernels forked from the same warm parent;
2. `coursekit autograde ASSIGNMENT --workers N --timings FILE`: the command, as an instructor
   runs it (its embedded Dask cluster is started by each run);
3. with `--cold`, also `nbgrader autograde ASSIGNMENT` with `AUTOGRADER_COLD_KERNELS=1`: nbgrader
   as the issue found it, where every notebook's kernel is a new process that imports torch and
   matplotlib itself (still sandboxed and judged, so its grades are comparable).

Then it checks that the gradebooks agree on every grade, comment and late penalty of every
submission and fail the same submissions, and reports the wall times, their ratio, and the command's time per
notebook broken down (`coursekit.grading_task.TIMING_KEYS`: the worker's set-up, kernel start,
the cells that start with an import, the student's other cells, judging, kernel shutdown, the
rest of the task; and the driver's nbgrader work before and after), and how much of the
command's wall time is not the workers' share of the tasks (starting the cluster and warming its
workers, waiting on the last long task, stopping). With `--out`, the results are appended to
that file as a markdown section.

With `--regrade K`, a small job too: regrading one student (the reference), `nbgrader autograde
ASSIGNMENT --student S --force` against `coursekit autograde ASSIGNMENT --student S --force`
(which grades a job of `class_run.in_process_max` submissions or fewer in its own process, with
no cluster), K times each, alternating, on the graded course directories; the medians are reported.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from autograder.steps import ASSIGNMENTS
from coursekit import catalogue, classroom, grading, grading_task, samples
from coursekit.cluster import default_workers
from coursekit.course_dir import CourseDir
from coursekit.paths import SOURCE, interpreter_bin, with_interpreter_on_path

BIN = Path(interpreter_bin())
MIX = (("correct", 0.4), ("mistake", 0.3), ("broken", 0.1), ("hostile", 0.2))


class Row(NamedTuple):
    """One assignment's result: wall times in seconds, `busy` the tasks' time on the workers."""
    assignment: str
    n: int
    busy: float
    plain_s: float
    ours_s: float
    failed: int
    cold_s: float | None


def build_class(release, assignment, size):
    """{student id: notebook or bytes}: `size` submissions in the proportions of MIX."""
    correct = [None] + catalogue.by_assignment(catalogue.CORRECT, assignment)
    mistakes = catalogue.by_assignment(catalogue.MISTAKES, assignment)
    hostile = [v for v in catalogue.by_assignment(catalogue.HOSTILE, assignment) if v.graded]
    unreadable = [v for v in catalogue.by_assignment(catalogue.HOSTILE, assignment) if not v.graded]
    broken = ["untouched"] + unreadable
    pools = {"correct": correct, "mistake": mistakes, "broken": broken, "hostile": hostile}
    counts = {kind: int(round(share * size)) for kind, share in MIX}
    counts["correct"] += size - sum(counts.values())
    subs = {}
    for kind, count in counts.items():
        pool = pools[kind] or correct
        for i in range(count):
            variant = pool[i % len(pool)]
            if variant == "untouched":
                name, nb = "untouched", release
            else:
                name = "reference" if variant is None else variant.id
                nb = classroom.build_submission(release, variant)
            subs[f"{len(subs):03d}-{kind}-{name}"] = nb
    return subs


def autograded_students(course, assignment):
    return sorted(p.parent.name for p in (course / "autograded").glob(f"*/{assignment}") if any(p.glob("*.ipynb")))


def run(command, cwd, **environment):
    env = with_interpreter_on_path(os.environ) | environment
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, result


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def median(values):
    values = sorted(values)
    if not values:
        return 0.0
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def regrade_lines(times, assignments, plain, ours, problems):
    """The small job: one student regraded by each command, `times` times, alternating."""
    if not times:
        return []
    lines = ["", f"Regrading one student (`--student S --force`), median of {times} runs each, alternating:", "",
             "| assignment | nbgrader autograde --student (s) | coursekit autograde --student (s) | ratio |",
             "| --- | --- | --- | --- |"]
    for assignment in assignments:
        student = next(s for s in autograded_students(ours, assignment) if s.endswith("-reference"))
        walls = {"nbgrader": [], "coursekit": []}
        for _ in range(times):
            for name, command, course in (
                    ("nbgrader", [sys.executable, "-m", "nbgrader", "autograde", assignment], plain),
                    ("coursekit", [str(BIN / "coursekit"), "autograde", assignment], ours)):
                seconds, result = run([*command, "--student", student, "--force"], course)
                walls[name].append(seconds)
                if result.returncode != 0:
                    problems.append(f"{assignment}: {name} failed to regrade {student}: {result.stderr[-300:]}")
        if grading.gradebook_contents(plain, assignment) != grading.gradebook_contents(ours, assignment):
            problems.append(f"{assignment}: the regraded gradebooks differ")
        plain_s, ours_s = median(walls["nbgrader"]), median(walls["coursekit"])
        lines.append(f"| {assignment} | {plain_s:.1f} | {ours_s:.1f} | {ours_s / plain_s:.2f} |")
        print(f"regrade {assignment}: nbgrader {walls['nbgrader']}, coursekit {walls['coursekit']}", flush=True)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40, help="submissions per assignment")
    parser.add_argument("--assignments", nargs="+", choices=ASSIGNMENTS, metavar="ASSIGNMENT",
                        default=[a for a in ASSIGNMENTS if (SOURCE / a).is_dir()],
                        help=f"any of {', '.join(ASSIGNMENTS)}")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--cold", action="store_true",
                        help="also time nbgrader autograde with a cold kernel per notebook")
    parser.add_argument("--out", help="append the results to this markdown file")
    parser.add_argument("--keep", help="build the course directories here and keep them")
    parser.add_argument("--regrade", type=int, default=0, metavar="K",
                        help="also time regrading one student, K times with each command")
    args = parser.parse_args(argv)

    base = Path(args.keep) if args.keep else Path(os.environ.get("TMPDIR", "/tmp")) / "class-grading-benchmark"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    course = grading.prepare(base / "submitted")
    print(f"building the class in {course}", flush=True)
    sizes = {}
    for assignment in args.assignments:
        release = samples.read(grading.release(course, assignment))
        subs = build_class(release, assignment, args.students)
        sizes[assignment] = len(subs)
        for student, nb in subs.items():
            samples.write(nb, CourseDir(course).submitted_notebook(assignment, student))
    plain = Path(shutil.copytree(course, base / "nbgrader", symlinks=True))
    ours = Path(shutil.copytree(course, base / "coursekit", symlinks=True))
    cold = Path(shutil.copytree(course, base / "nbgrader-cold", symlinks=True)) if args.cold else None

    rows, problems, timings = [], [], []
    load_before = os.getloadavg()
    for assignment in args.assignments:
        print(f"\n== {assignment}: {sizes[assignment]} submissions", flush=True)
        nbgrader_autograde = [sys.executable, "-m", "nbgrader", "autograde", assignment]
        plain_s, plain_result = run(nbgrader_autograde, plain)
        print(f"nbgrader autograde: {plain_s:.1f} s (exit {plain_result.returncode})", flush=True)
        timing_file = base / f"timings-{assignment}.json"
        ours_s, ours_result = run([str(BIN / "coursekit"), "autograde", assignment, "--workers", str(args.workers),
                                   "--timings", str(timing_file)], ours)
        print(f"coursekit autograde: {ours_s:.1f} s (exit {ours_result.returncode})", flush=True)
        print(ours_result.stdout[-3000:], flush=True)
        cold_s = None
        if cold is not None:
            cold_s, cold_result = run(nbgrader_autograde, cold, AUTOGRADER_COLD_KERNELS="1")
            print(f"nbgrader autograde, cold kernels: {cold_s:.1f} s (exit {cold_result.returncode})", flush=True)
        graded_b = autograded_students(ours, assignment)
        for name, other in (("nbgrader", plain), ("nbgrader with cold kernels", cold)):
            if other is None:
                continue
            a, b = grading.gradebook_contents(other, assignment), grading.gradebook_contents(ours, assignment)
            differ = sorted({k[0] for k in set(a) | set(b) if a.get(k) != b.get(k)})
            if differ:
                problems.append(f"{assignment}: {name} and the command grade differently: {', '.join(differ)}")
            graded_a = autograded_students(other, assignment)
            if graded_a != graded_b:
                problems.append(f"{assignment}: {name} graded {len(graded_a)}, the command {len(graded_b)}: "
                                f"{sorted(set(graded_a) ^ set(graded_b))}")
        outcomes = json.loads(timing_file.read_text()) if timing_file.exists() else []
        timings += [o for o in outcomes if o["ok"]]
        busy = sum(o["seconds"] for o in outcomes)  # the tasks' time on their workers
        rows.append(Row(assignment, sizes[assignment], busy, plain_s, ours_s, sizes[assignment] - len(graded_b), cold_s))

    total_plain, total_ours = sum(r.plain_s for r in rows), sum(r.ours_s for r in rows)
    total_n = sum(r.n for r in rows)
    keys = [*grading_task.TIMING_KEYS, "prepare", "save"]
    breakdown = {k: mean(o["timings"].get(k, 0.0) for o in timings) for k in keys}
    middle = {k: median(o["timings"].get(k, 0.0) for o in timings) for k in keys}
    task = mean(o["seconds"] for o in timings)
    lines = [
        f"\n## Grading a class: `coursekit autograde` against `nbgrader autograde` ({time.strftime('%Y-%m-%d')})\n",
        f"Command: `python benchmarks/class_grading.py {' '.join(argv if argv is not None else sys.argv[1:])}` "
        f"on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"`coursekit autograde --workers {args.workers}` (embedded Dask cluster started by each run). "
        f"Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; after: "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}.\n",
        "| assignment | submissions | not gradable | nbgrader autograde (s) | coursekit autograde (s) | speed-up "
        f"| tasks on the workers (s) | of the command's wall time, beyond the tasks / {args.workers} (s) |"
        + (" nbgrader autograde, cold kernels (s) | speed-up over it |" if cold else ""),
        "| --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if cold else "")]

    def cold_cells(cold_s, ours_s):
        return f" {cold_s:.1f} | {cold_s / ours_s:.2f}x |" if cold else ""

    for assignment, n, busy, plain_s, ours_s, failed, cold_s in rows:
        lines.append(f"| {assignment} | {n} | {failed} | {plain_s:.1f} | {ours_s:.1f} | {plain_s / ours_s:.2f}x "
                     f"| {busy:.1f} | {ours_s - busy / args.workers:.1f} |" + cold_cells(cold_s, ours_s))
    total_busy = sum(r.busy for r in rows)
    total_cold = sum(r.cold_s or 0.0 for r in rows)
    lines.append(f"| all | {total_n} | {sum(r.failed for r in rows)} | {total_plain:.1f} | {total_ours:.1f} | "
                 f"{total_plain / total_ours:.2f}x | {total_busy:.1f} | {total_ours - total_busy / args.workers:.1f} |"
                 + cold_cells(total_cold, total_ours))
    lines += [
        "",
        f"Per notebook: nbgrader {total_plain / total_n:.2f} s of wall time"
        + (f" ({total_cold / total_n:.2f} s with cold kernels)" if cold else "") + ", the command "
        f"{total_ours / total_n:.2f} s of wall time; one task took {task:.2f} s on its worker, on average "
        f"over the {len(timings)} graded notebooks:",
        "",
        "| part | mean s per notebook | median s |",
        "| --- | --- | --- |"]
    names = {"setup": "worker set-up (imports; the first task of each worker)", "kernel_start": "kernel start",
             "imports": "cells that start with an import", "cells": "the student's other cells",
             "judging": "judging (graded cells)", "kernel_stop": "kernel shutdown",
             "other": "rest of the task (sandbox, nbformat, preprocessors)",
             "prepare": "driver: nbgrader before execution (records, copy, sanitize)",
             "save": "driver: nbgrader after execution (SaveAutoGrades, penalties, metadata)"}
    for key in keys:
        lines.append(f"| {names[key]} | {breakdown[key]:.3f} | {middle[key]:.3f} |")
    lines += regrade_lines(args.regrade, args.assignments, plain, ours, problems)
    lines += ["", "Agreement: " + ("every grade, comment and late penalty of every submission is the same in every "
                                    "gradebook, and each run failed the same submissions." if not problems
                                    else "; ".join(problems))]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as handle:
            handle.write(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
