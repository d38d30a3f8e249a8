"""`coursekit report`: what the class got wrong, as a page an instructor can teach from.

    coursekit report [ASSIGNMENT ...] [--course DIR] [--out FILE]

Writes one self-contained HTML page (charts as inline SVG, nothing fetched from the network) and
the same data as CSV beside it (`FILE` with the suffix .csv): for one assignment, several, or
the whole course (no ASSIGNMENT: every assignment in the gradebook).

- Per step: the distribution of points, the share with full marks, the class average.
- Per hidden case: how many passed, and the diagnoses given when it failed, grouped so that one
  misconception is one row whatever numbers it was worded with (`analysis.normalise`), with
  how many students and which, most common first.
- The submissions that could not be graded and why, the late ones, and what the instructor
  must look at (grader errors, restarted kernels, points the verdicts do not give).
- Across assignments: students below the class average in two or more, and pairs of steps lost
  together (a step of an earlier assignment and one of a later one) more often than apart.

Points come from nbgrader's gradebook; case verdicts from the judge's records in the autograded
notebooks (`data.py`). The page shows case titles and diagnoses, as the feedback does: never a
hidden input or an expected value (messages never hold one, `autograder/suites/toolkit/checks.py`).
"""

import sys
import time
from pathlib import Path

from coursekit import csvsafe
from coursekit.course_dir import CourseDir
from coursekit.report import analysis, plots
from coursekit.report.data import collect

TEMPLATE = "report.html.j2"  # beside this file, with the stylesheet it includes
DEFAULT_OUT = "report.html"  # in the course directory
CSV_COLUMNS = ["assignment", "student", "graded", "problem", "seconds_late", "step", "points", "max_points",
               "case", "title", "kind", "weight", "passed", "diagnosis", "message"]


def _points(value):
    return f"{value:g}"


def _duration(seconds):
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min" if minutes else f"{seconds:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours < 48 else f"{hours // 24} days {hours % 24} h"


def _environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(Path(__file__).parent), autoescape=select_autoescape(["j2", "html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(points=_points, duration=_duration)
    return env


def all_plots(stats):
    """{assignment: Chart of its totals, (assignment, step): Chart of the step's points}."""
    found = {}
    for a in stats:
        found[a.assignment] = plots.distribution(list(a.totals.values()), a.max_total, "total points")
        for s in a.steps:
            found[(a.assignment, s.step)] = plots.distribution(s.scores, s.max_points, f"points for {s.step}")
    return found


def render(data, stats, course_dir, db_url=None):
    """The page, as text."""
    names = ", ".join(data.assignments) if len(data.assignments) <= 2 else "the course"
    return _environment().get_template(TEMPLATE).render(
        title=f"What the class got wrong: {names}", stats=stats, plots=all_plots(stats),
        struggling=analysis.struggling(stats) if len(stats) > 1 else [],
        predictors=analysis.predictors(stats) if len(stats) > 1 else [], min_together=analysis.MIN_TOGETHER,
        attention=analysis.ATTENTION,
        gradebook=(db_url or CourseDir(course_dir).gradebook_url).removeprefix("sqlite:///"),
        autograded=CourseDir(course_dir).autograded_root, written=time.strftime("%Y-%m-%d %H:%M %Z"))


def csv_rows(data):
    """One row per student, step, case (and its diagnosis); a submission that could not be
    graded is one row, and a step with no stored verdicts one row without a case."""
    for assignment in data.assignments:
        for sub in data.submissions[assignment].values():
            head = [assignment, sub.student, sub.graded, sub.problem, f"{sub.seconds_late:g}"]
            if not sub.graded:
                yield head + [""] * (len(CSV_COLUMNS) - len(head))
                continue
            for step in analysis.step_order(data.max_points[assignment]):
                points = sub.points.get(step)
                step_cells = [step, "" if points is None else f"{points:g}", f"{data.max_points[assignment][step]:g}"]
                cases = sub.records.get(step, {}).get("cases", [])
                if not cases:
                    yield head + step_cells + [""] * 7
                for c in cases:
                    yield head + step_cells + [c["case"], c["title"], c["kind"], f"{c['weight']:g}", c["passed"],
                                               "" if c["passed"] else analysis.normalise(c["message"]),
                                               c["message"]]


def write(course_dir, assignments=None, out=None, db_url=None, problems=None):
    """Write the page and its CSV -> (html path, csv path). `problems`: {(student, assignment):
    why autograde could not grade it}, where the caller knows (`data.collect`)."""
    course_dir = Path(course_dir)
    data = collect(course_dir, assignments, db_url, problems)
    if not data.assignments:
        raise ValueError("the gradebook holds no assignment")
    stats = [analysis.assignment_stats(data, a) for a in data.assignments]
    html_path = Path(out) if out else course_dir / DEFAULT_OUT
    html_path.parent.mkdir(parents=True, exist_ok=True)
    html_path.write_text(render(data, stats, course_dir, db_url), encoding="utf-8")
    csv_path = html_path.with_suffix(".csv")
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        # csvsafe, as every CSV of the course: a student's id and their own exception text (a
        # case's message) reach its cells, and one like `=2+3` was a formula in a spreadsheet.
        writer = csvsafe.Writer(handle)
        writer.writerow(CSV_COLUMNS)
        for row in csv_rows(data):
            writer.writerow(row)
    return html_path, csv_path


def run_report(args, extra=()):
    course = Path(args.course).resolve()
    try:
        html_path, csv_path = write(course, args.assignment or None, args.out)
    except (ValueError, FileNotFoundError) as error:
        print(f"coursekit report: {error}", file=sys.stderr)
        return 1
    print(f"report: {html_path}\nas CSV: {csv_path}")
    return 0


def add_report(subcommands):
    parser = subcommands.add_parser(
        "report", help="what the class got wrong: one HTML page (and a CSV) per assignment or course",
        description="Write a self-contained HTML page of the class's results (per step, per hidden case, "
                    "the misconceptions behind failed cases, who could not be graded, who was late, and "
                    "across assignments who struggles and which steps predict trouble later), and the same "
                    "data as CSV beside it.")
    parser.add_argument("assignment", nargs="*", help="the assignments to report on (default: all in the gradebook)")
    parser.add_argument("--course", metavar="DIR", default=".", help="the nbgrader course directory")
    parser.add_argument("--out", metavar="FILE",
                        help=f"where to write the page (default: {DEFAULT_OUT} in the course directory); "
                             "the CSV goes beside it, with the suffix .csv")
    parser.set_defaults(run=run_report)
