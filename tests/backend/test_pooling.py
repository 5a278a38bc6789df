"""Max and average pooling as generated kernels (``lowering_reductions.pool2d``), against eager on both backends.

Each output element combines its window's loads, unrolled. What the unrolled window must get right: padding
(left out of the max, counted in the average or not), windows that hang past the input (``ceil_mode``),
dilation, the position of each max (the first, or the last NaN), half precision, a 3-d input and a
channels-last one, and a backward through torch's kernel that reads those positions.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.passes.decompose import TORCH_NEAREST
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def image(*shape, dtype=torch.float32, backend="cpp"):
    """Random values with the cases a max must order right: NaN, -inf, +inf, ties (zeros)."""
    x = torch.randn(*shape)
    flat = x.view(-1)
    flat[3], flat[10], flat[17], flat[30:34] = float("nan"), float("-inf"), float("inf"), 0.0
    return x.to(device_for(backend), dtype)


MAX = {  # kernel_size, stride, padding, dilation, ceil_mode
    "2x2": (2, 2, 0, 1, False), "3x3_s2_p1": (3, 2, 1, 1, False), "ceil": (3, 2, 0, 1, True),
    "ceil_padded": (3, 2, 1, 1, True), "dilated": (3, 1, 1, 2, False), "rect": ((2, 3), (1, 2), (1, 0), 1, False),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", MAX)
def test_max_pool_values_and_positions_match_eager(backend, case):
    k, s, p, d, ceil = MAX[case]
    x = image(2, 3, 9, 11, backend=backend)
    fn = lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)  # noqa: E731
    assert_same(fn, x, backend=backend)
    assert_same(lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil).relu(), x, backend=backend)


AVG = {  # kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    "2x2": (2, 2, 0, False, True, None), "3x3_s2_p1": (3, 2, 1, False, True, None),
    "exclude_pad": (3, 2, 1, False, False, None), "ceil": (3, 2, 1, True, True, None),
    "ceil_exclude": (3, 2, 1, True, False, None), "divisor": (3, 1, 1, False, True, 5),
    "rect": ((2, 3), 1, 0, False, True, None),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", AVG)
def test_avg_pool_matches_eager(backend, case):
    k, s, p, ceil, include, divisor = AVG[case]
    x = torch.randn(2, 3, 9, 11, device=device_for(backend))
    assert_same(lambda x: F.avg_pool2d(x, k, s, p, ceil, include, divisor) * 2, x, backend=backend, rtol=1e-5)


@pytest.mark.parametrize("backend, dtype", [("cpp", torch.bfloat16), ("triton", torch.float16),
                                            ("triton", torch.bfloat16)], ids=str)  # (C++: no float16)
def test_half_precision(backend, dtype):
    x = image(2, 4, 10, 7, dtype=dtype, backend=backend)
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x, backend=backend)
    assert_same(lambda x: F.avg_pool2d(x, 3, 2, 1), x.nan_to_num(0, 0, 0), backend=backend, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_3d_input_and_a_channels_last_one(backend):
    x = image(2, 4, 10, 7, backend=backend)
    assert_same(lambda x: F.max_pool2d(x, 2, return_indices=True), x[0], backend=backend)  # [C, H, W]
    assert_same(lambda x: F.avg_pool2d(x, 3, 1, 1), x[0].nan_to_num(0, 0, 0), backend=backend)
    cl = x.contiguous(memory_format=torch.channels_last)
    out = assert_same(lambda x: F.max_pool2d(x, 2) + 1, cl, backend=backend)
    assert out.is_contiguous(memory_format=torch.channels_last)  # eager's layout


@pytest.mark.parametrize("backend", BACKENDS)
def test_pooling_is_a_kernel_fused_with_its_reader_and_a_large_window_is_torchs(backend):
    """A 3x3 max pool (windows past the input's end: masked on a GPU, read from a padded copy on a CPU, one
    kernel more) and the ReLU after it: one kernel, no library call. A 7x7 window (49 loads) stays torch's
    kernel, with its reason; padded windows are generated kernels on both backends."""
    x = torch.randn(2, 3, 16, 16, device=device_for(backend))
    copy = int(x.device.type == "cpu")
    report = toycompiler.explain(lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True).relu(), backend=backend)(x)
    code = report.frames[0].backend.output_code.source
    assert len(report.kernels) == 1 + copy and "torch.ops" not in code, code
    # the work before the pooling (a folded batch norm and a ReLU) is computed at each load: one kernel too,
    # with or without masks; where that work's result is also returned, it is stored as well
    scale, shift = torch.randn(3, 1, 1, device=x.device), torch.randn(3, 1, 1, device=x.device)
    for fn, kernels in [(lambda x: F.max_pool2d((x * scale + shift).relu(), 3, 2, ceil_mode=True), 1 + copy),
                        (lambda x: F.avg_pool2d((x * scale + shift).relu(), 2), 1),
                        (lambda x: (F.max_pool2d(x.relu(), 2), x.relu()), 2)]:
        assert_same(fn, x, backend=backend)
        assert len(toycompiler.explain(fn, backend=backend)(x).kernels) == kernels
    for fn, why in [(lambda x: F.max_pool2d(x, 7) + 1, True), (lambda x: F.avg_pool2d(x, 7) + 1, True),
                    (lambda x: F.max_pool2d(x, 3, 2, 1) + 1, False), (lambda x: F.avg_pool2d(x, 3, 1, 1), False)]:
        assert_same(fn, x, backend=backend)
        ir = str(toycompiler.explain(fn, backend=backend)(x).frames[0].backend.ir)
        assert ("window of more than 25 elements" in ir) == why, ir


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_a_cpu_window_that_does_not_fit_reads_a_padded_copy(channels_last):
    """On a CPU a window in the padding or past the input's end reads a copy of the input with a border of
    the fill (-inf for a max, 0 for an average) in which every window fits, so the pooling kernel's loads
    are plain strided reads, with no clamped index and no guard (GCC vectorises its loop; see pool2d). The
    copy computes the work before the pooling, is one buffer for a max's values and positions,
    and is stored in the input's memory order. A position in the border is never a max's position: a
    window whose elements inside the input are all -inf gives the first of them, as eager does."""
    x = image(2, 8, 9, 11)
    x[:, :, :2, :2] = x[:, :, -1:, -2:] = float("-inf")  # the corner windows: -inf inside, fill outside
    x = x.contiguous(memory_format=torch.channels_last) if channels_last else x
    fn = lambda x: F.max_pool2d(x * 2 - 1, 3, 2, 1, ceil_mode=True, return_indices=True)  # noqa: E731
    assert_same(fn, x)
    report = toycompiler.explain(fn, backend="cpp")(x)
    copy, pool = report.kernels  # 9 + 1 + 1 rows of 11 + 1 + 1 (ceil_mode's last windows overhang by one)
    size = "[2, 11, 13, 8]" if channels_last else "[2, 8, 11, 13]"
    assert f"pointwise float32{size}  # from max_pool2d_with_indices" in str(report.frames[0].backend.ir)
    assert "* 2.0f" in copy.source and "INFINITY" in copy.source, copy.source
    loads = [line for line in pool.source.splitlines() if "in_ptr0[" in line]
    assert len(loads) == 9 and not any("?" in line or "toy_m" in line for line in loads), pool.source
    assert "* 2.0f" not in pool.source, pool.source
    assert_same(lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False), x.nan_to_num(0, 0, 0))


def test_a_backward_reads_the_positions_of_the_maxima():
    """Training: the forward's positions feed torch's max_pool2d_with_indices_backward; gradients match eager's
    (ties go to the first position, as in eager: the zeros)."""
    x = image(2, 3, 9, 11)
    x = x.nan_to_num(0, 0, 0).requires_grad_()
    assert_same(lambda x: F.max_pool2d(x, 3, 2, 1).sum() * 2, x, backend="cpp", backward=True)
    assert_same(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False).square().sum(), x, backend="cpp",
                backward=True)


def test_sizes_known_only_when_running():
    """Dynamic shapes: an output size is then a floor division, which the kernels print, and so is the size of
    a padded copy. A large window stays torch's kernel; its result's strides, as the fake tensor gives them,
    can hold sympy's ``Max`` (``Max(1, s2//2)``) and floor divisions: the output code spells them ``max`` and
    ``//`` (a NameError when the call ran, once)."""
    for fn, generated in ((lambda x: F.max_pool2d(x, 2), True), (lambda x: F.max_pool2d(x, 7, 2, 3), False),
                          (lambda x: F.max_pool2d(x, 3, 2, 1), True),
                          (lambda x: F.avg_pool2d(x.relu(), 3, 2, 1, ceil_mode=True, count_include_pad=False), True),
                          (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True, return_indices=True), True)):
        compiled = toycompiler.compile(fn, backend="cpp", dynamic=True)
        for shape in [(2, 3, 10, 12), (1, 4, 17, 9), (2, 2, 8, 8)]:
            assert_same(fn, torch.randn(*shape), compiled=compiled)
        code = compiled.compiled_frames[-1].backend.output_code.source
        assert ("torch.ops.aten.max_pool2d_with_indices.default(" not in code) == generated, code
        assert "Max(" not in code and "FloorDiv" not in code, code  # Python's spelling, which the call runs


TILING = {  # (input size, kernel_size, stride, padding, ceil_mode, channels-last): windows that tile the input
    "2x2": ((2, 3, 8, 8), 2, None, 0, False, False),
    "rows_past_the_last_window": ((2, 3, 9, 7), 2, None, 0, False, False),
    "3x3_channels_last": ((2, 3, 9, 9), 3, None, 0, False, True),
    "2x4": ((2, 3, 8, 8), (2, 4), None, 0, False, False),
    "overlapping": ((2, 3, 9, 9), 3, 2, 1, False, False),  # these three keep torch's kernel
    "ceil_mode": ((2, 3, 9, 9), 2, None, 0, True, False),
    "stride_1": ((2, 3, 8, 8), 2, 1, 0, False, False),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(TILING))
def test_an_average_pool_whose_windows_tile_the_input_has_a_generated_backward(backend, case):
    """``passes.decompose.avg_pool2d_backward``: the gradient of windows that tile the input is an expand and a
    reshape of the output's gradient, kernels of the toy's own; other windows keep torch's backward kernel."""
    size, k, s, p, ceil, channels_last = TILING[case]
    x = torch.randn(*size, device=device_for(backend))
    x = (x.to(memory_format=torch.channels_last) if channels_last else x).requires_grad_()
    fn = lambda x: F.avg_pool2d(x, k, s, p, ceil).square().sum()  # noqa: E731
    assert_same(fn, x, backend=backend, backward=True, rtol=1e-5, atol=1e-5)
    backward = toycompiler.explain(fn, backend=backend)(x).frames[0].backend.backward
    tiled = case not in ("overlapping", "ceil_mode", "stride_1")
    assert ("avg_pool2d_backward" in backward.output_code.source) != tiled


NEAREST = {  # (input size, interpolate's arguments, channels-last, whole factors with eager's index j // k)
    "2x": ((2, 3, 8, 8), {"scale_factor": 2}, False, True),
    "3x_channels_last": ((2, 3, 7, 5), {"scale_factor": 3}, True, True),
    "sizes_of_whole_factors": ((2, 3, 7, 5), {"size": (14, 15)}, False, True),
    "2x3": ((2, 3, 8, 8), {"scale_factor": (2, 3)}, False, True),
    "1d_4x": ((2, 3, 9), {"scale_factor": 4}, False, True),
    "3d_2x_channels_last": ((1, 2, 3, 4, 5), {"scale_factor": 2}, True, True),
    "1.5x": ((2, 3, 8, 8), {"scale_factor": 1.5}, False, False),  # these three keep torch's decomposition
    "41x": ((1, 2, 8), {"scale_factor": 41}, False, False),  # float32's 1/41 makes eager's index 0 at j = 41
    "nearest_exact": ((2, 3, 8, 8), {"scale_factor": 2, "mode": "nearest-exact"}, False, False),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(NEAREST))
def test_nearest_upsampling_by_whole_factors_is_an_expand_whose_gradient_is_a_generated_sum(backend, case):
    """``passes.decompose.upsample_nearest``: repeated elements as an expand, in inference and in training (where
    torch's decomposition runs above autograd, ``nearest_as_expand``), so the backward has no ``index_put``."""
    size, kwargs, channels_last, whole = NEAREST[case]
    x = torch.randn(*size, device=device_for(backend))
    x = x.to(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d) if channels_last else x
    fn = lambda x: F.interpolate(x, **{"mode": "nearest", **kwargs}).square().sum()  # noqa: E731
    out = assert_same(lambda x: F.interpolate(x, **{"mode": "nearest", **kwargs}) * 2, x, backend=backend)
    assert out.stride() == F.interpolate(x, **{"mode": "nearest", **kwargs}).stride()
    if whole:  # one kernel writes the output, in its memory order (channels last: no NCHW copy first)
        forward = toycompiler.explain(lambda x: F.interpolate(x, **{"mode": "nearest", **kwargs}) * 2, backend=backend)
        assert len(forward(x).frames[0].backend.output_code.kernels) == 1
    if case != "41x" or x.device.type == "cpu":  # eager's CUDA backward sends output 41's gradient to element 1
        assert_same(fn, x.requires_grad_(), backend=backend, backward=True, rtol=1e-5, atol=1e-5)
    backward = toycompiler.explain(fn, backend=backend)(x.requires_grad_()).frames[0].backend.backward
    assert ("index_put" in backward.output_code.source) != whole
    # torch's own decompositions are back in place: torch.compile's graph still indexes
    assert torch._decomp.decompositions._upsample_nearest is TORCH_NEAREST


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scales", [(None, 3.0), (2.0, 3.0000002)])
def test_nearest_upsampling_checks_the_scale_given_for_each_dim(backend, scales):
    """The op called with its scales (``scales_h``, ``scales_w``): eager's index of the last dim is ``floor(j /
    3.0000002)`` in float32, not ``j // 3`` (output 3 reads element 0), so that one keeps torch's decomposition."""
    x = torch.randn(2, 3, 8, 8, device=device_for(backend))
    fn = lambda x: torch.ops.aten.upsample_nearest2d.default(x, [16, 24], *scales) * 2  # noqa: E731
    assert_same(fn, x, backend=backend)
    passes = str(toycompiler.explain(fn, backend=backend)(x).frames[0].backend.passes)
    assert ("aten.index.Tensor" in passes) == (scales[1] != 3.0) != ("aten.expand.default" in passes)
