"""bfloat16 in C++ kernels: held as 16 bits, computed in float, rounded to nearest-even where stored or cast.

The conversions (``toy_from_bfloat16`` and ``toy_to_bfloat16`` in backend/codegen/cpp.py's ``PRELUDE``) are
bit arithmetic that GCC vectorises; they must give torch's bits for every bfloat16 value and every float, NaN,
infinities, subnormals and the halfway cases included. The differential tests run the kernel paths a float32
kernel has (vector tails, row and column reductions, short rows, transposed tiles, channels-last, one-pass
statistics) on bfloat16 data. float16 graphs run eagerly on the C++ backend, and say why.
"""

import re

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for, fallback_reasons

BF16 = torch.bfloat16


def _same_bits(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """Bit for bit, except that any NaN matches any NaN (payloads are not kept by every path)."""
    assert actual.dtype == expected.dtype
    nan = actual.isnan() & expected.isnan()
    wrong = (actual.view(torch.int16) != expected.view(torch.int16)) & ~nan
    assert not wrong.any(), f"{int(wrong.sum())} wrong, e.g. {actual[wrong][:4]} for {expected[wrong][:4]}"


def _every_bfloat16() -> torch.Tensor:
    return torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(BF16)  # all 65536


def _floats() -> torch.Tensor:
    """Floats that test a narrowing: each bfloat16 value, each midpoint between neighbours and a hair either
    side of it (ties go to the even one), the edges of the range and of the subnormals, random bit patterns."""
    values = _every_bfloat16().float()
    values = values[values.isfinite()].sort().values
    mids = (values[1:].double() + values[:-1].double()) / 2
    near = torch.cat([mids, torch.nextafter(mids, mids + 1), torch.nextafter(mids, mids - 1)]).float()
    edges = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 3.3895e38, 3.39e38, 3.4e38, 1e-38,
                          1e-40, -1e-40, 1e-45, 9.2e-41, 1e-8])
    patterns = torch.randint(-(2**31), 2**31 - 1, (1 << 18,), generator=torch.Generator().manual_seed(0),
                             dtype=torch.int64).to(torch.int32).view(torch.float32)
    return torch.cat([values, near, edges, patterns, torch.randn(10001) * 1000])


def test_every_bfloat16_widens_to_torchs_float():
    every = _every_bfloat16()
    compiled = toycompiler.compile(lambda h: h.float(), backend="cpp")
    got = compiled(every)
    want = every.float()
    assert ((got.view(torch.int32) == want.view(torch.int32)) | (got.isnan() & want.isnan())).all()
    assert not fallback_reasons(compiled)  # (run eagerly, it would be right too)


def test_floats_round_to_torchs_bfloat16_where_stored_and_where_cast():
    x, dtype = _floats(), BF16
    stored = toycompiler.compile(lambda x: x.to(dtype) + 0, backend="cpp")
    _same_bits(stored(x), x.to(dtype))  # rounded by the store (the + 0 in float)
    # rounded inside the kernel (a cast, then float work on the rounded value), then stored as float32
    cast = toycompiler.compile(lambda x: x.to(dtype).float() * 1, backend="cpp")
    in_kernel = cast(x)
    _same_bits(in_kernel.to(dtype), x.to(dtype))
    assert torch.equal(in_kernel.isnan(), x.isnan())
    assert not fallback_reasons(stored) and not fallback_reasons(cast)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_an_ops_own_cast_back_to_bfloat16_is_not_rounded_inside_a_kernel(backend):
    """``F.silu``'s decomposition computes a bfloat16 input in float32 and casts the result back; inside the kernel
    that cast is not rounded (as no op's result is until it is stored), so ``silu(x) * y`` is rounded once, where
    eager rounds twice. A cast the program writes is rounded (the test above). (Triton's CPU interpreter stores
    bfloat16 with another rounding: there, only the kernel's text is checked.)"""
    device = device_for(backend)
    g = torch.Generator().manual_seed(0)
    x, y = (torch.randn(4099, generator=g) * 3).to(BF16).to(device), torch.randn(4099, generator=g).to(BF16).to(device)
    once = (F.silu(x.float()) * y.float()).to(BF16)
    gate = toycompiler.compile(lambda x, y: F.silu(x) * y, backend=backend)
    got = gate(x, y)
    assert (F.silu(x) * y != once).sum() > 500  # eager's double rounding differs from one rounding at about 1 in 4
    if device == "cuda" or backend == "cpp":
        assert (got != once).sum() <= 4  # (our float sigmoid may differ from torch's by an ulp)
    kernel = toycompiler.explain(gate)(x, y).frames[0].backend.kernels[0].source.split('extern "C" void')[-1]
    assert kernel.count("toy_to_bfloat16(" if backend == "cpp" else "tl.bfloat16") == int(backend == "cpp")
    assert not fallback_reasons(gate)


FUNCTIONS = {
    "transcendental_chain": lambda x: torch.sigmoid(x * 1.5) * x.abs() + torch.exp(-x) - torch.tanh(x) ** 3,
    "gelu_and_silu": lambda x: F.gelu(x) + F.gelu(x, approximate="tanh") + F.silu(x),
    "softmax_rows": lambda x: torch.softmax(x, -1),
    "softmax_columns": lambda x: torch.softmax(x, 0),
    "log_softmax_short_rows": lambda x: F.log_softmax(x[:, :5], -1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "sum_max_over_columns": lambda x: (x.sum(0), x.amax(0), x.argmax(0)),
    "mean_var_over_rows": lambda x: torch.var_mean(x, -1),
    "transposed_read": lambda x: x.t() * 2 + 1,
    "float32_mix": lambda x: x * torch.linspace(-1, 1, x.shape[-1]) + x.float().sum(),
    "cast_to_int": lambda x: x.int() + (x > 0),
    "cast_to_float64": lambda x: x.double() * 3,
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_bfloat16_matches_eager_in_cpp(name):
    """Odd sizes (a vector tail in every loop), NaN and infinities in the data. Eager rounds after every op and
    the kernels where they store or cast, so values agree to about an ulp of bfloat16."""
    x = (torch.randn(37, 1003) * 2).to(BF16)
    # (not in GELU's: eager's erf GELU of +inf is NaN on an AVX-512 CPU, as for float32 in test_vector_cpp.py)
    if name not in ("cast_to_int", "layer_norm", "mean_var_over_rows", "softmax_rows", "softmax_columns",
                    "gelu_and_silu"):
        x[0, :3] = torch.tensor([float("nan"), float("inf"), float("-inf")]).to(BF16)
    assert_same(FUNCTIONS[name], x, backend="cpp", rtol=2e-2, atol=2e-2)


def test_channels_last_bfloat16_batch_norm_statistics():
    x = torch.randn(4, 24, 7, 9).to(BF16).to(memory_format=torch.channels_last)

    def bn(x):
        mean, var = x.mean((0, 2, 3), keepdim=True), x.var((0, 2, 3), keepdim=True)
        return torch.relu((x - mean) * torch.rsqrt(var + 1e-5))

    assert_same(bn, x, backend="cpp", rtol=2e-2, atol=2e-2)


def test_a_bfloat16_kernel_loads_and_stores_16_bits_and_computes_in_float():
    report = toycompiler.explain(lambda x: torch.sigmoid(x) * 2, backend="cpp")(torch.randn(100).bfloat16())
    source = report.frames[0].backend.kernels[0].source
    assert "const uint16_t* in_ptr0, uint16_t* out_ptr0" in source
    assert "float tmp0 = toy_from_bfloat16(in_ptr0[x0]);" in source
    assert "out_ptr0[x0] = toy_to_bfloat16(" in source
    assert not report.fallback_reasons


@pytest.mark.parametrize("row", [1003, 16384, 16385])
def test_a_bfloat16_softmax_computes_its_exp_once_and_rounds_once(row):
    """Its exp is float32 and its output bfloat16, so the last loop cannot read the exp back from the output (it
    would be rounded before the division): the sum's loop keeps the row's exps in an array on the stack, up to
    16384 floats a row; longer rows compute them again. The store rounds the float quotient, with no cast before."""
    x = (torch.randn(3, row) * 4).to(BF16)
    assert_same(lambda x: torch.softmax(x, -1), x, backend="cpp", rtol=2e-2, atol=1e-5)
    report = toycompiler.explain(lambda x: torch.softmax(x, -1), backend="cpp")(x)
    kernel = report.frames[0].backend.kernels[0].source.split('extern "C" void')[-1]  # (not the prelude)
    assert kernel.count("std::exp(") == (1 if row <= 16384 else 2)
    assert bool(re.search(r"acc\d+_row\[r0\] = tmp\d+;", kernel)) == (row <= 16384)
    assert kernel.count("toy_to_bfloat16(") == 1 and kernel.count("out_ptr0[") == 1


def test_a_bfloat16_normalisation_over_two_unmerged_axes_keeps_no_row_array():
    """Over two loops over r (a slice's rows do not merge), an array of one loop's length would be overrun
    (this crashed the process): such a kernel computes its tanh again instead."""
    def normalise(x):
        t = x.float().tanh()
        return (t / t.sum((1, 2), keepdim=True)).to(BF16)

    x = torch.randn(4, 3, 500).to(BF16)[:, :, :400]
    assert_same(normalise, x, backend="cpp", rtol=2e-2, atol=1e-5)
    report = toycompiler.explain(normalise, backend="cpp")(x)
    assert "_row[" not in report.frames[0].backend.kernels[0].source


def test_float16_runs_eagerly_in_cpp_and_says_why():
    x = torch.randn(100).half()
    report = toycompiler.explain(lambda x: torch.sigmoid(x) * 2, backend="cpp")(x)
    assert report.fallback_reasons == ("cpp backend failed: NotImplementedError: the cpp backend does not support "
                                       "torch.float16",)
