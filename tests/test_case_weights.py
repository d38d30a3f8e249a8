"""Credit follows the size of the misconception (autograder/suites/__init__.py says how)."""

import functools
import tomllib
from fractions import Fraction

import pytest

from autograder.harness import cases_of
from autograder.steps import STEPS, steps_of
from autograder.suites import CONCEPTUAL_MAX_KEPT, LAYERS, MAX_PROPERTY_SHARE, SLIP_MIN_KEPT
from coursekit import catalogue, matrix
from coursekit.paths import GRADING_MATRIX

SIZES_FILE = catalogue.HERE / "misconception_sizes.toml"
CLASSES = ("conceptual", "slip", "partial")


@pytest.mark.parametrize("step", LAYERS)
def test_output_cases_weigh_twice_the_properties(step):
    """A conceptual error fails every output case, so it keeps at most a third of the step."""
    cases = cases_of(step)
    outputs = sum(c.weight for c in cases if c.kind != "property")
    properties = sum(c.weight for c in cases if c.kind == "property")
    assert outputs >= 2 * properties, (step, outputs, properties)


@pytest.mark.parametrize("step", LAYERS)
def test_one_property_case_is_a_small_share(step):
    """A slip breaks one rule: it keeps most of the step."""
    cases = cases_of(step)
    total = sum(c.weight for c in cases)
    largest = max(c.weight for c in cases if c.kind == "property")
    assert largest / total <= MAX_PROPERTY_SHARE, (step, largest, total)


# --- every catalogue mistake, by the size of its misconception --------------------------------

def _sizes():
    """[(mistake id, class)] as misconception_sizes.toml lists them, repeats included."""
    data = tomllib.loads(SIZES_FILE.read_text())
    assert set(data) <= set(CLASSES), f"{SIZES_FILE.name}: unknown keys {sorted(set(data) - set(CLASSES))}"
    return [(mistake_id, size) for size in CLASSES for mistake_id in data.get(size, ())]


SIZES = dict(_sizes())
MISTAKES = {variant.id: variant for variant in catalogue.MISTAKES}
STEP_MISTAKES = {variant.id: variant for variant in catalogue.STEP_MISTAKES}  # test_step_mistakes checks their credit


def test_every_mistake_is_classified():
    """A new catalogue mistake needs a size: the message lists what to add, and where."""
    missing = [v for v in catalogue.MISTAKES + catalogue.STEP_MISTAKES if v.id not in SIZES]
    assert not [v.id for v in missing], (
        f"{len(missing)} catalogue mistake(s) have no size in coursekit/catalogue/{SIZES_FILE.name}; add each "
        "to `conceptual` (keeps at most 1/3 of its step), `slip` (keeps at least 1/2) or `[partial]` with a "
        "one-line reason:\n" + "\n".join(f"  {v.id}  ({v.assignment}, loses {', '.join(v.loses)}): "
                                         f"{v.description}" for v in missing))


def test_no_size_is_stale_or_given_twice():
    listed = [mistake_id for mistake_id, _ in _sizes()]
    stale = sorted(set(listed) - set(MISTAKES) - set(STEP_MISTAKES))
    twice = sorted({mistake_id for mistake_id in listed if listed.count(mistake_id) > 1})
    assert not (stale or twice), (f"{SIZES_FILE.name}: ids that are no catalogue mistake {stale}; "
                                  f"ids given more than one size {twice}")


def test_every_partial_size_says_why():
    reasons = tomllib.loads(SIZES_FILE.read_text()).get("partial", {})
    assert all(isinstance(why, str) and why.strip() for why in reasons.values()), reasons


@functools.cache
def committed_points():
    return matrix.read_points(GRADING_MATRIX.read_text())


def kept(mistake_id, step):
    """The share of `step` the committed grading matrix records for the mistake, exactly."""
    variant = MISTAKES[mistake_id]
    row = committed_points().get(variant.assignment, {}).get(mistake_id)
    assert row is not None, f"docs/grading_matrix.md has no row for {mistake_id}: run python -m coursekit.matrix"
    names = [s.name for s in steps_of(variant.assignment)]
    return Fraction(row[names.index(step)]) / STEPS[step].points


@pytest.mark.parametrize("mistake_id", sorted(m for m in SIZES if m in MISTAKES and SIZES[m] != "partial"))
def test_credit_follows_the_size_of_the_misconception(mistake_id):
    """A conceptual error keeps at most a third of each step it loses, a slip at least half."""
    size = SIZES[mistake_id]
    for step in MISTAKES[mistake_id].loses:
        share = kept(mistake_id, step)
        if size == "conceptual":
            assert share <= CONCEPTUAL_MAX_KEPT, (
                f"{mistake_id} is conceptual but keeps {float(share):.3f} of {step}: weigh the cases it fails more")
        else:
            assert share >= SLIP_MIN_KEPT, (
                f"{mistake_id} is a slip but keeps only {float(share):.3f} of {step}: weigh the cases it fails less")
