"""Everything generated and committed is what its one source generates now."""

from autograder.fixtures import notes, stored
from coursekit import build, release


def test_source_notebooks_are_built_from_content_and_solutions(capsys):
    assert build.main(["--check"]) == 0, capsys.readouterr().out


def test_stored_fixtures_match_the_reference(capsys):
    assert stored.main(["--check"]) == 0, capsys.readouterr().out


def test_errata_document_is_current(capsys):
    assert notes.main(["--check"]) == 0, capsys.readouterr().out


def test_release_is_what_nbgrader_generates_from_source(tmp_path):
    generated = release.generate(tmp_path, build.ASSIGNMENTS)
    assert release.differences(generated, release.ROOT / "assignments") == []


def test_every_step_has_a_suite_with_all_four_kinds_of_case():
    from autograder.harness import cases_of
    from autograder.steps import STEPS

    for step in STEPS:
        kinds = {c.kind for c in cases_of(step)}
        assert {"stored", "property"} <= kinds, (step, kinds)
        assert kinds & {"notes", "oracle"}, (step, kinds)


def test_every_worked_example_reproduces_with_the_reference():
    import numpy as np

    from autograder.seam import Implementation

    impl = Implementation.reference()
    for example in notes.all_examples():
        got = np.asarray(example.call(impl), dtype=float)
        want = np.asarray(notes.expected(example), dtype=float)
        assert np.allclose(got, want, atol=example.atol, rtol=0), example.key
        if example.erratum:
            # An erratum is only an erratum if the printed number really is out of tolerance.
            assert not np.allclose(got, np.asarray(example.printed, dtype=float), atol=example.atol, rtol=0), example.key
