"""What one sandboxed kernel costs, apart from any grading: a notebook of one tiny cell judged
--runs times, one after another on one warm parent (as the notebooks of one worker are), after
one warm-up notebook. The median wall time per notebook is the price of a kernel's start, its
envelope (control groups, namespaces, sized mounts) and its end; the content of the course plays
no part, so the same script measures any commit of the judge.

    python benchmarks/kernel_lifecycle.py [--runs 20]   (results so far: benchmarks/results.md)

Run it from a checkout of the commit to measure, with that checkout's virtualenv.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.judge import judge_notebook


def tiny_notebook(path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs + 1):
            folder = Path(scratch) / f"student{run}"
            folder.mkdir()
            path = tiny_notebook(folder / "tiny.ipynb")
            start = time.perf_counter()
            judged = judge_notebook(path)
            elapsed = time.perf_counter() - start
            problem = getattr(judged, "problem", None)
            if problem:
                raise SystemExit(f"the tiny notebook was not judged: {problem}")
            if run:  # the first one starts the warm parent
                times.append(elapsed)
    print(f"{args.runs} notebooks of one cell: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s, max {max(times):.3f} s")


if __name__ == "__main__":
    main()
