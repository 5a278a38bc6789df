"""Results keep eager's strides, and pointwise work on a channels-last tensor reads and writes in memory order.

A graph output whose eager layout is dense but permuted (channels-last, a transpose) is stored with its dims in
eager's order, and so are the pointwise nodes whose every reader is such a node (``GraphLowering.orders``):
the chain from a channels-last input to its output is one loop over memory. Other buffers stay row-major, so
an intermediate that eager leaves permuted still fuses with a consumer that indexes it in logical order.
"""

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def computed(report) -> list:
    """The IR buffers the backend computes (inputs left out)."""
    return [row for row in report.frames[0].backend.ir.buffers if row.kind != "input"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_pointwise_is_one_loop_in_memory_order(backend):
    dev = device_for(backend)
    x = torch.randn(2, 5, 3, 7, device=dev).to(memory_format=torch.channels_last)  # C = 5: vector tails
    scale = torch.randn(5, device=dev)

    def fn(x, s):
        return torch.relu(x * 2) + s[None, :, None, None]
    out = assert_same(fn, x, scale, backend=backend)
    assert out.stride() == fn(x, scale).stride() == (105, 1, 35, 5)
    report = toycompiler.explain(fn, backend=backend)(x, scale)
    assert len(report.kernels) == 1
    bufs = computed(report)  # mul, relu, add: one loop, and only the last is written
    assert [b.size for b in bufs] == ["[2, 3, 7, 5]"] * 3, bufs  # N, H, W, C: the input's memory order
    assert "load(arg0, 105*d0 + 35*d1 + 5*d2 + d3)" in bufs[0].body, bufs[0].body  # read in order too


@pytest.mark.parametrize("backend", BACKENDS)
def test_transposed_results_have_eager_strides(backend):
    x = torch.randn(6, 9, device=device_for(backend))
    for fn in (lambda x: x.t() * 2, lambda x: x.t().contiguous() * 2, lambda x: torch.sin(x.t()[1:, ::2])):
        out = assert_same(fn, x, backend=backend)
        assert out.stride() == fn(x).stride()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_permuted_intermediate_still_fuses_with_its_row_major_reader(backend):
    """``q * scale`` on a transposed view is permuted in eager, its reader (a contiguous copy, as attention's
    ``.contiguous()`` or a matmul's operand) is not: the product stays row-major and the two fuse."""
    q = torch.randn(2, 8, 3, 4, device=device_for(backend))  # batch, tokens, heads, head dim

    def fn(q):
        return (q.transpose(1, 2) * 0.5).contiguous()
    out = assert_same(fn, q, backend=backend)
    assert out.is_contiguous()
    assert len(toycompiler.explain(fn, backend=backend)(q).kernels) == 1


def test_channels_last_gradients_match_eager():
    x = torch.randn(2, 4, 5, 3).to(memory_format=torch.channels_last).requires_grad_()
    assert_same(lambda x: torch.sigmoid(x) * x, x, backend="cpp", backward=True)
