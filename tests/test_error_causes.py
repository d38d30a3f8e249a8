"""Exceptions named by their own words (autograder/error_causes.py) beyond the table that
tests/test_harness.py raises for real: a whole shape used as a number, an axis an array (or a dim a tensor)
does not have."""

import numpy as np
import pytest
import torch

from autograder.error_causes import ERROR_CAUSES, SHAPE_AS_NUMBER
from autograder.harness import _describe_error


def test_a_whole_shape_used_as_a_number_is_named_where_numpy_cannot_broadcast_it():
    """np.sqrt(K.shape) for np.sqrt(K.shape[-1]): an array of one entry per axis of the scores, which NumPy cannot
    broadcast against them; a vector of another length is a shape mismatch the grader does not name."""
    scores, K = np.ones((6, 6)), np.ones((6, 4))
    with pytest.raises(ValueError) as raised:
        scores / np.sqrt(K.shape)
    assert SHAPE_AS_NUMBER in _describe_error("scaled_dot_product_attention", raised.value)
    with pytest.raises(ValueError) as raised:
        scores / np.ones(3)
    assert SHAPE_AS_NUMBER not in _describe_error("scaled_dot_product_attention", raised.value)


def test_an_axis_a_vector_does_not_have_is_named():
    """np.linalg.norm(a, axis=1) of a vector, the rows' axis of cosine_similarity_matrix kept in cosine_similarity."""
    with pytest.raises(np.exceptions.AxisError) as raised:
        np.linalg.norm(np.ones(3), axis=1)
    message = _describe_error("cosine_similarity", raised.value)
    assert "cannot name" not in message
    assert sum(cause in message for _, cause in ERROR_CAUSES) == 1


def test_a_dim_a_tensor_does_not_have_is_named():
    """torch.softmax(scores, dim=2), written for a batch (batch, T, T), on one (T, T) matrix: torch's words differ
    from NumPy's for an axis that does not exist."""
    with pytest.raises(IndexError) as raised:
        torch.softmax(torch.ones(3, 3), dim=2)
    message = _describe_error("masked_softmax", raised.value)
    assert "cannot name" not in message
    assert sum(cause in message for _, cause in ERROR_CAUSES) == 1
