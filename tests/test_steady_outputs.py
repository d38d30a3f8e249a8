"""A layer's output that is nan or inf in the same places on two calls is the same output: the
suites' check that forward draws nothing new (toolkit.modules, toolkit.properties) must not blame a
steady nan or inf (a softmax over the wrong axis, a log_softmax) on a forward that is not steady."""

import numpy as np
import torch

from autograder.suites.toolkit import modules, properties

STEADY = np.array([[0.5, np.nan], [np.inf, -np.inf]])


def test_an_output_with_nan_and_inf_is_close_to_itself():
    assert properties.close(STEADY, STEADY.copy(), 0, 0)
    assert not properties.close(STEADY, np.array([[0.5, np.nan], [np.inf, np.inf]]), 0, 0)
    assert not properties.close(STEADY, np.array([[0.6, np.nan], [np.inf, -np.inf]]), 0, 0)


def test_an_output_with_nan_and_inf_is_the_same_output_as_itself():
    assert modules.same_output(torch.tensor(STEADY), torch.tensor(STEADY))
    assert not modules.same_output(torch.tensor(STEADY), torch.tensor([[0.5, 0.0], [np.inf, -np.inf]], dtype=torch.float64))
