"""A forward that gives inf or nan at the same places on every call draws nothing new: the checks for an
unsteady forward (properties.close with no tolerance, modules' check before 'cannot name the cause') count an
infinity equal to the same infinity and a nan to a nan, so a log-softmax's -inf weights, whose outputs are inf
and nan, are not blamed on fresh random weights drawn in forward (step mistake causal-log-softmax)."""

import numpy as np
import torch

from autograder.suites.toolkit import modules, properties

OUTPUT = np.array([[np.inf, -np.inf, np.nan, 1.0]])
OTHER = OUTPUT * np.array([[1.0, 1.0, 1.0, 2.0]])  # the same infinities and nan, one finite entry changed


def test_equal_infinities_and_nans_are_one_output_to_the_no_tolerance_comparison():
    assert properties.close(OUTPUT, OUTPUT.copy(), 0, 0)
    assert not properties.close(OUTPUT, OTHER, 0, 0)
    assert not properties.close(OUTPUT, -OUTPUT, 0, 0)


def test_equal_infinities_and_nans_are_one_output_to_the_unsteady_forward_check():
    output = torch.tensor(OUTPUT)
    assert modules._same_with_nan(output, output.clone())
    assert not modules._same_with_nan(output, torch.tensor(OTHER))
    assert not modules._same_with_nan(output, torch.tensor(OUTPUT[:, [0, 2, 1, 3]]))
