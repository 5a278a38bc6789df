"""FX passes: each reports what it changed, and the compiled result still matches eager."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from _util import capture, check

import toycompiler


def changes(arts, name):
    return next(p.changes for p in arts.passes.passes if p.name == name)


def test_simplify_merges_constants_and_drops_identities():
    arts = check(lambda x: (x * 2 + 3 - 1, -(-x.sin()) * 1, (x * 2) * 3, x.cos() / 1 + 0), torch.randn(7))
    found = "\n".join(changes(arts, "simplify"))
    for text in ("(x + 3) - 1 is x + 2", "-(-x) is x", "mul(x, 1) is x", "(x * 2) * 3 is x * 6", "div(x, 1) is x"):
        assert text in found, found
    graph = arts.passes.final.code
    assert "aten.sub" not in graph and "aten.neg" not in graph and "aten.div" not in graph


def test_identity_on_an_input_still_returns_a_new_tensor():
    x = torch.randn(4)
    out = toycompiler.get_backend("cpp")(capture(lambda x: x * 1, x), [x])(x)[0]
    assert out.data_ptr() != x.data_ptr()


def test_simplify_keeps_dtype_changing_identities():
    arts = check(lambda x: x * 1.0, torch.arange(5))  # int64 * 1.0 is float32: not the identity
    assert not changes(arts, "simplify")
    with toycompiler.config.patch(simplify=False):
        arts = check(lambda x: x + 0, torch.randn(3))
    assert "simplify" not in [p.name for p in arts.passes.passes]


def test_cse_and_dce_report_their_changes():
    arts = check(lambda x: (x.sin() + x.sin(), x.cos()), torch.randn(4))
    assert any("same as" in c for c in changes(arts, "cse"))
    with toycompiler.config.patch(simplify=False):  # simplify drops dead nodes too, without a word
        arts = check(lambda x: (x.sin(), x.cos() * 0)[0], torch.randn(4))  # the graph computes cos and mul
    assert changes(arts, "dce") == ("removed cos (unused)", "removed mul (unused)")
    assert "cos" not in arts.passes.final.code and len(arts.kernels) == 1


def test_decomposition_keeps_matmul_and_splits_composites():
    w = torch.randn(6, 4)
    arts = check(lambda x: F.gelu(F.linear(x, w)).softmax(-1), torch.randn(3, 4), rtol=1e-4)
    graph = arts.passes.final.code
    assert "aten.mm" in graph or "aten.addmm" in graph
    assert "gelu" not in graph and "_softmax" not in graph and "amax" in graph and "erf" in graph


def test_dropout_in_eval_disappears():
    arts = check(lambda x: F.dropout(x, 0.5, training=False) * 2, torch.randn(5))
    assert "dropout" not in arts.passes.final.code


def test_conv_batchnorm_folding_in_eval_mode():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU()).eval()
    model[1].running_mean.uniform_()
    model[1].running_var.uniform_(0.5, 2)
    with torch.no_grad():
        arts = check(lambda x: model(x), torch.randn(1, 2, 6, 6), rtol=1e-4, atol=1e-5)
    assert any("folded into convolution" in c for c in changes(arts, "fold_conv_bn"))
    assert "batch_norm" not in arts.passes.final.code
    assert [k.name for k in arts.kernels] == ["cpp_relu_1"]
    with toycompiler.config.patch(fold_conv_bn=False), torch.no_grad():
        arts = check(lambda x: model(x), torch.randn(1, 2, 6, 6), rtol=1e-4, atol=1e-5)
    assert "fold_conv_bn" not in [p.name for p in arts.passes.passes]
