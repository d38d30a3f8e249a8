"""Everything generated and committed is what its one source generates now."""

from autograder.fixtures import notes, stored
from coursekit import build, release
from coursekit.paths import released_notebook, source_notebook


def test_source_notebooks_are_built_from_content_and_solutions(capsys):
    assert build.main(["--check"]) == 0, capsys.readouterr().out


def test_stored_fixtures_match_the_reference(capsys):
    assert stored.main(["--check"]) == 0, capsys.readouterr().out


def test_errata_document_is_current(capsys):
    assert notes.main(["--check"]) == 0, capsys.readouterr().out


def test_release_is_what_nbgrader_generates_from_source(release_as_generated):
    """The committed release against nbgrader's generation from source: the one the session's
    course fixture makes (it used to be generated a second time here, 18 s of CI)."""
    _, generated = release_as_generated
    assert {released_notebook(assignment) for assignment in build.ASSIGNMENTS} <= set(generated)
    assert release.stale(generated) == []


def test_every_step_has_a_suite_with_all_four_kinds_of_case():
    from autograder.harness import cases_of
    from autograder.steps import STEPS

    for step in STEPS:
        kinds = {c.kind for c in cases_of(step)}
        assert {"stored", "property"} <= kinds, (step, kinds)
        assert kinds & {"notes", "oracle"}, (step, kinds)


def test_every_worked_example_reproduces_with_the_reference():
    import numpy as np

    from autograder.reference import reference_implementation

    impl = reference_implementation()
    for example in notes.all_examples():
        got = np.asarray(example.call(impl), dtype=float)
        want = np.asarray(notes.expected(example), dtype=float)
        assert np.allclose(got, want, atol=example.atol, rtol=0), example.key
        if example.erratum:
            # An erratum is only an erratum if the printed number really is out of tolerance.
            assert not np.allclose(got, np.asarray(example.printed, dtype=float), atol=example.atol, rtol=0), example.key


# --- Validate is honest: the graded cells hold the visible checks --------------------------

_VALIDATE = ("import json, sys\n"
             "from nbgrader.validator import Validator\n"
             "print(json.dumps(Validator().validate(sys.argv[1])))\n")

def _in_subprocesses(script, paths, at_once=3):
    """`python -c script PATH` for each notebook, in its folder, `at_once` at a time:
    {path: the JSON its last line of output holds}."""
    import json
    import os
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore",
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))

    def one(path):
        done = subprocess.run([sys.executable, "-c", script, str(path)], cwd=path.parent, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    with ThreadPoolExecutor(max_workers=at_once) as pool:
        return dict(zip(paths, pool.map(one, paths)))


def _validate_all(paths):
    """nbgrader's Validator (what `nbgrader validate` and the Validate button run) on each
    notebook: {path: its result dict}."""
    return _in_subprocesses(_VALIDATE, paths)


def _failed_steps(result):
    import re

    return {re.match(r"# Graded cell of `(\w+)`", cell["source"]).group(1) for cell in result.get("failed", [])}


def test_graded_cells_hold_the_visible_checks_and_no_hidden_case():
    from autograder.steps import ASSIGNMENTS, graded_step, nbgrader_metadata
    from coursekit import samples

    for assignment in ASSIGNMENTS:
        content = build.read_content(assignment)
        checks = {build.step_of(cell): cell.source for cell in content.cells if build.role(cell) == "checks"}
        source = samples.read(source_notebook(assignment))
        student = samples.read(released_notebook(assignment))
        assert not any("checks" in nbgrader_metadata(cell).get("grade_id", "") for cell in source.cells)
        for nb in (source, student):
            graded = [cell for cell in nb.cells if graded_step(cell)]
            assert graded
            for cell in graded:
                step = graded_step(cell)
                assert cell.source.startswith(f"# Graded cell of `{step}`")
                comment = " ".join(line[2:] for line in cell.source.splitlines() if line.startswith("# "))
                assert "Passing them means" in comment and "not that it earns full points" in comment
                assert checks[step] in cell.source
                assert "autograder" not in cell.source.split("### BEGIN HIDDEN TESTS")[0]
        for cell in student.cells:
            assert "HIDDEN TESTS" not in cell.source and "autograder" not in cell.source


def test_validate_fails_on_the_untouched_release_naming_every_step_and_passes_when_complete(tmp_path):
    """Validate's verdict is the visible checks' verdict: it names each unfinished step, and
    passes on the completed notebook; a partly done notebook fails at the steps left to do."""
    from autograder.steps import A01, ASSIGNMENTS, STEPS, steps_of
    from coursekit import samples

    paths = {}
    for assignment in ASSIGNMENTS:
        nb = samples.read(released_notebook(assignment))
        for kind, version in (("untouched", nb), ("complete", samples.complete(nb))):
            paths[assignment, kind] = tmp_path / kind / assignment / f"{assignment}.ipynb"
            samples.write(version, paths[assignment, kind])
    # Partly done: everything but softmax.
    nb = samples.read(released_notebook(A01))
    stub = next(cell.source for cell, names in samples.solution_cells(nb) if names == ["softmax"])
    paths[A01, "partial"] = tmp_path / "partial" / A01 / f"{A01}.ipynb"
    samples.write(samples.complete(nb, {"softmax": stub}), paths[A01, "partial"])

    results = _validate_all(list(paths.values()))
    for assignment in ASSIGNMENTS:
        untouched = results[paths[assignment, "untouched"]]
        assert _failed_steps(untouched) == {s.name for s in steps_of(assignment)}, assignment
        assert all("Error" in cell["raw_error"] for cell in untouched["failed"]), assignment  # an exception each
        assert results[paths[assignment, "complete"]] == {}, (assignment, results[paths[assignment, "complete"]])
    needs_softmax = {name for name, step in STEPS.items() if "softmax" in step.depends_on}
    failed = _failed_steps(results[paths[A01, "partial"]])
    assert "softmax" in failed and failed <= {"softmax"} | needs_softmax, failed


def _names(source):
    """(names a cell binds, names it reads from the notebook's namespace): read at top level or
    as globals inside its functions and classes, not bound by the cell, not builtins."""
    import builtins
    import symtable

    table = symtable.symtable(source, "<cell>", "exec")
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read = set()

    def walk(t):
        for symbol in t.get_symbols():
            if symbol.is_referenced() and (t is table or symbol.is_global()):
                read.add(symbol.get_name())
        for child in t.get_children():
            walk(child)

    walk(table)
    return bound, read - bound - set(dir(builtins))


def test_no_cell_needs_a_name_from_the_visible_checks():
    """Autograding never runs a graded cell's source, so no other cell may read a name that only
    a graded cell's checks define (the notebook's own cells are plain Python)."""
    from autograder.steps import ASSIGNMENTS, graded_step
    from coursekit import samples

    problems = []
    for assignment in ASSIGNMENTS:
        defined, from_checks = set(), {}
        for index, cell in enumerate(samples.read(source_notebook(assignment)).cells):
            if cell.cell_type != "code":
                continue
            bound, read = _names(cell.source)
            if graded_step(cell):
                from_checks.update({name: graded_step(cell) for name in bound - defined})
                continue
            for name in sorted((read & set(from_checks)) - defined):
                problems.append(f"{assignment} cell {index} reads `{name}`, defined only by the checks of "
                                f"{from_checks[name]}")
            defined |= bound
    assert not problems, "\n".join(problems)
