"""A number or a dtype the kernel names never sizes what the judge makes (red-team round r63): the judge's
memory is bounded by the bytes of the replies it reads (`MAX_REPLY_BYTES`), not by what a reply says.

- A module's extra nn.Linear whose weight is one number expanded to (40000, 40000) (`Tensor.expand`, four bytes
  in the kernel) is described with that shape; the judge, naming a layer the task does not name, made zeros of the
  shape describe() gave and sent them to the kernel: 6.4 GB, about five times over as it was encoded, on a
  machine of 23 GB.
- A tensor's dtype is named beside its data: one byte of `bool` data named complex128 became sixteen in the judge.
"""

import base64
import io

import numpy as np
import pytest
import torch

from autograder.kernel import agent
from autograder.suites.toolkit import modules


class _Layer:
    """A module's handle as the judge holds it: the extra layer `extra` described as `named`, its weight as sent."""

    def __init__(self, named, sent=(4, 3)):
        self.__dict__["loaded_paths"] = {"W_query"}
        self.named, self.sent, self.zeroed = named, sent, []

    def call(self, method):
        assert method == "state_dict"
        return {"W_query.weight": torch.zeros(4, 3), "extra.weight": torch.zeros(self.sent)}

    def describe(self, path=""):
        return {"weight_shape": list(self.named if path == "extra" else (4, 3)), "training": False}

    def copy(self):
        return self

    def set_linear(self, path, weight):
        self.zeroed.append((path, weight.shape))


def _explain(layer, monkeypatch):
    monkeypatch.setattr(modules, "_last_forward_to_run_again", lambda: (layer, (), {}))
    monkeypatch.setattr(modules.Handle, "__call__", lambda module, *args, **kwargs: torch.zeros(2))
    modules.explain_unloaded_layer()
    return layer.zeroed


def test_an_unnamed_layers_zeros_have_the_shape_of_the_weight_the_kernel_sent(monkeypatch):
    assert _explain(_Layer(named=(4, 3)), monkeypatch) == [("extra", (4, 3))]  # an honest extra layer is run again


@pytest.mark.parametrize("named, sent", [((40000, 40000), (4, 3)), ((40000, 40000), (40000, 0))])
def test_a_weight_shape_the_kernel_only_names_makes_nothing_in_the_judge(monkeypatch, named, sent):
    assert _explain(_Layer(named, sent), monkeypatch) == []


def _tensor_reply(data, dtype):
    buffer = io.BytesIO()
    np.save(buffer, data, allow_pickle=False)
    return {"$t": base64.b64encode(buffer.getvalue()).decode(), "dtype": dtype}


def test_a_tensor_named_wider_than_its_data_is_no_answer():
    with pytest.raises(ValueError, match="wider"):
        agent.decode(_tensor_reply(np.zeros(1000, dtype=bool), "complex128"))


@pytest.mark.parametrize("data, dtype", [(np.float32, "bfloat16"), (np.float32, "float16"), (np.float64, "float64"),
                                         (bool, "bool"), (np.int64, "int64"), (np.complex64, "complex64")])
def test_a_tensor_as_the_agent_encodes_it_decodes(data, dtype):
    value = torch.zeros(3, dtype=getattr(torch, dtype))
    assert agent.decode(agent.encode(value)).dtype == value.dtype
    assert agent.decode(_tensor_reply(np.zeros(3, dtype=data), dtype)).dtype == value.dtype
