"""Triton: the loads of a ``where`` branch chosen by position are masked by the branch's condition.

A cat's choice of input, a pad's border, a slice_scatter's slice and a split reduction's last chunk are
``where``s whose condition is computed from indices alone (``KernelRenderer.expr``). Each load of a branch
takes the condition into its mask, so a lane reads only the input it takes. These tests check eager's
values (NaN and inf in the branches not taken, odd sizes, computed inputs, a load shared by two branches
and read outside them too) and which loads are masked.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

DEVICE = device_for("triton")


def sources(fn, *args, **options):
    compiled = toycompiler.compile(fn, backend="triton", options=options)
    assert_same(fn, *args, compiled=compiled)
    return [k.source for f in compiled.compiled_frames for k in f.backend.output_code.kernels]


def loads(source: str) -> list[str]:
    """The mask of each ``tl.load`` of the kernel."""
    return re.findall(r"tl\.load\(.*?, (xmask[^,]*), other", source)


def stack_boxes(b):
    cx, cy, w, h = b.unbind(-1)
    return torch.stack((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), -1)


CASES = {  # each reads its inputs only inside the branches: every load masked
    "stack_boxes": (stack_boxes, lambda: (torch.randn(1003, 4),)),
    "cat_computed": (lambda x, y: torch.cat([x.exp(), y * 2, x[:, :5] + 1], -1), lambda: (torch.randn(37, 19),
                                                                                         torch.randn(37, 7))),
    "cat_dim0": (lambda x, y: torch.cat([x.sin(), y.cos()]) * 3, lambda: (torch.randn(5, 33), torch.randn(9, 33))),
    "pad": (lambda x: F.pad(x, (2, 3, 1, 0), value=-1.0).exp(), lambda: (torch.randn(6, 17),)),
    "slice_scatter": (lambda x, y: torch.slice_scatter(x, y, 1, 2, 14, 3).sin(), lambda: (torch.randn(8, 20),
                                                                                         torch.randn(8, 4))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_branch_chosen_by_position_loads_only_its_own_lanes(name):
    fn, make = CASES[name]
    args = [a.to(DEVICE) for a in make()]
    for a in args:  # NaN and inf where another branch is taken too
        a.view(-1)[::7] = float("nan")
        a.view(-1)[3::11] = float("inf")
    (source,) = sources(fn, *args)
    masks = loads(source)
    assert masks and all(m.startswith("xmask & tmp") for m in masks), masks
    # and their addresses are not clamped (affine: loaded together), as the mask keeps each lane in its input
    addresses = re.findall(r"tl\.load\((.*?), xmask", source)
    assert addresses and not [a for a in addresses if "tl.minimum" in a or "tl.maximum" in a], addresses


def test_a_value_read_outside_the_branch_too_is_loaded_unmasked_there():
    """``x`` in a pad's interior and added after it: the masked load feeds the pad only; the sum reads its own."""
    x = torch.randn(33, 40, device=DEVICE)
    x[0, 0], x[5, 39] = float("nan"), float("inf")
    (source,) = sources(lambda x: F.pad(x, (0, 0, 1, 0))[1:] + x, x)
    masks = loads(source)
    assert "xmask" in masks and any(m.startswith("xmask & tmp") for m in masks), masks


def test_a_condition_read_from_memory_masks_nothing():
    """``torch.where(x > 0, x, y)``: the condition is data, so each input is loaded under xmask alone (Triton
    moves neighbouring elements together only under a mask it can prove the same for them)."""
    x, y = torch.randn(1000, device=DEVICE), torch.randn(1000, device=DEVICE)
    (source,) = sources(lambda x, y: torch.where(x > 0, x.exp(), y * 2), x, y)
    assert set(loads(source)) == {"xmask"}


def test_a_split_reductions_last_chunk_masks_its_loads_past_the_row():
    """A sum of 10007 elements in chunks: the last chunk's lanes past the end load nothing (and add 0)."""
    x = torch.randn(10007, device=DEVICE)
    x[-1] = float("inf")
    srcs = sources(lambda x: (x * 2).sum(), x)
    assert any("xmask & rmask & tmp" in m for s in srcs for m in loads(s)), srcs
