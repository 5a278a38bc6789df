"""Whole models through the backend: graphs captured by the real torch.compile, compiled by ours."""

import pytest
import torch
import torch.nn as nn

import toycompiler
from toycompiler.testing import device_for


class Block(nn.Module):
    """A transformer block: LayerNorm, attention written with matmul + softmax, GELU MLP."""

    def __init__(self, d: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2, self.act = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.GELU()

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = ((q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5).softmax(-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def compile_with(model, x, target):
    """torch.compile captures the graph; our backend compiles it; returns (output, artifacts)."""
    torch._dynamo.reset()
    captured = []

    def backend(gm, example_inputs):
        captured.append(toycompiler.get_backend(target)(gm, example_inputs))
        return captured[-1]

    dev = device_for(target)
    model, x = model.to(dev), x.to(dev)
    with torch.no_grad():
        out = torch.compile(model, backend=backend)(x)
    torch._dynamo.reset()
    assert len(captured) == 1
    assert captured[0].artifacts.fallback_reason is None, captured[0].artifacts.fallback_reason
    return out, captured[0].artifacts


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_two_layer_mlp(target):
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(5, 8)
    out, arts = compile_with(mlp, x, target)
    torch.testing.assert_close(out, mlp(x.to(out.device)), rtol=1e-4, atol=1e-5)
    assert len(arts.kernels) == 1  # the ReLU; both Linears are addmm library calls
    assert arts.output_code.source.count("torch.addmm(") == 2


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_transformer_block(target):
    torch.manual_seed(0)
    block = Block()
    x = torch.randn(2, 6, 16)
    out, arts = compile_with(block, x, target)
    with torch.no_grad():
        torch.testing.assert_close(out, block(x.to(out.device)), rtol=1e-4, atol=1e-4)
    names = [k.name for k in arts.kernels]
    assert sum("layer_norm" in n for n in names) == 2, names
    assert sum("softmax" in n for n in names) == 1, names
    assert len(names) <= 9, names
    assert arts.output_code.source.count("torch.bmm(") == 2


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_dynamic_shapes_become_kernel_size_arguments(target):
    """With dynamic=True, sizes are symbols: one compiled graph serves every batch size."""
    torch._dynamo.reset()
    captured = []

    def backend(gm, example_inputs):
        captured.append(toycompiler.get_backend(target)(gm, example_inputs))
        return captured[-1]

    def f(x, y):
        return torch.softmax(x, -1) * 2 + y.sum(-1, keepdim=True)

    compiled = torch.compile(f, backend=backend, dynamic=True)
    for n in (5, 7, 2):
        x, y = torch.randn(n, 6, device=device_for(target)), torch.randn(n, 3, device=device_for(target))
        torch.testing.assert_close(compiled(x, y), f(x, y), rtol=1e-4, atol=1e-5)
    torch._dynamo.reset()
    assert len(captured) == 1 and captured[0].artifacts.fallback_reason is None
    source = captured[0].artifacts.output_code.source
    assert ".size(" in source or "= arg" in source  # sizes read from the inputs at run time
    assert "torch.empty((s" in source
