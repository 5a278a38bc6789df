"""Differential tests: every lowered op, on both backends, against eager.

Ops x shapes (1-element, odd, empty) x dtypes x layouts (contiguous,
transposed, sliced, broadcast). The C++ backend gets the full matrix; Triton
(run by its CPU interpreter, tens of ms a launch) a smaller cross-section.
"""

import pytest
import torch
import torch.nn.functional as F
from _util import check

import toycompiler
from toycompiler.testing import assert_same, device_for

UNARY = {
    "sin_cos": lambda x: torch.sin(x) + torch.cos(x),
    "exp_neg_abs": lambda x: torch.exp(-torch.abs(x)),
    "relu_sigmoid_tanh": lambda x: torch.relu(x) * torch.sigmoid(x) + torch.tanh(x),
    "sqrt_log": lambda x: torch.sqrt(x.abs()) + torch.log(x.abs() + 1),
    "floor_erf": lambda x: torch.floor(x * 3) + torch.erf(x),
    "where_clamp": lambda x: torch.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5),
    "pow_rsqrt": lambda x: x ** 2 + torch.rsqrt(x.abs() + 1),
    "gelu_silu": lambda x: F.gelu(x) + F.silu(x) + F.gelu(x, approximate="tanh"),
}
REDUCTIONS = {
    "sum_last": lambda x: x.sum(-1),
    "sum_first_keepdim": lambda x: x.sum(0, keepdim=True),
    "sum_all": lambda x: x.sum(),
    "mean_var": lambda x: (x.mean(-1), x.var(-1)),
    "amax_amin": lambda x: x.amax(-1) - x.amin(-1),
    "argmax_argmin": lambda x: (x.argmax(-1), x.argmin(0)),
    "max_min_dim": lambda x: (*torch.max(x, -1), *x.min(0, keepdim=True), x.max(), torch.min(x)),
    "prod": lambda x: x.prod(-1),
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "rms_norm": lambda x: F.rms_norm(x, x.shape[-1:]),
}
VIEWS = {
    "transpose_add": lambda x: x.t() + 1,
    "slice_mul": lambda x: x[:, 1:] * 2,
    "select_unsqueeze": lambda x: x[0].unsqueeze(0) + x,
    "expand": lambda x: x[:, :1].expand(x.shape) * x,
    "reshape_of_transpose": lambda x: x.t().reshape(-1) + 1,
    "cat": lambda x: torch.cat([x, x * 2, x.sin()], dim=-1),
    "arange_full": lambda x: x + torch.arange(x.shape[-1]) + torch.full_like(x, 0.5),
    "view_output": lambda x: x.t(),
}
SHAPES = [(1, 1), (7, 33)]
LAYOUTS = {
    "contiguous": lambda s: torch.randn(s),
    "transposed": lambda s: torch.randn(s[::-1]).t(),
    "sliced": lambda s: torch.randn(s[0], s[1] * 2)[:, ::2],
    "broadcast": lambda s: torch.randn(1, s[1]).expand(s),
}


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", list(UNARY) + list(REDUCTIONS) + list(VIEWS))
def test_cpp_ops(name, shape):
    fn = {**UNARY, **REDUCTIONS, **VIEWS}[name]
    check(fn, torch.randn(shape), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", ["sin_cos", "softmax", "sum_first_keepdim", "transpose_add", "argmax_argmin"])
def test_cpp_layouts(name, layout):
    fn = {**UNARY, **REDUCTIONS, **VIEWS}[name]
    check(fn, LAYOUTS[layout]((5, 6)), rtol=1e-4)


@pytest.mark.parametrize("name", ["sin_cos", "sum_last", "sum_all", "softmax", "transpose_add", "cat"])
def test_cpp_empty_tensors(name):
    fn = {**UNARY, **REDUCTIONS, **VIEWS}[name]
    check(fn, torch.randn(3, 0) if name != "cat" else torch.randn(0, 4))


INT_FNS = {
    "arith": lambda a, b: (a + b * 3 - 1, a * b),
    "compare_where": lambda a, b: (a > b, torch.where(a >= b, a, b), a == 2),
    "reduce": lambda a, b: (a.sum(-1), a.amax(0), b.argmax(-1), a.prod(0)),
    "true_div": lambda a, b: a / 3,
    "to_float": lambda a, b: a.float().sin() + b,
}
BOOL_FNS = {
    "logic": lambda p, q: (p & q, p | ~q, torch.logical_not(p)),
    "count": lambda p, q: (p.sum(-1), p.float().mean()),
    "where": lambda p, q: torch.where(p, 1.0, -1.0),
}


@pytest.mark.parametrize("name", list(INT_FNS))
def test_cpp_int64(name):
    check(INT_FNS[name], torch.randint(-5, 5, (4, 7)), torch.randint(-5, 5, (4, 7)))


@pytest.mark.parametrize("name", list(BOOL_FNS))
def test_cpp_bool(name):
    check(BOOL_FNS[name], torch.rand(4, 7) > 0.5, torch.rand(4, 7) > 0.5)


@pytest.mark.parametrize("name", ["softmax", "mean_var", "sin_cos", "layer_norm"])
def test_cpp_float64(name):
    fn = {**UNARY, **REDUCTIONS}[name]
    check(fn, torch.randn(6, 9, dtype=torch.float64), rtol=1e-10, atol=1e-10)


def test_long_rows_loop_over_blocks():
    check(lambda x: (torch.softmax(x, -1), x.sum(-1)), torch.randn(3, 5000), rtol=1e-4)


def test_broadcasting_binary_ops():
    check(lambda x, y, z: x * y + z, torch.randn(4, 1, 5), torch.randn(3, 1), torch.tensor(2.0))


def test_matmul_family_calls_library_kernels():
    a, b, bias = torch.randn(5, 4), torch.randn(4, 3), torch.randn(3)
    def fn(a, b, bias):
        return a @ b, torch.addmm(bias, a, b), torch.bmm(a[None], b[None]), F.linear(a, b.t(), bias)
    arts = check(fn, a, b, bias)
    assert "torch.mm(" in arts.output_code.source and "out=buf" in arts.output_code.source
    x, w = torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3)
    arts = check(lambda x, w: F.conv2d(x, w, padding=1).relu(), x, w, rtol=1e-4)
    assert "torch.convolution(" in arts.output_code.source


def test_inplace_on_input_is_stored_into_it():
    def f(x, y):
        x.add_(y)
        return x * 2
    arts = check(f, torch.randn(6), torch.randn(6))
    assert "written into arg0" in str(arts.ir)


def test_output_that_is_a_view_of_the_input_keeps_strides():
    x = torch.randn(3, 4)
    arts = check(lambda x: (x.t(), x[1:]), x)
    assert "torch.as_strided(arg0" in arts.output_code.source
    assert not arts.kernels


# -- Triton, through its CPU interpreter: fewer, smaller cases ---------------------------

TRITON_CASES = ["sin_cos", "gelu_silu", "where_clamp", "sum_first_keepdim", "mean_var", "argmax_argmin",
                "softmax", "layer_norm", "cat", "reshape_of_transpose"]


@pytest.mark.parametrize("name", TRITON_CASES)
def test_triton_ops(name):
    fn = {**UNARY, **REDUCTIONS, **VIEWS}[name]
    check(fn, torch.randn(5, 7), target="triton", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["transposed", "broadcast"])
def test_triton_layouts(layout):
    check(REDUCTIONS["softmax"], LAYOUTS[layout]((5, 6)), target="triton", rtol=1e-4)


def test_triton_edge_shapes_and_dtypes():
    check(lambda x: (x.sum(-1), x * 2), torch.randn(1, 1), target="triton")
    check(lambda x: (x.sum(-1), x * 2), torch.randn(3, 0), target="triton")
    check(INT_FNS["reduce"], torch.randint(-5, 5, (4, 7)), torch.randint(-5, 5, (4, 7)), target="triton")
    check(BOOL_FNS["logic"], torch.rand(9) > 0.5, torch.rand(9) > 0.5, target="triton")


def test_triton_half_precision_computes_in_float32():
    x = torch.randn(4, 33, dtype=torch.float16)
    arts = check(lambda x: (torch.softmax(x, -1), x.sin() * 2), x, target="triton", rtol=1e-2, atol=1e-3)
    assert ".to(tl.float32)" in arts.kernels[0].source


def test_triton_looped_reduction(monkeypatch):
    import toycompiler

    with toycompiler.config.patch(max_block=16):
        arts = check(lambda x: (torch.softmax(x, -1), x.sum(-1)), torch.randn(3, 50), target="triton", rtol=1e-4)
    assert "for roffset in range(0, rnumel, RBLOCK)" in arts.kernels[0].source


def test_unsupported_op_falls_back_with_a_clear_reason():
    from _util import capture

    import toycompiler

    x = torch.randn(4)
    gm = capture(lambda x: torch.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, (x,)), x)
    with pytest.warns(UserWarning, match="running this graph eagerly"):  # a higher-order op: branches are graphs
        compiled = toycompiler.get_backend("cpp")(gm, [x])
    assert "true_graph_0" in compiled.artifacts.fallback_reason
    torch.testing.assert_close(compiled(x)[0], x * 2 if x.sum() > 0 else x - 1)  # ran eagerly, and right
    half = torch.randn(4, dtype=torch.float16)
    with pytest.warns(UserWarning, match="does not support torch.float16"):
        compiled = toycompiler.get_backend("cpp")(capture(lambda x: x.sin(), half), [half])
    torch.testing.assert_close(compiled(half)[0], half.sin())


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_inputs_with_storage_offset_and_inplace_on_transposed_input(target):
    dev = device_for(target)
    x = torch.randn(5, 9, device=dev)[1:, 2:]  # storage offset 11
    check(lambda x: (x.softmax(-1), x[1:], x.t() @ x), x, target=target, rtol=1e-4, atol=1e-5)

    def scale_in_place(x, y):
        x.mul_(2)
        return y + 1
    check(scale_in_place, torch.randn(6, 4, device=dev).t(), torch.randn(4, 6, device=dev), target=target)


@pytest.mark.parametrize("target", ["cpp", "triton"])
@pytest.mark.parametrize("weight", [False, True])
def test_rms_norm_compiles_although_torch_adds_eps_in_place(target, weight):
    """``F.rms_norm`` decomposes inside torch (below functionalization) into ops that add eps in place
    (``add_``) on the CPU; the decomposition pass then functionalizes once more instead of leaving an
    in-place op the lowering has no rule for (which made the graph run eagerly)."""
    device = device_for(target)
    x, w = torch.randn(6, 9, device=device), torch.randn(9, device=device)
    fn = (lambda x, w: F.rms_norm(x, (9,), w, 1e-3)) if weight else (lambda x, w: F.rms_norm(x, (9,), eps=1e-3) * w)
    assert_same(fn, x, w, backend=target, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_clamp_with_tensor_bounds(backend):
    """Tensor bounds broadcast like any operand (a row of lows, a column of highs); a NaN in x or in a bound
    gives NaN, and an integer x clamped by float bounds is promoted, all as in eager. They used to fall back."""
    dev = device_for(backend)
    x, lo, hi = torch.randn(4, 7, device=dev), torch.randn(7, device=dev) - 1, torch.randn(4, 1, device=dev) + 1
    x[1, 3], lo[2] = float("nan"), float("nan")
    assert_same(lambda x, lo, hi: (torch.clamp(x, lo, hi), x.clamp(min=lo)), x, lo, hi, backend=backend)
    xi = torch.randint(-5, 5, (4, 7), device=dev)
    assert_same(lambda x, lo, hi: (x.clamp(max=hi), x.clamp(lo.long())), xi, lo.nan_to_num(), hi, backend=backend)
    report = toycompiler.explain(lambda x, lo: x.clamp(min=lo), backend=backend)(x, lo)
    assert report.frames[0].backend.kernels and not report.frames[0].backend.fallback_reason
