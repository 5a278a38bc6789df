"""Outputs that alias inputs or each other: eager's values, shapes, strides, offsets and aliasing.

The rule (see :mod:`toycompiler.backend.wrapper`): an output that eager returns as a view of an input
comes back as a view of that same input (``torch.as_strided`` with the view's size, stride and storage
offset counted from the input's own offset), so writes through it reach the input as they would eagerly.
"""

import pytest
import torch
from _util import check, on_device

import toycompiler
from toycompiler.testing import assert_same

VIEWS_OF_INPUT = {
    "select_slice": lambda a: a[0, :2],
    "slice_rows_step": lambda a: a[1::2],
    "column": lambda a: a[:, 3],
    "transpose": lambda a: a.t(),
    "expand": lambda a: a[:1].expand(3, 4, 8),
    "view": lambda a: a.view(2, 16),
    "view_of_a_slice": lambda a: a[:, 4:].view(4, 2, 2),  # rows 8 apart: torch's view rule gives (8, 2, 1)
    "heads_of_a_slice": lambda a: a[:, 2:6].view(2, 2, 2, 2).transpose(1, 2),  # attention's q of a fused qkv
    "unsqueeze_slice": lambda a: a[:, 1:3].unsqueeze(1),
    "same_view_twice": lambda a: (a[1], a[1]),
    "view_and_computed": lambda a: (a[2:], a.sum(0)),
}


def _same_layout(actual, expected):
    if isinstance(expected, torch.Tensor):
        assert actual.shape == expected.shape and actual.stride() == expected.stride()
        assert actual.storage_offset() == expected.storage_offset()
    else:
        for a, e in zip(actual, expected):
            _same_layout(a, e)


@pytest.mark.parametrize("target", ["cpp", "triton"])
@pytest.mark.parametrize("name", list(VIEWS_OF_INPUT))
def test_view_of_input_keeps_values_strides_and_offset(name, target):
    fn = VIEWS_OF_INPUT[name]
    a = on_device((torch.randn(4, 8),), target)[0]
    got = assert_same(fn, a, backend=target)
    _same_layout(got, fn(a))


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_slice_read_with_tolist(target):
    """The reported crash: ``a[0, :2]`` returned as ``arg0.view((2,))`` (size 32 into shape [2])."""
    a = on_device((torch.randn(4, 8),), target)[0]
    f = toycompiler.compile(lambda a: a[0, :2], backend=target)
    assert f(a).tolist() == a[0, :2].tolist()


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_input_with_storage_offset(target):
    """The view's offset is counted from the input's own offset (the input is itself a slice)."""
    base = on_device((torch.randn(6, 8),), target)[0]
    a = base[2:]  # storage offset 16
    got = assert_same(lambda a: (a[1, 2:5], a.t()[3]), a, backend=target)
    _same_layout(got, (a[1, 2:5], a.t()[3]))
    assert got[0].data_ptr() == a[1, 2:5].data_ptr()


def test_writes_through_an_output_view_reach_the_input():
    a = torch.zeros(4, 8)
    out = toycompiler.compile(lambda a: a[1:3, ::2], backend="cpp")(a)
    out.fill_(7.0)
    assert (a[1:3, ::2] == 7).all() and a.sum() == 7 * out.numel()


def test_same_tensor_returned_twice_is_one_object():
    f = toycompiler.compile(lambda x: (lambda y: (y, y))(x.sin()), backend="cpp")
    first, second = f(torch.randn(5))
    assert first is second or first.data_ptr() == second.data_ptr()


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_backend_on_captured_graph_returns_views(target):
    arts = check(lambda x: (x[0, :2], x.t(), x[:, :1].expand(4, 3)), torch.randn(4, 3), target=target)
    assert "as_strided(arg0" in arts.output_code.source and ".view((2,))" not in arts.output_code.source


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_library_call_reads_a_view_of_a_slice_in_place(target):
    """Attention's q, k and v are views of one projection (a slice of its columns, split into heads): a
    library call reads them through their strides, with no kernel copying them out first."""
    x, w = on_device((torch.randn(4, 8), torch.randn(2, 2, 3)), target)
    fn = lambda x, w: torch.bmm(x[:, 4:].view(4, 2, 2).transpose(0, 1), w)  # noqa: E731
    assert_same(fn, x, w, backend=target)
    assert toycompiler.explain(fn, backend=target)(x, w).kernels == ()
