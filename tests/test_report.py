"""`coursekit report`: every number of the page and the CSV is the gradebook's or the judge's.

The class is the catalogue's graded run of 03 (`catalogue_results`, conftest.py: the reference,
the untouched release, every correct style and hostile entry, one of which autograde cannot
grade, and a sample of the mistakes), so nothing is graded for this file. Its numbers are checked against the gradebook
as `grading.step_scores` reads it, and its case verdicts against the reports the judge wrote
into the graded cells (the text the student reads), not against the records the report reads.
The course-wide analyses are checked on a generated class (`report.synthetic`) with planted
patterns, against the gradebook too.
"""

import csv
import html as htmllib
import re
import shutil
from datetime import datetime, timedelta

import numpy as np
import pytest

from autograder.fixtures import stored
from autograder.harness import RECORD_KEY
from autograder.steps import A03, A04, steps_of
from coursekit import catalogue, grading, report
from coursekit.report import analysis, data, synthetic

A = A03


@pytest.fixture(scope="module")
def graded(course, catalogue_results):
    """{student: StudentResult} of the catalogue's run of 03, and the report's data and stats."""
    results = catalogue_results(A)
    problems = {(s, A): r.problem for s, r in results.items() if not r.graded}
    class_data = data.collect(course, [A], problems=problems)
    return results, class_data, analysis.assignment_stats(class_data, A)


def text_failures(report_text):
    """(passed titles, failed messages) as a graded cell's report shows them (judge.format_report)."""
    passed = re.findall(r"^  \[passed\] (.*)$", report_text, re.M)
    everything = re.search(r"^  all \d+ cases failed: (.*)$", report_text, re.M)
    failed = [everything[1]] if everything else re.findall(r"^  \[FAILED\] .*\n {11}(.*)$", report_text, re.M)
    return passed, failed


def test_points_are_the_gradebooks(graded, course):
    results, class_data, stats = graded
    scores = {student: row for (student, assignment), row in grading.step_scores(course, [A]).items()}
    graded_students = sorted(s for s, r in results.items() if r.graded)
    assert sorted(stats.graded) == graded_students
    assert set(stats.not_graded) == {s for s, r in results.items() if not r.graded} != set()
    for step in stats.steps:
        assert step.students == graded_students
        assert step.scores == [scores[s][step.step] for s in graded_students]
        assert step.average == pytest.approx(np.mean([scores[s][step.step] for s in graded_students]))
        assert step.full_marks == [s for s in graded_students if scores[s][step.step] == step.max_points]
    assert stats.totals == {s: pytest.approx(sum(scores[s].values())) for s in graded_students}
    # The judge's verdicts give the points the gradebook holds: nothing was graded by hand.
    assert not [a for a in stats.attention if a.kind == "points differ"]


def test_case_verdicts_are_what_the_judge_reported(graded):
    results, class_data, stats = graded
    for step in stats.steps:
        # A graded cell the student deleted has no report, no verdicts and no points.
        missing = sorted(s for s in step.students if step.step not in results[s].reports)
        assert step.unrecorded == missing
        assert all(results[s].points[step.step] == 0 for s in missing)
        judged = [s for s in step.students if s not in missing]
        shown = {s: text_failures(results[s].reports[step.step]) for s in judged}
        for case in step.cases:
            assert sorted(case.passed) == sorted(s for s in judged if case.title in shown[s][0])
            assert sorted(case.passed + case.failed) == judged
        for student in judged:
            keys = {d.key for d in step.diagnoses if student in d.students}
            assert keys == {analysis.normalise(message) for message in shown[student][1]}, (step.step, student)
    # (a deleted graded cell is restored and graded now, so the catalogue may leave none unrecorded)
    assert {(a.student, a.step) for a in stats.attention if a.kind == "no verdicts"} == {
        (s, step.step) for step in stats.steps for s in step.unrecorded}


def test_grader_flags_are_the_instructors_flags(graded):
    results, _, stats = graded
    flagged = {(s, f.split(":", 1)[0]) for s, r in results.items() if r.graded for f in r.flags}
    kinds = ("grader error", "kernel restarted", "cell restored")
    assert {(a.student, a.step) for a in stats.attention if a.kind in kinds} == flagged != set()


def test_each_planted_misconception_is_a_row_of_its_step_with_its_student(graded):
    results, _, stats = graded
    by_step = {s.step: s for s in stats.steps}
    planted = [m for m in catalogue.by_assignment(catalogue.MISTAKES, A) if m.id in results]
    assert len(planted) >= 5  # one of each step of 03 (`matrix.nbgrader_sample`)
    for mistake in planted:
        for name in mistake.loses:
            rows = [d for d in by_step[name].diagnoses if mistake.id in d.students]
            symptom = [d for d in rows if mistake.symptom in d.example or
                       any(mistake.symptom in m and analysis.normalise(m) == d.key
                           for m in text_failures(results[mistake.id].reports[name])[1])]
            assert symptom, (mistake.id, [d.example for d in rows])
    # Rows are listed most students first, and no row is repeated.
    for step in stats.steps:
        assert [len(d.students) for d in step.diagnoses] == sorted((len(d.students) for d in step.diagnoses),
                                                                   reverse=True)
        assert len({d.key for d in step.diagnoses}) == len(step.diagnoses)


def test_one_misconception_worded_with_other_numbers_is_one_row():
    worded = ["rows of softmax(x) sum to 1.73, not 1", "rows of softmax(x) sum to 2.5e-03, not 1",
              "rows of softmax(x) sum to -3, not 1"]
    shapes = ["`CausalAttention` raised RuntimeError: The size of tensor a (6) must match the size of tensor b (4)",
              "`CausalAttention` raised RuntimeError: The size of tensor a (12) must match the size of tensor b (3)"]
    quoted = ["`causal_mask` raised ValueError: 'abc' is not a mask", "`causal_mask` raised ValueError: \"x\" is not a mask"]
    for same in (worded, shapes, quoted, ["X has shape (3, 4), expected (4, 3)", "X has shape (2,), expected (5, 2, 7)"],
                 ["torch.Size([2, 3]) vs torch.Size([4])", "torch.Size([1, 1, 1]) vs torch.Size([9])"]):
        assert len({analysis.normalise(m) for m in same}) == 1, same
    rows = analysis.group([("ann", "case 1", worded[0]), ("bob", "case 2", worded[1]), ("ann", "case 2", worded[2]),
                           ("cy", "case 1", shapes[0])])
    assert [(d.students, d.cases, d.wordings) for d in rows] == [(["ann", "bob"], ["case 1", "case 2"], 3),
                                                                 (["cy"], ["case 1"], 1)]
    # Different names, words or kinds of value are different misconceptions.
    assert analysis.normalise("`softmax` is not implemented yet") != analysis.normalise("`causal_mask` is not implemented yet")
    assert analysis.normalise("weights contains nan") != analysis.normalise("weights contains inf")
    assert analysis.normalise("W_query in float32") == "W_query in float32"


def test_why_a_submission_was_not_graded(graded, course):
    results, class_data, stats = graded
    assert stats.not_graded == {s: r.problem for s, r in results.items() if not r.graded}
    # Without the run's outcomes, the reason is read from the submission.
    alone = analysis.assignment_stats(data.collect(course, [A]), A)
    assert set(alone.not_graded) == set(stats.not_graded)
    # not-json-03, the catalogue's one submission of 03 that autograde cannot grade
    assert alone.not_graded["not-json-03"] == f"{A}.ipynb could not be read as a notebook (JSONDecodeError)"


def test_late_submissions_are_the_gradebooks(graded, course, tmp_path):
    """A copy of the gradebook with a due date, two submissions after it and one extension."""
    from nbgrader.api import Gradebook

    db = tmp_path / "gradebook.db"
    shutil.copy(course / "gradebook.db", db)
    url = f"sqlite:///{db}"
    late, ok, extended = sorted(graded[2].graded)[:3]
    due = datetime(2100, 1, 1)  # after every real submission
    with Gradebook(url) as gb:
        gb.find_assignment(A).duedate = due
        gb.find_submission(A, late).timestamp = due + timedelta(hours=5)
        gb.find_submission(A, ok).timestamp = due - timedelta(minutes=1)
        gb.find_submission(A, extended).timestamp = due + timedelta(hours=5)
        gb.find_submission(A, extended).extension = timedelta(days=1)
        gb.db.commit()
        nbgraders = {sub.student_id: sub.total_seconds_late for sub in gb.find_assignment(A).submissions
                     if sub.total_seconds_late > 0}
    found = analysis.assignment_stats(data.collect(course, [A], db_url=url), A).late
    assert found == nbgraders == {late: 5 * 3600}


@pytest.fixture(scope="module")
def written(graded, course, tmp_path_factory):
    results, _, _ = graded
    problems = {(s, A): r.problem for s, r in results.items() if not r.graded}
    return report.write(course, [A], tmp_path_factory.mktemp("report") / "03.html", problems=problems)


def test_csv_has_a_row_per_student_step_and_case(graded, written, course):
    results, class_data, stats = graded
    rows = list(csv.DictReader(written[1].open(encoding="utf-8")))
    scores = {student: row for (student, assignment), row in grading.step_scores(course, [A]).items()}
    for student, result in results.items():
        mine = [r for r in rows if r["student"] == student]
        if not result.graded:
            assert len(mine) == 1 and mine[0]["graded"] == "False" and mine[0]["problem"] == result.problem
            continue
        for step in steps_of(A):
            step_rows = [r for r in mine if r["step"] == step.name]
            if step.name not in result.reports:  # a deleted graded cell: one row, without a case
                assert [(r["points"], r["case"]) for r in step_rows] == [("0", "")]
                continue
            passed, failed = text_failures(result.reports[step.name])
            assert {float(r["points"]) for r in step_rows} == {scores[student][step.name]}
            assert sorted(r["title"] for r in step_rows if r["passed"] == "True") == sorted(passed)
            assert {r["message"] for r in step_rows if r["passed"] == "False"} == set(failed)
            assert all(r["diagnosis"] == analysis.normalise(r["message"]) for r in step_rows if r["passed"] == "False")


def _text(page):
    """The page's text, with every run of white space one space."""
    page = re.sub(r"<(style|svg)[^>]*>.*?</\1>", "", page, flags=re.S)
    return squash(htmllib.unescape(re.sub(r"<[^>]+>", " ", page)))


def squash(text):
    return " ".join(text.split())


def test_the_page_shows_the_numbers_and_nothing_hidden(graded, written):
    _, _, stats = graded
    page = written[0].read_text(encoding="utf-8")
    # Self-contained: nothing to fetch (an SVG's links point inside it).
    assert re.findall(r'(?:src|href)="(?!#)[^"]*"', page) == [] and "<link" not in page
    assert page.count("<svg") == 1 + len(stats.steps)
    for step in stats.steps:
        article = page[page.index(f'id="{A}-{step.step}"'):]
        article = article[:article.index("</article>")]
        # The chart's bars count every graded student once, full marks in the last.
        bars = [int(n) for n in re.findall(r"<title>(\d+) students?: ", article)]
        assert len(bars) == 11 and sum(bars) == len(step.scores) and bars[-1] == len(step.full_marks)
        article = _text(article)
        assert f"{step.average:.2f} / {step.max_points:g}" in article
        assert f"{len(step.full_marks)} of {len(step.scores)}" in article
        for case in step.cases:
            judged = len(case.passed) + len(case.failed)  # not those who deleted the step's graded cell
            assert squash(f"{case.title} {case.kind} {len(case.passed)} of {judged}") in article
        for d in step.diagnoses:
            assert squash(d.example) in article
    text = _text(page)
    for student, why in stats.not_graded.items():
        assert squash(f"{student} {why}") in text
    # No hidden input, expected value or test source: the page shows what feedback shows.
    for secret in ("BEGIN HIDDEN TESTS", "from autograder", "def test_", "test_stored_outputs"):
        assert secret not in page, secret
    for step in steps_of(A):
        for record in stored.load(step.name):
            for expected in stored.expected_outputs(record):
                for value in np.asarray(expected, dtype=float).ravel()[:50]:
                    if abs(value) > 1e-3 and abs(value - round(value)) > 1e-3:
                        assert f"{value:.4f}" not in text, (step.name, value)


def test_the_records_stay_out_of_the_feedback(graded, course):
    results, _, stats = graded
    student = next(s for s in stats.graded if any(s in d.students for step in stats.steps for d in step.diagnoses))
    autograded = course / "autograded" / student / A
    assert len(data.read_records(autograded)) == len(steps_of(A))
    grading.feedback(course, A, [student])
    page = (course / "feedback" / student / A / f"{A}.html").read_text()
    for leak in (f'"{RECORD_KEY}"', "kernel_lost", "grader_errors", "test_stored_outputs"):
        assert leak not in page, leak


# --- the course: a generated class -----------------------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    course = tmp_path_factory.mktemp("generated")
    truth = synthetic.generate(course, [f"student{i:02d}" for i in range(16)], (A03, A04), seed=3)
    return course, truth


def test_course_report_finds_who_falls_behind_and_which_steps_predict_trouble(generated):
    course, truth = generated
    class_data = data.collect(course)
    stats = [analysis.assignment_stats(class_data, a) for a in class_data.assignments]
    assert class_data.assignments == [A03, A04]
    scores = grading.step_scores(course)
    maxima = {s.name: s.points for a in (A03, A04) for s in steps_of(a)}
    ungraded = {(s, a) for s, a in truth.ungraded}
    graded = {a: {s for (s, b) in scores if b == a and (s, a) not in ungraded} for a in (A03, A04)}
    totals = {(s, a): sum(scores[(s, a)].values()) for a in graded for s in graded[a]}
    averages = {a: np.mean([totals[(s, a)] for s in graded[a]]) for a in graded}
    behind = {}
    for (s, a), total in totals.items():
        if total < averages[a] - 1e-9:
            behind.setdefault(s, []).append(a)
    for s, a in ungraded:
        behind.setdefault(s, []).append(a)
    expected = {s for s, where in behind.items() if len(where) >= 2}
    assert {row.student for row in analysis.struggling(stats)} == expected != set()

    lost = {(s, step) for (s, a), row in scores.items() if (s, a) not in ungraded
            for step, points in row.items() if points < maxima[step]}
    assert lost == set(truth.failed) - {(s, step) for s, a in ungraded for step in maxima if step in
                                        {x.name for x in steps_of(a)}}
    both_graded = graded[A03] & graded[A04]
    pairs = {(p.earlier, p.later): p for p in analysis.predictors(stats)}
    planted = pairs[("causal_mask", "MultiHeadAttention")]
    assert planted.both == sorted(s for s in both_graded if (s, "causal_mask") in lost and (s, "MultiHeadAttention") in lost)
    for (early, late), p in pairs.items():
        a = {s for s in both_graded if (s, early) in lost}
        b = {s for s in both_graded if (s, late) in lost}
        assert (p.both, p.lost_earlier, p.lost_later, p.students) == (sorted(a & b), len(a), len(b), len(both_graded))
        assert len(a & b) >= analysis.MIN_TOGETHER and p.given > p.otherwise
    assert truth.late and {s: t for (s, a), t in truth.late.items() if a == A03 and (s, a) not in ungraded} == \
        pytest.approx(stats[0].late)


def _plant_message(course, message):
    """`message` as the diagnosis of the first failed case of one generated notebook (a copy of the
    course): what a student's own exception text would put there."""
    import json

    copy = course.parent / f"{course.name}-planted"
    shutil.copytree(course, copy)
    for path in sorted((copy / "autograded").rglob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            for case in cell.get("metadata", {}).get(RECORD_KEY, {}).get("cases", []):
                if not case["passed"]:
                    case["message"] = message
                    path.write_text(json.dumps(nb))
                    return copy
    raise AssertionError("no failed case in the generated class")


def test_coursekit_report_writes_the_page_and_the_csv(generated, tmp_path, capsys):
    from coursekit.cli import main

    course, _ = generated
    course = _plant_message(course, "`causal_mask` raised ValueError: <script>alert(1)</script>")
    out = tmp_path / "out" / "course.html"
    assert main(["report", "--course", str(course), "--out", str(out)]) == 0
    assert f"report: {out}" in capsys.readouterr().out
    # What a student's code writes into a message is shown as text, never run as markup.
    assert "<script>" not in out.read_text() and "&lt;script&gt;alert(1)&lt;/script&gt;" in out.read_text()
    assert out.read_text().count("<svg") == 2 + sum(len(steps_of(a)) for a in (A03, A04))
    assert "Steps that predict trouble later" in out.read_text()
    assert out.with_suffix(".csv").is_file()
    empty = tmp_path / "no-course"
    empty.mkdir()
    assert main(["report", "--course", str(empty)]) == 1
    assert "no gradebook" in capsys.readouterr().err and not (empty / "gradebook.db").exists()
    assert main(["report", "05_efficient_attention", "--course", str(course)]) == 1
    assert "not in the gradebook: 05_efficient_attention" in capsys.readouterr().err
