"""Which nodes share a kernel, and why: the scheduler's decisions as learners see them."""

import pytest
import torch
import torch.nn.functional as F
from _util import check

import toycompiler
from toycompiler.backend.ir import MAX_INLINED_OPS
from toycompiler.testing import assert_same, device_for


def chain8(x, y):
    a = x * y + 1.5
    b = torch.relu(a - y) / (torch.abs(x) + 1)
    return torch.exp(-b) * torch.tanh(a)


def test_pointwise_chain_is_one_kernel():
    arts = check(chain8, torch.randn(33, 7), torch.randn(33, 7))
    assert len(arts.ir.buffers) - 2 >= 8
    assert len(arts.kernels) == 1
    assert all(d.fused for d in arts.schedule.decisions)
    assert arts.schedule.fused_bytes < arts.schedule.unfused_bytes


def test_fusion_off_gives_one_kernel_per_op():
    with toycompiler.config.patch(fusion=False):
        arts = check(chain8, torch.randn(33, 7), torch.randn(33, 7))
    assert len(arts.kernels) == len(arts.ir.buffers) - 2
    assert all("fusion is turned off" in d.reason for d in arts.schedule.decisions)


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_kernel_read_later_runs_first_so_that_its_reader_joins_an_older_kernel(target):
    """``y * 0.1`` (another range) is computed between ``x > 0`` and the ``where`` that reads both: it moves before
    ``x > 0``, and the ``where`` joins ``x > 0``'s kernel. With ``y`` scaled in place, the new value moves likewise,
    and the write into ``y`` (functionalization's ``copy_``) stays last, after every read of the old value."""
    x, y = torch.randn(37, 45), torch.randn(45)
    arts = check(lambda x, y: torch.where(x > 0, x, y[None, :] * 0.1), x, y, target=target)
    assert [k.name for k in arts.kernels] == [f"{target}_mul_0", f"{target}_gt_where_1"]
    assert any(d.fused and d.second == arts.schedule.groups[1].nodes[-1] for d in arts.schedule.decisions)
    arts = check(lambda x, w: x.relu() * w.sigmoid(), x, y, target=target)  # (a gate from a parameter)
    assert len(arts.kernels) == 2

    def scale_in_place(x, y):
        positive = x > 0
        y.mul_(0.1)
        return torch.where(positive, x, y[None, :])

    arts = check(scale_in_place, x, y, target=target)
    assert [k.name for k in arts.kernels] == [f"{target}_mul_0", f"{target}_gt_where_1", f"{target}_copy_2"]


def test_softmax_rows_are_one_kernel_on_both_backends():
    for target in ("cpp", "triton"):
        arts = check(lambda x: torch.softmax(x, -1), torch.randn(6, 10), target=target, rtol=1e-4)
        assert [k.name for k in arts.kernels] == [f"{target}_softmax_0"]
        assert arts.schedule.groups[0].kind == "reduction"
        assert arts.schedule.groups[0].ranges == "[6] x [10]"
    assert ", 1, max_combine)" in arts.kernels[0].source and "tl.sum(" in arts.kernels[0].source


def test_layer_norm_rows_are_one_kernel():
    for target in ("cpp", "triton"):
        w, b = torch.randn(12, device=device_for(target)), torch.randn(12, device=device_for(target))
        arts = check(lambda x: F.layer_norm(x, (12,), w, b), torch.randn(5, 12), target=target, rtol=1e-4, atol=1e-5)
        assert len(arts.kernels) == 1 and "layer_norm" in arts.kernels[0].name


def test_reduction_over_other_dims_fuses_and_another_space_says_why():
    arts = check(lambda x: (x.sin(), x.sin().sum(0)), torch.randn(5, 6))  # sin over 6 kept (x) by 5 reduced (r)
    assert len(arts.kernels) == 1
    arts = check(lambda x, y: (x.sin(), y.sum(0)), torch.randn(5, 6), torch.randn(7, 6))
    assert len(arts.kernels) == 2
    reasons = [d.reason for d in arts.schedule.decisions if not d.fused]
    assert any("iteration spaces differ" in r for r in reasons)


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_row_and_column_sums_of_a_square_matrix_are_two_kernels(target):
    """Their loops match in size only ([6] x [6] both): fused, one of them would read the matrix across memory.
    (A layer norm's backward over a square input needs both: its C++ kernel ran at 0.08x torch.compile fused.)"""
    arts = check(lambda x: (x.exp().sum(1), (x.exp() * 2).sum(0)), torch.randn(6, 6), target=target, rtol=1e-5)
    assert len(arts.kernels) == 2
    assert any("reduces other dims of its input than the kernel's reductions" in d.reason
               for d in arts.schedule.decisions if not d.fused)
    # over the same dims, reductions still share a kernel (a mean and a variance)
    assert len(check(lambda x: torch.var_mean(x.exp(), 0), torch.randn(6, 6), target=target, rtol=1e-5).kernels) == 1


def test_epilogue_fusion_switch():
    fn = lambda x: (x - x.amax(-1, keepdim=True)).exp()  # noqa: E731
    assert len(check(fn, torch.randn(4, 9)).kernels) == 1
    with toycompiler.config.patch(epilogue_fusion=False):
        arts = check(fn, torch.randn(4, 9))
    assert len(arts.kernels) == 2
    assert any("epilogue_fusion=False" in d.reason for d in arts.schedule.decisions)


def test_sibling_fusion_shares_a_loop():
    fn = lambda x, y: (x.sin(), y.cos())  # noqa: E731
    arts = check(fn, torch.randn(20), torch.randn(20))
    assert len(arts.kernels) == 1
    assert any("sibling" in d.reason for d in arts.schedule.decisions)
    with toycompiler.config.patch(sibling_fusion=False):
        assert len(check(fn, torch.randn(20), torch.randn(20)).kernels) == 2


def test_transposed_read_of_a_fused_value_is_refused():
    # same range, other order; read by two (an output too), so stored and read back, not computed where read
    arts = check(lambda x: ((x.sin() + 1), (x.sin() + 1).t().contiguous() * 2), torch.randn(5, 5))
    assert any("at a different index" in d.reason for d in arts.schedule.decisions if not d.fused)


def test_dead_buffers_are_reused_by_the_wrapper():
    def f(x, w):
        a = (x @ w).relu()
        b = (a @ w).relu()
        return (b @ w).sum(-1)
    arts = check(f, torch.randn(8, 8), torch.randn(8, 8), rtol=1e-4, atol=1e-4)
    plan = [p for p in arts.schedule.memory_plan if "reuses" in p]
    assert plan, arts.schedule
    new, old = plan[0].split(" reuses ")[0], plan[0].split(" reuses ")[1].split()[0]
    assert f"{new} = {old}  # reuses {old}'s memory" in arts.output_code.source  # same shape: no view
    with toycompiler.config.patch(reuse_buffers=False):
        arts = check(f, torch.randn(8, 8), torch.randn(8, 8), rtol=1e-4, atol=1e-4)
    assert "reuses" not in arts.output_code.source


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_pointwise_kernel_writes_over_what_it_reads_last_element_by_element(target):
    """The GELU after a matmul overwrites the matmul's output (in place); a kernel that reads it transposed, or
    reads it again later, may not: each would read elements already overwritten."""
    x, w, b = torch.randn(16, 8), torch.randn(12, 8), torch.randn(12)
    arts = check(lambda x, w, b: F.gelu(F.linear(x, w, b), approximate="tanh"), x, w, b, target=target, atol=1e-4)
    written = [p for p in arts.schedule.memory_plan if "in place" in p]
    assert len(written) == 1, arts.schedule.memory_plan
    new, old = written[0].split(" reuses ")[0], written[0].split(" reuses ")[1].split()[0]
    assert f"{new} = {old}  # reuses {old}'s memory" in arts.output_code.source
    with toycompiler.config.patch(fusion=False):  # two buffers read last by kernel6: the first by name, every run
        plan = check(chain8, torch.randn(33, 7), torch.randn(33, 7), target=target).schedule.memory_plan
    assert "buf6 reuses buf3 (buf3 is read last by kernel6, by element: in place)" in plan, plan
    for fn in (lambda x: (x @ x.t()).t() * 2 + (x @ x.t()), lambda x: ((x @ x.t()).exp() + 1) @ (x @ x.t()),
               lambda x: torch.cat([(x @ x.t())[:, 8:], (x @ x.t())[:, :8]], 1) + 1):
        # (exp of a matmul's output, multiplied again: a last-bit difference in a GPU's exp grows to 3e-5 relative)
        arts = check(fn, x, target=target, rtol=1e-4, atol=1e-4)
        assert not any("in place" in p for p in arts.schedule.memory_plan), arts.schedule.memory_plan


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_value_read_through_an_expand_of_up_to_4_copies_is_computed_where_it_is_read(target):
    """A 2x2 average pool's gradient: ``grad / 4`` expanded over each window is computed where the copy writes
    (one kernel); expanded over 3x3 windows, each value read 9 times, it is stored first (two kernels)."""
    g = torch.randn(2, 3, 5, 6)
    for k, kernels in ((2, 1), (3, 2)):
        fn = lambda g: (g / 4)[:, :, :, None, :, None].expand(2, 3, 5, k, 6, k).reshape(2, 3, 5 * k, 6 * k)  # noqa: E731
        assert len(check(fn, g, target=target).kernels) == kernels


def test_kernel_comments_point_at_fx_nodes():
    arts = check(lambda x: torch.softmax(x, -1), torch.randn(3, 4))
    assert "// buf" in arts.kernels[0].source and "amax" in arts.kernels[0].source


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_pointwise_value_read_only_by_a_cat_is_computed_in_the_cat_kernel(target):
    """``rotate_half`` of a rotary embedding: ``-x2`` has another iteration space than the cat, so as a buffer of
    its own it was a second kernel, written and read back. So is a value read by two cats, or read by a stack (a
    cat of unsqueezed values) through other values, up to 4 reads; read more often, it is stored once."""
    x = torch.randn(4, 6, 64)
    x[0, 0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    arts = check(lambda x: torch.cat((-x[..., 32:], x[..., :32]), -1), x, target=target)
    assert len(arts.kernels) == 1
    arts = check(lambda x: (torch.cat((-x[..., 32:], x), -1), torch.cat((x, -x[..., 32:]), -1)), x, target=target)
    assert len(arts.kernels) == 1  # -x2 computed in both cats' loop
    b = torch.randn(37, 4)
    b[0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    corners = lambda b: torch.stack((b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2,  # noqa: E731 (w / 2 read twice)
                                     b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2), -1)
    assert len(check(corners, b, target=target).kernels) == 1
    arts = check(lambda x: torch.stack([x.exp() * k for k in range(5)], -1), x, target=target)
    assert len(arts.kernels) == 2 and "exp" in arts.kernels[0].name  # exp read 5 times: stored, then the stack


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_heads_split_and_merged_by_a_reshape_and_a_permute_are_one_kernel(target):
    """Attention's heads: merged, ``x.transpose(1, 2).reshape(B, T, C) * 2`` (a copy over [B, T, H, D] and a
    multiply over [B, T, C]: loops over [B, T, H, D] walk both, C being ``D*h + d``), and split,
    ``(y * 2).view(B, T, H, D).transpose(1, 2).contiguous()`` (``y * 2`` read once through a permute: computed
    in the copy's loop, in its order). Each was two kernels, the first written and read back. A slice of a
    computed value is read so too, and a reshape no loops walk alike ([6, 10] to [4, 15]) unless it is stored."""
    B, H, T, D = 2, 3, 5, 4
    x = torch.randn(B, H, T, D)
    x[0, 0, 0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    merged = lambda x: x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1) * 2  # noqa: E731
    arts = check(merged, x, target=target)
    assert len(arts.kernels) == 1 and any("element by element" in d.reason for d in arts.schedule.decisions)
    y = merged(x)
    assert len(check(lambda y: (y * 2).view(B, T, H, D).transpose(1, 2).contiguous(), y, target=target).kernels) == 1
    assert len(check(lambda y: (y.exp() * 2)[:, 1::2] + 1, y, target=target).kernels) == 1
    cl = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert len(check(lambda x: x.mul(2).permute(0, 2, 3, 1).reshape(2, -1, 3), cl, target=target).kernels) == 1
    # a reduction kernel's element node may be a reshape too (a softmax's output read flat)
    assert len(check(lambda x: torch.softmax(x, -1).view(-1) + 1, torch.randn(4, 8), target=target,
                     rtol=1e-4).kernels) == 1
    # [6, 10] reshaped to [4, 15]: no loops walk both. Read once, ``x * 2`` is computed in the reader's loop; stored
    # (an output too), the reader is a kernel of its own
    assert len(check(lambda x: (x * 2).reshape(4, 15) * 3, torch.randn(6, 10), target=target).kernels) == 1
    arts = check(lambda x: ((y := x * 2).reshape(4, 15) * 3, y), torch.randn(6, 10), target=target)
    assert len(arts.kernels) == 2 and any("iteration spaces differ" in d.reason for d in arts.schedule.decisions)
    dev = device_for(target)
    compiled = toycompiler.compile(merged, backend=target, dynamic=True)
    for shape in [(B, H, T, D), (3, H, 7, D), (4, H, 9, D)]:  # one graph for every batch and length
        assert_same(merged, torch.randn(shape, device=dev), compiled=compiled)


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_reduction_kernel_splits_its_loops_for_a_reshape_of_its_rows_or_its_reduced_range(target):
    """A norm or a softmax read through a view into finer dims is one kernel: the heads split off the normalised
    features (``layer_norm(x).view(B, T, H, D)``, its loops over r become ``[H, D]``), a token row split into an
    image's rows (Swin's ``norm(x).view(B, H, W, C)``: x becomes ``[B, H, W]``), a mean stored at rows so split.
    Each was two kernels, the value computed again (or written and read back) by the second. Odd sizes, a NaN and
    an infinity in the data; a view no loops walk alike with the rows (``[B, T*C]`` to ``[B*T, C]``) stays apart."""
    B, T, H, D = 2, 7, 3, 5
    x = torch.randn(B, T, H * D)
    x[0, 1, :2] = torch.tensor([float("nan"), float("inf")])
    w = torch.randn(H * D, device=device_for(target))
    for fn in [lambda x: F.layer_norm(x, (H * D,), w).view(B, T, H, D) * 2,
               lambda x: torch.softmax(x, -1).view(B, T, H, D) + 1,
               lambda x: F.layer_norm(x, (H * D,)).view(B, 1, T, H, D).sigmoid(),
               lambda x: (m := x.mean(-1, keepdim=True), (x - m).view(B, T, H, D)),
               lambda x: F.layer_norm(x.view(B, T * H, D), (D,)).view(B, T, H, D) - 1,
               lambda x: F.layer_norm(x.transpose(0, 1), (H * D,)).reshape(T, B, H, D)]:
        arts = check(fn, x, target=target, rtol=1e-4, atol=1e-5)
        assert len(arts.kernels) == 1, arts.schedule
    swin = lambda x: F.layer_norm(x, (D,)).view(B, H, T, D) * 3  # noqa: E731
    arts = check(swin, torch.randn(B, H * T, D), target=target, rtol=1e-4, atol=1e-5)
    assert len(arts.kernels) == 1 and arts.schedule.fused_bytes == 2 * B * H * T * D * 4, arts.schedule
    arts = check(lambda x: (s := x.softmax(-1), s.view(B * T, H * D) + 1), torch.randn(B, T * H * D),
                 target=target, rtol=1e-4, atol=1e-5)
    assert len(arts.kernels) == 2, arts.schedule
    heads = lambda x: F.layer_norm(x, (x.shape[-1],)).view(x.shape[0], x.shape[1], H, D) * 2  # noqa: E731
    compiled = toycompiler.compile(heads, backend=target, dynamic=True)
    for b, t in [(2, 7), (3, 4), (5, 9)]:  # one graph for every batch and length
        assert_same(heads, torch.randn(b, t, H * D, device=device_for(target)), compiled=compiled, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_reduction_over_a_flattened_value_runs_in_the_loops_that_compute_the_value(target):
    """A reduction over dims that the value it reads has apart (``y.flatten(2).sum(-1)`` of a computed [N, C, H, W]
    value: a global average pool, a group norm's gradient summed by channel) walks its range [H * W] in loops over
    [H, W], the value's own, and both are one kernel; a value stored too is written there. Each was two kernels, the
    value written and read back. Odd sizes, a NaN and an infinity in the data."""
    x = torch.randn(3, 5, 7, 9)
    x[0, 1, 2, :2] = torch.tensor([float("nan"), float("inf")])
    for fn in [lambda x: (x.sin() * 2).view(3, -1).sum(1),
               lambda x: x.exp().flatten(2).amax(-1),
               lambda x: (y := x.sigmoid() * x, y.flatten(2).mean(-1)),
               lambda x: (x.relu() + 1).flatten(1).mean(1)]:
        arts = check(fn, x, target=target, rtol=1e-4, atol=1e-5)
        assert len(arts.kernels) == 1, arts.schedule


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_group_norm_reads_its_input_twice_and_writes_once(target):
    """Group norm's statistics are over [N, G, C/G, H*W], its scale and shift by channel over [N, C, H, W]. The
    normalised value, read once through that reshape into finer dims, is computed in the scale's kernel: the
    statistics kernel writes only its statistics. Two kernels and three passes over the data, as
    torch.compile's; it was four, the normalised value written and read back. Written by hand (the form of
    torch 2.11's decomposition), and ``F.group_norm`` as the running torch decomposes it; channels-last values
    checked too."""
    def by_hand(x, w, b):
        xs = x.view(x.shape[0], 4, -1)
        m, v = xs.mean(-1, keepdim=True), xs.var(-1, keepdim=True, unbiased=False)
        return ((xs - m) / (v + 1e-5).sqrt()).view(x.shape) * w[:, None, None] + b[:, None, None]

    x, w, b = torch.randn(3, 8, 6, 10) + 5, torch.randn(8), torch.randn(8)
    x[0, 0, 0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    arts = check(by_hand, x, w, b, target=target, rtol=1e-4, atol=1e-4)
    assert len(arts.kernels) == 2 and arts.schedule.fused_bytes < 3.2 * x.nbytes, arts.schedule
    # (torch 2.13 folds the weight into a scale and a shift per channel first: a third kernel over [N, C])
    arts = check(lambda x, w, b: F.group_norm(x, 4, w, b), x, w, b, target=target, rtol=1e-4, atol=1e-4)
    assert len(arts.kernels) <= 3 and arts.schedule.fused_bytes < 3.2 * x.nbytes, arts.schedule
    # (channels-last: torch 2.11's decomposition reshapes it to [N, G, C/G * H * W], a copy of its own)
    check(lambda x, w, b: F.group_norm(x, 4, w, b), x.to(memory_format=torch.channels_last), w, b, target=target,
          rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_a_group_norm_and_silu_gradient_is_summed_where_it_is_computed_and_the_means_gradient_is_not_stored(target):
    """Group norm and SiLU trained (a diffusion model's block): the gradient through the SiLU, [N, C, H, W], is
    summed over each channel's pixels in the kernel that computes it (its reduction walks [H * W] as [H, W]), and the
    loss's gradient, ``expand(g) / N``, is computed where it is read. Each was a kernel writing a full-size value
    that another read back: 10.6 passes over the data, 5.6 now (torch.compile: 3; the gradient through the SiLU,
    read by three kernels, is still stored once)."""
    x, w, b = torch.randn(2, 8, 5, 7), torch.randn(8), torch.randn(8)  # (a NaN would make every gradient NaN)
    inputs = [t.to(device_for(target)).requires_grad_() for t in (x, w, b)]
    fn = lambda x, w, b: F.silu(F.group_norm(x, 4, w, b)).square().mean()  # noqa: E731
    compiled = toycompiler.compile(fn, backend=target)
    assert_same(fn, *inputs, compiled=compiled, backward=True, rtol=1e-4, atol=1e-5)
    backward = compiled.compiled_frames[0].backend.backward
    assert backward.schedule.fused_bytes < 6 * x.nbytes, backward.schedule


def test_a_chain_that_reads_each_step_twice_is_inlined_into_a_reduction_only_up_to_the_cap():
    """Each step reads the one before four times (``b * c + b - c`` of ``a.sin()`` and ``a.cos()``): inlined
    whole, the softmax's reductions over 12 steps would be trees of 4 ** 12 loads of ``x``, built and
    printed in minutes. Past ``MAX_INLINED_OPS`` ops (counted as the tree is written) a reduction reads
    the chain's buffer; on both backends the result is eager's."""
    def fn(a):
        for _ in range(12):
            b, c = a.sin(), a.cos()
            a = b * c + b - c
        return torch.softmax(a, -1)

    for target in ("cpp", "triton"):
        arts = check(fn, torch.randn(4, 30), target=target, rtol=1e-4, atol=1e-5)
        bodies = [row.body for row in arts.ir.buffers if row.kind == "reduction"]
        assert len(bodies) == 2 and all(body.count("(") <= MAX_INLINED_OPS for body in bodies), bodies
