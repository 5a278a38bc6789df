"""One-pass statistics and merged loops, on both backends, against eager.

``var``, ``std``, ``var_mean``, batch norm and layer norm compute the mean and the variance from one
read of the input: three sums (of x, and of d and d * d for d = x minus the row's first element, in
float32) in one loop over the reduced elements, then pointwise work on the row values. Batch-norm
statistics over (N, H, W) are one reduction kernel plus one pointwise kernel. Neighbouring loops that
every index walks as one (H and W of a contiguous NCHW tensor) are rendered as one loop.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def bn_stats(x):
    mean = x.mean((0, 2, 3), keepdim=True)
    var = x.var((0, 2, 3), keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + 1e-5)


CASES = {
    "var_rows": (lambda x: x.var(-1), (7, 33)),
    "var_mean_dim0": (lambda x: torch.var_mean(x, 0), (29, 13)),
    "std_all": (lambda x: x.std(), (5, 9, 3)),
    "var_keepdim_correction0": (lambda x: x.var((0, 2), keepdim=True, correction=0), (4, 6, 11)),
    "var_of_expression": (lambda x: (x.sin() * 3 + 1).var((0, 2, 3)), (3, 5, 4, 7)),
    "bn_stats": (bn_stats, (3, 10, 5, 7)),
    "layer_norm_odd": (lambda x: F.layer_norm(x, (37,)), (6, 37)),
    "sum_and_sum_of_squares": (lambda x: (x.sum(1), (x * x).sum(1)), (9, 3, 17)),
    "one_element_rows": (lambda x: torch.var_mean(x, -1), (4, 1)),  # n - correction = 0: var NaN, the mean not
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_statistics_match_eager(name, backend):
    fn, shape = CASES[name]
    assert_same(fn, torch.randn(*shape, device=device_for(backend)), backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_norm_training_on_channels_last_and_transposed_inputs(backend):
    dev = device_for(backend)
    x = torch.randn(4, 6, 5, 3, device=dev).to(memory_format=torch.channels_last)
    w, b = torch.randn(6, device=dev), torch.randn(6, device=dev)
    assert_same(lambda x: F.batch_norm(x, None, None, w, b, training=True), x, backend=backend, rtol=1e-4, atol=1e-4)
    t = torch.randn(21, 8, device=dev).t()
    assert_same(lambda t: torch.var_mean(t, 1), t, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mean", [1e3, 1e4, -3e4])
def test_large_mean_keeps_float32_accuracy(backend, mean):
    """The sums are of distances from the row's first element: a mean 10000 times the spread does not
    cancel away the variance (sums of x itself in float32 would lose it all). Checked against float64:
    eager on CUDA (a float32 Welford pass, its running mean rounded at 1e-3 here) differed from the
    compiled variance by 2e-4 (H100)."""
    x = torch.randn(16, 300, device=device_for(backend)) + mean
    for fn, x in [(lambda x: x.var(-1), x), (lambda x: x.var(0), x.t().contiguous())]:
        compiled = toycompiler.compile(fn, backend=backend)
        torch.testing.assert_close(compiled(x), fn(x.double()).float(), rtol=1e-5, atol=1e-5)


def test_bfloat16_layer_norm_is_one_float32_kernel():
    """torch's layer norm takes bfloat16 rows in float32; the first element of each row, read from that
    float32 copy, is read from the input inline, so the copy is never written: one kernel, no float64."""
    x = (torch.randn(6, 300, device=device_for("triton")) + 50).to(torch.bfloat16)
    fn = lambda x: F.layer_norm(x, (300,))  # noqa: E731
    assert_same(fn, x, backend="triton", rtol=2e-2, atol=2e-2)
    kernels = toycompiler.explain(fn, backend="triton")(x).kernels
    assert len(kernels) == 1 and "float64" not in kernels[0].source


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_view_of_a_pointwise_value_is_computed_inline(backend):
    """A reduction reads a pointwise buffer through a view (the row's first element, a transpose, a
    step) by computing that element, not by writing the buffer out; a view that would take a division
    to find its element (a reshape) is read from memory, and every one gives eager's answer."""
    x = torch.randn(12, 20, device=device_for(backend))
    for fn, kernels in [(lambda x: (x.exp() - x.exp()[:, :1]).sum(-1), 1),
                        (lambda x: x.exp().t().sum(-1), 1),
                        (lambda x: x.exp()[:, ::2].sum(-1), 1),
                        (lambda x: x.exp().reshape(20, 12).sum(-1), 2)]:
        assert_same(fn, x, backend=backend, rtol=1e-5, atol=1e-5)
        assert len(toycompiler.explain(fn, backend=backend)(x).kernels) == kernels


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_and_inf_give_nan_variance(backend):
    x = torch.randn(5, 40, device=device_for(backend))
    x[1, 3], x[2, 7], x[3, 0], x[3, 1] = float("nan"), float("inf"), float("inf"), float("-inf")
    assert_same(lambda x: torch.var_mean(x, -1), x, backend=backend)


@pytest.mark.parametrize("backend, dtype", [("cpp", torch.bfloat16), ("triton", torch.float16),
                                            ("triton", torch.bfloat16)], ids=str)  # (C++: no float16)
def test_half_precision_statistics(backend, dtype):
    x = torch.randn(3, 8, 5, 5, device=device_for(backend)).to(dtype)
    assert_same(bn_stats, x, backend=backend, rtol=2e-2, atol=2e-2)
    assert_same(lambda x: F.layer_norm(x, (5,)), x, backend=backend, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_norm_statistics_and_normalising_are_one_kernel(backend):
    """The statistics (one loop over each channel's elements) and the normalising (a second loop over them,
    the element epilogue of a reduction over dims 0, 2 and 3) share one kernel."""
    x = torch.randn(3, 10, 5, 7, device=device_for(backend))
    report = toycompiler.explain(bn_stats, backend=backend)(x)
    sched = report.frames[0].backend.schedule
    assert [g.kind for g in sched.groups] == ["reduction"]
    reduction = sched.groups[0]
    assert len([n for n in reduction.nodes if n.startswith("buf")]) >= 3  # mean's sum, and the two sums of var
    assert any("another reduction over the same rows" in d.reason for d in sched.decisions if d.fused)
    assert any("element epilogue of the reduction" in d.reason for d in sched.decisions if d.fused)
    assert any("no one reads it" in d.reason for d in sched.decisions if not d.fused)  # x.double() ** 2: inlined


def test_sums_of_a_row_share_one_loop_in_cpp():
    report = toycompiler.explain(lambda x: x.var(-1), backend="cpp")(torch.randn(8, 100))
    source = report.frames[0].backend.kernels[0].source
    assert source.count("for (int64_t r0") == 1
    assert "reduction(+:acc0) reduction(+:acc1)" in source


def test_triton_looped_sums_share_one_loop():
    with toycompiler.config.patch(max_block=64):
        x = torch.randn(3, 300, device=device_for("triton"))
        report = toycompiler.explain(lambda x: x.var(-1), backend="triton")(x)
    source = report.frames[0].backend.kernels[0].source
    assert source.count("for roffset in range") == 1
    with toycompiler.config.patch(max_block=64):
        assert_same(lambda x: x.var(-1), torch.randn(3, 300, device=device_for("triton")), backend="triton",
                    rtol=1e-4, atol=1e-4)


def test_contiguous_dims_merge_into_one_vector_loop():
    report = toycompiler.explain(lambda x: x.mean((0, 2, 3)), backend="cpp")(torch.randn(4, 6, 29, 29))
    source = report.frames[0].backend.kernels[0].source
    assert "r1 < 841" in source  # H and W: one loop of 841 elements, not 29 loops of 29
    pointwise = toycompiler.explain(lambda x: x.sin(), backend="cpp")(torch.randn(4, 6, 29, 29))
    assert "x0 < 20184" in pointwise.frames[0].backend.kernels[0].source
    sliced = toycompiler.explain(lambda x: x[:, :, :, 1:].sum(-1), backend="cpp")(torch.randn(2, 3, 5, 9))
    assert "r0 < 8" in sliced.frames[0].backend.kernels[0].source  # a strided row: not merged with x


LONG_SUMS = {  # each lane of the C++ loops adds thousands of values (CppRenderer.wide)
    "var_of_all": (lambda x: x.var(), lambda: torch.randn(1_000_003) + 100),  # one row: double accumulators
    "sum_of_long_rows": (lambda x: x.sum(-1), lambda: torch.rand(3, 400_003)),
    "sum_over_columns": (lambda x: x.sum(0), lambda: torch.rand(200_003, 17)),  # column order: float parts of 8 rows
    "sum_over_channels_last": (lambda x: x.sum((0, 2, 3)), lambda: torch.rand(64, 8, 60, 60).to(
        memory_format=torch.channels_last)),
    "var_over_columns": (lambda x: x.var(0), lambda: torch.randn(100_003, 9) + 100),
    "sum_over_two_loops": (lambda x: x.sum((0, 2)), lambda: torch.rand(30000, 3, 20)),  # 30000 runs of the inner loop
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(LONG_SUMS))
def test_long_float_sums_keep_float32_accuracy(name, backend):
    """A float32 sum of a million values is as close to the exact sum as eager's (which sums in blocks).
    Added one after another in float32, each lane of a C++ loop drifted: ``x.var()`` came out 9e-4 from
    the float64 value, a column sum 3e-5."""
    if backend == "triton" and not torch.cuda.is_available():
        pytest.skip("Triton's interpreter sums a block with numpy's pairwise sum: the GPU run checks Triton's own")
    fn, make = LONG_SUMS[name]
    x = make().to(device_for(backend))
    report = toycompiler.explain(fn, backend=backend)(x)
    torch.testing.assert_close(toycompiler.compile(fn, backend=backend)(x), fn(x.double()).float(), rtol=2e-6, atol=0)
    if backend == "cpp":
        assert "double acc0" in report.frames[0].backend.kernels[0].source
