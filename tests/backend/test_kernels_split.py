"""Split reductions (``ir.split_reductions``): a long reduction with few outputs runs as
partial sums over chunks of each row, then a small reduction of the partials, so many programs
share the work.

The thresholds are lowered here so that inputs small enough for Triton's CPU interpreter split;
every case is checked against eager, including a chunk count that does not divide the row (the
last chunk is masked), NaN and infinities, half precision and non-contiguous inputs.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.backend import ir
from toycompiler.testing import assert_same, device_for


@pytest.fixture(autouse=True)
def small_splits(monkeypatch):
    monkeypatch.setattr(ir, "SPLIT_MIN_RNUMEL", 64)
    monkeypatch.setattr(ir, "SPLIT_PROGRAMS", 48)  # 1.5 x 32 programs
    monkeypatch.setattr(ir, "SPLIT_MIN_CHUNK", 16)
    monkeypatch.setattr(ir, "SPLIT_MIN_ROWS", 1)


def bn_stats(x):
    mean = x.mean((0, 2, 3), keepdim=True)
    var = x.var((0, 2, 3), keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + 1e-5)


CASES = {
    # 32 chunks of 10 rows: row 300 alone in chunk 30, chunk 31 all past the end
    "column_sum_odd": (lambda x: x.sum(0), (301, 37)),
    "short_wide_columns": (lambda x: x.amax(0), (40, 300)),  # 5 programs of 64 columns unsplit: 8 chunks of 5
    "row_amax": (lambda x: x.amax(-1), (3, 1000)),
    "mean_023": (lambda x: x.mean((0, 2, 3)), (5, 3, 9, 11)),
    "bn_stats": (bn_stats, (6, 4, 7, 5)),
    "mean_023_channels_last": (lambda x: x.contiguous(memory_format=torch.channels_last).mean((0, 2, 3)),
                               (5, 3, 9, 11)),  # N, H, W merge into one run of stride C
    "mean_023_every_other_row": (lambda x: x[:, :, ::2].mean((0, 2, 3)), (5, 3, 10, 11)),  # H, W do not merge
    "mean_023_chunk_per_image": (lambda x: x.mean((0, 2, 3)), (16, 3, 9, 11)),  # 16 chunks: one per image
    "mean_023_two_images_a_chunk": (lambda x: x.mean((0, 2, 3)), (64, 3, 9, 11)),  # 32 chunks of 2 images
    "column_sum_exact": (lambda x: x.sum(0), (320, 37)),  # 32 chunks of 10 rows, none past the end
    "prod_rows": (lambda x: (x * 0.01 + 1).prod(-1), (2, 257)),
    "min_over_all": (lambda x: x.amin(), (33, 31)),
}


def test_integer_sums_split_and_an_integer_max_does_not():
    """An integer sum splits like a float one (cross entropy's count of targets that are not ignored, over
    65536 rows, ran in one program for 23 us on an H100, split for 2); an integer max has no -inf to start
    its partials from, so it stays whole."""
    t = torch.randint(-3, 50, (2000,), device=device_for("triton"))
    for fn, split in [(lambda t: (t != -1).sum(), True), (lambda t: t.sum(), True), (lambda t: t.amax(), False)]:
        assert_same(fn, t, backend="triton")
        decisions = toycompiler.explain(fn, backend="triton")(t).frames[0].backend.schedule.decisions
        assert any("split reduction" in d.reason for d in decisions) == split


@pytest.mark.parametrize("name", list(CASES))
def test_split_reductions_match_eager(name):
    fn, shape = CASES[name]
    x = torch.randn(*shape, device=device_for("triton"))
    assert_same(fn, x, backend="triton", rtol=1e-4, atol=1e-4)
    report = toycompiler.explain(fn, backend="triton")(x)
    assert any("split reduction" in d.reason for d in report.frames[0].backend.schedule.decisions)


def test_split_merges_reduced_dims_read_as_one_run():
    """Over (0, 2, 3) of a contiguous [N, C, H, W], H and W are one run of H*W elements: the partial
    kernel finds (n, h*W + w) from the chunk's position with one division and one remainder by H*W,
    where unravelling N, H and W apart would also divide by W."""
    x = torch.randn(5, 3, 9, 11, device=device_for("triton"))
    partial = toycompiler.explain(lambda x: x.mean((0, 2, 3)), backend="triton")(x).kernels[0].source
    assert "// 99)" in partial and "% 99)" in partial and "11)" not in partial


def test_split_between_images_needs_no_division_and_no_mask():
    """When the chunks divide the outermost reduced loop (the batch), a chunk is some of its steps and
    all of the inner loops: the partial kernel reads a plain run of H*W elements per image, with no
    division to find an element and no mask for elements past the end (Inductor splits so too)."""
    x = torch.randn(16, 3, 9, 11, device=device_for("triton"))
    report = toycompiler.explain(lambda x: x.mean((0, 2, 3)), backend="triton")(x)
    assert any("in 16 chunks of 99" in d.reason for d in report.frames[0].backend.schedule.decisions)
    partial = report.kernels[0].source
    assert "//" not in partial and "%" not in partial and "minimum" not in partial and " < 1584" not in partial


def test_batch_norm_partials_share_one_kernel():
    x = torch.randn(6, 4, 7, 5, device=device_for("triton"))
    sched = toycompiler.explain(bn_stats, backend="triton")(x).frames[0].backend.schedule
    assert [g.kind for g in sched.groups] == ["reduction", "reduction", "pointwise"]  # partials, finals, normalise
    assert len([n for n in sched.groups[0].nodes if n.endswith("_partial")]) == 3


def test_split_with_nan_inf_half_and_strided_inputs():
    dev = device_for("triton")
    x = torch.randn(300, 40, device=dev)
    x[7, 3], x[250, 5], x[100, 6], x[299, 6] = float("nan"), float("inf"), float("inf"), float("-inf")
    assert_same(lambda x: (x.sum(0), x.amax(0), x.amin(0)), x, backend="triton")
    for dtype in (torch.float16, torch.bfloat16):
        assert_same(lambda x: x.sum(0), torch.randn(300, 9, device=dev).to(dtype), backend="triton",
                    rtol=1e-2, atol=1e-2)
    assert_same(lambda x: x.sum(-1), torch.randn(40, 301, device=dev).t(), backend="triton", rtol=1e-4, atol=1e-4)
    cl = torch.randn(4, 6, 9, 8, device=dev).to(memory_format=torch.channels_last)
    assert_same(lambda x: x.mean((0, 2, 3)), cl, backend="triton", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads, fn, splits", [
    (1, lambda x: x.sum(), False), (2, lambda x: x.sum(), True), (2, lambda x: (x.sigmoid() * x).mean(), True),
    (2, lambda x: x.amax(), True), (2, lambda x: x.sum(0), True), (2, lambda x: x.sum(1), False)])
def test_cpp_splits_only_a_reduction_with_too_few_outputs_for_its_threads(threads, fn, splits):
    """C++ runs a row a thread (a block of 64 columns a thread, in column order), so a sum of everything (a loss)
    ran on one: with more than one thread it splits into chunks, for 8 programs, and so does a column sum of 37
    columns. One thread never splits, nor does a sum with as many outputs as that (301 row sums). NaN and
    infinities in the data; as eager's."""
    x = torch.randn(301, 37)
    x[3, :3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        assert_same(fn, x, backend="cpp", rtol=1e-5, atol=1e-5)
        report = toycompiler.explain(fn, backend="cpp")(x)
    finally:
        torch.set_num_threads(before)
    assert any("split" in d.reason for d in report.frames[0].backend.schedule.decisions) == splits
    assert len(report.frames[0].backend.kernels) == 1 + splits


def test_column_split_keeps_whole_rows_per_chunk_and_leaves_wide_ones_unsplit(monkeypatch):
    """A column reduction's chunks are at least SPLIT_MIN_ROWS rows; past SPLIT_MAX_COLUMNS columns the
    unsplit kernel has programs enough (16 or 32 columns each), and it is not split at all."""
    dev = device_for("triton")
    monkeypatch.setattr(ir, "SPLIT_MIN_ROWS", 20)
    monkeypatch.setattr(ir, "SPLIT_MAX_COLUMNS", 256)
    monkeypatch.setattr(ir, "SPLIT_MIN_COUNT", 2)
    for shape, reason in [((320, 37), "in 16 chunks of 20"), ((40, 200), "in 2 chunks of 20"), ((40, 300), None)]:
        x = torch.randn(*shape, device=dev)
        assert_same(lambda x: x.sum(0), x, backend="triton", rtol=1e-4, atol=1e-4)
        decisions = toycompiler.explain(lambda x: x.sum(0), backend="triton")(x).frames[0].backend.schedule.decisions
        splits = [d.reason for d in decisions if "split reduction" in d.reason]
        assert [reason in s for s in splits] == ([True] if reason else []), splits


def softmax_by_hand(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def masked_softmax(x):
    return torch.softmax(x * 0.5 + (torch.arange(x.shape[-1], device=x.device) % 7 == 0) * -1e4, -1)


@pytest.mark.parametrize("fn", [lambda x: torch.softmax(x, -1), lambda x: torch.log_softmax(x, -1), softmax_by_hand,
                                masked_softmax])
def test_split_softmax_recomputes_the_exponential_instead_of_storing_it(fn):
    """After a split, no kernel writes ``exp(x - max)``, or the masked scores it is computed from, only for the
    division by the sum to read them back (a wasted write and read of the whole input): the division
    computes them from ``x`` (the scores, computed before the max, are inlined into it: ``ir._reinline``)."""
    torch.manual_seed(0)
    for shape, dtype in [((3, 1001), torch.float32), ((2, 517), torch.bfloat16)]:
        x = (torch.randn(*shape) * 4).to(dtype).to(device_for("triton"))
        # bfloat16 keeps 8 bits: a log_softmax near 0 is off by more than 2% of itself after one rounding
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
        assert_same(fn, x, backend="triton", rtol=tol, atol=tol)
        with toycompiler.config.patch(graph_cache=False):
            sched = toycompiler.explain(fn, backend="triton")(x).frames[0].backend.schedule
        assert [g.kind for g in sched.groups] == ["reduction"] * 2 + ["pointwise"]  # partials, finals, division
        assert any("its readers inlined it" in d.reason for d in sched.decisions)


def test_a_stored_pointwise_buffer_is_read_back_where_recomputing_it_would_read_more():
    """``p = x * w`` is an output, so it is written anyway: ``p / sum(p)`` reads it (4 bytes an element)
    rather than recomputing it from ``x`` and ``w`` (8). Not an output, it is never computed."""
    x, w = torch.randn(2, 2, 700, device=device_for("triton")).unbind()
    for fn, kinds in [(lambda x, w: (x * w, x * w / (x * w).sum(-1, keepdim=True)), ["pointwise"]),
                      (lambda x, w: x * w / (x * w).sum(-1, keepdim=True), [])]:
        assert_same(fn, x, w, backend="triton", rtol=1e-4, atol=1e-5)
        with toycompiler.config.patch(graph_cache=False):
            sched = toycompiler.explain(fn, backend="triton")(x, w).frames[0].backend.schedule
        assert [g.kind for g in sched.groups] == kinds + ["reduction", "reduction", "pointwise"]


@pytest.mark.parametrize("held_whole", [True, False])
def test_split_softmax_takes_each_chunks_max_and_sum_in_one_kernel(held_whole, monkeypatch):
    """Split, a softmax's sum of ``exp(x - max)`` is each chunk's sum under the chunk's own max, rescaled to
    the row's max in the final kernel: the max's and the sum's partials share one kernel (with chunks
    looped, one loop: online softmax), so the row is read once for both. Checked against eager on what
    the rescaling must get right: chunks with no finite value (masked runs, whole rows of -inf, chunks past
    the row's end), NaN, +inf, values whose exp underflows, half precision, log_softmax, cross entropy."""
    from toycompiler.backend.codegen import triton as triton_codegen
    monkeypatch.setattr(triton_codegen, "ONLINE_MIN_ROW_BYTES", 64)
    monkeypatch.setattr(ir, "SPLIT_PROGRAMS", 128)  # 7 rows in 16 chunks of 63
    dev, inf = device_for("triton"), float("inf")
    x = torch.randn(7, 1001) * 5
    x[1, 7], x[2], x[3, :600], x[4, 990], x[5, 100:], x[6, ::2] = float("nan"), -inf, -inf, inf, -1e30, -inf
    x = x.to(dev)
    cases = [(lambda x: torch.softmax(x, -1), x), (lambda x: torch.log_softmax(x, -1), x), (softmax_by_hand, x),
             (lambda x: torch.softmax(x.float(), -1), x.bfloat16()), (softmax_by_hand, x.bfloat16()),
             (lambda x: F.cross_entropy(x, torch.arange(7, device=x.device) * 100), x[:, 1:].nan_to_num())]
    with toycompiler.config.patch(max_block=1024 if held_whole else 32, graph_cache=False):
        for fn, t in cases:
            assert_same(fn, t, backend="triton", rtol=2e-2 if t.dtype == torch.bfloat16 else 1e-5, atol=1e-5)
            report = toycompiler.explain(fn, backend="triton")(t)
            partials = report.frames[0].backend.schedule.groups[0]
            assert len(partials.nodes) == 2 and all(n.endswith("_partial") for n in partials.nodes)
            assert ("* tl.exp(acc" in report.kernels[0].source) != held_whole  # looped: one online loop


@pytest.mark.parametrize("shape, chunks", [((200, 24), "in 200 chunks of 24"), ((200, 4, 6), "in 200 chunks of 24"),
                                           ((8, 2000), "in 32 chunks of 500")])
def test_a_sum_over_all_that_reads_a_value_per_row_splits_a_row_a_chunk_in_the_row_kernel(shape, chunks):
    """The loss of an RMS norm's training step, its outputs summed: each row's partial sum is taken in the kernel
    that computes the row's rstd, so the input is read once, not twice (32 chunks of rows would be a kernel of
    their own); a plain sum over all keeps its 32 chunks. Fewer rows than 32 chunks keep them too (8 programs
    would starve a GPU)."""
    dev = device_for("triton")

    def rms_sum(x):
        dims = tuple(range(1, x.dim()))
        return (x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + 1e-6)).sum()
    x = torch.randn(*shape, device=dev)
    assert_same(rms_sum, x, backend="triton", rtol=1e-4, atol=1e-4)
    backend = toycompiler.explain(rms_sum, backend="triton")(x).frames[0].backend
    assert any(chunks in d.reason for d in backend.schedule.decisions), backend.schedule.decisions
    assert len(backend.kernels) == (2 if "200" in chunks else 3)  # the rows' rstd and partial sums, their sum
    decisions = toycompiler.explain(lambda x: x.sum(), backend="triton")(x).frames[0].backend.schedule.decisions
    assert any("in 32 chunks" in d.reason for d in decisions), decisions
