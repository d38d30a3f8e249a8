"""The main job: release every assignment, grade sample submissions end to end, report.

    python -m coursekit.main [--course-dir work-run] [--assignments 01_... ...]

On the embedded SQLite gradebook of a fresh course directory: generates the release with
nbgrader (and says whether it matches the committed assignments/), builds sample submissions
(reference-complete, the untouched release, typical mistakes from the catalogue), grades them
with `coursekit autograde`'s code path (one embedded Dask cluster for every assignment, with
its progress bar), writes feedback, exports grades.csv, step_scores.csv and canvas_grades.csv,
prints a table of points per student and step with the class average, and ends with the
course report (`coursekit report`: report.html and report.csv in the course directory).
"""

import argparse
import contextlib
import filecmp
import sys
import time

from autograder.steps import ASSIGNMENTS
from coursekit import catalogue, classroom, exports, grading, report, results_table, samples
from coursekit.cluster import Cluster
from coursekit.paths import ROOT, released_notebook


def sample_submissions(release_nb, assignment):
    subs = {"reference": classroom.build_submission(release_nb), "untouched": release_nb}
    for variant in catalogue.by_assignment(catalogue.MISTAKES, assignment)[:2]:
        subs[variant.id] = classroom.build_submission(release_nb, variant)
    return subs


class Stages:
    """Where the main job's time went, stage by stage (printed at the end)."""

    def __init__(self):
        self.seconds = {}

    @contextlib.contextmanager
    def __call__(self, name):
        began = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began

    def lines(self, total):
        rest = total - sum(self.seconds.values())
        rows = [*self.seconds.items(), ("other", rest)]
        return [f"  {name:<24} {seconds:7.1f} s  {100 * seconds / total:5.1f}%" for name, seconds in rows]


def _grade(course, assignments, cluster, stage):
    all_results = {}
    for assignment in assignments:
        with stage("release (nbgrader)"):
            release_path = grading.release(course, assignment)
        committed = released_notebook(assignment)
        same = committed.exists() and filecmp.cmp(committed, release_path, shallow=False)
        print(f"\n== {assignment}: released ({'identical to' if same else 'DIFFERS from'} the committed assignments/)",
              flush=True)
        with stage("sample submissions"):
            subs = sample_submissions(samples.read(release_path), assignment)
        with stage("autograde"):
            results = classroom.grade_class(course, assignment, subs, cluster=cluster, progress=True)
        with stage("feedback (nbgrader)"):
            grading.feedback(course, assignment)
        all_results[assignment] = results
        print(results_table.table(list(results.values()), assignment, average=True))
        for r in results.values():
            for flag in r.flags:
                print(f"  flag {r.shown}: {flag}")
    return all_results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", default=str(ROOT / "work-run"))
    parser.add_argument("--assignments", nargs="*", default=list(ASSIGNMENTS))
    parser.add_argument("--workers", type=int, default=None, help="Dask workers (default: the machine's cores)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    stage = Stages()
    with stage("course directory"):
        course = grading.prepare(args.course_dir)
    print(f"course directory: {course}")
    with stage("cluster start"):
        cluster = Cluster(args.workers)
    try:
        all_results = _grade(course, args.assignments, cluster, stage)
    finally:
        with stage("cluster stop"):
            cluster.close()

    with stage("export"):
        grades_csv, steps_csv, canvas_csv = exports.export_all(course)
    with stage("class report"):
        problems = {(r.student, a): r.problem for a, rs in all_results.items() for r in rs.values() if not r.graded}
        page, data = report.write(course, args.assignments, problems=problems)
    print(f"\ngrades: {grades_csv}\nper-step scores: {steps_csv}\nfor Canvas: {canvas_csv}\n"
          f"feedback: {course / 'feedback'}\nwhat the class got wrong: {page} (as CSV: {data})")
    total = time.perf_counter() - start
    print(f"done in {total:.0f} s; where the time went:")
    print("\n".join(stage.lines(total)))
    # The job fails loudly if the two anchors of the scale are off.
    wrong = [f"{a}: reference scored {rs['reference'].total:g}" for a, rs in all_results.items()
             if any(p != grading.STEPS[s].points for s, p in rs["reference"].points.items())]
    wrong += [f"{a}: untouched release scored {rs['untouched'].total:g}" for a, rs in all_results.items()
              if rs["untouched"].total != 0]
    for line in wrong:
        print("ERROR:", line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
