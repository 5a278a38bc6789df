"""Reductions along any axis, on both backends, against eager.

A reduction whose reads are contiguous along the kept axis (``x.sum(0)`` of a
matrix, channels-last statistics) is rendered in column order: the C++ kernel
loops over r outside and a block of x inside; the Triton kernel takes a tile
of several columns. These tests check that the column order is the one
chosen, and that every shape class (odd sizes, a partial last block of
columns, several reduced axes, non-contiguous inputs, NaN) gives eager's answer.
"""

import os
import re

import pytest
import torch
import torch.nn.functional as F
from test_vector_cpp import gcc_vectorised_lines

import toycompiler
from toycompiler.backend.codegen import triton as triton_codegen
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]

CASES = {
    "sum_dim0": (lambda x: x.sum(0), (37, 301)),  # 301 columns: a block of 256, then a partial one
    "mean_dim0_keepdim": (lambda x: x.mean(0, keepdim=True) * 2, (5, 3)),
    "amax_dim0": (lambda x: x.amax(0), (19, 70)),
    "argmax_dim0": (lambda x: x.argmax(0), (13, 33)),
    "var_dim0": (lambda x: x.var(0), (23, 41)),
    "mean_023": (lambda x: x.mean((0, 2, 3)), (3, 5, 7, 9)),
    "sum_middle": (lambda x: x.sum(1), (6, 11, 17)),
    "column_softmax": (lambda x: torch.softmax(x, 0), (29, 45)),
    "norm_over_columns": (lambda x: (x - x.mean(0)) / (x.std(0) + 1), (31, 19)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_reduction_matches_eager(name, backend):
    fn, shape = CASES[name]
    assert_same(fn, torch.randn(*shape, device=device_for(backend)), backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_batch_norm_statistics(backend):
    x = torch.randn(3, 10, 5, 7, device=device_for(backend)).to(memory_format=torch.channels_last)

    def stats(x):
        mean = x.mean((0, 2, 3), keepdim=True)
        var = x.var((0, 2, 3), keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + 1e-5)

    assert_same(stats, x, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transposed_input_row_sum(backend):
    x = torch.randn(45, 19, device=device_for(backend)).t()  # rows of x are strided in memory
    assert_same(lambda x: x.sum(-1) + x.amax(-1), x, backend=backend, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_and_inf_propagate_through_column_max(backend):
    x = torch.randn(9, 300, device=device_for(backend))
    x[4, 7], x[2, 299], x[0, 5] = float("nan"), float("inf"), float("-inf")
    assert_same(lambda x: (x.amax(0), x.amin(0), x.sum(0)), x, backend=backend)


def test_column_sum_is_rendered_in_column_order(monkeypatch):
    report = toycompiler.explain(lambda x: x.sum(0), backend="cpp")(torch.randn(37, 301))
    source = report.frames[0].backend.kernels[0].source
    assert "column order" in source
    assert "for (int64_t xb = 0; xb < 301; xb += 64)" in source  # fewer than 4 blocks of 256 for one thread
    for threads, block in ((1, 256), (4, 256), (8, 64)):  # 4099 columns: 16 blocks of 256, 4 for each of 4
        monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
        toycompiler.reset()  # (a compiled frame is kept per code object: the thread count is no guard)
        report = toycompiler.explain(lambda x: x.sum(0), backend="cpp")(torch.randn(3, 4099))
        assert f"xb < 4099; xb += {block})" in report.frames[0].backend.kernels[0].source
    row = toycompiler.explain(lambda x: x.sum(1), backend="cpp")(torch.randn(37, 301))
    assert "column order" not in row.frames[0].backend.kernels[0].source


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_value_per_reduced_row_leaves_the_column_order(backend):
    """A layer norm backward's weight gradient sums ``g * (x - mean) * rstd`` over rows, with one mean and rstd
    a row: those two loads are contiguous along the reduced axis, but they are small vectors, read again for
    every column. Only loads that vary along the kept axis set the order (``ir.streamed``): column order,
    and on Triton a tile of columns split over chunks of rows."""
    dev = device_for(backend)
    fn = lambda x, m, s: ((x - m[:, None]) * s[:, None]).sum(0)  # noqa: E731
    args = torch.randn(300, 37, device=dev), torch.randn(300, device=dev), torch.rand(300, device=dev)
    assert_same(fn, *args, backend=backend, rtol=1e-4, atol=1e-4)
    backend_art = toycompiler.explain(fn, backend=backend)(*args).frames[0].backend
    if backend == "cpp":
        assert "column order" in backend_art.kernels[0].source
    else:  # several columns a program (a row reduction takes one)
        assert "triton.cdiv(37, 4)),)](arg0, arg1, arg2, buf2, 37, 300, XBLOCK=4," in backend_art.output_code.source


def _exp_twice(x):
    e = x.exp()
    return e.sum(0), e * 2


MIDDLE_AXIS = {  # a reduction over dims that are not the last, and pointwise work over the same elements
    "softmax_dim0": (lambda x: torch.softmax(x, 0), (40, 301)),  # 301 columns: a partial block
    "log_softmax_dim0": (lambda x: torch.log_softmax(x, 0), (40, 301)),  # a row value, log(sum), per column
    "softmax_channels": (lambda x: torch.softmax(x, 1), (2, 8, 5, 7)),
    "exp_read_twice": (_exp_twice, (9, 300)),
    "batch_norm_train": (lambda x: F.batch_norm(x, None, None, training=True), (4, 6, 5, 7)),
    "exp_sum0": (lambda x: x.exp().sum(0), (9, 300)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MIDDLE_AXIS))
def test_reduction_over_a_middle_axis_fuses_its_pointwise_work(name, backend):
    """The pointwise work over the elements a reduction reads runs in the reduction's kernel, over the kept
    dims then the reduced ones (``scheduler.element_order``): one kernel. In C++ each element's exp is
    computed once: the loop of the sum writes it to the output, and the last loop reads it back."""
    fn, shape = MIDDLE_AXIS[name]
    x = torch.randn(*shape, device=device_for(backend))
    assert_same(fn, x, backend=backend, rtol=1e-4, atol=1e-4)
    kernels = toycompiler.explain(fn, backend=backend)(x).frames[0].backend.kernels
    assert len(kernels) == 1
    if backend == "cpp" and name != "batch_norm_train":  # (the body's exp, not the header's)
        reduced, after = kernels[0].source.split('extern "C" void')[-1].rsplit("= acc", 1)
        assert "std::exp(" in reduced and "std::exp(" not in after  # the loops after the reductions read it back


def test_triton_column_sum_takes_several_columns_per_program():
    x = torch.randn(37, 301, device=device_for("triton"))
    report = toycompiler.explain(lambda x: x.sum(0), backend="triton")(x)
    source = report.frames[0].backend.kernels[0].source
    assert "XBLOCK: tl.constexpr" in source
    launch = report.frames[0].backend.output_code.source
    assert "XBLOCK=1," not in launch and "XBLOCK=1)" not in launch


@pytest.mark.parametrize("columns, per_program",
                         [(1037, 8), (5000, 16), (20000, 32), (40000, 64), (70000, 64), (100, 8)])
def test_column_reduction_spreads_few_columns_over_more_programs(columns, per_program):
    """64 columns a program where that makes 512 programs or more, else 32 or 16 (512 programs or more),
    down to 8 (32 bytes of a row) for at most 2048 columns: 1037 columns were 17 programs of 64, and are
    now 130 programs of 8."""
    x = torch.randn(8, columns, device=device_for("triton"))
    launch = toycompiler.explain(lambda x: x.sum(0), backend="triton")(x).frames[0].backend.output_code.source
    assert f"triton.cdiv({columns}, {per_program})" in launch and f"XBLOCK={per_program}," in launch
    assert_same(lambda x: x.sum(0), x, backend="triton")


def test_triton_launch_fits_the_tile():
    """The warps and the step along r follow the tile: a row held whole takes a warp per KB of the row, to the nearest
    power of two (1000 floats: 4 warps, 1000 bfloat16: 2, 600 floats: 2, 1037 floats: 4 in a tile of 2048; at most 8 for
    rows up to 16384 elements, 16 past that), a warp per 2 KB if it finds an index (1 to 8); a row too long to hold
    (looped) steps 8192 elements with 32 warps (4096 where max_block is 4096), 2048 with 16 warps if it compares (a max,
    a min, or their index); a column tile of up to half of max_block is held whole (but one of 64 columns by more than 8
    rows read in one pass steps [32, 8], or [64, 8] looped where a load walks the rows alone), a looped one steps 512
    elements ([8 columns, 64 rows] for few columns), or 1024 with 8 warps for 16 or 32 columns a program (not for 4); a
    pointwise kernel gives each thread 8 elements, but 4
    of 2-byte data unless Triton can load them together (an even count, or an odd one whose full blocks are unmasked),
    2-D blocks for a transposed read, and one element a thread in blocks of 256 for a read with a stride along x (a
    pooling window's, ``x[:, ::2]``). These choices were timed on an H100 or an H200. Each still gives eager's answer
    (the last kernel's launch is checked)."""
    dev = device_for("triton")
    softmax = lambda x: torch.softmax(x, -1)  # noqa: E731
    gelu = lambda x: torch.nn.functional.gelu(x, approximate="tanh")  # noqa: E731
    cases = [(softmax, (3, 1000), torch.float32, {}, "XBLOCK=1, RBLOCK=1024, num_warps=4)"),
             (softmax, (3, 1000), torch.bfloat16, {}, "XBLOCK=1, RBLOCK=1024, num_warps=2)"),
             (softmax, (3, 600), torch.float32, {}, "XBLOCK=1, RBLOCK=1024, num_warps=2)"),
             # finding an index: a warp per 2 KB, 1 to 8
             (lambda x: x.max(-1), (3, 1037), torch.float32, {}, "XBLOCK=1, RBLOCK=2048, num_warps=2)"),
             (lambda x: x.argmax(-1), (3, 1037), torch.bfloat16, {}, "XBLOCK=1, RBLOCK=2048, num_warps=1)"),
             (lambda x: x.argmin(-1), (3, 3000), torch.bfloat16, {}, "XBLOCK=1, RBLOCK=4096, num_warps=4)"),
             (lambda x: x.amax(-1), (3, 1037), torch.float32, {}, "XBLOCK=1, RBLOCK=2048, num_warps=4)"),  # no index
             (softmax, (2, 5000), torch.float32, {}, "XBLOCK=1, RBLOCK=8192, num_warps=8)"),
             (softmax, (2, 5000), torch.bfloat16, {}, "XBLOCK=1, RBLOCK=8192, num_warps=8)"),
             (softmax, (2, 5000), torch.float32, {"max_block": 4096}, "XBLOCK=1, RBLOCK=2048, num_warps=16)"),
             (softmax, (2, 5000), torch.bfloat16, {"max_block": 4096}, "XBLOCK=1, RBLOCK=2048, num_warps=16)"),
             (lambda x: x.var(-1), (2, 5000), torch.float32, {"max_block": 4096},
              "XBLOCK=1, RBLOCK=4096, num_warps=32)"),
             (lambda x: x.argmax(-1), (2, 5000), torch.float32, {"max_block": 4096},
              "XBLOCK=1, RBLOCK=2048, num_warps=16)"),
             (lambda x: x.amin(-1), (2, 5000), torch.bfloat16, {"max_block": 4096},
              "XBLOCK=1, RBLOCK=2048, num_warps=16)"),
             (lambda x: x.sum(0), (200, 1000), torch.float32, {"max_block": 256}, "XBLOCK=8, RBLOCK=64)"),
             (lambda x: x.sum(0), (200, 3000), torch.float32, {"max_block": 512}, "XBLOCK=16, RBLOCK=64, num_warps=8)"),
             (lambda x: x.sum(0), (200, 64), torch.float32, {"max_block": 256}, "XBLOCK=4, RBLOCK=128)"),
             # a column tile of up to max_block / 2 elements is held whole (the channels of NCHW read once), a
             # larger one looped
             (lambda x: torch.log_softmax(x, 1), (1, 64, 64, 64), torch.float32, {"max_block": 4096},
              "XBLOCK=16, RBLOCK=64)"),
             (lambda x: torch.log_softmax(x, 1), (1, 256, 64, 64), torch.float32, {"max_block": 4096},
              "XBLOCK=16, RBLOCK=64, num_warps=8)"),
             # a tile of 64 columns (of 512 programs or more) by more than 8 rows read in one pass streams through
             # [32, 8] steps; read in several passes (a softmax's max, sum and output), it is held whole
             (lambda x: x.sum(1), (2048, 16, 16), torch.float16, {}, "XBLOCK=32, RBLOCK=8)"),
             (lambda x: x.sum(1), (4096, 8, 8), torch.float16, {}, "XBLOCK=64, RBLOCK=8)"),  # a step: held whole
             # but with a load along the rows alone (a factor per row, here x[0, r, 0]), it is looped in [64, 8] steps
             (lambda x: (x * x[0, :, :1]).sum(1), (2048, 16, 16), torch.float32, {}, "XBLOCK=64, RBLOCK=8)"),
             *[(lambda x: torch.log_softmax(x, 1), (2048, 16, 16), torch.float32, {}, "XBLOCK=64, RBLOCK=16)")]
             * (dev == "cuda"),  # (12 s in the interpreter)
             (gelu, (4096,), torch.bfloat16, {}, "XBLOCK=1024, num_warps=4)"),  # 8 a thread, in 16-byte loads
             (gelu, (4096,), torch.float32, {}, "XBLOCK=1024, num_warps=4)"),  # 8 floats a thread
             (gelu, (999,), torch.float32, {}, "XBLOCK=1024, num_warps=4)"),  # one by one, still a 128-byte line
             (gelu, (4133,), torch.bfloat16, {}, "XBLOCK=1024, num_warps=4)"),  # odd size: full blocks unmasked
             (gelu, (999,), torch.bfloat16, {}, "XBLOCK=1024, num_warps=8)"),  # odd, one masked block: one by one
             (gelu, (4098,), torch.bfloat16, {}, "XBLOCK=1024, num_warps=4)"),  # even: loaded in pairs at least
             # a transposed read: 2-D blocks (R rows by C columns), each load contiguous along one of their axes
             (lambda x: x.t().contiguous() * 2, (48, 64), torch.bfloat16, {},
              "R=64, C=48, YBLOCK=32, XBLOCK=64, num_warps=4)"),
             # from 2^22 elements, 64 x 64 with 8 warps (only on a GPU: too slow for the interpreter)
             *[(lambda x: x.permute(0, 2, 1).contiguous() * 2, (4, 1024, 1025), torch.float32, {},
                "R=4100, C=1024, YBLOCK=64, XBLOCK=64, num_warps=8)")] * (dev == "cuda"),
             # stored in eager's order (the transpose's), so read in order: 16-byte loads
             (lambda x: x.t() * 2, (48, 64), torch.bfloat16, {}, "XBLOCK=1024, num_warps=4)"),
             # a read with a stride along x: one element a thread, blocks of 256; also under the clamps of a
             # padded window (a GPU pool's; on a CPU it reads a padded copy with plain strided loads)
             (lambda x: x[:, ::2] + 1, (64, 200), torch.float32, {}, "XBLOCK=256, num_warps=8)"),
             (lambda x: F.max_pool2d(x, 3, 2, 1), (2, 3, 40, 40), torch.float32, {}, "XBLOCK=256, num_warps=8)"),
             (lambda x: x[:, 1:] + 1, (64, 200), torch.float32, {}, "XBLOCK=1024, num_warps=4)"),  # a shift: stride 1
             (lambda x: x.flip(-1) + 1, (64, 200), torch.float32, {}, "XBLOCK=1024, num_warps=4)")]  # backwards
    for fn, shape, dtype, options, launch in cases:
        x = torch.randn(*shape, device=dev).to(dtype)
        assert_same(fn, x, compiled=toycompiler.compile(fn, backend="triton", options=options), rtol=1e-2, atol=1e-3)
        source = toycompiler.explain(fn, backend="triton", options=options)(x).frames[0].backend.output_code.source
        launches = [line for line in source.splitlines() if line.lstrip().startswith("triton_") and "](" in line]
        assert launch in launches[-1], launches


@pytest.fixture
def rows_over_4096_loop():
    """Rows of 5000 elements are held whole by default (config.max_block, 32768); looped, they test the loops
    on a size Triton's CPU interpreter runs quickly."""
    with toycompiler.config.patch(max_block=4096):
        yield


def test_a_row_read_in_several_loops_stays_in_l2_until_the_last(rows_over_4096_loop):
    """A looped softmax over rows of 64 KB or less reads its row three times (max, sum, output): the first
    two loops load with ``evict_last``, the last with ``evict_first``; a looped row sum, read once, takes
    no hint."""
    dev = device_for("triton")
    x = torch.randn(3, 5000, device=dev)
    for fn, hints in [(lambda x: torch.softmax(x, -1), ["evict_last", "evict_last", "evict_first"]),
                      (lambda x: x.sum(-1), [])]:
        assert_same(fn, x, backend="triton", rtol=1e-4, atol=1e-5)
        kernel = toycompiler.explain(fn, backend="triton")(x).kernels[0].source
        assert "for roffset" in kernel
        loads = [line for line in kernel.splitlines() if "tl.load(" in line and "rmask" in line]
        assert [h for line in loads for h in ("evict_last", "evict_first") if h in line] == hints, loads
        assert "@EVICT@" not in kernel


def _softmax_rows(n, dtype):
    """Rows of ``n`` with what online softmax must get right: a NaN, a row of -inf, -inf before the first
    finite value (the running max is -inf for a while), +inf, values of -1e30 (an exp that underflows)."""
    x = torch.randn(6, n) * 5
    inf = float("inf")
    x[1, 7], x[2], x[3, : n // 2], x[4, n - 3], x[5, 100:] = float("nan"), -inf, -inf, inf, -1e30
    return x.to(device_for("triton"), dtype)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "sum_exp", "bf16", "causal", "cross_entropy", "other_v",
                                  "short_rows", "short_rows_cross_entropy"])
def test_looped_softmax_computes_max_and_sum_in_one_loop(name, monkeypatch, rows_over_4096_loop):
    """Over long rows (64 KB on a GPU, 12 KB here: the interpreter is slow), a looped ``max`` and the ``sum``
    of ``exp(v - max)`` over the same ``v`` share one loop (online softmax: each lane rescales its sum when
    its max grows), whatever computes ``v``. A sum of ``exp`` of another value minus the max keeps its own
    loop (its terms could overflow before the max is known), and so does the sum over shorter rows."""
    monkeypatch.setattr(triton_codegen, "ONLINE_MIN_ROW_BYTES", 12000)
    causal = torch.ones(8, 5000, dtype=torch.bool).triu(1).to(device_for("triton"))
    fn, x, loops = {
        "softmax": (lambda x: torch.softmax(x, -1), _softmax_rows(5000, torch.float32), 2),
        "log_softmax": (lambda x: torch.log_softmax(x * 2, -1), _softmax_rows(4500, torch.float32), 2),
        "sum_exp": (lambda x: (x - x.amax(-1, keepdim=True)).exp().sum(-1), _softmax_rows(5000, torch.float32), 1),
        "bf16": (lambda x: torch.softmax(x.float(), -1).to(x.dtype), _softmax_rows(7000, torch.bfloat16), 2),
        "causal": (lambda x: torch.softmax(x.masked_fill(causal, float("-inf")), -1),
                   _softmax_rows(5000, torch.float32).reshape(3, 2, 5000)[:, :1].expand(3, 8, 5000).contiguous(), 2),
        "cross_entropy": (lambda x: torch.nn.functional.cross_entropy(x, torch.arange(6, device=x.device) * 800),
                          torch.randn(6, 5000, device=device_for("triton")), 1),  # the pick: torch's gather
        "other_v": (lambda x: (x * 0.5 - x.amax(-1, keepdim=True)).exp().sum(-1),
                    _softmax_rows(5000, torch.float32), 2),
        "short_rows": (lambda x: torch.softmax(x.float(), -1), _softmax_rows(5000, torch.bfloat16), 3),  # 10 KB
        "short_rows_cross_entropy": (lambda x: torch.nn.functional.cross_entropy(  # the row's bytes, not the target's
            x.float(), torch.arange(6, device=x.device) * 800), torch.randn(6, 5000, device=device_for("triton"))
            .bfloat16(), 2),  # the pick (of the float copy) shares the max's loop
    }[name]
    assert_same(fn, x, backend="triton", rtol=1e-2 if x.dtype == torch.bfloat16 else 1e-4, atol=1e-5)
    source = "\n".join(k.source for k in toycompiler.explain(fn, backend="triton")(x).kernels)
    assert source.count("for roffset") == loops, source
    assert ("* tl.exp(acc" in source) == (name not in ("other_v", "short_rows", "short_rows_cross_entropy")), source


def test_known_sizes_are_numbers_in_the_masks():
    """A size known when compiling is written into the kernel's mask as a number, so Triton knows which power
    of two divides it: bfloat16 rows of 1000, masked past 1000 in tiles of 1024, load 8 elements at a time
    (a softmax over [65536, 1000] took 290 us with ``rnumel`` in the mask, 86 us with 1000; H100). A size
    only known when running (dynamic shapes) stays the kernel's argument."""
    x = torch.randn(4, 1000, device=device_for("triton"), dtype=torch.bfloat16)
    for fn, mask in [(lambda x: torch.softmax(x, -1), "rmask = rindex < 1000"),
                     (lambda x: x.amax(0), "rmask = rindex < 4"), (lambda x: x.sin(), "xmask = xindex < 4000")]:
        assert_same(fn, x, backend="triton", rtol=1e-2, atol=1e-2)
        assert mask in toycompiler.explain(fn, backend="triton")(x).kernels[0].source
    dynamic = toycompiler.explain(lambda x: torch.softmax(x, -1), backend="triton", dynamic=True)(x)
    assert "rmask = rindex < rnumel" in dynamic.kernels[0].source


@pytest.mark.skipif(not torch.cuda.is_available(), reason="rows of 20000 take minutes in Triton's interpreter")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rows_past_16384_are_held_whole_with_16_warps(dtype):
    """Rows of 16385 to 32768 elements are held whole (a [1, 32768] tile, 16 warps) and still give eager's
    answer: a softmax, a layer norm with weight and bias, a variance. 1024 rows, so no row is split."""
    x = torch.randn(1024, 20000, device="cuda").to(dtype)
    w, b = torch.randn(20000, device="cuda").to(dtype), torch.randn(20000, device="cuda").to(dtype)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    for fn in (lambda x: torch.softmax(x, -1), lambda x: F.layer_norm(x, (20000,), w, b), lambda x: x.var(-1)):
        assert_same(fn, x, backend="triton", rtol=tol, atol=tol)
        source = toycompiler.explain(fn, backend="triton")(x).frames[0].backend.output_code.source
        assert "XBLOCK=1, RBLOCK=32768, num_warps=16)" in source, source


def test_a_column_softmax_counts_the_bytes_of_all_its_columns_for_online_softmax(monkeypatch):
    """Online softmax (``TritonRenderer.reduction_group``) counts the bytes one program reads in its loops: a
    column softmax's program reads a block of columns of every row, here 300 rows of 8 floats (9.6 KB, over
    the limit set to 4 KB), where one column's 1.2 KB is under it. A log_softmax over the middle axis of
    [64, 1000, 256] ran at 0.77x torch.compile in three loops, 1.09x in two (H200). A ``max_block`` of 2048
    makes the rows loop at this size (at the default, 300 rows of 16 columns do: [4, 300, 2100])."""
    fn = lambda x: torch.log_softmax(x, 1)  # noqa: E731
    x = torch.randn(2, 300, 48, device=device_for("triton")) * 4  # 96 columns: 8 a program
    small = {"graph_cache": False, "max_block": 2048}  # (the limit is no part of the cache key)
    for limit, online, loops in ((4096, True, 2), (65536, False, 3)):
        monkeypatch.setattr(triton_codegen, "ONLINE_MIN_ROW_BYTES", limit)
        assert_same(fn, x, compiled=toycompiler.compile(fn, backend="triton", options=small), rtol=1e-4, atol=1e-4)
        kernel = toycompiler.explain(fn, backend="triton", options=small)(x).frames[0].backend.kernels[0].source
        assert ("online softmax" in kernel) == online and kernel.count("for roffset in range") == loops, kernel


def _channels_last(*shape):
    return torch.randn(*shape).to(memory_format=torch.channels_last)


INNER_KEPT_AXIS = {  # memory runs along a kept axis that is not the last kept one
    "channels_last_sum_w": (lambda x: x.sum(-1), lambda: _channels_last(2, 5, 3, 7)),  # C = 5: a partial block
    "channels_last_amax_h_keepdim": (lambda x: x.amax(2, keepdim=True), lambda: _channels_last(2, 70, 3, 4)),
    "channels_last_var_w": (lambda x: x.var(-1), lambda: _channels_last(3, 9, 4, 6)),
    "channels_last_softmax_w": (lambda x: torch.softmax(x, -1), lambda: _channels_last(2, 6, 3, 5)),
    "permuted_sum": (lambda x: x.permute(0, 2, 1).sum(-1) * 2, lambda: torch.randn(3, 11, 301)),
    "permuted_argmax": (lambda x: x.permute(2, 0, 1).argmax(-1), lambda: torch.randn(4, 9, 33)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(INNER_KEPT_AXIS))
def test_the_kept_axis_memory_runs_along_becomes_the_innermost_loop(name, backend):
    """A sum over W of a channels-last [N, C, H, W] tensor keeps n, c, h and reads along c: its loops run over
    n, h outside and c inside (``KernelRenderer.column_order``), in column order, so each step over w reads a
    contiguous run of channels. The output keeps its own layout, written through the new loop order."""
    fn, make = INNER_KEPT_AXIS[name]
    x = make().to(device_for(backend))
    assert_same(fn, x, backend=backend, rtol=1e-4, atol=1e-4)
    kernel = toycompiler.explain(fn, backend=backend)(x).kernels[0].source
    body = kernel.split("@triton.jit" if backend == "triton" else 'extern "C" void')[-1]
    inner = max(re.findall(r"\bx\d+\b", body), key=lambda v: int(v[1:]))  # the innermost kept loop
    load = next(line for line in body.splitlines() if "in_ptr0 +" in line or "in_ptr0[" in line)
    assert re.search(rf"(?<![\w*]){inner}\b", load), body  # its step is one element of the input
    assert backend == "triton" or "column order" in kernel


@pytest.mark.parametrize("rows", [5, 16, 19])
def test_cpp_column_reduction_reads_rows_in_steps(rows):
    """A C++ column reduction reads 8 rows (``CppRenderer.row_loops``) in each pass over its block of columns, then the
    rest of the rows one a pass: 5 rows are all rest, 16 all steps, 19 both. A sum, an argmax (its index loop runs
    the same loops) and a softmax (its exp written to the output in the sum's loops, read back in the last), with
    the row count known when compiling and only when running."""
    fn = lambda x: (x.sum(0), x.argmax(0), torch.softmax(x, 0))  # noqa: E731
    x = torch.randn(rows, 70)
    x[rows - 1, 3] = float("nan")  # in the last row: the rest loop's, where there is one
    for dynamic in (False, True):
        compiled = toycompiler.compile(fn, backend="cpp", dynamic=dynamic)
        assert_same(fn, x, compiled=compiled, rtol=1e-4, atol=1e-4)
        assert_same(fn, torch.randn(rows + 3, 70), compiled=compiled, rtol=1e-4, atol=1e-4)
    source = toycompiler.explain(fn, backend="cpp")(x).kernels[0].source
    assert ("r0s += 8" in source) == (rows >= 8)
    assert ("for (int64_t r0 = 16; r0 < 19; ++r0)" in source) == (rows == 19)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reordered_kept_loops_with_sizes_known_only_when_running(backend):
    """The kept loops are reordered for sizes known only when running too: ``x.permute(2, 0, 1)`` of a
    contiguous [a, b, c] keeps (c, a), reads along c, and reduces over b. One compiled graph (dynamic=True)
    gives eager's answer for three shapes."""
    for fn in (lambda x: x.permute(2, 0, 1).sum(-1), lambda x: torch.softmax(x.permute(2, 0, 1), -1),
               lambda x: x.permute(2, 0, 1).argmax(-1)):
        compiled = toycompiler.compile(fn, backend=backend, dynamic=True)
        for shape in ((3, 5, 7), (4, 9, 10), (2, 6, 33)):
            assert_same(fn, torch.randn(*shape, device=device_for(backend)), compiled=compiled, rtol=1e-4, atol=1e-4)
        assert len(compiled.compiled_frames) == 1 and compiled.compiled_frames[0].symbolic_sizes
        if backend == "cpp":
            report = toycompiler.explain(fn, backend=backend, dynamic=True)(torch.randn(3, 5, 7))
            assert "column order" in report.kernels[0].source


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_triton_reordered_kept_loops_in_half_precision_with_nan_and_inf(dtype):
    """Half-precision channels-last inputs, reduced over W in column order (accumulated in float32), with a NaN
    and infinities in the rows: eager's answers, NaN and inf included."""
    x = torch.randn(2, 37, 3, 9, device=device_for("triton")).to(dtype).to(memory_format=torch.channels_last)
    x[0, 5, 1, 4], x[1, 36, 2, 0], x[1, 2, 0, 8] = float("nan"), float("inf"), float("-inf")
    for fn in (lambda x: x.sum(-1), lambda x: x.amax(-1), lambda x: torch.softmax(x.float(), -1).to(x.dtype)):
        assert_same(fn, x, backend="triton", rtol=2e-2, atol=2e-2)


def _gelu_and_its_column_sum(x, b):
    g = F.gelu(x + b)
    return g, g.sum(0)


def _sigmoid_and_its_sum_over_w(x):  # channels-last: read along c, kept with n and h
    s = x.sigmoid() * 2
    return s, s.sum(3)


FIRST = {  # stored elements that read no row value, and a column reduction of them or beside them
    "gelu_and_column_sum": (_gelu_and_its_column_sum, [(37, 301), (301,)], False),
    "relu_gate_and_column_sum": (lambda x, w: (torch.where(x > 0, w * 0.5, 0.0), x.relu().sum(0)),
                                 [(29, 70), (70,)], False),
    "channels_last_sum_over_w": (_sigmoid_and_its_sum_over_w, [(2, 19, 3, 5)], True),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FIRST))
def test_a_column_reductions_elements_that_need_no_row_value_are_stored_first_in_memory_order(name, backend):
    """In column order the C++ kernel stores the elements that read no row value first, in a loop nest of their own
    over memory in order, then reduces, reading back those it reduces (``CppRenderer.x_loop_open``): a bias's
    gradient, the column sum of the input's, computes GELU's derivative once an element. Stored beside the
    reduction, a block of columns at a time down every row, they took twice as long. Both backends give eager's
    answer, with odd sizes, a partial last block of columns, and a channels-last input."""
    fn, shapes, channels_last = FIRST[name]
    args = [torch.randn(*s, device=device_for(backend)) for s in shapes]
    args[0] = args[0].to(memory_format=torch.channels_last) if channels_last else args[0]
    assert_same(fn, *args, backend=backend, rtol=1e-4, atol=1e-4)
    if backend == "cpp":
        kernels = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend.kernels
        source = next(k.source for k in kernels if "column order" in k.source)
        body = source.split('extern "C" void')[-1]
        first, columns = body.split("for (int64_t xb = 0;")
        assert "out_ptr0[" in first and "out_ptr0[" not in columns.split("= acc")[-1]  # stored before the columns
        if name == "gelu_and_column_sum":
            assert body.count("toy_erf(") == 1 and "= out_ptr0[" in columns  # computed once, read back
        if "g++" in os.path.basename(toycompiler.config.cxx):  # the first loop nest's inner loop vectorises
            loop = next(i for i, line in enumerate(source.splitlines(), 1) if "#pragma omp simd" in line)
            assert any(loop < n <= loop + 4 for n in gcc_vectorised_lines(source)), source


def test_a_costly_value_broadcast_into_a_reduction_is_computed_once_an_element_on_a_cpu():
    """``(x.relu() * w.sigmoid()).sum()``: inlined into the sum, each weight's sigmoid was computed once for each
    row (0.9 ms over [2048, 1531], one thread); on a CPU it is a kernel of its own over w, read by the sum, as
    Inductor realizes a broadcast value with an exp, log, sigmoid or tanh (``ir.COSTLY``). On a GPU the sum computes
    it where it reads it (bandwidth, not arithmetic, is what a GPU kernel waits for). The rule goes by the device:
    Triton's CPU interpreter follows the CPU's."""
    fn = lambda x, w: (x.relu() * w.sigmoid()).sum()  # noqa: E731
    for backend in BACKENDS:
        args = torch.randn(33, 70, device=device_for(backend)), torch.randn(70, device=device_for(backend))
        assert_same(fn, *args, backend=backend, rtol=1e-4, atol=1e-4)
        kernels = toycompiler.explain(fn, backend=backend)(*args).frames[0].backend.kernels
        assert [k.name for k in kernels] == ([f"{backend}_sigmoid_0", f"{backend}_relu_mul_sum_1"]
                                             if args[0].device.type == "cpu" else ["triton_relu_sigmoid_mul_sum_0"])


def test_a_costly_value_that_several_ops_read_is_computed_once_on_a_cpu():
    """The backward of ``gelu(rms_norm(x, w)).sum()``: GELU's derivative (an erf and an exp an element) is read by
    the row sum of the input's gradient, by that gradient itself and by the column sum of the weight's. Inlined
    into each reduction, it was computed three times an element. On a CPU a value with a ``COSTLY`` op that two
    or more ops read is read from memory by the reductions (Inductor's ``should_realize_on_reuse``, its CPU's):
    computed once, stored, read back. Rows of 70 (a rest past the vectors) and a neighbour: the row and column
    sums of one ``exp``."""
    fn = lambda x, w: F.gelu(F.rms_norm(x, (70,), w)).sum()  # noqa: E731
    x, w = torch.randn(33, 70, requires_grad=True), torch.randn(70, requires_grad=True)
    assert_same(fn, x, w, backend="cpp", backward=True, rtol=1e-4, atol=1e-4)
    backward = toycompiler.explain(fn, backend="cpp")(x, w).frames[0].backend.backward
    bodies = "".join(k.source.split('extern "C" void')[-1] for k in backward.kernels)
    assert bodies.count("toy_erf(") == 1 and bodies.count("std::exp(") == 1, bodies
    sums = lambda x: (lambda e: (e.sum(0), e.sum(1)))(x.exp())  # noqa: E731
    assert_same(sums, torch.randn(37, 70), backend="cpp", rtol=1e-4, atol=1e-4)
    kernels = toycompiler.explain(sums, backend="cpp")(torch.randn(37, 70)).frames[0].backend.kernels
    assert "".join(k.source.split('extern "C" void')[-1] for k in kernels).count("std::exp(") == 1


MEMORY_ORDER = {  # reductions over several dims of a channels-last [4, 6, 5, 7] tensor; the load read contiguously
    "sum_of_everything": (lambda x: x.sum(), "in_ptr0[r0]"),
    "sum_a_sample": (lambda x: x.relu().sum((1, 2, 3)), "in_ptr0[(r0 + 210*x0)]"),
    "max_a_sample": (lambda x: x.amax((1, 2, 3)) - x.amin((1, 2, 3)), "in_ptr0[(r0 + 210*x0)]"),
    "argmax_of_everything": (lambda x: x.argmax(), None),  # an index counts in the dims' own order
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MEMORY_ORDER))
def test_a_reduction_walks_its_reduced_dims_in_memory_order(name, backend):
    """The reduced dims are looped over in the order of memory, the one read contiguously innermost
    (``lowering_reductions.make_reduction``): a sum over every dim of a channels-last tensor read its channels with
    a stride of C at every element (2.5 ms over [16, 64, 28, 28] floats, torch.compile 0.1; one thread). Here the
    C++ loops merge into one contiguous loop. An argmax keeps the dims' own order: its index counts in it."""
    fn, contiguous_load = MEMORY_ORDER[name]
    x = torch.randn(4, 6, 5, 7, device=device_for(backend)).to(memory_format=torch.channels_last)
    x[1, 2, 3, 4] = 9.0  # one largest element: the argmax's index is eager's
    assert_same(fn, x, backend=backend, rtol=1e-4, atol=1e-4)
    if backend == "cpp" and contiguous_load:
        kernels = toycompiler.explain(fn, backend="cpp")(x).frames[0].backend.kernels
        assert any(f"= {contiguous_load};" in k.source for k in kernels), kernels[-1].source


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_reduction_of_gathered_rows_reads_them_along_the_row(backend):
    """GPT-2's input layer: token embeddings gathered through the ids, plus position embeddings, then a layer
    norm over each row. The gathers vary as the ids do (``ir.streamed``): counted as vectors read again for every
    output, they left the ids' own load (contiguous along the tokens) to choose a column order, which stored the
    embedding sum with a stride of a row along the vector loop (0.15x torch.compile over [8, 1024] tokens of 768,
    one thread). Eager's answer on both backends, and a row reduction in C++."""
    dev = device_for(backend)
    wte, wpe, idx = torch.randn(50, 24, device=dev), torch.randn(16, 24, device=dev), torch.randint(0, 50, (3, 16))

    def embed_and_norm(idx):
        x = wte[idx] + wpe[torch.arange(16, device=idx.device)]
        return x, F.layer_norm(x, (24,))
    assert_same(embed_and_norm, idx.to(dev), backend=backend, rtol=1e-4, atol=1e-4)
    if backend == "cpp":
        kernels = toycompiler.explain(embed_and_norm, backend="cpp")(idx).frames[0].backend.kernels
        assert [k for k in kernels if "sum" in k.name] and not any("column order" in k.source for k in kernels)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_sum_over_gathered_rows_reads_each_row_along_it(backend):
    """A bag of embeddings: ``F.embedding(idx, wte).mean(1)`` sums each sequence's rows. The ids' own load is
    contiguous along the tokens it sums, but it varies along the outer kept index only, one vector for every
    inner output (``ir.streamed``): the gathered rows, contiguous along the kept columns, choose column order.
    In row order each row was read a column at a time (0.75x torch.compile over [8, 512] tokens of 768, one
    thread). Negative ids count from the end; eager's answer on both backends, column order in C++."""
    dev = device_for(backend)
    wte, idx = torch.randn(50, 37, device=dev), torch.randint(-50, 50, (3, 19), device=dev)
    fns = {"mean": lambda idx: F.embedding(idx.remainder(50), wte).mean(1),
           "weighted": lambda idx, w: (wte[idx] * w[:, :, None]).sum(1)}
    assert_same(fns["mean"], idx, backend=backend, rtol=1e-5, atol=1e-5)
    assert_same(fns["weighted"], idx, torch.randn(3, 19, device=dev), backend=backend, rtol=1e-5, atol=1e-5)
    if backend == "cpp":
        for fn, args in ((fns["mean"], (idx,)), (fns["weighted"], (idx, torch.randn(3, 19)))):
            kernels = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend.kernels
            assert any("column order" in k.source for k in kernels if "sum" in k.name), [k.source for k in kernels]
