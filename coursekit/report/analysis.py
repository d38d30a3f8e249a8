"""What the report says, computed from ClassData: per step, per case, per misconception, and
across assignments. Plain data, so the HTML page, the CSV and the tests read the same numbers."""

import functools
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

from autograder.harness import KERNEL_LOST, Case, CaseResult, StepResult
from autograder.steps import STEPS

# A diagnosis names the same misconception whatever numbers it was worded with: the numbers,
# shapes, lists and quoted values of one case (or of one student's exception) are replaced by
# placeholders before messages are grouped. Names in backticks are kept: they say where.
NORMALISE = [
    (re.compile(r"'[^'`]*'|\"[^\"`]*\""), "'…'"),  # quoted values (a student's exception message)
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "0x…"),  # addresses in a repr
    (re.compile(r"\(\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*\)"), "(…)"),  # shapes, indices
    (re.compile(r"\[[-+\d.eE,\s]*\]"), "[…]"),  # lists of numbers, torch.Size([...])
    (re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?!\w)"), "#"),  # numbers
    (re.compile(r"\s+"), " "),
]


@functools.cache  # a class repeats its messages
def normalise(message):
    """The message with its numbers, shapes, lists and quoted values replaced by placeholders."""
    parts = message.split("`")
    for i in range(0, len(parts), 2):  # outside backticks only
        for pattern, placeholder in NORMALISE:
            parts[i] = pattern.sub(placeholder, parts[i])
    return "`".join(parts).strip()


@dataclass
class Diagnosis:
    """One misconception of a step: one normalised message, and who got it in which cases."""
    key: str
    example: str  # its most common wording
    students: list  # sorted
    cases: list  # titles of the cases it appeared in
    wordings: int  # how many different messages it groups


@dataclass
class CaseStats:
    name: str
    title: str
    kind: str
    weight: float
    passed: list  # students
    failed: list  # students
    diagnoses: list  # [Diagnosis] of this case, most common first


@dataclass
class StepStats:
    step: str
    max_points: float
    students: list  # graded submissions
    scores: list  # their points, in the same order
    full_marks: list  # students
    average: float
    cases: list  # [CaseStats], in suite order
    diagnoses: list  # [Diagnosis] across the step's cases, most common first
    unrecorded: list  # graded students whose notebook holds no verdicts for the step

    @property
    def lost(self):
        """Students below full marks."""
        return sorted(set(self.students) - set(self.full_marks))


@dataclass
class Attention:
    student: str
    step: str
    kind: str  # one of ATTENTION
    detail: str = ""


ATTENTION = {
    "grader error": "a case could not run (not the student's fault): {detail}",
    "kernel restarted": KERNEL_LOST,
    "cell restored": "the student deleted its graded cell; nbgrader put it back and the judge graded it",
    "points differ": "the gradebook holds {detail} (graded by hand?)",
    "no verdicts": "no verdicts stored: the notebook had no graded cell for it (deleted?)",
}


@dataclass
class AssignmentStats:
    assignment: str
    max_total: float
    graded: list  # students
    not_graded: dict  # student -> why
    late: dict  # student -> seconds late
    totals: dict  # student -> total points (graded)
    steps: list  # [StepStats], in course order
    attention: list  # [Attention]: grader errors, restarted kernels, points the verdicts do not give

    @property
    def average(self):
        return sum(self.totals.values()) / len(self.totals) if self.totals else 0.0

    @property
    def full_marks(self):
        return sorted(s for s, total in self.totals.items() if total >= self.max_total)


def step_order(steps):
    known = {name: i for i, name in enumerate(STEPS)}
    return sorted(steps, key=lambda s: (known.get(s, len(known)), s))


def group(failures):
    """[Diagnosis] from [(student, case title, message)], most students first."""
    by_key = defaultdict(list)
    for student, title, message in failures:
        by_key[normalise(message)].append((student, title, message))
    found = []
    for key, items in by_key.items():
        wordings = Counter(message for _, _, message in items)
        titles = list(dict.fromkeys(title for _, title, _ in items))
        found.append(Diagnosis(key, wordings.most_common(1)[0][0], sorted({s for s, _, _ in items}), titles,
                               len(wordings)))
    return sorted(found, key=lambda d: (-len(d.students), d.key))


def step_result(record):
    """The judge's StepResult back from its record (enough of it to count points)."""
    return StepResult(record["step"], [CaseResult(Case(record["step"], c["case"], c["kind"], c["weight"], 0.0, None,
                                                       c["title"]), c["passed"], c["message"])
                                       for c in record["cases"]], record.get("kernel_lost", False))


def points_of_record(record, max_points):
    """The points the judge's verdicts give, to compare with the gradebook's."""
    return _points(tuple((c["weight"], c["passed"]) for c in record["cases"]), max_points)


@functools.cache  # a class has few patterns of verdicts: most students pass most cases
def _points(verdicts, max_points):
    """StepResult.points of the verdicts ((weight, passed) per case)."""
    return step_result({"step": "", "cases": [{"case": str(i), "title": "", "kind": "", "weight": weight,
                                               "passed": passed, "message": ""}
                                              for i, (weight, passed) in enumerate(verdicts)]}).points(max_points)


def _case_stats(step, graded):
    """([CaseStats], {case: [(student, title, message)] of its failures}) of `step` over the graded
    submissions, in one pass over their verdicts."""
    cases, failures = {}, defaultdict(list)
    for sub in graded:
        for case in sub.records.get(step, {}).get("cases", []):
            stats = cases.get(case["case"])
            if stats is None:
                stats = cases[case["case"]] = CaseStats(case["case"], case["title"], case["kind"], case["weight"],
                                                        [], [], [])
            if case["passed"]:
                stats.passed.append(sub.student)
            else:
                stats.failed.append(sub.student)
                failures[case["case"]].append((sub.student, stats.title, case["message"]))
    for name, stats in cases.items():
        stats.diagnoses = group(failures[name])
    return list(cases.values()), failures


def step_stats(step, max_points, graded):
    scores = [sub.points.get(step) or 0.0 for sub in graded]
    cases, failures = _case_stats(step, graded)
    return StepStats(step, max_points, students=[sub.student for sub in graded], scores=scores,
                     full_marks=[sub.student for sub, s in zip(graded, scores) if s >= max_points],
                     average=sum(scores) / len(scores) if scores else 0.0,
                     cases=cases, diagnoses=group([f for found in failures.values() for f in found]),
                     unrecorded=[sub.student for sub in graded if step not in sub.records])


def attention(sub, max_points):
    """What the instructor should look at in one graded submission."""
    found = [Attention(sub.student, step, "no verdicts") for step in max_points if step not in sub.records]
    for step, record in sub.records.items():
        if record.get("grader_errors"):
            found.append(Attention(sub.student, step, "grader error", ", ".join(record["grader_errors"])))
        if record.get("kernel_lost"):
            found.append(Attention(sub.student, step, "kernel restarted"))
        if step in sub.restored:
            found.append(Attention(sub.student, step, "cell restored"))
        points = sub.points.get(step)
        if step in max_points and points is not None:
            verdicts = points_of_record(record, max_points[step])
            if abs(points - verdicts) > 1e-9:
                found.append(Attention(sub.student, step, "points differ",
                                       f"{points:g} points, the judge's verdicts give {verdicts:g}"))
    return found


def assignment_stats(data, assignment):
    subs = data.submissions[assignment]
    max_points = data.max_points[assignment]
    graded = [s for s in subs.values() if s.graded]
    return AssignmentStats(
        assignment, sum(max_points.values()), [s.student for s in graded],
        {s.student: s.problem for s in subs.values() if not s.graded},
        {s.student: s.seconds_late for s in subs.values() if s.seconds_late > 0},
        {s.student: s.total for s in graded},
        [step_stats(step, max_points[step], graded) for step in step_order(max_points)],
        [a for s in graded for a in attention(s, max_points)])


# --- across assignments --------------------------------------------------------------------------

@dataclass
class Struggling:
    student: str
    shares: dict  # assignment -> share of the points (None: not graded; absent: no submission)
    behind: list  # assignments where the student scored below the class average, or was not graded


def struggling(stats):
    """Students whose points fall below the class average (or who were not graded) in two or more
    assignments: most such assignments first, then the lowest shares."""
    found = {}
    for a in stats:
        for student, total in a.totals.items():
            row = found.setdefault(student, Struggling(student, {}, []))
            row.shares[a.assignment] = total / a.max_total if a.max_total else 1.0
            if total < a.average - 1e-9:
                row.behind.append(a.assignment)
        for student in a.not_graded:
            row = found.setdefault(student, Struggling(student, {}, []))
            row.shares[a.assignment] = None
            row.behind.append(a.assignment)
    rows = [s for s in found.values() if len(s.behind) >= 2]
    return sorted(rows, key=lambda s: (-len(s.behind), sum(v or 0.0 for v in s.shares.values()), s.student))


@dataclass
class Predictor:
    """Losing points at `earlier` and at `later`: how often together, against how often `later`
    is lost by those who did not lose `earlier`."""
    earlier: str  # step
    later: str  # step
    both: list  # students who lost both
    lost_earlier: int
    lost_later: int
    students: int  # graded in both assignments

    @property
    def given(self):
        return len(self.both) / self.lost_earlier if self.lost_earlier else 0.0

    @property
    def otherwise(self):
        rest = self.students - self.lost_earlier
        return (self.lost_later - len(self.both)) / rest if rest else 0.0


MIN_TOGETHER = 2  # a pair seen in one student only predicts nothing


def predictors(stats, min_together=MIN_TOGETHER):
    """Pairs (step of an earlier assignment, step of a later one) that students lost together
    more often than the later step was lost without the earlier one, most students first."""
    lost = {}  # step -> set of students who lost points at it
    graded = {}  # assignment -> set of graded students
    for a in stats:
        graded[a.assignment] = set(a.graded)
        for s in a.steps:
            lost[(a.assignment, s.step)] = set(s.lost)
    found = []
    for first, second in combinations(stats, 2):
        both_graded = graded[first.assignment] & graded[second.assignment]
        for early in first.steps:
            a = lost[(first.assignment, early.step)] & both_graded
            for late in second.steps:
                b = lost[(second.assignment, late.step)] & both_graded
                pair = Predictor(early.step, late.step, sorted(a & b), len(a), len(b), len(both_graded))
                if len(pair.both) >= min_together and pair.given > pair.otherwise:
                    found.append(pair)
    return sorted(found, key=lambda p: (-len(p.both), -(p.given - p.otherwise), p.earlier, p.later))
