"""Grade every catalogue entry through real nbgrader and write the matrix submission x step.

    python -m coursekit.matrix [--course-dir work-matrix] [--assignments 01_... ...] [--out docs/grading_matrix.md]

One table per assignment: a row per catalogue entry (and the reference, as a control), the
points of every step, what the entry expects, and the flags of the instructor's report. A row
is "as expected" when `problems()` finds nothing: the rule `tests/test_catalogue.py` asserts
for every row in CI. The command exits 1 if any row is not as expected.
"""

import argparse
import re
import sys
import time
from pathlib import Path

from autograder.steps import ASSIGNMENTS, steps_of
from coursekit import catalogue, classroom, grading, results_table, samples
from coursekit.course_dir import CourseDir
from coursekit.paths import GRADING_MATRIX, ROOT

CONTROL = "catalogue-reference"  # the reference: full marks everywhere
UNTOUCHED = "catalogue-untouched"  # the release as handed out: graded, and 0 everywhere
CATALOGUE_KINDS = (("mistake", catalogue.MISTAKES), ("correct", catalogue.CORRECT), ("hostile", catalogue.HOSTILE))


def entries(assignment, only=None):
    """[(kind, variant)] of one assignment, in catalogue order (those whose id is in `only`, if given)."""
    return [(kind, v) for kind, vs in CATALOGUE_KINDS for v in catalogue.by_assignment(vs, assignment)
            if only is None or v.id in only]


# of each step, graded through nbgrader in CI besides those that must be (one shows that the whole pipeline charges a
# mistake to its own step; a second cost CI's main lane about 35 s, and is graded in process at its step all the same)
MISTAKES_PER_STEP = 1


def nbgrader_sample(assignment):
    """The ids of the entries of `assignment` that CI grades through real nbgrader (tests/test_catalogue.py):
    every correct and hostile entry, each hostile entry's baseline (graded in the same run), the
    mistakes that read the notebook's own state, and the first MISTAKES_PER_STEP mistakes of each
    step. These show, through the whole pipeline, that a mistake costs its own step only, with its
    symptom in the feedback. Every other mistake goes through the same judge at its own step in
    process (tests/test_step_mistakes.py), which asserts its symptom and that it scores there what
    this matrix, graded through nbgrader for every entry, records: grading each of them through
    nbgrader too would grade the same thing twice, at about a second each."""
    kept, per_step = set(), {}
    for kind, variant in entries(assignment):
        if kind != "mistake":
            kept.add(variant.id)
            kept |= {variant.baseline} - {""}
        elif variant.reads_notebook:
            kept.add(variant.id)
        else:
            for step in variant.loses:
                per_step[step] = per_step.get(step, 0) + 1
            if any(per_step[step] <= MISTAKES_PER_STEP for step in variant.loses):
                kept.add(variant.id)
    return kept


def submissions(release_nb, assignment, only=None):
    """{student: notebook or bytes}: the two controls, then every catalogue entry of `assignment`
    (those whose id is in `only`, if given)."""
    subs = {CONTROL: classroom.build_submission(release_nb), UNTOUCHED: release_nb}
    for _, variant in entries(assignment, only):
        subs[variant.id] = classroom.build_submission(release_nb, variant)
    return subs


def grade_catalogue(course_dir, assignment, workers=2, cluster=None, only=None):
    """{student: StudentResult} for the controls and every entry of one released assignment (those
    whose id is in `only`, if given): one `grade_class` call, audit included, on `cluster` (a
    `coursekit.cluster.Cluster`) if given, else on a cluster of its own."""
    release = samples.read(CourseDir(course_dir).release_notebook(assignment))
    # Hostile entries are handed out first: the few that run into time limits take tens of
    # seconds where the others take one or two, and started last they would leave one worker
    # busy while the other has nothing left (the longest first, as a scheduler would).
    hostile = {v.id for kind, v in entries(assignment) if kind == "hostile"}
    handed_in = dict(sorted(submissions(release, assignment, only).items(), key=lambda item: item[0] not in hostile))
    files = {v.id: v.hands_in for _, v in entries(assignment) if v.hands_in and v.id in handed_in}
    return classroom.grade_class(course_dir, assignment, handed_in, workers=workers, cluster=cluster, files=files)


def problems(kind, variant, result, results=None):
    """Why `result` is not what the catalogue says `variant` (of `kind`) must get; [] if it is.

    kind is "mistake", "correct", "hostile", "control" (variant None: the reference) or
    "untouched" (variant None: the release as handed out).
    `results` ({student: StudentResult} of the same graded run) holds a hostile entry's baseline:
    the mistake with the same wrong code, which the entry must not outscore at any step."""
    found = []
    steps = steps_of(result.assignment)
    if kind == "untouched":
        return ([] if result.graded else [f"not graded: {result.problem}"]) + (
            [f"scored {result.total:g}, expected 0"] if result.total else [])
    expect_graded = variant is None or variant.graded
    if expect_graded and not result.graded:
        return [f"not graded: {result.problem}"]
    if not expect_graded:
        if result.graded:
            found.append("graded, but autograde was expected to fail")
        if result.total != 0:
            found.append(f"scored {result.total:g} without being graded")
    full = {s.name: s.points for s in steps}
    loses = () if variant is None else variant.loses
    for name, max_points in full.items():
        points = result.points.get(name, 0.0)
        report = result.reports.get(name, "")
        if name in loses:
            if points >= max_points:
                found.append(f"{name}: kept full marks ({points:g}), expected to lose points")
            else:
                found += [f"{name}: the report lacks {phrase!r}" for phrase in (variant.symptom, *variant.also)
                          if phrase and phrase not in report]
        elif kind in ("mistake", "correct", "control") and points != max_points:
            found.append(f"{name}: {points:g}/{max_points:g}, expected full marks")
    if kind in ("mistake", "correct", "control") and result.flags:
        found.append("flagged: " + "; ".join(result.flags))
    if kind == "hostile" and variant.baseline:
        base = (results or {}).get(variant.baseline)
        if base is None:
            found.append(f"its baseline {variant.baseline!r} was not graded in the same run")
        else:
            for name in full:
                points, allowed = result.points.get(name, 0.0), base.points.get(name, 0.0)
                if points > allowed + 1e-9:
                    found.append(f"{name}: {points:g}, more than its baseline {variant.baseline} ({allowed:g})")
    if kind == "hostile" and variant.flagged:
        if not result.flags:
            found.append("not flagged")
        elif variant.flag and not any(variant.flag in f for f in result.flags):
            found.append(f"no flag mentions {variant.flag!r}")
    return found


def rows(assignment, results):
    """[(kind, variant or None, StudentResult)] of one assignment, in the matrix's order: the
    entries `results` holds."""
    out = [("control", None, results[CONTROL]), ("untouched", None, results[UNTOUCHED])]
    return out + [(kind, v, results[v.id]) for kind, v in entries(assignment) if v.id in results]


def grade_all(course_dir, assignments, workers=2):
    """{assignment: rows}, releasing into `course_dir`, on one cluster for every assignment (its
    workers start and warm up once, as in the catalogue tests)."""
    from coursekit.cluster import Cluster

    out = {}
    cluster = Cluster(workers=workers)
    try:
        for assignment in assignments:
            grading.release(course_dir, assignment)
            out[assignment] = rows(assignment, grade_catalogue(course_dir, assignment, workers, cluster))
    finally:
        cluster.close()
    return out


def points_of(graded):
    """{assignment: {submission: (points of each step, ...)}}, as the matrix prints them."""
    return {assignment: {result.student: tuple(f"{result.points.get(s.name, 0.0):g}" for s in steps_of(assignment))
                         for _, _, result in assignment_rows}
            for assignment, assignment_rows in graded.items()}


def read_points(text):
    """points_of() of a rendered matrix: what a committed docs/grading_matrix.md records."""
    found, assignment = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            assignment = line[3:].strip()
            found[assignment] = {}
        elif assignment and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            steps = len(steps_of(assignment))
            found[assignment][cells[0].strip("`")] = tuple(c.strip("*") for c in cells[2:2 + steps])
    return found


def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _short_flag(flag):
    # Cell numbers and paths change with the notebook's layout and the machine: leave them out.
    flag = re.sub(r"^code cell \d+: ", "", flag)
    flag = re.sub(r"(/[^\s:;,)]+)+", "<path>", flag)
    return flag[:90] + ("…" if len(flag) > 90 else "")


def render(graded):
    """The matrix as Markdown: one table per assignment."""
    lines = [
        "# Grading matrix: every catalogue submission, step by step",
        "",
        "Generated by `python -m coursekit.matrix` from `coursekit/catalogue/`, every submission "
        "graded through real nbgrader. In CI, `tests/test_catalogue.py` grades the controls, every "
        "correct and hostile entry and a sample of the mistakes (`matrix.nbgrader_sample`) through "
        "nbgrader again and asserts their rows; `tests/test_step_mistakes.py` grades every other "
        "mistake at its own step and asserts the points this matrix records there. "
        "Points are nbgrader's; **bold** marks a step the entry must lose (a mistake at "
        "its own step, or an attack that must not pay). *flags* are what the instructor's grading "
        "report says about the submission.",
        "",
        "- **mistake**: loses points at its own step only, with the named symptom in the report, "
        "and is not flagged.",
        "- **correct**: another correct style; full marks everywhere, not flagged.",
        "- **hostile**: earns no point it did not honestly earn, or is flagged by name; scores "
        "no more at any step than its baseline (the mistake with the same wrong code and no "
        "trick); never stops the grading of anyone else.",
        "",
    ]
    for assignment, rows in graded.items():
        steps = steps_of(assignment)
        lines += [f"## {assignment}", ""]
        head = ["submission", "kind"] + [f"{s.name} ({s.points})" for s in steps] + ["total", "as expected",
                                                                                     "flags"]
        lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        results = {result.student: result for _, _, result in rows}
        for kind, variant, result in rows:
            name = result.student
            loses = () if variant is None else variant.loses
            cells = [f"`{name}`", kind]
            for s in steps:
                value = f"{result.points.get(s.name, 0.0):g}"
                cells.append(f"**{value}**" if s.name in loses else value)
            total = f"{result.total:g}/{sum(s.points for s in steps)}"
            cells.append(total if result.graded else f"{total} (not graded)")
            wrong = problems(kind, variant, result, results)
            cells.append("yes" if not wrong else "NO: " + _cell("; ".join(wrong))[:200])
            cells.append(_cell("; ".join(dict.fromkeys(_short_flag(f) for f in result.flags))))
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "What each submission is:", ""]
        for kind, variant, _ in rows:
            if kind == "control":
                lines.append(f"- `{CONTROL}`: the reference solution (the control).")
            elif kind == "untouched":
                lines.append(f"- `{UNTOUCHED}`: the release as handed out, every stub untouched (graded, 0 points).")
            else:
                what = variant.description
                if variant.symptom:
                    what += f"; the report says \"{variant.symptom}\""
                what += "".join(f" and \"{phrase}\"" for phrase in variant.also)
                if variant.baseline:
                    what += f"; scores no more than `{variant.baseline}` at any step"
                lines.append(f"- `{variant.id}` ({kind}): {_cell(what)}.")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--course-dir", default=str(ROOT / "work-matrix"))
    parser.add_argument("--assignments", nargs="*", default=list(ASSIGNMENTS))
    parser.add_argument("--out", default=str(GRADING_MATRIX))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    course = grading.prepare(args.course_dir)
    graded = grade_all(course, args.assignments, args.workers)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(graded))
    bad = 0
    for assignment, rows in graded.items():
        print(f"\n== {assignment}")
        print(results_table.table([r for _, _, r in rows], assignment))
        results = {result.student: result for _, _, result in rows}
        for kind, variant, result in rows:
            for problem in problems(kind, variant, result, results):
                bad += 1
                print(f"  NOT AS EXPECTED {result.student}: {problem}")
    print(f"\nmatrix: {out}  ({time.perf_counter() - start:.0f} s, "
          f"{sum(len(r) for r in graded.values())} submissions, {bad} problems)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
