"""Pointwise Triton kernels over a count that 16 does not divide: full blocks unmasked, the last one masked.

Such a kernel has its body twice (``TritonRenderer.finish``): the full blocks run it with a mask that is all
True, so Triton can move 16 bytes at a time; the last, partial block runs it masked. These tests check that
both bodies compute eager's values, the tail elements included (NaN and inf among them), for every dtype
width, strided and broadcast inputs, and that the split is made exactly when it can matter.
"""

import pytest
import torch

import toycompiler
from toycompiler.config import config
from toycompiler.testing import assert_same, device_for

DEVICE = device_for("triton")


def kernels(fn, *args, tol=1e-5):
    compiled = toycompiler.compile(fn, backend="triton")
    assert_same(fn, *args, compiled=compiled, rtol=tol, atol=tol)
    return [k.source for f in compiled.compiled_frames for k in f.backend.output_code.kernels]


def split(source: str) -> bool:
    return "xmask = tl.full([XBLOCK], True, tl.int1)" in source and "else:" in source


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [2 * 1024 + 37, 1024 + 1, 3 * 1024 + 15])
def test_an_odd_count_splits_full_blocks_from_the_last_and_matches_eager(dtype, n):
    x = torch.randn(n, device=DEVICE).to(dtype)
    x[-1], x[-2], x[-3], x[5] = float("nan"), float("inf"), float("-inf"), float("nan")  # in the tail, and not
    y = torch.randn(n, device=DEVICE).to(dtype)
    tol = 1e-5 if dtype == torch.float32 else 2e-2  # eager rounds after each op, a kernel once at the end
    (source,) = kernels(lambda x, y: torch.where(x > 0, torch.tanh(x) * y, y - x), x, y, tol=tol)
    assert split(source)
    assert f"xmask = xindex < {n}" in source  # the last block keeps its mask


@pytest.mark.parametrize("n", [2048, 1024 + 16, 999])
def test_no_split_where_16_divides_the_count_or_one_block_covers_it(n):
    """2048 and 1040: Triton already knows the mask is constant over 16 elements. 999: a single block."""
    (source,) = kernels(lambda x: torch.sigmoid(x) * 2, torch.randn(n, device=DEVICE))
    assert not split(source)


def test_strided_broadcast_and_one_byte_inputs():
    x = torch.randn(2 * 2085, device=DEVICE)[::2]  # 2085 elements, a stride of 2
    row = torch.randn(5, 1, device=DEVICE)
    col = torch.randn(417, device=DEVICE)
    keep = torch.rand(5, 417, device=DEVICE) > 0.5  # bool, 1 byte
    def fn(x, row, col, keep):
        return torch.where(keep, x.view(5, 417) * row + col, -x.view(5, 417))
    sources = kernels(fn, x, row, col, keep)
    assert any(split(s) for s in sources)


def test_an_integer_count_of_several_kernels_in_one_graph():
    """A kernel that splits and one that does not, in one graph: each follows its own count."""
    with config.patch(graph_cache=False):
        sources = kernels(lambda a, b: (a.exp() + 1, b * 3), torch.randn(3001, device=DEVICE),
                          torch.randn(4096, device=DEVICE))
    assert sorted(map(split, sources)) == [False, True]
