"""Kernels whose sizes are known only when running (dynamic shapes), against eager on both backends.

Such a size is a sympy expression of the inputs' sizes (``s0``, ``s1``...). Three things have to be right:
a size that torch writes with its own functions (a pooled or strided size is torch's floor division,
``(s2 - 1)//2 + 1``; a stride may hold torch's ``Max``) must become the expressions the printers know,
or the graph runs eagerly; a size can be a value too (a mean divides by its count, ``s2*s3``); and a
product of sizes after ``//`` or ``%`` must be bracketed, or the kernel reads and writes the wrong
elements (a permuted input's index, ``xindex // (s0*s1)``).
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]

SIZED = {  # sizes that are floor divisions of the input's, or used as values
    "strided_slice": lambda x: x[:, :, ::2, ::2].sin(),
    "max_pool_relu": lambda x: F.max_pool2d(x, 2).relu(),
    "max_pool_ceil": lambda x: F.max_pool2d(x.relu(), 3, 2, ceil_mode=True),
    "max_pool_positions": lambda x: F.max_pool2d(x, 2, return_indices=True)[1],
    "avg_pool_padded": lambda x: F.avg_pool2d(x, 3, 2, 1) * 2,
    "conv_stride_2_relu": lambda x: F.conv2d(x, torch.ones(4, 3, 3, 3, device=x.device), stride=2).relu(),
    "chunk": lambda x: x.chunk(2, dim=-1)[0].exp(),  # the graph computes a size: x.size(3) // 2
    # a size as a value: a mean divides by its count, s2*s3 (a number when static)
    "mean_hw": lambda x: x.mean((2, 3)),
    "adaptive_avg_pool": lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1),
    "var": lambda x: x.var(-1),
    "std": lambda x: x.std(-1),  # the count as a float: ToFloat(s3) - 1.0
    "roll": lambda x: x.roll(1, 2),  # an index modulo a size
    "cat_three_pieces": lambda x: torch.cat([x.sin(), x, x[..., :2]], -1) + 1,  # offsets s3 and 2*s3
    "cat_rotate_halves": lambda x: torch.cat((-x[..., 1::2], x[..., ::2]), -1) * 2,
    "pad": lambda x: F.pad(x, (1, 2)).relu(),
    "interpolate": lambda x: F.interpolate(x, scale_factor=2, mode="nearest").sin(),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", SIZED)
def test_sizes_known_only_when_running_are_generated_kernels(backend, case):
    fn = SIZED[case]
    compiled = toycompiler.compile(fn, backend=backend, dynamic=True)
    for side in (8, 11, 13):  # assert_same also checks that nothing ran eagerly
        assert_same(fn, torch.randn(2, 3, side, side + 3, device=device_for(backend)), compiled=compiled)
    backend_report = compiled.compiled_frames[0].backend
    assert backend_report.kernels, f"{case}: no kernel was generated"
    assert ".size(" in backend_report.output_code.source  # sizes read when running: one graph for every size


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_permuted_input_divides_by_a_bracketed_product(backend):
    fn = lambda x, y: x.permute(2, 0, 1) + y  # noqa: E731
    compiled = toycompiler.compile(fn, backend=backend, dynamic=True)
    for n in (3, 5, 6):
        x, y = torch.randn(n, n + 1, n + 2), torch.randn(n + 2, n, n + 1)
        assert_same(fn, x.to(device_for(backend)), y.to(device_for(backend)), compiled=compiled)
    if backend == "triton":  # the C++ kernel's loops are the dims: it divides nothing
        source = compiled.compiled_frames[0].backend.kernels[0].source
        assert "// (s0*s1)" in source, source


IN_PLACE = {  # decompositions of in-place ops, traced with symbolic sizes (torch's Python dispatcher)
    "hardswish_": lambda x: F.hardswish(x * 2, inplace=True),
    "hardsigmoid_": lambda x: F.hardsigmoid(x * 2, inplace=True),
    "threshold_": lambda x: F.threshold(x * 2, 0.1, 2.0, inplace=True),
    "clamp_of_the_input": lambda x: x.clamp_(-0.5, 0.5).sin(),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", IN_PLACE)
def test_in_place_ops_with_sizes_known_only_when_running(backend, case):
    fn = IN_PLACE[case]
    compiled = toycompiler.compile(fn, backend=backend, dynamic=True)
    for side in (8, 11):
        assert_same(fn, torch.randn(2, 3, side, side + 3, device=device_for(backend)), compiled=compiled)
    assert compiled.compiled_frames[0].backend.kernels


@pytest.mark.parametrize("case", ["pad", "interpolate", "roll", "cat_three_pieces"])
def test_one_graph_serves_every_size(case):
    """The frontend runs each op on fake tensors under torch's Python dispatcher, as Dynamo does: without it a
    C++ meta function (``F.pad``'s, ``F.interpolate``'s) read the sizes as integers, and the graph was
    specialised to them (a compile for every size)."""
    fn = SIZED[case]
    compiled = toycompiler.compile(fn, backend="cpp", dynamic=True)
    for side in (8, 11, 13):
        assert_same(fn, torch.randn(2, 3, side, side + 3), compiled=compiled)
    assert len(compiled.compiled_frames) == 1, [f.guards for f in compiled.compiled_frames]
