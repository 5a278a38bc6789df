"""Constant exponents that codegen writes without ``pow``: half-integers through a square root (C++), and
``x ** 0.5`` / ``x ** -0.5`` as ``sqrt`` / ``rsqrt`` (every backend, as eager does).

Compared with eager element by element on pow's special values, signs of zero included: ``(-0.0) ** 1.5``
is ``+0.0`` and ``(-inf) ** 1.5`` is ``+inf`` (C's pow), while ``(-0.0) ** 0.5`` is ``-0.0`` (torch's sqrt).
"""

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same, device_for

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, float("inf"), float("-inf"), float("nan"), 1e-30, 3e12, 0.5, 7.25]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("exponent", [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
def test_half_integer_exponents_match_eager_with_signed_zeros(backend, exponent):
    if backend == "triton" and abs(exponent) != 0.5 and device_for("triton") == "cpu":
        pytest.skip("other half-integers go through libdevice.pow, which Triton's CPU interpreter only approximates")
    x = torch.tensor(SPECIAL * 3, device=device_for(backend))  # 39 elements: a vector body and a tail
    # atol: the smallest normal float32. 1e-30 ** 1.5 is a subnormal, which a GPU's libdevice pow flushes to 0
    got = assert_same(lambda x: x**exponent, x, backend=backend, rtol=2e-6, atol=torch.finfo(torch.float32).tiny)
    want = x**exponent
    finite = ~want.isnan()
    assert torch.equal(torch.signbit(got[finite]), torch.signbit(want[finite]))


def test_cpp_kernel_says_which_path_pow_took():
    x = torch.randn(100)
    report = toycompiler.explain(lambda x: x**1.5 + x**3, backend="cpp")(x)
    comment = report.kernels[0].source
    assert "pow as multiplications and a square root" in comment and "pow as 3 multiplications" in comment
    assert "std::pow" not in comment.split("extern \"C\"")[-1]


def test_values_used_in_one_arm_of_where_still_match():
    """``where`` with a libm call in each arm (the case -fno-tree-sink keeps vectorised)."""
    x, y = torch.randn(1003), torch.randn(1003)
    fn = lambda x, y: torch.where(x > 0, torch.erf(x) * y, (torch.abs(x) + 1.0) ** y)  # noqa: E731
    assert_same(fn, x, y, backend="cpp", rtol=1e-5, atol=1e-6)
