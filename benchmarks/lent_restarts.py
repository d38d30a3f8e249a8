"""How much of judging goes to replacing kernels after lent steps.

The class of `class_grading.py` (--students per assignment, the same mix), judged one notebook
after another in this process with `judge_notebook` (no nbgrader, no cluster), with the judge's
`_restart_and_replay` and `judge` timed: a kernel that held a lent reference is replaced, and
the new one replays the cells before the step (issue "Sealed submissions", item 5).

    python benchmarks/lent_restarts.py [--students 10] [--assignments A ...]   (results: benchmarks/results.md)
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NBGRADER_EXECUTION", "autograde")  # the notebooks run as when graded

sys.path.insert(0, str(Path(__file__).parent))
import class_grading  # noqa: E402 - the class: the same as that benchmark's

from autograder.judge import JudgedExecute, judge_notebook  # noqa: E402
from coursekit import samples  # noqa: E402
from coursekit.paths import released_notebook  # noqa: E402


def timed(method, spent, key):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - start
            spent[key + " calls"] += 1
    return wrapper


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--assignments", nargs="*",
                        default=["01_simplified_self_attention", "03_causal_attention"])
    args = parser.parse_args(argv)
    spent = dict.fromkeys(["restart", "restart calls", "judging", "judging calls"], 0.0)
    JudgedExecute._restart_and_replay = timed(JudgedExecute._restart_and_replay, spent, "restart")
    JudgedExecute.judge = timed(JudgedExecute.judge, spent, "judging")
    total = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for assignment in args.assignments:
            release = samples.read(released_notebook(assignment))
            for student, nb in class_grading.build_class(release, assignment, args.students).items():
                path = Path(scratch) / assignment / student / f"{assignment}.ipynb"
                path.parent.mkdir(parents=True)
                path.write_bytes(nb) if isinstance(nb, bytes) else samples.write(nb, path)
                start = time.perf_counter()
                judge_notebook(path)
                total += time.perf_counter() - start
    print(f"{args.students * len(args.assignments)} notebooks: {total:.1f} s, judging {spent['judging']:.1f} s, "
          f"of which {spent['restart']:.1f} s replacing kernels after lent steps "
          f"({spent['restart calls']:.0f} replacements)")


if __name__ == "__main__":
    main()
