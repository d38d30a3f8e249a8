"""How much does grading cost over just running the notebook?

For each assignment: the wall time of `nbgrader autograde` for one reference-complete
submission, against `jupyter nbconvert --execute` of the same completed notebook (as the
student would hand it in), median of --runs runs each, on a fresh course directory.

    python benchmarks/grading_overhead.py [--runs 5] [--out table.md]   (results so far: benchmarks/results.md)
"""

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.steps import ASSIGNMENTS
from coursekit import classroom, grading, samples
from coursekit.course_dir import CourseDir


def timed(command, cwd):
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        course = grading.prepare(Path(scratch) / "course")
        for assignment in ASSIGNMENTS:
            release = samples.read(grading.release(course, assignment))
            submitted = CourseDir(course).submitted_notebook(assignment, "bench")
            samples.write(classroom.build_submission(release), submitted)
            bare, graded = [], []
            for _ in range(args.runs):
                bare.append(timed([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook",
                                   "--execute", "--output", str(Path(scratch) / "bare.ipynb"),
                                   str(submitted)], course))
                graded.append(timed([sys.executable, "-m", "nbgrader", "autograde", assignment,
                                     "--student", "bench", "--force"], course))
            b, g = statistics.median(bare), statistics.median(graded)
            rows.append((assignment, b, g, g / b))
            print(f"{assignment}: nbconvert --execute {b:.2f} s, nbgrader autograde {g:.2f} s, ratio {g / b:.2f}")
    lines = [f"Median of {args.runs} runs, {platform.processor() or platform.machine()}, "
             f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}.",
             "", "| assignment | nbconvert --execute (s) | nbgrader autograde (s) | ratio |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {a} | {b:.2f} | {g:.2f} | {r:.2f} |" for a, b, g, r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
