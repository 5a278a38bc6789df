"""Every pointwise op on the vector path: differential tests with vector tails, odd sizes and special values.

The C++ kernels vectorise each loop (SLEEF or glibc's libmvec for
transcendentals, plain vector instructions for the rest); sizes that are not a multiple of the
vector width leave a scalar tail, which must agree with the vector body.
Triton (its interpreter on the CPU) runs the same functions. bfloat16 inputs
are computed in float32 on both (tests/backend/test_half_cpp.py: C++'s conversions), float16 on Triton.
"""

import os
import platform
import re
import subprocess
import tempfile

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]

FUNCTIONS = {
    "gelu_cube": lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3))),
    "sigmoid_abs_chain": lambda x: torch.exp(-torch.sqrt(torch.abs(torch.sigmoid(x * 1.5) - x) + 1.0) * x),
    "erf_rsqrt_log": lambda x: torch.erf(x) + torch.rsqrt(x.abs() + 1) + torch.log(x.abs() + 1),
    "pow_constants": lambda x: x**3 - x**-2 + x**4 + (x.abs() + 1) ** 0.7,
    "pow_tensor_exponent": lambda x: (x.abs() + 0.5) ** torch.cos(x),
    "compare_where": lambda x: torch.where((x > 0.3) & (x <= 1.7), torch.tan(x), torch.expm1(x)) + (x != x),
    "log1p_tanh": lambda x: torch.log1p(x.abs()) * torch.tanh(x),
    "gelu_builtin": lambda x: F.gelu(x) + F.gelu(x, approximate="tanh") + F.silu(x),
}

NO_INF = {"gelu_builtin"}  # eager's erf GELU gives NaN at +inf, torch.compile and toycompiler give inf
# Triton's CPU interpreter has no libdevice; the stand-ins in triton_libdevice.py do not handle infinities
NO_INF_INTERPRETER = {"pow_constants", "compare_where", "log1p_tanh"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_pointwise_matches_eager_with_a_vector_tail(name, backend):
    n = 1003 if backend == "cpp" else 77  # 1003 = 62 vectors of 16 + a tail of 11
    x = torch.randn(n, device=device_for(backend)) * 2
    x[:3] = torch.tensor([float("nan"), 0.0, -0.0])
    if name not in NO_INF and not (backend == "triton" and name in NO_INF_INTERPRETER):
        x[3:5] = torch.tensor([float("inf"), float("-inf")])
    assert_same(FUNCTIONS[name], x, backend=backend, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_and_channels_last_inputs(backend):
    device = device_for(backend)
    x = torch.randn(2, 3, 5, 7, device=device).to(memory_format=torch.channels_last)
    y = torch.randn(7, 5, device=device).t()  # a transposed operand, broadcast over the batch

    def fn(x, y):
        return torch.sigmoid(x) * y + torch.abs(x) ** 3

    assert_same(fn, x, y, backend=backend, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend, dtype", [("cpp", torch.bfloat16), ("triton", torch.float16),
                                            ("triton", torch.bfloat16)], ids=str)  # (C++: no float16)
def test_half_precision_computes_in_float32(backend, dtype):
    x = torch.randn(2, 33, device=device_for(backend)).to(dtype)
    fn = lambda x: (torch.sigmoid(x) * x**3, torch.softmax(x, 0), x.float().sum(0))  # noqa: E731
    assert_same(fn, x, backend=backend, rtol=1e-2, atol=1e-2)


def test_cube_is_multiplications_and_the_kernel_says_which_path_each_op_took():
    report = toycompiler.explain(FUNCTIONS["gelu_cube"], backend="cpp")(torch.randn(100))
    source = report.frames[0].backend.kernels[0].source
    assert "std::pow" not in source
    assert "// vector paths: libmvec: tanh; instructions: add, mul, pow as 3 multiplications" in source


MASKED = {
    "causal_softmax": lambda x, m: x.masked_fill(~m, float("-inf")).softmax(-1),
    "where_mask": lambda x, m: torch.where(m, x * 2, x.relu()),
    "mask_and_compare": lambda x, m: (m & (x > 0), m.logical_not()),  # bool outputs, written as bytes
    "masked_row_sum": lambda x, m: (x * m).sum(-1),
}


@pytest.mark.parametrize("name", list(MASKED))
def test_bool_inputs_are_passed_as_bytes_and_match_eager(name):
    """A mask (a causal softmax's, a dropout's) reaches a C++ kernel as ``uint8_t*``: GCC vectorises no loop that
    loads a C++ ``bool``, which held a causal softmax over [1024, 1024] to 0.71x torch.compile (1.18x as bytes)."""
    x = torch.randn(37, 1003)
    x[0, :3] = torch.tensor([float("nan"), float("inf"), float("-inf")])
    m = torch.rand(37, 1003) > 0.5
    m[:, 0] = True  # every row keeps one element: a softmax of a row of -inf only is NaN in eager too
    assert_same(MASKED[name], x, m, backend="cpp", rtol=1e-5, atol=1e-4)
    report = toycompiler.explain(MASKED[name], backend="cpp")(x, m)
    source = "".join(k.source for k in report.frames[0].backend.kernels)
    assert "const uint8_t* in_ptr" in source and "bool*" not in source


SPECIAL = {  # special values in many lanes: the -inf of a mask, overflow, underflow, zeros, large arguments
    "exp_of_masked": lambda x: torch.where(x > 0, x, float("-inf")).exp() + (x * 100).exp(),
    "sigmoid_of_large": lambda x: torch.sigmoid(x * 100) * torch.exp2(x * 60),
    "log_of_zeros": lambda x: (-(x.relu() * x.relu().log()), x.log2(), x.log10()),
    "sin_cos_of_large": lambda x: torch.sin(x * 1e4) + torch.cos(x * 1e3),
}


@pytest.mark.parametrize("name", list(SPECIAL))
def test_special_values_take_sleef_and_match_eager(name):
    """glibc's vector exp computes any lane holding -inf or an overflow by a scalar call (an exp of a masked
    softmax ran at 0.09x torch.compile): the C++ kernels call SLEEF, in libtorch_cpu, for exp, log, sin and cos
    instead. The values match eager's; the kernel's library calls SLEEF on an AVX2 or AVX-512 x86-64 machine."""
    x = torch.randn(4099) * 2
    x[::5] = 0.0
    x[1::11] = torch.tensor([float("nan"), float("inf"), float("-inf")]).repeat(125)[: len(x[1::11])]
    assert_same(SPECIAL[name], x, backend="cpp", rtol=2e-5, atol=2e-5)
    kernel = toycompiler.explain(SPECIAL[name], backend="cpp")(x).frames[0].backend.kernels[0]
    assert "sleef: " in kernel.source and "TOY_SLEEF(d, 8, " in kernel.source
    if platform.machine() == "x86_64" and torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        symbols = subprocess.run(["nm", "-D", kernel.path], capture_output=True, text=True, check=True).stdout
        # It calls SLEEF, and none of glibc's AVX2 or AVX-512 clones (_ZGVdN8v_expf, _ZGVeN16v_expf). GCC 13 may
        # still call glibc's SSE clone (_ZGVbN4v_expf) for a loop's last few elements: torch has no 4-float SLEEF.
        assert " U Sleef_" in symbols and not re.search(r" U _ZGV[de]N\d+v_", symbols), symbols


REMAINDERS = {  # C's fmod (the dividend's sign) and Python's % (the divisor's), by a tensor and by a constant
    "fmod": lambda x, y: torch.fmod(x, y),
    "remainder": lambda x, y: x % y,
    "by_constants": lambda x, y: (x % 1.7, torch.fmod(x, -0.3) * (y > 0)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", list(REMAINDERS))
def test_fmod_and_remainder_vectorise_through_sleef_and_are_exact(name, dtype):
    """A float's fmod calls SLEEF's (torch's own vector fmod, ``FMOD_PRELUDE``): a scalar ``std::fmod`` held its
    whole loop to one element at a time (``x % 1.7 + x.floor() * x.sign()`` ran at 0.30x torch.compile). The
    values are exact, as C's; a double's fmod stays the scalar call, and the kernel says so. 4099 elements:
    vectors of 8, then a scalar tail of 3; zeros, infinities, NaN, zero and negative divisors in many lanes."""
    x = (torch.randn(4099) * 30).to(dtype)
    y = (torch.randn(4099) * 3).to(dtype)
    x[::7], y[::13] = 0.0, 0.0
    x[1::11] = torch.tensor([float("nan"), float("inf"), float("-inf")], dtype=dtype).repeat(125)[: len(x[1::11])]
    y[2::17] = torch.tensor([float("inf"), -0.0, float("nan")], dtype=dtype).repeat(81)[: len(y[2::17])]
    got = assert_same(REMAINDERS[name], x, y, backend="cpp", rtol=0, atol=0)
    if name == "fmod":  # exact: the fmod of two floats, computed in double, is a float
        want = torch.fmod(x.double(), y.double()).to(dtype)
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
    backend = toycompiler.explain(REMAINDERS[name], backend="cpp")(x, y).frames[0].backend
    kernel = backend.kernels[0]
    assert backend.fallback_reason is None and gcc_vectorises(kernel.source) == (dtype == torch.float32)
    note = re.search(r"// vector paths: (.*)", kernel.source).group(1)
    assert ("sleef: fmod" if dtype == torch.float32 else "scalar calls: fmod of doubles") in note
    if dtype == torch.float32 and platform.machine() == "x86_64" and torch.backends.cpu.get_cpu_capability() in (
            "AVX2", "AVX512"):
        symbols = subprocess.run(["nm", "-D", kernel.path], capture_output=True, text=True, check=True).stdout
        assert " U Sleef_fmodf8" in symbols, symbols


GUARDED = {  # loads whose index a cat, a pad or a slice_scatter clamps to stay inside the buffer
    "cat_last_dim": lambda x, y: torch.cat([x, y * 2, x[:, :5]], -1).relu(),
    "rotate_half": lambda x, y: x * y + torch.cat((-x[:, 15:], x[:, :15]), -1) * y.flip(0),
    "pad": lambda x, y: F.pad(x, (1, 2, 3, 0), value=-1.0) * 2,
    "slice_scatter": lambda x, y: torch.slice_scatter(x, y[:, :7] * 2, 1, 3, 10) + 1,
    "roll": lambda x, y: torch.roll(x, (3, -40), (0, 1)) * y,  # a cat of two slices a dim (passes/decompose.py)
}
BOOL_TO_NUMBER = {  # a bool converted to a number, then computed with
    "mean_of_compare": lambda x, y: ((x > 0).float().mean(-1), (x < y).double().sum(0)),
    "logical_and_times": lambda x, y: torch.logical_and(x > 0, y < 1).float() * x,
}


def gcc_vectorised_lines(source: str) -> set[int]:
    """The source lines where GCC reports a vectorised loop in this kernel, built with the kernels' own flags."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cpp")
        with open(path, "w") as f:
            f.write(source)
        flags = [f for f in toycompiler.config.cxx_flags if f != "-shared"] + ["-c", "-fopt-info-vec-optimized"]
        proc = subprocess.run([toycompiler.config.cxx, *flags, path, "-o", os.path.join(tmp, "kernel.o")],
                              capture_output=True, text=True, check=True)
    return {int(n) for n in re.findall(r"kernel\.cpp:(\d+):\d+: optimized: loop vectorized", proc.stderr)}


def gcc_vectorises(source: str) -> bool:
    """Whether GCC reports a vectorised loop in this kernel."""
    return bool(gcc_vectorised_lines(source))


@pytest.mark.parametrize("name", [*GUARDED, *BOOL_TO_NUMBER])
def test_guarded_loads_and_bool_conversions_vectorise_and_match_eager(name):
    """A clamped index (cat, pad, slice_scatter, roll) is read as a masked load at its own, affine address, which
    GCC vectorises (a gather of clamped addresses ran a rotary embedding at 0.53x torch.compile); a bool
    becomes a number by a select, which GCC vectorises and a cast it does not."""
    fn = GUARDED.get(name) or BOOL_TO_NUMBER[name]
    x, y = torch.randn(37, 29), torch.randn(37, 29)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0])
    assert_same(fn, x, y, backend="cpp", rtol=1e-5, atol=1e-5)
    kernels = toycompiler.explain(fn, backend="cpp")(x, y).frames[0].backend.kernels
    if name in GUARDED:
        assert any(" ? in_ptr" in k.source for k in kernels)
    if "g++" in os.path.basename(toycompiler.config.cxx):
        assert all(gcc_vectorises(k.source) for k in kernels), [k.name for k in kernels]


def test_a_float_erf_is_a_polynomial_that_vectorises_and_matches_eager():
    """A float's erf is Abramowitz and Stegun's polynomial (``cpp.ERF_PRELUDE``, as torch.compile's), its exp
    SLEEF's, with two terms of the series near 0; a double's is glibc's erf. Each to its dtype's precision, with a
    vector tail, NaN, infinities, signed zeros, and tiny values, whose erf is not 0 (the polynomial's would be).
    Only a kernel that computes an erf carries the helper."""
    special = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-30, -1e-30, 0.0199, -0.0201, 1e-3]
    x = torch.cat([torch.linspace(-6, 6, 1001), torch.tensor(special)])
    got = toycompiler.compile(torch.erf, backend="cpp")(x)
    torch.testing.assert_close(got, torch.erf(x), rtol=0, atol=4e-7, equal_nan=True)
    tiny = x.abs() < 0.02
    torch.testing.assert_close(got[tiny], torch.erf(x[tiny]), rtol=1e-6, atol=0)
    assert got[1005].item() == 0.0 and got[1005].signbit() and torch.erf(x[1005]).signbit()  # erf(-0.0): -0.0
    torch.testing.assert_close(toycompiler.compile(torch.erf, backend="cpp")(x.double()), torch.erf(x.double()),
                               rtol=1e-14, atol=1e-15, equal_nan=True)
    source = toycompiler.explain(torch.erf, backend="cpp")(x).frames[0].backend.kernels[0].source
    assert "float tmp1 = toy_erf(tmp0);" in source and "// vector paths: sleef: erf" in source
    if "g++" in os.path.basename(toycompiler.config.cxx):
        loop = next(i for i, line in enumerate(source.splitlines(), 1) if "for (int64_t x0" in line)
        assert any(loop <= n <= loop + 3 for n in gcc_vectorised_lines(source)), source  # (GCC names the body)
    assert "toy_erf" not in toycompiler.explain(torch.sin, backend="cpp")(x).frames[0].backend.kernels[0].source


def test_a_select_of_a_value_loaded_once_vectorises():
    """``where(relu(x) <= 0, 0, g[0])``, a ReLU's backward (and cross entropy's ``t != -100 ? g : 0``): GCC's jump
    threading split the loop into paths the vectoriser could not merge (-fno-thread-jumps, config.py). A batch-norm
    and ReLU training step ran at 0.14x torch.compile so, cross entropy's at 0.28x (one thread, AVX-512)."""
    fn = lambda x, g: torch.where(x.relu() <= 0, 0.0, g[0])  # noqa: E731
    x, g = torch.randn(37, 29), torch.randn(5)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0])
    assert_same(fn, x, g, backend="cpp")
    kernel, = toycompiler.explain(fn, backend="cpp")(x, g).frames[0].backend.kernels
    if "g++" in os.path.basename(toycompiler.config.cxx):
        assert gcc_vectorises(kernel.source), kernel.source


def trained_like_eager(step, inputs: list) -> toycompiler.artifacts.Report:
    """``step``'s gradients, compiled for C++, equal eager's; the report of compiling it for training."""
    grads = []
    for fn in (step, toycompiler.compile(step, backend="cpp")):
        args = [t.clone().requires_grad_() for t in inputs]
        fn(*args).backward()
        grads.append([a.grad for a in args])
    for got, want in zip(*reversed(grads)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    return toycompiler.explain(step, backend="cpp")(*[t.clone().requires_grad_() for t in inputs])


def test_a_layer_norm_and_gelu_training_step_vectorises_and_matches_eager():
    """Its weight gradients are column sums whose body recomputes GELU's derivative (an erf and an exp): GCC
    unrolled their 8 rows a pass only for short bodies, and without that left the loop scalar (0.19x torch.compile
    over [2048, 1024], one thread); ``#pragma GCC unroll 8`` (CppRenderer.row_loops) asks for it always."""
    def step(x, w, b):
        return F.gelu(F.layer_norm(x, (64,), w, b)).square().sum()

    inputs = [torch.randn(37, 64), torch.randn(64), torch.randn(64)]
    report = trained_like_eager(step, inputs)
    assert not report.fallback_reasons
    (columns,) = [k for k in report.kernels if "r0s += 8" in k.source]  # the weight gradients, in column order
    lines = columns.source.splitlines()
    start = next(i for i, line in enumerate(lines, 1) if "for (int64_t r0 = r0s;" in line)  # the 8 rows a pass
    end = next(i for i, line in enumerate(lines, 1) if i > start and "for (int64_t r0 = 32;" in line)  # the rest
    if "g++" in os.path.basename(toycompiler.config.cxx):
        assert any(start < n < end for n in gcc_vectorised_lines(columns.source)), columns.source


CUT = {  # a pointwise kernel's innermost loop, cut where a clamped load starts or stops reading: its pieces
    "cat_last_dim": (GUARDED["cat_last_dim"], [(37, 29), (37, 29)], [0, 29, 58, 63]),
    "pad_both_sides": (lambda x: F.pad(x, (1, 2)).sigmoid(), [(5, 30)], [0, 1, 31, 33]),
    "pad_rows_and_columns": (lambda x: F.pad(x, (2, 3, 1, 0), value=-1.5).tanh(), [(5, 30)], [0, 2, 32, 35]),
    "pad_cropping": (lambda x: F.pad(x, (-2, 3)) * 2, [(5, 30)], [0, 28, 31]),
    "cat_with_an_empty_input": (lambda x, y: torch.cat([x, y[:, :0], y], -1) + 1, [(4, 9), (4, 11)], [0, 9, 20]),
    "cat_1d": (lambda x, y: torch.cat([x, y]).exp(), [(30,), (45,)], [0, 30, 75]),
    "cat_of_ints": (lambda x, y: torch.cat([x.long(), y.long()], -1) * 3, [(6, 7), (6, 9)], [0, 7, 16]),
    "cat_transposed": (lambda x, y: torch.cat([x.t(), y], -1).relu(), [(13, 6), (6, 9)], [0, 13, 22]),
    "cat_of_11": (lambda *xs: torch.cat(xs, -1) + 1, [(4, k) for k in range(1, 12)], [0, 66]),  # > 8: one loop
}


@pytest.mark.parametrize("name", CUT)
def test_loops_with_clamped_loads_are_cut_where_each_input_starts(name):
    """A cat's or pad's innermost loop runs in pieces, one per input or border (``CppRenderer.body_pointwise``); in
    each, every guard has one value. Checked: the pieces' bounds, and the values (NaN, inf, -0.0) against eager."""
    fn, shapes, cuts = CUT[name]
    args = [torch.randn(s) for s in shapes]
    args[0].view(-1)[:4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0])
    assert_same(fn, *args, backend="cpp")
    kernel, = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend.kernels
    loops = re.findall(r"for \(int64_t (x\d) = (\d+); \1 < (\d+);", kernel.source)
    inner = max(v for v, _, _ in loops)
    assert [(int(lo), int(hi)) for v, lo, hi in loops if v == inner] == list(zip(cuts, cuts[1:])), kernel.source


SHORT_INNER = {  # pointwise kernels whose innermost loop has 1 to 4 elements (5 and more: a vector loop as usual)
    "stack_2_sin": (lambda x, y: torch.stack([x, y], -1).sin(), [(37, 29), (37, 29)]),
    "stack_3": (lambda x, y: torch.stack([x, y * 2, x - y], -1).relu(), [(37, 29), (37, 29)]),
    "slice_3_of_10": (lambda x, y: x[:, :3] * 2 + y[:, 7:], [(101, 10), (101, 10)]),
    "sin_plus_first_column": (lambda x, y: x.sin() + x[:, :1] * y, [(203, 3), (203, 3)]),
    "stack_4": (lambda x, y: torch.stack([x, y, x + y, x * y], -1).exp(), [(37, 29), (37, 29)]),
    "slice_5": (lambda x: x[:, 2:7].exp() * 2, [(53, 9)]),
}


@pytest.mark.parametrize("name", SHORT_INNER)
def test_short_innermost_loops_vectorise_the_loop_around_them(name):
    """An innermost loop of 1 to 4 elements is unrolled and the loop around it vectorised (``x_loop_open``):
    the values (NaN, inf, -0.0, odd sizes) against eager, GCC's report, and which loop carries the ``simd``."""
    fn, shapes = SHORT_INNER[name]
    args = [torch.randn(s) for s in shapes]
    args[0].view(-1)[:4] = torch.tensor([float("nan"), float("inf"), float("-inf"), -0.0])
    assert_same(fn, *args, backend="cpp", rtol=1e-5, atol=1e-5)
    kernel, = toycompiler.explain(fn, backend="cpp")(*args).frames[0].backend.kernels
    simd_then_unrolled = (r"simd[^\n]*\n\s*for \(int64_t x0 [^\n]*\n"
                          r"\s*#pragma GCC unroll \d+\n\s*for \(int64_t x1 = 0; x1 < [1-4];")
    unrolled = re.search(simd_then_unrolled, kernel.source)
    assert bool(unrolled) == (name != "slice_5"), kernel.source
    if "g++" in os.path.basename(toycompiler.config.cxx):
        assert gcc_vectorises(kernel.source), kernel.source


def test_a_value_read_at_one_place_in_two_loops_leaves_the_storing_loop_vectorised():
    """A layer norm's input gradient through a ReLU: its row kernel's loops read a row's mean and the loss's gradient
    at one place for every element, and the last stores the elements. GCC's partial redundancy elimination carried
    both from the loop before into it, reloading them at each element (a store might change them), and the loop
    did not vectorise (21 ms over [2048, 1531], torch.compile 4; one thread). Built with -fno-tree-pre
    (``config.cxx_flags``), every ``simd`` loop over a row vectorises."""
    def step(x, w, b):
        return F.layer_norm(x, (67,), w, b).relu().sum()

    inputs = [torch.randn(37, 67), torch.randn(67), torch.randn(67)]
    report = trained_like_eager(step, inputs)
    assert not report.fallback_reasons and len(report.kernels) >= 3
    if "g++" in os.path.basename(toycompiler.config.cxx):
        for kernel in report.kernels:
            vectorised, lines = gcc_vectorised_lines(kernel.source), kernel.source.splitlines()
            rows = [i for i, line in enumerate(lines, 1) if "#pragma omp simd" in line and "(int64_t r0" in lines[i]]
            assert all(any(i < n <= i + 4 for n in vectorised) for i in rows), kernel.source


def test_a_row_read_through_an_index_is_found_before_its_loops_and_they_vectorise():
    """GPT-2's input layer: token and position embeddings, then a layer norm. Each row is read through the token's
    index, and its first element is the variance's shift. Computed inside the ``simd`` loop over the row, the
    index and the shift kept GCC from vectorising it (7.4 ms over [8, 1024] tokens of 768 against torch.compile's
    4.2; one thread): they are computed before it (``CppRenderer.tmp``), and every loop over a row vectorises.
    Negative indices count from the end, as eager's do."""
    wte, wpe, w, b = torch.randn(50, 67), torch.randn(16, 67), torch.randn(67), torch.randn(67)

    def embed(idx):
        return F.layer_norm(wte[idx] + wpe[torch.arange(idx.shape[1])], (67,), w, b)

    idx = torch.randint(-50, 50, (2, 16))
    assert_same(embed, idx, backend="cpp", rtol=1e-4, atol=1e-4)
    kernel = next(k for k in toycompiler.explain(embed, backend="cpp")(idx).frames[0].backend.kernels
                  if "omp simd reduction" in k.source)
    lines = kernel.source.splitlines()
    loop = next(i for i, line in enumerate(lines) if "#pragma omp simd reduction" in line)
    index_loads = [i for i, line in enumerate(lines) if re.search(r"int64_t tmp\d+ = in_ptr", line)]
    assert index_loads and max(index_loads) < loop, kernel.source  # (each row's index, read before its loops)
    if "g++" in os.path.basename(toycompiler.config.cxx):
        vectorised = gcc_vectorised_lines(kernel.source)
        rows = [i for i, line in enumerate(lines, 1) if "#pragma omp simd" in line and "(int64_t r0" in lines[i]]
        assert rows and all(any(i < n <= i + 4 for n in vectorised) for i in rows), kernel.source
