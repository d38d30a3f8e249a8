"""Credit follows the size of the misconception (autograder/suites/__init__.py says how)."""

import pytest

from autograder.harness import cases_of
from autograder.suites import LAYERS, MAX_PROPERTY_SHARE


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
