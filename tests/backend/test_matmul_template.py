"""The Triton matmul template (``config.matmul_template``; tried against the library call in max-autotune).

A matmul becomes one sum over k that codegen renders as ``tl.dot`` on tiles, and the pointwise work
after it (bias, activation, residual) runs in the same kernel as its epilogue. Every case is compared
with eager: odd sizes (tiles masked at the edges), sizes below one tile, transposed and strided
operands, ``addmm``'s ``beta``/``alpha``, a matmul whose product is also an output, half precision,
NaN/inf. On the CPU the kernel runs in Triton's interpreter; on a GPU for real.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for, fallback_reasons

TEMPLATE = {"matmul_template": True}


def template(fn):
    return toycompiler.compile(fn, backend="triton", options=TEMPLATE)


def kernels_and_calls(fn, *args, **options):
    report = toycompiler.explain(fn, backend="triton", options=options)(*args)
    assert not report.fallback_reasons, report.fallback_reasons
    return report.kernels, report.output_code


def linear_relu_residual(x, w, b, r):
    return torch.relu(F.linear(x, w, b)) + r


def randn(*size, dtype=torch.float32):
    return torch.randn(*size, device=device_for("triton")).to(dtype)


@pytest.mark.parametrize("m,k,n", [(37, 19, 23), (5, 3, 7), (130, 70, 65)])
def test_linear_with_epilogue_is_one_template_kernel(m, k, n):
    args = (randn(m, k), randn(n, k), randn(n), randn(m, n))
    assert_same(linear_relu_residual, *args, backend="triton", compiled=template(linear_relu_residual),
                rtol=1e-4, atol=1e-4)
    kernels, code = kernels_and_calls(linear_relu_residual, *args, **TEMPLATE)
    assert len(kernels) == 1 and "tl.dot(" in kernels[0].source
    assert "torch.addmm(" not in code and "torch.mm(" not in code  # no library call left


def test_strided_operands_and_addmm_scaling():
    a, b = randn(40, 33)[:, ::3], randn(29, 11).t()  # a: [40, 11] with a column stride of 3; b: transposed
    bias = randn(29)
    fn = lambda a, b, bias: torch.addmm(bias, a, b, beta=0.5, alpha=2.0).sigmoid()  # noqa: E731
    assert_same(fn, a, b, bias, backend="triton", compiled=template(fn), rtol=1e-4, atol=1e-4)


def test_product_that_is_also_an_output_is_stored():
    fn = lambda x, w: (x @ w, torch.tanh(x @ w) * 2)  # noqa: E731
    args = randn(20, 17), randn(17, 18)
    assert_same(fn, *args, backend="triton", compiled=template(fn), rtol=1e-4, atol=1e-4)


def test_nan_and_inf_propagate():
    x, w = randn(18, 16), randn(16, 17)
    x[3, 4], w[5, 6] = float("nan"), float("inf")
    fn = lambda x, w: torch.relu(x @ w)  # noqa: E731
    assert_same(fn, x, w, backend="triton", compiled=template(fn), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype):
    args = (randn(33, 40, dtype=dtype), randn(24, 40, dtype=dtype), randn(24, dtype=dtype), randn(33, 24, dtype=dtype))
    assert_same(linear_relu_residual, *args, backend="triton", compiled=template(linear_relu_residual),
                rtol=2e-2, atol=2e-2)


def test_symbolic_sizes_and_batched_matmuls_stay_library_calls():
    fn = lambda x, w: torch.relu(torch.bmm(x, w))  # noqa: E731
    args = randn(2, 9, 8), randn(2, 8, 7)
    assert_same(fn, *args, backend="triton", compiled=template(fn))
    _, code = kernels_and_calls(fn, *args, **TEMPLATE)
    assert "torch.bmm(" in code


def test_max_autotune_times_both_and_records_the_choice():
    args = (randn(37, 19), randn(23, 19), randn(23), randn(37, 23))
    compiled = toycompiler.compile(linear_relu_residual, backend="triton", mode="max-autotune")
    assert_same(linear_relu_residual, *args, backend="triton", compiled=compiled, rtol=1e-4, atol=1e-4)
    report = toycompiler.explain(linear_relu_residual, backend="triton", mode="max-autotune")(*args)
    backend = report.frames[0].backend
    choice = next(c for c in backend.runtime.autotune.choices if c.kernel == "matmul")
    assert len(choice.timings) == 2 and choice.chosen in dict(choice.timings)
    decision = backend.schedule.decisions[-1]
    assert decision.first == "matmul" and choice.chosen in decision.reason
    assert ("tl.dot(" in "".join(k.source for k in report.kernels)) == (choice.chosen.startswith("matmul template"))


def test_default_mode_keeps_the_library_call():
    args = (randn(37, 19), randn(23, 19), randn(23), randn(37, 23))
    kernels, code = kernels_and_calls(linear_relu_residual, *args)
    assert "torch.addmm(" in code and all("tl.dot(" not in k.source for k in kernels)
    compiled = toycompiler.compile(linear_relu_residual, backend="triton")
    compiled(*args)
    assert not fallback_reasons(compiled)


def test_max_autotune_with_symbolic_sizes_keeps_the_library_call():
    """No template for sizes known only at run time, and no timing race that could not make inputs."""
    fn = lambda x, w: torch.relu(x @ w)  # noqa: E731
    compiled = toycompiler.compile(fn, backend="triton", mode="max-autotune", dynamic=True)
    for n in (5, 7, 9):
        assert_same(fn, randn(n, 8), randn(8, 6), backend="triton", compiled=compiled)
    assert not fallback_reasons(compiled)
