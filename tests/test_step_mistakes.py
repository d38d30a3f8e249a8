"""The catalogue's step mistakes (coursekit/catalogue/step_mistakes.toml), graded in process at
their own step: each loses points there, its report shows its symptom and every `also` phrase,
and what it keeps fits its size in misconception_sizes.toml (a conceptual error at most a third
of the step, a slip at least half). Together with the mistakes graded through nbgrader
(test_catalogue.py), they are what exercises every diagnosis the suites can give."""

import tomllib

import numpy as np
import pytest

from autograder.harness import run_step
from autograder.judge import format_report
from autograder.reference import reference_with
from autograder.steps import STEPS
from autograder.suites import CONCEPTUAL_MAX_KEPT, SLIP_MIN_KEPT
from coursekit import catalogue

SIZES = tomllib.loads((catalogue.HERE / "misconception_sizes.toml").read_text())


def _size(mistake_id):
    return next((size for size in ("conceptual", "slip", "partial") if mistake_id in SIZES.get(size, ())), None)


def test_there_are_step_mistakes_and_each_names_one_graded_step():
    assert len(catalogue.STEP_MISTAKES) >= 10
    for variant in catalogue.STEP_MISTAKES:
        (step,) = variant.loses
        assert STEPS[step].assignment == variant.assignment, variant.id


@pytest.mark.parametrize("variant", catalogue.STEP_MISTAKES, ids=lambda v: v.id)
def test_a_step_mistake_is_named_at_its_step_and_keeps_what_its_size_allows(variant):
    (step,) = variant.loses
    with np.errstate(all="ignore"):  # a mistake's overflow is its report's business, not this log's
        result = run_step(step, reference_with(variant.replace))
    report = format_report(result, STEPS[step].points)
    missing = [phrase for phrase in (variant.symptom, *variant.also) if phrase not in report]
    assert missing == [], f"{variant.id}: the report lacks {missing}\n{report}"
    kept = result.points(STEPS[step].points) / STEPS[step].points  # rounded as the gradebook records it
    assert kept < 1, f"{variant.id} keeps full marks at {step}\n{report}"
    size = _size(variant.id)
    assert size is not None, f"{variant.id} has no size in misconception_sizes.toml"
    if size == "conceptual":
        assert kept <= CONCEPTUAL_MAX_KEPT + 1e-9, f"{variant.id} is conceptual but keeps {kept:.3f} of {step}"
    if size == "slip":
        assert kept >= SLIP_MIN_KEPT - 1e-9, f"{variant.id} is a slip but keeps only {kept:.3f} of {step}"
