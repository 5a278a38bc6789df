"""C++ row kernels that keep a costly element value between loops, and argmax on both backends, against eager.

A softmax row kernel needs ``exp(x - max)`` twice: for the sum, and for the output. The loop that
sums writes the values into the output, and the last loop reads them back and divides (as eager's
softmax does), so ``exp`` runs once per element. These tests check that, and eager's answers for
odd sizes (vector tails), NaN and infinities, and kernels where the value cannot be kept.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for


def softmax_manual(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), (7, 1037)),
    "softmax_manual": (softmax_manual, (5, 33)),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), (6, 19)),
    "softmax_and_its_exp": (lambda x: (torch.softmax(x, -1), torch.exp(x - x.amax(-1, keepdim=True))), (4, 21)),
    "double_output": (lambda x: (torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)).double(), (3, 17)),
    "softmax_3d_last": (lambda x: torch.softmax(x, -1), (2, 3, 45)),
}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", list(CASES))
def test_row_kernels_match_eager(name, backend):
    fn, shape = CASES[name]
    assert_same(fn, torch.randn(*shape, device=device_for(backend)), backend=backend, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_softmax_with_nan_and_infinities(backend):
    x = torch.randn(5, 40, device=device_for(backend))
    x[0, 3], x[1, 5], x[2, :] = float("nan"), float("inf"), float("-inf")
    x[3, 0], x[3, 1] = float("inf"), float("-inf")
    assert_same(lambda x: torch.softmax(x, -1), x, backend=backend)


@pytest.mark.parametrize("size", [100, 1037])
def test_softmax_computes_exp_once_per_element(size):
    """Rows of 1037: the summing loop writes ``exp`` into the output, the last loop reads it back. Rows of 100:
    the sum's values are staged in an array (``CppRenderer.lanes``), which the last loop reads instead."""
    report = toycompiler.explain(lambda x: torch.softmax(x, -1), backend="cpp")(torch.randn(8, size))
    source = report.frames[0].backend.kernels[0].source
    body = source[source.index("vector paths"):]
    assert body.count("std::exp(") == 1
    last = body[body.rindex("for (int64_t r0"):]  # the last loop
    assert ("= out_ptr0[" in last) == (size == 1037) and ("= acc3_row[r0] / acc3;" in last) == (size == 100), last
    assert body.count("out_ptr0[") == (3 if size == 1037 else 1)  # (written, read back, written; or written once)


@pytest.mark.parametrize("size", [20, 40, 128, 1037])
def test_a_softmax_whose_exp_is_saved_for_the_backward_computes_it_once(size):
    """Training ``(s.softmax(-1) * v).sum()``: the forward stores ``exp(s - max)`` for the backward. The loop that
    sums it writes it where it computes it (``KernelRenderer.spill``); computed again in the last loop, it was two
    exps an element. Rows of 20 (a block of rows at a time), 40 and 128 (staged), 1037; gradients as eager's."""
    fn = lambda s, v: (s.softmax(-1) * v).sum()  # noqa: E731
    s, v = torch.randn(37, size, requires_grad=True), torch.randn(37, size, requires_grad=True)
    assert_same(fn, s, v, backend="cpp", backward=True, rtol=1e-4, atol=1e-4)
    forward = toycompiler.explain(fn, backend="cpp")(s, v).frames[0].backend
    counts = [k.source.split('extern "C" void')[-1].count("std::exp(") for k in forward.kernels]
    # (rows of 20: the copied rows' max loop needs its own; the sum after: one kernel, or two where it is split)
    assert counts[0] == (2 if size == 20 else 1) and not any(counts[1:]), counts


@pytest.mark.parametrize("size", [7, 20, 128, 1037])
@pytest.mark.parametrize("fn, backward", [
    (lambda x, w: (x.square().sum(-1), x * w), False),  # (x * w needs no row value)
    (lambda x, w: F.embedding(torch.arange(x.shape[0]).flip(0), x).square().sum() * w.sum(), True)])
def test_an_output_that_needs_no_row_value_is_written_in_the_first_loop_over_the_row(fn, backward, size):
    """``x * w`` beside ``x.square().sum(-1)``, and a looked-up row's derivative saved for the backward: written
    where the sum's loop reads the row, not in a second pass over it (an embedding's training step read its gathered
    rows twice). Odd lengths (vector tails), NaN and infinities; gradients as eager's."""
    x, w = torch.randn(37, size, requires_grad=backward), torch.randn(size, requires_grad=backward)
    x.data[3, :3] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    assert_same(fn, x, w, backend="cpp", backward=backward, rtol=1e-4, atol=1e-4)
    forward = toycompiler.explain(fn, backend="cpp")(x, w).frames[0].backend
    body = forward.kernels[-1].source.split('extern "C" void')[-1]
    assert body.count("in_ptr0[") == 1, body  # x, read in one place


def test_a_softmax_over_channels_last_channels_reads_its_staged_values_back():
    """Rows along C of a channels-last input, an NCHW output (written with a stride along the row): the last loop
    reads the ``exp`` values from the staged array, and the output is written once. NaN, +inf, a row of -inf."""
    x = torch.randn(2, 40, 5, 7).to(memory_format=torch.channels_last)
    x[0, 3, 1, 1], x[1, :, 2, 2], x[1, 5, 0, 0] = float("nan"), float("-inf"), float("inf")
    assert_same(lambda x: torch.softmax(x, 1), x, backend="cpp")
    source = toycompiler.explain(lambda x: torch.softmax(x, 1), backend="cpp")(x).kernels[0].source
    body = source[source.index("vector paths"):]
    assert body.count("out_ptr0[") == 1 and re.search(r"= acc\d+_row\[r0\] / acc\d+;", body), body


def test_exp_is_recomputed_when_the_output_has_another_dtype():
    fn = lambda x: (torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)).double()  # noqa: E731
    report = toycompiler.explain(fn, backend="cpp")(torch.randn(4, 30))
    kernel = report.frames[0].backend.kernels[0].source
    assert "= out_ptr0[" not in kernel


ARGMAX_CASES = {  # odd rows (vector tails), a pointwise body, rows over three unmerged axes, max with its index
    "max_dim": lambda x: torch.max(x, -1),
    "argmin_of_body": lambda x: (x * x - 1).argmin(-1, keepdim=True),
    "argmax_three_axes": lambda x: x.permute(1, 0, 2).argmax(),
    "argmax_all": lambda x: x.argmax(),
    "min_and_argmax": lambda x: (x.min(-1).indices, x.argmax(-1), x.amax(-1)),
    "max_dim_columns": lambda x: torch.max(x, 1),  # column order: a block of columns, r outside
    "argmin_columns": lambda x: x.argmin(0),
}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", list(ARGMAX_CASES))
def test_argmax_gives_the_first_index_of_the_max_or_of_the_first_nan(name, backend):
    """Ties (a row of equal values, a repeated max), a NaN (the first NaN wins), a row of -inf, ints."""
    x = argmax_input(37).to(device_for(backend))
    assert_same(ARGMAX_CASES[name], x, backend=backend)
    assert_same(ARGMAX_CASES[name], (x.nan_to_num() * 4).to(torch.int32), backend=backend)


def argmax_input(length: int) -> torch.Tensor:
    x = torch.randn(3, 5, length).round(decimals=1)
    x[0, 0, :], x[0, 1, 4], x[0, 1, length - 7], x[0, 2, 9] = 2.0, 9.0, 9.0, float("-inf")
    x[1, 1, 6], x[1, 1, length - 17], x[1, 2, 7] = float("nan"), float("nan"), float("inf")
    x[2, 3, :] = float("-inf")
    return x


TRANSCENDENTAL_ARGMAX = {
    "max_of_exp": lambda x: torch.max(x.exp(), 0),
    "max_of_sin_rows": lambda x: torch.max(x.sin(), -1),
    "argmin_of_tanh": lambda x: x.tanh().argmin(0),
    "argmax_of_erf": lambda x: torch.erf(x).argmax(0),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", list(TRANSCENDENTAL_ARGMAX))
def test_an_argmax_of_a_transcendental_in_column_order_finds_its_max(name, dtype):
    """In column order and over short rows the index is found in the max's own loop. A second loop computed the
    values again, and an ``exp`` or ``sin`` vectorised otherwise there came out an ulp apart: no element equalled
    the max, and the index was INT64_MAX. Columns of [20, 131], rows of 20 (short rows), -inf, NaN, ties."""
    fn = TRANSCENDENTAL_ARGMAX[name]
    x = torch.randn(20, 131, dtype=dtype).round(decimals=1)
    x[:, 3], x[5, 4], x[9, 4], x[0, 7], x[:, 8] = float("-inf"), float("nan"), float("nan"), float("nan"), 0.5
    for x in (x, x.t().contiguous()):
        assert_same(fn, x, backend="cpp")


@pytest.mark.parametrize("name", ["max_dim", "argmin_of_body", "min_and_argmax"])
def test_triton_argmax_over_rows_too_long_to_hold_whole(name):
    """Looped rows (past config.max_block): each lane keeps its first max's index, then the lanes that hold
    the row's max give the least. The same ties, NaN and -inf rows as above, the max 4 steps apart."""
    x, options = argmax_input(3000).to(device_for("triton")), {"max_block": 512}
    fn = ARGMAX_CASES[name]
    assert_same(fn, x, compiled=toycompiler.compile(fn, backend="triton", options=options))
    assert_same(fn, (x.nan_to_num() * 4).to(torch.int32), compiled=toycompiler.compile(fn, backend="triton",
                                                                                       options=options))
    source = toycompiler.explain(fn, backend="triton", options=options)(x).frames[0].backend.kernels[0].source
    assert "for roffset" in source and "_index = tl.where(" in source


@pytest.mark.parametrize("length", [29, 30, 1029, 1037, 1038, 1041])
def test_row_argmax_finds_its_max_in_every_lane_of_the_rest(length):
    """Row k's max at k (an identity matrix), so every position of a row, the masked rest's lanes too, holds a
    max once. Written as a select, the index's update lost lanes of the rest in GCC 12's AVX2 code: over rows
    of 1037 floats no index was found for a max at 1028 (INT64_MAX)."""
    x = torch.eye(length)
    assert_same(lambda x: (torch.max(x, -1).indices, (-x).argmin(-1), x.argmax(-1)), x, backend="cpp")


def test_row_argmax_vectorises_as_a_max_then_a_min_over_indices():
    report = toycompiler.explain(lambda x: torch.max(x, -1), backend="cpp")(torch.randn(8, 100))
    source = report.frames[0].backend.kernels[0].source
    body = source[source.index("vector paths"):]
    # the rests' masks, and the index's update (an ``if`` that GCC turns into a masked min; see above)
    assert body.count("if (") == 4 and "if (r0 < 100) {" in body and body.count("acc1_index = std::min") == 2
    assert source.count("acc0 = std::max(acc0, ") == 2 and "acc1 = std::max" not in source  # one max (vectors, rest)
    assert "reduction(max:acc0)" in source and "acc0_nan |= " in source  # OpenMP's max, and a NaN flag
    assert "#pragma omp simd reduction(min:acc1_index)" in source


# Row reductions: rows shorter than a vector of 16 floats, whole vectors, vectors and a remainder; a NaN in a
# vector or in the remainder (a max or min's NaN flag), every reduction kind and accumulator type.
LANE_SIZES = [1, 7, 16, 17, 47, 48, 100, 255, 256]  # (CppRenderer.lanes: 4 lanes below 48, 8 below 256)
LANE_OPS = {
    "sum": lambda x: x.sum(-1),
    "amax": lambda x: x.amax(-1),
    "amin": lambda x: x.amin(-1),
    "max_and_argmax": lambda x: torch.max(x, -1),
    "prod": lambda x: (x * 0.1 + 1).prod(-1),
    "any": lambda x: (x > 1.5).any(-1),
    "all": lambda x: (x > -1.5).all(-1),
    "int_sum": lambda x: (x * 100).long().sum(-1),
    "int_amax": lambda x: (x * 100).int().amax(-1),
    "double_sum": lambda x: x.double().sum(-1),
    "var_mean": lambda x: torch.var_mean(x, -1),
}


@pytest.mark.parametrize("op", list(LANE_OPS))
@pytest.mark.parametrize("size", LANE_SIZES)
def test_row_reductions_match_eager(op, size):
    assert_same(LANE_OPS[op], torch.randn(6, size), backend="cpp", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("where", [3, 35])  # in the first vector of 16, in the remainder of a row of 40
def test_row_max_and_min_propagate_nan(where):
    x = torch.randn(4, 40)
    x[1, where], x[2, where], x[3, :] = float("nan"), float("inf"), float("-inf")
    for fn in (lambda x: torch.max(x, -1), lambda x: x.amin(-1), lambda x: x.sum(-1)):
        assert_same(fn, x, backend="cpp")


def test_row_reductions_over_two_dims_and_a_dynamic_row():
    x = torch.randn(3, 5, 4, 37)
    assert_same(lambda x: x.sum((1, 3)), x, backend="cpp", rtol=1e-5, atol=1e-5)  # two loops over r
    assert_same(lambda x: x.amax((1, 3)), x, backend="cpp")
    softmax = toycompiler.compile(lambda x: torch.softmax(x, -1), backend="cpp", dynamic=True)
    for size in (20, 45, 8):  # one kernel for all
        assert_same(lambda x: torch.softmax(x, -1), torch.randn(3, size), compiled=softmax)
    assert len(softmax.compiled_frames) == 1


def test_a_row_max_runs_the_rest_of_its_row_as_one_masked_vector():
    source = toycompiler.explain(lambda x: x.amax(-1), backend="cpp")(torch.randn(5, 20)).kernels[0].source
    assert "for (int64_t r0 = 0; r0 < 16; ++r0)" in source  # the whole vector
    assert "for (int64_t r0 = 16; r0 < 32; ++r0)" in source and "if (r0 < 20) {" in source  # the rest, masked
    source = toycompiler.explain(lambda x: x.sum(-1), backend="cpp")(torch.randn(5, 20)).kernels[0].source
    assert "if (r0 <" not in source  # a sum keeps GCC's loop


def test_a_short_row_sum_takes_fewer_lanes_but_a_max_does_not():
    """GCC adds a ``simd`` reduction's lanes one after another at the end of each row, so a sum over short
    rows runs in vectors of 4 or 8 (``CppRenderer.lanes``); not a max (slower so), a long row or a column."""
    def kernel(fn, n):
        return toycompiler.explain(fn, backend="cpp")(torch.randn(5, n)).kernels[0].source
    assert "reduction(+:acc0) simdlen(4)" in kernel(lambda x: x.sum(-1), 20)
    assert "reduction(+:acc0) simdlen(8)" in kernel(lambda x: x.mean(-1), 100)
    for fn, n in [(lambda x: x.var(-1), 33), (lambda x: x.norm(dim=-1), 20),  # (the norm's pow is x * x: no call)
                  (lambda x: x.tanh().sum(-1), 20)]:  # glibc's clones come in every width
        assert "simdlen(4)" in kernel(fn, n) and "_row[" not in kernel(fn, n), kernel(fn, n)
        assert_same(fn, torch.randn(5, n), backend="cpp", rtol=1e-5, atol=1e-5)
    for fn, n in [(lambda x: x.sum(-1), 256), (lambda x: x.amax(-1), 20), (lambda x: x.sum(0), 20)]:
        assert "simdlen" not in kernel(fn, n), kernel(fn, n)
        assert_same(fn, torch.randn(5, n), backend="cpp", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", [16, 32, 48, 128, 240])
def test_a_short_row_sum_of_whole_vectors_adds_its_lanes_as_a_tree(size):
    """A sum over rows of whole vectors of 16 adds into 16 lanes of its own (``acc0_lanes``), which are then
    added up as a tree (``toy_sum_lanes``), not by OpenMP's reduction (``CppRenderer.lanes``). Checked against
    eager in float, double and int64, with infinities and a NaN in a lane, and a row's dot products (rows of both
    inputs, broadcast against each other)."""
    x = torch.randn(6, size) * 4
    x[1, 0], x[2, -1], x[3, size // 2], x[4, 1:3] = float("-inf"), float("inf"), float("nan"), float("inf")
    y, z = torch.randn(9, size), torch.randn(7, size)
    for fn, args, tol in [(lambda x: x.sum(-1), (x,), 1e-5), (lambda x: x.double().mean(-1), (x,), 1e-5),
                          (lambda x: (x * 100).long().sum(-1), (x[5:],), 0),
                          (lambda x: torch.var_mean(x, -1), (y,), 1e-5),
                          (lambda y, z: (y[:, None] * z[None]).sum(-1), (y, z), 1e-5)]:
        source = toycompiler.explain(fn, backend="cpp")(*args).kernels[0].source
        assert "_lanes[16] = {};" in source and "reduction(+" not in source, source
        assert f"for (int64_t r0s = 0; r0s < {size}; r0s += 16) {{" in source and "toy_sum_lanes<16>(" in source
        assert_same(fn, *args, backend="cpp", rtol=tol, atol=tol)
    for n in (20, 100, 256):  # a rest (a row of GCC's loop), or a long row
        source = toycompiler.explain(lambda x: x.sum(-1), backend="cpp")(torch.randn(5, n)).kernels[0].source
        assert "acc0_lanes" not in source and "reduction(+:acc0)" in source


@pytest.mark.parametrize("size", [9, 20, 32, 64, 100, 300, 1037])
def test_a_row_sum_of_bfloat16_adds_into_32_lanes_at_any_length(size):
    """A row sum that reads 2-byte values (bfloat16) adds into 32 lanes, a vector of 32 values a step, over a row
    of any length known when compiling, its rest as one more vector whose loads and values past the row are
    masked off, and ends in a tree (``CppRenderer.lanes``): in 16 lanes GCC read 16 bfloat16 values a step.
    Checked against eager (added in float, stored rounded) with infinities and a NaN, in the rest too, for a sum,
    a mean of the values as floats, and a sum of rows gathered by index; a row sum of floats keeps 16 lanes or
    OpenMP's reduction."""
    x = torch.randn(6, size) * 4
    x[1, 0], x[2, -1], x[3, size // 2], x[4, -1] = float("-inf"), float("inf"), float("nan"), float("inf")
    end = size - size % 32
    for fn, args in [(lambda x: x.sum(-1), (x.bfloat16(),)), (lambda x: x.float().mean(-1), (x.bfloat16(),)),
                     (lambda x, i: x[i].sum(-1), (x.bfloat16(), torch.tensor([5, 0, 3, 3])))]:
        source = toycompiler.explain(fn, backend="cpp")(*args).kernels[-1].source
        assert "_lanes[32] = {};" in source and "toy_sum_lanes<32>(" in source and "reduction(+" not in source, source
        assert (f"for (int64_t r0s = {end}; r0s < {end + 32}; r0s += 32) {{" in source) == bool(size % 32), source
        assert_same(fn, *args, backend="cpp", rtol=1e-2, atol=1e-2)  # (an add in another order: 1 ulp of 2^-8)
    assert "_lanes[32]" not in toycompiler.explain(lambda x: x.sum(-1), backend="cpp")(x).kernels[0].source


@pytest.mark.parametrize("size", [9, 17, 20, 33, 40, 47, 100, 255, 300, 1037])
def test_a_row_sum_that_reads_its_inputs_again_ends_its_rest_in_a_masked_vector_of_lanes(size):
    """Where the rows read their inputs again (a dot product of every row of one input with every row of another),
    a row with a rest also adds into lanes: the rest as one more vector, each load and value past the row masked
    off against the row's length as an argument (``r0 < rnumel ? in_ptr0[...] : 0``, its value 0 in the lanes),
    a tree at the end (``CppRenderer.lanes``); rows of 16k + 1 values too. Checked against eager where a masked-off
    value would not be 0 (``(y - z + 1) ** 2``), with an infinity and a NaN in the rest, in float, double, bfloat16
    and int64, and through a gather of rows by negative indices. A sum over rows read once (``x.sum(-1)``) keeps
    OpenMP's reduction."""
    y, z = torch.randn(9, size) * 3, torch.randn(7, size)
    y[1, -1], y[2, size // 2], z[3, -1] = float("inf"), float("nan"), float("-inf")
    ids, w = torch.arange(64).reshape(4, 16) * 5 % 12 - 6, torch.randn(6, size)  # (ids -6 to 5; 64 rows of 6)
    for fn, args, tol in [(lambda y, z: ((y[:, None] - z[None] + 1) ** 2).sum(-1), (y, z), 1e-5),
                          (lambda y, z: (y[:, None] * z[None]).sum(-1), (y.double(), z.double()), 1e-7),
                          (lambda w, i: w[i].sum(-1), (w.bfloat16(), ids), 1e-2),  # (products: eager rounds each)
                          (lambda y, z: (y[:, None] * z[None]).sum(-1), ((y * 9).nan_to_num().long(), (z * 9).long()),
                           0), (lambda w, i: w[i].sum(-1) + w[i].mean(-1), (w, ids), 1e-5)]:
        source = toycompiler.explain(fn, backend="cpp")(*args).kernels[-1].source
        step = 32 if args[0].dtype == torch.bfloat16 else 16  # (2-byte values: 32 lanes)
        end = size - size % step
        assert f"for (int64_t r0s = {end}; r0s < {end + step}; r0s += {step}) {{" in source, source
        assert "r0 < rnumel ? in_ptr" in source and "reduction(+" not in source, source
        assert_same(fn, *args, backend="cpp", rtol=tol, atol=tol)
    source = toycompiler.explain(lambda x: x.sum(-1), backend="cpp")(torch.randn(5, size)).kernels[0].source
    assert "acc0_lanes" not in source and "reduction(+:acc0)" in source, source  # read once


def test_a_row_sum_of_a_length_known_only_when_running_adds_into_vector_lanes_in_blocks():
    """A row sum compiled for any row length (``dynamic=True``) adds into 16 lanes held in a vector register
    (``toy_lanes``), its rest one more vector whose lanes from ``rest`` on are masked off, and every 4096 values
    adds the lanes into a double (``CppRenderer.lanes``). One kernel, checked against eager over rows with no
    rest, a rest of one and of 15, an infinity and a NaN in the rest, a value read once a row (``w[:, None]``)
    inside the masked rest, a dot product of rows; and over rows of 100003 values of mean 100 against float64:
    within 1.5e-7, where lanes of float alone (6250 adds each) came out 1e-6 away."""
    fns = [lambda x: x.sum(-1), lambda x, w: (x * w[:, None]).sum(-1), lambda y, z: (y[:, None] * z[None]).sum(-1)]
    for fn in fns:
        compiled = toycompiler.compile(fn, backend="cpp", dynamic=True)
        for size in (16, 17, 31, 100):
            x = torch.randn(6, size)
            x[1, -1], x[2, -1] = float("inf"), float("nan")
            args = (x, torch.randn(6)) if fn is fns[1] else (x,) if fn is fns[0] else (x, torch.randn(5, size))
            assert_same(fn, *args, compiled=compiled)
    source = toycompiler.explain(fns[1], backend="cpp", dynamic=True)(x, torch.randn(6)).kernels[-1].source
    assert "toy_lanes<float, 16> acc0_lanes{};" in source and "const int rest = s1 - r0s;" in source, source
    assert "l < rest ? in_ptr1[x0] : 0.0f" in source, source
    assert "acc0 += toy_sum_lanes<16>(acc0_lanes), acc0_lanes =" in source, source
    assert len(toycompiler.explain(fns[0], backend="cpp", dynamic=True)(x).kernels) == 1
    x = torch.randn(8, 100003, dtype=torch.float64) + 100
    out, ref = toycompiler.compile(fns[0], backend="cpp", dynamic=True)(x.float()), x.float().double().sum(-1)
    assert ((out.double() - ref).abs() / ref).max() < 1.5e-7


def test_a_row_max_of_a_length_known_only_when_running_ends_in_a_loop_over_lanes():
    """A row max or min compiled for any row length ends its rest in an ``if`` around a loop over the vector's lanes,
    each lane past the row off (``if (l < rest)``; ``CppRenderer.row_loops``), where a loop over r masked by the
    row's length was split by GCC. One kernel each, checked against eager over rows of 4 (no whole vector), 16 (no
    rest), 18 and 34, with NaN and infinities in the rest, a row of -inf, for amax, amin, ``torch.max`` (its index
    loop runs the same loops), argmax of an exp, and a max over two reduced dims."""
    fns = [lambda x: x.amax(-1), lambda x: x.amin(-1), lambda x: torch.max(x, -1), lambda x: x.exp().argmax(-1),
           lambda x: x.reshape(x.shape[0], 2, -1).amax((1, 2))]
    for fn in fns:
        compiled = toycompiler.compile(fn, backend="cpp", dynamic=True)
        for size in (4, 16, 18, 34):
            x = torch.randn(6, size) * 3
            x[1, -1], x[2, -1], x[3, size // 2], x[4] = float("inf"), float("nan"), float("nan"), float("-inf")
            assert_same(fn, x, compiled=compiled)
    source = toycompiler.explain(fns[2], backend="cpp", dynamic=True)(x).kernels[-1].source
    assert source.count("if (l < rest) {") == 2 and "const int rest = s1 - r0s;" in source, source


@pytest.mark.parametrize("size", [1, 10, 20, 47, 100, 255])
def test_a_short_row_sum_of_sleef_values_is_staged_then_summed_in_fewer_lanes(size):
    """A sum whose loop calls one of SLEEF's functions computes the row's values into an array first (GCC's
    vectors of 16, SLEEF's clone), then sums the array in vectors of 4 or 8 (``CppRenderer.lanes``). Checked
    against eager with what the sum must get right: -inf (a masked row), +inf, NaN, a row of -inf."""
    x = torch.randn(6, size) * 4
    x[1, 0], x[2, -1], x[3, size // 2], x[4] = float("-inf"), float("inf"), float("nan"), float("-inf")
    t = torch.arange(6) % size
    for fn, args in [(lambda x: torch.softmax(x, -1), (x,)), (lambda x: torch.log_softmax(x, -1), (x,)),
                     (lambda x: torch.logsumexp(x, -1), (x,)), (lambda x: x.sigmoid().sum(-1), (x,)),
                     (lambda x, t: torch.nn.functional.cross_entropy(x, t), (x[5:].expand(6, size), t))]:
        assert_same(fn, *args, backend="cpp", rtol=1e-5, atol=1e-6)
    source = toycompiler.explain(lambda x: torch.softmax(x, -1), backend="cpp")(x).kernels[0].source
    if size < 32:  # no loop over r (a row of 1), or short rows, a block of them at a time (see below): no staging
        return
    acc = re.search(rf"float (acc\d+)_row\[{size}\];", source).group(1)
    assert f"{acc}_row[r0] = tmp" in source and f"reduction(+:{acc}) simdlen({4 if size < 48 else 8})" in source


@pytest.mark.parametrize("size", [33, 40, 64])
def test_a_max_loop_that_keeps_its_exp_writes_the_rest_too(size):
    def scaled_exp(x):  # exp(x) is written out by the max's loops (both), and read back by the last one
        e = torch.exp(x)
        return e / e.amax(-1, keepdim=True)
    source = toycompiler.explain(scaled_exp, backend="cpp")(torch.randn(3, size)).kernels[0].source
    body = source[source.index("vector paths"):]
    assert body.count("std::exp(") == (2 if size % 16 else 1)  # the whole vectors' loop and the rest's
    assert "std::exp(" not in body[body.index("_nan ? NAN"):]  # the last loop reads the values back
    assert_same(scaled_exp, torch.randn(6, size), backend="cpp")
    assert_same(lambda x: torch.max(torch.exp(x), -1), torch.randn(6, size), backend="cpp")


# Short rows: a block of 64 rows at a time, copied transposed, one row a lane (CppRenderer.short_rows). Rows shorter
# than 8, or than 32 where the kernel calls SLEEF; 131 rows: two whole blocks and a part of one.
SHORT_ROWS = {
    "log_softmax": (lambda x: torch.log_softmax(x, -1), 20),
    "softmax": (lambda x: torch.softmax(x, -1), 12),
    "logsumexp": (lambda x: torch.logsumexp(x, -1), 7),
    "sigmoid_sum": (lambda x: x.sigmoid().sum(-1), 31),
    "amax": (lambda x: x.amax(-1), 5),
    "max_and_argmax": (lambda x: torch.max(x, -1), 3),
    "argmin": (lambda x: x.argmin(-1), 7),
    "var_mean": (lambda x: torch.var_mean(x, -1), 6),
    # (finite: a float past int64's range converts to whatever the instruction gives, which C++ leaves undefined;
    # eager's and the kernel's differed on another machine's CPU)
    "int_sum": (lambda x: (x.nan_to_num(0.0, 1e6, -1e6) * 100).long().sum(-1), 5),
    "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], torch.arange(5.0), torch.ones(5)), 5),
    "masked_softmax": (lambda x: torch.softmax(x.masked_fill(x > 1, float("-inf")), -1), 9),
    "a_view_of_longer_rows": (lambda x: torch.log_softmax(x[:, 2:-3], -1), 25),  # rows of 20, 25 apart
}


@pytest.mark.parametrize("name", list(SHORT_ROWS))
def test_short_rows_run_a_block_at_a_time_and_match_eager(name):
    fn, size = SHORT_ROWS[name]
    x = torch.randn(131, size).round(decimals=1)  # (ties for the argmax)
    x[1, 0], x[2, 1], x[3, size // 2], x[4], x[70, 1] = float("-inf"), float("inf"), float("nan"), float("-inf"), 9
    source = toycompiler.explain(fn, backend="cpp")(x).kernels[0].source
    assert "short rows: 64 at a time" in source and "rows0[r0][x0 - xb] = in_ptr0[" in source, source
    assert_same(fn, x, backend="cpp", rtol=1e-5, atol=1e-6)
    assert_same(fn, x[:5], backend="cpp", rtol=1e-5, atol=1e-6)  # a block of 5 rows


def test_short_rows_with_a_dynamic_count_of_rows():
    compiled = toycompiler.compile(lambda x: torch.log_softmax(x, -1), backend="cpp")
    for rows in (100, 37, 200):
        x = torch.randn(rows, 20)
        toycompiler.mark_dynamic(x, 0)
        assert_same(lambda x: torch.log_softmax(x, -1), x, compiled=compiled)
    assert len(compiled.compiled_frames) == 1


@pytest.mark.parametrize("fn, size", [(lambda x: x.sum(-1), 20), (lambda x: x.argmax(-1), 8),
                                      (lambda x: torch.softmax(x, -1), 16), (lambda x: torch.softmax(x, -1), 32),
                                      (lambda x: torch.softmax(x, -1), 33), (lambda x: x.sum(0), 5)])
def test_rows_that_gain_nothing_from_a_transposed_copy_keep_their_loops(fn, size):
    """A cheap reduction over rows of 8 or more, rows of whole vectors of 16, rows of 32 or more, a column sum."""
    source = toycompiler.explain(fn, backend="cpp")(torch.randn(100, size)).kernels[0].source
    assert "short rows" not in source and "rows0" not in source
