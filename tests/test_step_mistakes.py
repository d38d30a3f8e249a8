"""Mistakes graded in process at their own step, through the same judge (`run_step`) as nbgrader's
grading, without a notebook around them:

- the step mistakes (coursekit/catalogue/step_mistakes.toml): each loses points there, its report
  shows its symptom and every `also` phrase, and what it keeps fits its size in
  misconception_sizes.toml (a conceptual error at most a third of the step, a slip at least half);
- the catalogue's mistakes that CI does not grade through nbgrader again (all but
  `matrix.nbgrader_sample`): each scores at its step what docs/grading_matrix.md records for it
  (where `python -m coursekit.matrix` graded it through nbgrader), with its symptom and `also`
  phrases in the report. Their sizes are checked on the matrix (test_case_weights.py).

Together with the mistakes graded through nbgrader (test_catalogue.py), they are what exercises
every diagnosis the suites can give."""

import functools
import warnings

import numpy as np
import pytest
from test_case_weights import SIZES

from autograder.harness import run_step
from autograder.judge import format_report
from autograder.reference import reference_with
from autograder.steps import ASSIGNMENTS, STEPS, steps_of
from autograder.suites import CONCEPTUAL_MAX_KEPT, SLIP_MIN_KEPT
from coursekit import catalogue, matrix
from coursekit.paths import GRADING_MATRIX

SAMPLES = {a: matrix.nbgrader_sample(a) for a in ASSIGNMENTS}  # graded through nbgrader in test_catalogue.py
AT_THEIR_STEP = [v for a in ASSIGNMENTS for kind, v in matrix.entries(a) if kind == "mistake" and v.id not in SAMPLES[a]]


@functools.cache
def _recorded_points():
    """The committed matrix's points, read once for all the mistakes graded here."""
    return matrix.read_points(GRADING_MATRIX.read_text())


def _graded_at_its_step(variant):
    """(points kept at the step, its report): the step graded in process with the variant's code."""
    (step,) = variant.loses
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a mistake's warnings are its report's business, not this log's
        result = run_step(step, reference_with(variant.replace))
    return result.points(STEPS[step].points), format_report(result, STEPS[step].points)


def test_there_are_step_mistakes_and_each_names_one_graded_step():
    assert len(catalogue.STEP_MISTAKES) >= 10
    for variant in catalogue.STEP_MISTAKES:
        (step,) = variant.loses
        assert STEPS[step].assignment == variant.assignment, variant.id


def test_most_catalogue_mistakes_are_graded_at_their_step_and_every_step_keeps_some_through_nbgrader():
    assert len(AT_THEIR_STEP) > len(catalogue.MISTAKES) // 2
    through_nbgrader = {step for a in ASSIGNMENTS for kind, v in matrix.entries(a, SAMPLES[a])
                        if kind == "mistake" for step in v.loses}
    assert through_nbgrader == {step for v in catalogue.MISTAKES for step in v.loses}


@pytest.mark.parametrize("variant", AT_THEIR_STEP, ids=lambda v: v.id)
def test_a_catalogue_mistake_scores_at_its_step_what_the_matrix_records(variant):
    (step,) = variant.loses
    kept, report = _graded_at_its_step(variant)
    missing = [phrase for phrase in (variant.symptom, *variant.also) if phrase not in report]
    assert missing == [], (f"{variant.id}: the report lacks {missing} (if it reads the notebook's state, "
                           f"say `reads_notebook = true` in mistakes.toml)\n{report}")
    recorded = _recorded_points()[variant.assignment].get(variant.id)
    assert recorded is not None, f"{variant.id} has no row in docs/grading_matrix.md: run `python -m coursekit.matrix`"
    index = [s.name for s in steps_of(variant.assignment)].index(step)
    assert f"{kept:g}" == recorded[index], (
        f"{variant.id}: {kept:g} at {step} in process, {recorded[index]} in docs/grading_matrix.md\n{report}")


@pytest.mark.parametrize("variant", catalogue.STEP_MISTAKES, ids=lambda v: v.id)
def test_a_step_mistake_is_named_at_its_step_and_keeps_what_its_size_allows(variant):
    (step,) = variant.loses
    points, report = _graded_at_its_step(variant)
    missing = [phrase for phrase in (variant.symptom, *variant.also) if phrase not in report]
    assert missing == [], f"{variant.id}: the report lacks {missing}\n{report}"
    kept = points / STEPS[step].points  # rounded as the gradebook records it
    assert kept < 1, f"{variant.id} keeps full marks at {step}\n{report}"
    size = SIZES.get(variant.id)
    assert size is not None, f"{variant.id} has no size in misconception_sizes.toml"
    if size == "conceptual":
        assert kept <= CONCEPTUAL_MAX_KEPT + 1e-9, f"{variant.id} is conceptual but keeps {kept:.3f} of {step}"
    if size == "slip":
        assert kept >= SLIP_MIN_KEPT - 1e-9, f"{variant.id} is a slip but keeps only {kept:.3f} of {step}"
