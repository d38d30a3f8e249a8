"""The reference layers on a GPU, as the notes promise a student who has one.

03's notes tell students to keep the causal mask as a buffer so that `model.to("cuda")` moves it
with the layer. These tests hold the reference (and so the notes) to that: every layer moved to
CUDA gives what it gives on the CPU, its buffers move with it, training reaches every weight there,
and the KV cache generates there as the full forward does. The notebooks' helpers draw tensors
from any device. Skipped, with the reason shown, where there is no CUDA device (CI has none);
run on a GPU machine with

    python -m pytest --noconftest tests/test_cuda.py

(`--noconftest`: the shared fixtures release a course with nbgrader, which these need not.)
"""

import copy
import importlib.util
from pathlib import Path

import pytest
import torch

import solutions

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")

D_IN, D_OUT, CONTEXT, HEADS = 12, 8, 10, 2
TOLERANCE = dict(atol=1e-5, rtol=1e-4)  # float32 on two devices: the same sums, added in other orders


def layers():
    """(name, a layer of the reference, its forward's inputs) for every graded nn.Module."""
    return [
        ("SelfAttention", lambda: solutions.SelfAttention(D_IN, D_OUT), 1),
        ("CausalAttention", lambda: solutions.CausalAttention(D_IN, D_OUT, CONTEXT, 0.1), 1),
        ("MultiHeadAttentionWrapper",
         lambda: solutions.MultiHeadAttentionWrapper(D_IN, D_OUT // HEADS, CONTEXT, 0.1, HEADS), 1),
        ("MultiHeadAttention", lambda: solutions.MultiHeadAttention(D_IN, D_OUT, CONTEXT, 0.1, HEADS), 1),
        ("CrossAttention", lambda: solutions.CrossAttention(D_IN, 6, D_OUT, HEADS, dropout=0.1), 2),
        ("CachedCausalAttention", lambda: solutions.CachedCausalAttention(D_IN, D_OUT, CONTEXT, 0.1), 1),
    ]


def _inputs(count, batch=2, tokens=7):
    generator = torch.Generator().manual_seed(0)
    first = torch.randn(batch, tokens, D_IN, generator=generator)
    return [first] if count == 1 else [first, torch.randn(batch, tokens - 2, 6, generator=generator)]


@pytest.mark.parametrize("name,make,count", layers(), ids=[name for name, _, _ in layers()])
def test_a_layer_moved_to_the_gpu_gives_what_it_gives_on_the_cpu(name, make, count):
    torch.manual_seed(0)
    on_cpu = make().eval()
    on_gpu = copy.deepcopy(on_cpu).to("cuda")
    stranded = [b for b, value in on_gpu.named_buffers() if value.device.type != "cuda"]
    assert not stranded, f"{name}: buffers left on the CPU by .to('cuda'): {stranded}"
    inputs = _inputs(count)
    with torch.no_grad():
        expected = on_cpu(*inputs)
        got = on_gpu(*(x.to("cuda") for x in inputs))
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), expected, **TOLERANCE)


@pytest.mark.parametrize("name,make,count", layers(), ids=[name for name, _, _ in layers()])
def test_training_on_the_gpu_reaches_every_weight(name, make, count):
    torch.manual_seed(0)
    layer = make().to("cuda").train()
    out = layer(*(x.to("cuda") for x in _inputs(count)))
    out.square().sum().backward()
    missed = [p for p, value in layer.named_parameters() if value.grad is None or not value.grad.abs().sum() > 0]
    assert not missed, f"{name}: no gradient on the GPU reached {missed}"


def test_the_kv_cache_generates_on_the_gpu_as_the_full_forward_does():
    torch.manual_seed(0)
    layer = solutions.CachedCausalAttention(D_IN, D_OUT, CONTEXT, 0.0).to("cuda").eval()
    x = _inputs(1)[0].to("cuda")
    cache = solutions.KVCache()
    with torch.no_grad():
        full = layer(x)
        one_at_a_time = torch.cat([layer(x[:, t:t + 1], cache) for t in range(x.shape[1])], dim=1)
    assert cache.keys.device.type == "cuda" and len(cache) == x.shape[1]
    torch.testing.assert_close(one_at_a_time, full, **TOLERANCE)


def test_the_notebooks_helpers_draw_a_tensor_from_the_gpu():
    spec = importlib.util.spec_from_file_location("common", Path(__file__).parents[1] / "content" / "common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    weights = torch.softmax(torch.randn(3, 3, device="cuda", requires_grad=True), dim=-1)
    assert common._as_array(weights).tolist() == weights.detach().cpu().double().tolist()


def test_a_padding_mask_built_on_the_gpu_stays_there_and_masks_as_on_the_cpu():
    lengths = torch.tensor([7, 3])
    scores = torch.randn(2, 7, 7, generator=torch.Generator().manual_seed(1))
    on_gpu = solutions.padding_mask(lengths.to("cuda"), 7)
    assert on_gpu.device.type == "cuda", "padding_mask left the mask on the CPU for lengths on the GPU"
    blocked = on_gpu | solutions.causal_mask(7).to("cuda")
    got = solutions.masked_softmax(scores.to("cuda"), blocked)
    expected = solutions.masked_softmax(scores, solutions.padding_mask(lengths, 7) | solutions.causal_mask(7))
    torch.testing.assert_close(got.cpu(), expected, **TOLERANCE)


def test_cross_attention_with_a_key_padding_mask_on_the_gpu_gives_what_it_gives_on_the_cpu():
    torch.manual_seed(0)
    on_cpu = solutions.CrossAttention(D_IN, 6, D_OUT, HEADS, dropout=0.1).eval()
    on_gpu = copy.deepcopy(on_cpu).to("cuda")
    x, context = _inputs(2)
    key_padding = solutions.padding_mask(torch.tensor([5, 2]), context.shape[1])[:, 0, :]  # (batch, T_k)
    with torch.no_grad():
        expected = on_cpu(x, context, key_padding)
        got = on_gpu(x.to("cuda"), context.to("cuda"), key_padding.to("cuda"))
    torch.testing.assert_close(got.cpu(), expected, **TOLERANCE)


def test_multi_head_attention_on_the_gpu_agrees_with_pytorchs_fused_kernel():
    """The independent oracle on the device where it matters: PyTorch's fused causal attention
    (a flash or memory-efficient kernel on a GPU) given the reference layer's own weights."""
    torch.manual_seed(0)
    layer = solutions.MultiHeadAttention(D_IN, D_OUT, CONTEXT, 0.0, HEADS).to("cuda").eval()
    x = _inputs(1)[0].to("cuda")
    with torch.no_grad():
        heads = [solutions.split_heads(w(x), HEADS) for w in (layer.W_query, layer.W_key, layer.W_value)]
        fused = torch.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)
        expected = layer.out_proj(solutions.merge_heads(fused))
        got = layer(x)
    torch.testing.assert_close(got, expected, **TOLERANCE)
