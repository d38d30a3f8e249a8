"""How much of judging goes to keeping lent references away from the student's later cells.

The class of `class_grading.py` (--students per assignment, the same mix), judged one notebook
after another in this process with `judge_notebook` (no nbgrader, no cluster), with the judge's
`judge` timed, and inside it what keeps the references lent to a step away from the notebook's
later cells (issue "Sealed submissions", item 5): before the lending kernel, a restart of the
notebook's kernel and a replay of the cells before the step (`_restart_and_replay`); with it
(`autograder/kernel/lending.py`), starting that kernel and waiting for it to catch up.

    python benchmarks/lent_restarts.py [--students 10] [--assignments A ...]   (results: benchmarks/results.md)

To compare two checkouts on the same submissions (each checkout's catalogue draws its own class),
write one checkout's class to a folder, then judge that folder with each checkout's virtualenv:

    python benchmarks/lent_restarts.py --write DIR
    OTHER/.venv/bin/python /path/to/this/benchmarks/lent_restarts.py --judge DIR   (from OTHER)

With --judge the script needs nothing of the checkout but `autograder.judge`, so an older
checkout can judge the same notebooks.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NBGRADER_EXECUTION", "autograde")  # the notebooks run as when graded

from autograder.judge import JudgedExecute, judge_notebook  # noqa: E402


def timed(method, spent, key):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[key] += time.perf_counter() - start
            spent[key + " calls"] += 1
    return wrapper


def write_class(folder, assignments, students):
    """This checkout's class, as notebook files folder/<assignment>/<student>/<assignment>.ipynb."""
    sys.path.insert(0, str(Path(__file__).parent))
    import class_grading  # the class: the same as that benchmark's

    from coursekit import samples
    from coursekit.paths import released_notebook

    for assignment in assignments:
        release = samples.read(released_notebook(assignment))
        for student, nb in class_grading.build_class(release, assignment, students).items():
            samples.write(nb, Path(folder) / assignment / student / f"{assignment}.ipynb")


def judge_folder(folder):
    """Judge every notebook under `folder`, one after another: ({assignment: s}, how many, spent)."""
    spent = dict.fromkeys(["restart", "restart calls", "judging", "judging calls", "lending", "lending calls"], 0.0)
    JudgedExecute._restart_and_replay = timed(JudgedExecute._restart_and_replay, spent, "restart")
    try:
        from autograder.kernel.lending import LendingKernel
    except ImportError:
        pass  # a checkout from before the lending kernel
    else:
        JudgedExecute._start_lender = timed(JudgedExecute._start_lender, spent, "lending")
        LendingKernel.catch_up = timed(LendingKernel.catch_up, spent, "lending")
    JudgedExecute.judge = timed(JudgedExecute.judge, spent, "judging")
    per_assignment = {}
    notebooks = sorted(Path(folder).glob("*/*/*.ipynb"))
    for path in notebooks:
        start = time.perf_counter()
        judge_notebook(path)
        per_assignment[path.parts[-3]] = per_assignment.get(path.parts[-3], 0.0) + time.perf_counter() - start
    return per_assignment, len(notebooks), spent


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--assignments", nargs="*",
                        default=["01_simplified_self_attention", "03_causal_attention"])
    parser.add_argument("--write", metavar="DIR", help="only write this checkout's class to DIR")
    parser.add_argument("--judge", metavar="DIR", help="judge the notebooks under DIR instead of this checkout's class")
    args = parser.parse_args(argv)
    if args.write:
        write_class(args.write, args.assignments, args.students)
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.judge or scratch
        if not args.judge:
            write_class(folder, args.assignments, args.students)
        per_assignment, notebooks, spent = judge_folder(folder)
    each = ", ".join(f"{a} {s:.2f} s" for a, s in per_assignment.items())
    print(f"{notebooks} notebooks: {sum(per_assignment.values()):.2f} s ({each}), judging {spent['judging']:.1f} s, "
          f"of which {spent['restart']:.2f} s replacing kernels ({spent['restart calls']:.0f} replacements); "
          f"{spent['lending']:.2f} s starting lending kernels and waiting for them")


if __name__ == "__main__":
    main()
