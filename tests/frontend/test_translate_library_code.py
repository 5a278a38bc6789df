"""Library code that must trace whole: tensor facts read as constants (``x.is_nested`` in
``nn.MultiheadAttention``), profiler ranges as no-op ``with`` blocks, ``torch.compiler.allow_in_graph``,
and a compiler bug that must cost a fallback, never the user's call."""

import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import toycompiler
from toycompiler.frontend import translator
from toycompiler.testing import assert_same


def counts(fn, *args):
    report = toycompiler.explain(fn, backend="eager")(*args)
    return report.graph_count, report.graph_break_count


def test_tensor_facts_are_constants():
    def f(x):
        if x.is_nested or x.is_sparse or x.is_quantized or x.is_meta or x.layout != torch.strided:
            return x
        return x.sin() if x.is_cpu else x.cos()

    assert counts(f, torch.randn(4)) == (1, 0)
    assert_same(f, torch.randn(4))


@pytest.mark.parametrize("need_weights", [True, False])  # False: the functional returns (out, None)
def test_multihead_attention_one_graph(need_weights):
    torch.manual_seed(0)
    m = nn.MultiheadAttention(16, 2, batch_first=True).eval()

    def f(x):
        return m(x, x, x, need_weights=need_weights)[0]

    x = torch.randn(2, 5, 16)
    assert counts(f, x) == (1, 0)
    assert_same(f, x, backend="eager")  # the frontend's check; the C++ backend can't lower MHA's backward yet


def test_vision_transformer_one_graph():
    shim = Path(__file__).parents[1] / "models" / "conftest.py"  # the torchvision import shim
    spec = importlib.util.spec_from_file_location("_torchvision_shim", shim)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    from torchvision.models import VisionTransformer

    torch.manual_seed(0)
    vit = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2, hidden_dim=16,
                            mlp_dim=32).eval()
    x = torch.randn(1, 3, 32, 32)
    assert counts(vit, x) == (1, 0)
    assert_same(vit, x, compiled=toycompiler.compile(vit, backend="eager"))


def profiled(x):
    with torch.autograd.profiler.record_function("first"):
        y = x.sin()
    with torch.profiler.record_function("second") as r:
        y = y + (r is None)
    return y * 2


def test_record_function_is_a_no_op_context():
    assert counts(profiled, torch.randn(4)) == (1, 0)
    assert_same(profiled, torch.randn(4))


CALLS = []


def opaque(x):
    CALLS.append(x.shape)  # a change of a global list: the translator would break here
    return torch.sin(x) * 2


def uses_opaque(x):
    return opaque(x) + 1


def test_allow_in_graph_is_one_node():
    assert counts(uses_opaque, torch.randn(3))[1] == 1  # traced into: the append breaks
    toycompiler.reset()
    torch.compiler.allow_in_graph(opaque)
    try:
        report = toycompiler.explain(uses_opaque, backend="eager")(torch.randn(3))
        assert (report.graph_count, report.graph_break_count) == (1, 0)
        assert "opaque" in str(report.graphs[0])  # one call node, not sin and mul
        toycompiler.reset()
        assert_same(uses_opaque, torch.randn(3))
    finally:
        torch._dynamo.trace_rules._allowed_callable_ids.remove(id(opaque))
        toycompiler.reset()


def test_compiler_bug_runs_the_frame_eagerly(monkeypatch):
    def broken(self):
        raise KeyError("exp_avg")

    monkeypatch.setattr(translator.InstructionTranslator, "finish", broken)

    def f(x):
        return x + 1

    with pytest.warns(UserWarning, match="KeyError"):
        report = toycompiler.explain(f)(torch.ones(2))
    assert report.graph_count == 0 and any("KeyError: 'exp_avg'" in r for r in report.fallback_reasons)
    with pytest.warns(UserWarning, match="running it eagerly"):
        assert torch.equal(toycompiler.compile(f)(torch.ones(2)), torch.full((2,), 2.0))


def test_adamw_step_never_raises():
    p = nn.Parameter(torch.randn(3))
    p.grad = torch.randn(3)
    expected = p.detach().clone()
    opt = torch.optim.AdamW([p])
    toycompiler.explain(opt.step)()  # a recorded break or a fallback, never an exception
    ref = nn.Parameter(expected)
    ref.grad = p.grad.clone()
    torch.optim.AdamW([ref]).step()
    torch.testing.assert_close(p.detach(), ref.detach())
