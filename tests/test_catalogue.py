"""Every catalogue entry graded through real nbgrader: each row of docs/grading_matrix.md.

For each assignment, one `grade_class` call submits the reference and the untouched release
(the controls), every correct and hostile entry of `coursekit/catalogue/` and a sample of its
mistakes (`matrix.nbgrader_sample`: those hostile entries compare with, those that read the
notebook's state, and the first two of each step), runs `nbgrader autograde` per student, and
reads the per-step points and the reports. The other mistakes are graded at their own step in
process, against the points the committed matrix records (test_step_mistakes.py). Every row
graded here is asserted with `coursekit.matrix.problems`, the rule the matrix document shows:

- a mistake loses points at its own step, with its symptom in that step's report, keeps full
  marks everywhere else, and is not flagged;
- a correct alternative gets full marks everywhere and is not flagged;
- a hostile or broken submission does not keep full marks where it must lose, is flagged by
  name where it says so, scores no more at any step than its baseline (the mistake with the
  same wrong code, graded in the same run), and never stops the grading of the others (every
  other submission of the same run is graded).

The graded run (`catalogue_results`, in conftest.py) is shared with test_end_to_end. An
assignment whose release is missing fails here (the shared `course` fixture releases all five),
rather than being skipped.
"""

import os
import stat
import tomllib
from pathlib import Path

import pytest
import suite_messages

from autograder.steps import ASSIGNMENTS, STEPS, steps_of
from coursekit import catalogue, matrix

ROWS = [(assignment, control, None) for assignment in ASSIGNMENTS for control in ("control", "untouched")] + [
    (assignment, kind, variant) for assignment in ASSIGNMENTS
    for kind, variant in matrix.entries(assignment, matrix.nbgrader_sample(assignment))]


def _row_id(row):
    assignment, kind, variant = row
    if variant is None:
        return f"{assignment[:2]}-{matrix.CONTROL if kind == 'control' else matrix.UNTOUCHED}"
    return variant.id


def test_catalogues_are_large_enough_and_well_formed():
    assert len(catalogue.MISTAKES) >= 40
    assert len(catalogue.CORRECT) >= 15
    assert len(catalogue.HOSTILE) >= 15
    ids = [v.id for v in catalogue.all_variants() + catalogue.STEP_MISTAKES]
    assert len(ids) == len(set(ids)), "variant ids are student ids and sizes' keys: they must be unique"
    assert matrix.CONTROL not in ids
    for variant in catalogue.all_variants():
        assert variant.assignment in ASSIGNMENTS, variant.id
        names = {s.name for s in steps_of(variant.assignment)}
        assert set(variant.loses) <= names, variant.id
        assert set(variant.replace) <= set(STEPS) | {"causal_mask", "masked_softmax", "CausalAttention"}, variant.id
        assert variant.replace or variant.extra_cell or variant.transform or variant.hands_in, variant.id
    for variant in catalogue.MISTAKES:
        assert variant.loses and variant.symptom, variant.id
    for variant in catalogue.STEP_MISTAKES:
        assert len(variant.loses) == 1 and variant.symptom, f"{variant.id}: a step mistake loses one step"
        assert variant.assignment in ASSIGNMENTS and set(variant.replace) <= set(STEPS), variant.id
    for variant in catalogue.CORRECT:
        assert not variant.loses and variant.graded and not variant.flagged, variant.id
    mistakes = {v.id: v for v in catalogue.MISTAKES}
    for variant in catalogue.MISTAKES + catalogue.CORRECT:
        assert not variant.baseline, f"{variant.id}: only hostile entries have a baseline"
    for variant in catalogue.MISTAKES + catalogue.CORRECT:
        assert not variant.hands_in, f"{variant.id}: only hostile entries hand in files beside the notebook"
    for variant in catalogue.HOSTILE:
        assert variant.graded or variant.flagged, variant.id
        if variant.baseline:
            baseline = mistakes.get(variant.baseline)
            assert baseline is not None, f"{variant.id}: its baseline {variant.baseline!r} is no mistake"
            assert baseline.assignment == variant.assignment, (
                f"{variant.id}: its baseline {variant.baseline!r} belongs to another assignment, so it is not "
                "graded in the same run")
    for assignment in ASSIGNMENTS:
        kinds = {kind for kind, _ in matrix.entries(assignment)}
        assert kinds == {"mistake", "correct", "hostile"}, (assignment, kinds)


@pytest.mark.parametrize("file", ["mistakes.toml", "step_mistakes.toml"])
def test_mistake_edits_are_well_formed(file):
    """Every edit of mistakes.toml (and step_mistakes.toml) finds its text exactly once in the source it edits."""
    entries = tomllib.loads((catalogue.HERE / file).read_text())["mistake"]
    wrong = []
    for entry in entries:
        assert entry["edits"], entry["id"]
        sources = {}
        for edit in entry["edits"]:
            assert set(edit) == {"name", "old", "new"}, (entry["id"], edit)
            assert edit["old"] and edit["old"] != edit["new"], (entry["id"], edit)
            text = sources.get(edit["name"]) or catalogue.reference(edit["name"])
            count = text.count(edit["old"])
            if count != 1:
                wrong.append(f"{entry['id']}: {edit['old']!r} occurs {count} times in {edit['name']}")
            sources[edit["name"]] = text.replace(edit["old"], edit["new"])
        assert set(entry["loses"]) >= set(sources) & {s.name for s in steps_of(entry["assignment"])}, entry["id"]
    assert wrong == []


def test_program_files_are_well_formed():
    """Every program file is an entry, says what it is and where its code comes from, sits in a
    folder of its assignment and kind, and puts its text somewhere."""
    ids = {v.id for v in catalogue.all_variants()}
    for path in sorted(catalogue.PROGRAMS.glob("*/*/*.py")):
        header, cells = catalogue.parse_program(path.read_text(), str(path))
        assert header.get("description") and header.get("source"), f"{path}: description and source headers"
        assert path.parent.parent.name in ASSIGNMENTS, path
        assert path.parent.name in catalogue.KIND_FOLDERS, path
        assert path.stem in ids, path
        assert cells or header.get("transform") or header.get("hands_in"), f"{path}: no code, transform or files"


@pytest.mark.parametrize("spec", ["notes.txt link", "pipe fifo extra", "a/b bytes 10", "x socket", "big.bin bytes"])
def test_files_handed_in_are_spelled_in_full(spec):
    """A `hands_in` item with a wrong argument count, an unknown kind or a path for a name is refused
    when the catalogue loads, rather than handing in something other than the entry says."""
    with pytest.raises(ValueError, match="not `NAME KIND"):
        catalogue.hands_in(spec)


def test_files_handed_in_are_written_beside_the_notebook(tmp_path):
    files = catalogue.hands_in("notes.txt link /etc/shadow; pipe fifo; big.bin bytes 1000000; junk files 3")
    for handed_in in files:
        handed_in.write(tmp_path)
    assert os.readlink(tmp_path / "notes.txt") == "/etc/shadow"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe").st_mode)
    assert os.stat(tmp_path / "big.bin").st_size == 1000000
    assert sorted(p.name for p in (tmp_path / "junk").iterdir()) == ["0.txt", "1.txt", "2.txt"]


# --- every message of the suites that names a cause is some mistake's symptom ------------------

FIXED_MESSAGES = Path(__file__).resolve().parent / "data" / "fixed_messages.toml"


def _phrases():
    """Every phrase some mistake's report must show: the symptoms and `also` phrases of the
    mistakes graded through nbgrader (test_row) and of the step mistakes (test_step_mistakes)."""
    return [phrase for v in catalogue.MISTAKES + catalogue.STEP_MISTAKES for phrase in (v.symptom, *v.also)]


def test_every_named_diagnosis_is_a_mistakes_symptom():
    """Each known mistake a suite can name is exercised: some catalogue mistake has that diagnosis
    as its symptom, so the catalogue's grading shows that the diagnosis fires on the mistake."""
    symptoms = _phrases()
    diagnoses = suite_messages.named_diagnoses()
    assert len(diagnoses) > 100  # the parse finds the suites' ladders
    unexercised = [f"{path}:{line}: {suite_messages.shown(template)}" for path, line, template in diagnoses
                   if not any(suite_messages.could_contain(template, symptom) for symptom in symptoms)]
    assert unexercised == []


def test_a_mistake_must_show_every_phrase_it_claims():
    """`also` phrases are checked as the symptom is: a report that lacks one is a problem."""
    from coursekit.results_table import StudentResult

    variant = next(v for v in catalogue.MISTAKES if v.also)
    (step,) = variant.loses
    full = {s.name: s.points for s in steps_of(variant.assignment)}
    result = StudentResult("s", variant.assignment, True, points={**full, step: 0.0},
                           reports={step: f"{step}: 0 points\n  {variant.symptom}"})
    assert matrix.problems("mistake", variant, result, {}) == [f"{step}: the report lacks {variant.also[0]!r}"]
    result.reports[step] += " " + " ".join(variant.also)
    assert matrix.problems("mistake", variant, result, {}) == []


def _exercised(messages, symptoms):
    """The messages some symptom names alone: it lies in the message's fixed text and in no other's,
    so the mistake's report shows that this message, not a like one, fired."""
    def holders(symptom):
        return [i for i, (_, _, text) in enumerate(messages) if suite_messages.literally_contains(text, symptom)]

    return {found[0] for found in map(holders, symptoms) if len(found) == 1}


def test_every_fixed_message_that_names_a_cause_is_a_mistakes_symptom():
    """Each fixed-text CaseFailure message is exercised by a catalogue mistake whose symptom only it
    contains, or is listed in tests/data/fixed_messages.toml: `structural` (a wrong type, shape or
    attribute, which names no misconception) or `pending` (a cause no mistake of the catalogue shows
    yet). A listed phrase that no longer matches a message, and a pending one now exercised, fail too."""
    messages = suite_messages.fixed_messages()
    assert len(messages) > 100  # the parse finds the suites' CaseFailures
    exercised = _exercised(messages, _phrases())
    listed = tomllib.loads(FIXED_MESSAGES.read_text())
    covered, problems = set(), []
    for kind in ("structural", "pending"):
        for entry in listed[kind]:
            assert set(entry) == {"file", "phrase", "reason"} and entry["reason"], entry
            matches = {i for i, (path, _, text) in enumerate(messages) if str(path) == entry["file"]
                       and suite_messages.literally_contains(text, entry["phrase"])}
            if not matches:
                problems.append(f"stale {kind} entry: no message of {entry['file']} has {entry['phrase']!r}")
            if kind == "pending" and matches & exercised:
                problems.append(f"{entry['file']}: {entry['phrase']!r} is exercised now: drop it from pending")
            covered |= matches
    problems += [f"{path}:{line}: {suite_messages.shown(text)}" for i, (path, line, text) in enumerate(messages)
                 if i not in exercised | covered]
    assert problems == []


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(r) for r in ROWS])
def test_row(catalogue_results, row):
    assignment, kind, variant = row
    results = catalogue_results(assignment)
    student = variant.id if variant else (matrix.CONTROL if kind == "control" else matrix.UNTOUCHED)
    result = results[student]
    problems = matrix.problems(kind, variant, result, results)
    shown = [s.name for s in steps_of(assignment)
             if result.points.get(s.name) != s.points or (variant is not None and s.name in variant.loses)]
    detail = "\n".join(result.reports.get(step, f"{step}: no report") for step in shown)
    assert problems == [], (f"{student} ({kind}): {'' if variant is None else variant.description}\n"
                            + "\n".join(problems) + f"\nflags: {result.flags}\n{detail}")


def test_every_grade_is_the_one_the_committed_matrix_records(catalogue_results):
    """Nothing a change does to the code moves a grade: every submission graded here scores, step
    by step, what docs/grading_matrix.md records (`python -m coursekit.matrix` rewrites it when
    a change of grades is intended)."""
    from coursekit.paths import GRADING_MATRIX

    graded = {assignment: matrix.rows(assignment, catalogue_results(assignment)) for assignment in ASSIGNMENTS}
    committed = matrix.read_points(GRADING_MATRIX.read_text())
    now = matrix.points_of(graded)
    moved = [f"{assignment}/{student}: {committed[assignment].get(student)} -> {points}"
             for assignment in now for student, points in now[assignment].items()
             if committed.get(assignment, {}).get(student) != points]
    assert moved == []


def test_the_committed_matrix_has_every_entry_and_each_row_as_expected():
    """The matrix records every entry of the catalogue (those CI grades at their step only too),
    and `python -m coursekit.matrix` found each row as expected when it graded them all."""
    from coursekit.paths import GRADING_MATRIX

    text = GRADING_MATRIX.read_text()
    committed = matrix.read_points(text)
    expected = {a: {matrix.CONTROL, matrix.UNTOUCHED} | {v.id for _, v in matrix.entries(a)} for a in ASSIGNMENTS}
    assert {a: set(rows) for a, rows in committed.items()} == expected
    head = len("| `")
    not_as_expected = [line[head:line.index("`", head)] for line in text.splitlines()
                       if line.startswith("| `") and " | NO: " in line]
    assert len([line for line in text.splitlines() if line.startswith("| `")]) == sum(map(len, expected.values()))
    assert not_as_expected == []


def _sandbox_processes_but_warm_parents():
    """Processes running as the sandbox user of this test run's grading processes that are neither
    bubblewrap nor a warm parent (a zygote whose parent is bubblewrap): whatever a kernel left
    behind. A kernel runs as a user named after the process that graded it (`sandbox_uid`), and
    this run grades in this process and in its cluster's workers, which are still alive here;
    the tests that CI runs beside this pytest grade in processes of their own, whose kernels are
    theirs to account for."""
    from autograder.kernel import procfs
    from autograder.kernel.sandbox import uid_of_grader

    def info(pid):
        fields = procfs.status(pid)
        return int(fields["Uid"][0]), int(fields["PPid"][0]), (procfs.argv(pid) or [b""])[0]

    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                table[int(entry)] = info(entry)
            except (OSError, KeyError, ValueError):
                continue
    graders, grown = {os.getpid()}, True
    while grown:  # this process and everything it started, its workers among them
        found = {pid for pid, (_, parent, _) in table.items() if parent in graders}
        grown = not found <= graders
        graders |= found
    ours = {uid_of_grader(pid) for pid in graders}
    left = []
    for pid, (uid, parent, program) in table.items():
        if uid not in ours or program.endswith(b"bwrap"):
            continue
        if parent in table and table[parent][2].endswith(b"bwrap"):
            continue  # a warm parent, idle between kernels
        left.append((pid, program.decode(errors="replace")))
    return left


def _without_cell_ids(path):
    """A notebook file's text, or its JSON without cell ids (an added cell gets a random one)."""
    import json

    text = path.read_text()
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError):  # nested-json is nested past the decoder
        return text  # the broken files of the catalogue: compared as they are
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        cell.pop("id", None)
    return nb


def test_the_run_left_no_process_and_changed_no_submission(course, catalogue_results, release_notebook):
    """After every entry (fork daemons, background work, gradebook writers included): nothing a
    kernel started is still running, and every submitted notebook is still the one handed in (or, where
    intake replaced it with a trimmed copy, `intake.trim_notebook`, the one handed in is in the quarantine)."""
    import time

    from coursekit import intake, samples
    from coursekit.course_dir import CourseDir

    for assignment in ASSIGNMENTS:
        catalogue_results(assignment)
    for _ in range(50):
        left = _sandbox_processes_but_warm_parents() if os.getuid() == 0 else []
        if not left:
            break
        time.sleep(0.1)
    assert left == []
    changed = []
    for assignment in ASSIGNMENTS:
        handed_in_here = matrix.submissions(release_notebook(assignment), assignment, matrix.nbgrader_sample(assignment))
        for student, nb in handed_in_here.items():
            handed_in = CourseDir(course).submitted_notebook(assignment, student)
            expected = Path(course) / "expected.ipynb"
            samples.write(nb, expected)
            kept = CourseDir(course).intake(assignment, student) / intake.QUARANTINE / handed_in.name
            if _without_cell_ids(expected) not in (_without_cell_ids(handed_in),
                                                   kept.is_file() and _without_cell_ids(kept)):
                changed.append(f"{assignment}/{student}")
    assert changed == []


@pytest.mark.skipif(os.getuid() != 0, reason="kernels run as sandbox users only when grading runs as root")
def test_the_leftover_scan_sees_this_runs_sandbox_users_and_no_other():
    """A process left as the sandbox user of this run's grading is found; one of a grader that is no
    process of this run (the tests CI runs beside this pytest) is not, nor is bubblewrap."""
    import subprocess
    import time

    from autograder.kernel.sandbox import sandbox_uid, uid_of_grader

    others = uid_of_grader(1)  # init's: no grader of this run
    started = [subprocess.Popen(["sleep", "30"], user=uid) for uid in (sandbox_uid(), others)]
    try:
        time.sleep(0.2)
        found = {pid for pid, _ in _sandbox_processes_but_warm_parents()}
        assert started[0].pid in found
        assert started[1].pid not in found
    finally:
        for process in started:
            process.kill()
            process.wait()
    assert {pid for pid, _ in _sandbox_processes_but_warm_parents()} & {p.pid for p in started} == set()
