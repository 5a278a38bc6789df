"""Half-precision matmuls with a K or N that is not a multiple of 8 run on zero-padded operands.

cuBLAS's fast kernels need rows that start 16 bytes apart; ``passes/decompose.py``'s ``padded_matmul`` pads
K and N to multiples of 8 elements, multiplies, and returns a slice of the wider product (torch.compile's
strides). The thresholds (``PAD_MIN_MACS``, ``PAD_K_MIN_N``) are lowered here so small matrices take the path;
the library call is torch's own, on the CPU too, and Triton (the interpreter here) copies the operands.
"""

import importlib

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

decompose = importlib.import_module("toycompiler.passes.decompose")
b16 = torch.bfloat16


@pytest.fixture
def small_matmuls_padded(monkeypatch):
    monkeypatch.setattr(decompose, "PAD_MIN_MACS", 1)
    monkeypatch.setattr(decompose, "PAD_K_MIN_N", 16)
    with toycompiler.config.patch(graph_cache=False):  # a cached graph would not see the lowered thresholds
        yield


def _aten_nodes(fn, *args) -> dict:
    """The ATen graph the backend lowered: node name -> its row (target, args, shape)."""
    report = toycompiler.explain(fn, backend="triton")(*args)
    return {n.name: n for n in report.frames[0].backend.passes.final.nodes}


def _pads(nodes: dict) -> list:
    return [n for n in nodes.values() if n.target.startswith("constant_pad_nd")]


CASES = {  # name: (fn, argument shapes, padded sizes of the product, the padded operand shapes)
    "N odd": (lambda a, b: a @ b, [(16, 24), (24, 37)], [(24, 40)]),
    "K odd": (lambda a, b: a @ b, [(16, 21), (21, 40)], [(16, 24), (24, 40)]),
    "linear, W.t()": (lambda a, w: F.linear(a, w), [(16, 21), (37, 21)], [(16, 24), (40, 24)]),
    "linear with bias": (lambda a, w, c: F.linear(a, w, c), [(16, 21), (37, 21), (37,)], [(16, 24), (40, 24), (40,)]),
    "addmm, bias broadcast": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2), [(16, 1), (16, 21), (21, 37)],
                              [(16, 24), (24, 40)]),
    "bmm": (lambda a, b: a @ b, [(3, 16, 21), (3, 21, 37)], [(3, 16, 24), (3, 24, 40)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_half_precision_matmul_is_padded_and_matches_eager(name, small_matmuls_padded):
    fn, shapes, padded = CASES[name]
    dev = device_for("triton")
    args = [torch.randn(*s, device=dev, dtype=b16) for s in shapes]
    out = assert_same(fn, *args, backend="triton", rtol=1e-2, atol=1e-2)
    pads = _pads(_aten_nodes(fn, *args))
    assert sorted(n.shape for n in pads) == sorted(str(list(p)) for p in padded), pads
    if out.dim() == 2:  # the product is a slice of a wider one: rows 40 apart, as torch.compile's
        assert out.stride() == (40, 1)


def test_transposed_weight_is_padded_in_its_own_memory_order(small_matmuls_padded):
    """``F.linear``'s ``W.t()`` is padded as ``W`` (rows copied as rows) and transposed back."""
    dev = device_for("triton")
    a, w = torch.randn(16, 24, device=dev, dtype=b16), torch.randn(37, 24, device=dev, dtype=b16)
    nodes = _aten_nodes(lambda a, w: F.linear(a, w), a, w)
    (pad,) = _pads(nodes)
    assert pad.shape == "[40, 24]", pad  # W's rows, 3 more of them: not W.t()'s [24, 40]
    assert nodes[pad.args.split(",")[0]].shape == "[37, 24]", pad  # it copies a view laid out as W


@pytest.mark.parametrize("case", ["float32", "aligned", "small"])
def test_matmuls_that_gain_nothing_stay_whole(case, monkeypatch):
    """Float32, already aligned, and (at the real threshold) small products are one library call."""
    if case != "small":
        monkeypatch.setattr(decompose, "PAD_MIN_MACS", 1)
    dtype = torch.float32 if case == "float32" else b16
    a = torch.randn(16, 24, dtype=dtype, device=device_for("triton"))
    b = torch.randn(24, 40 if case == "aligned" else 37, dtype=dtype, device=a.device)
    with toycompiler.config.patch(graph_cache=False):
        nodes = _aten_nodes(lambda a, b: a @ b, a, b)
    assert [n.target for n in nodes.values() if n.op == "call_function"] == ["mm.default"]
