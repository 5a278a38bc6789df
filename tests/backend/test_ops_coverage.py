"""Ops of ordinary model code that used to send their graph to eager, against eager on both backends.

The math functions of ``ir.MATH_OPS`` (C's ``<cmath>``, CUDA's libdevice, numpy's under Triton's CPU
interpreter), ``flip``, ``round(decimals=)``, norms (``F.normalize``, ``cosine_similarity``), ``elu``,
and others that torch's decompositions turn into ops the backends have.
Inputs reach outside each function's domain (NaN, inf, -0.0) and have odd sizes, so vector tails run.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for

BACKENDS = ["cpp", "triton"]


def unusual(n: int = 37) -> torch.Tensor:
    """Values in and out of the math functions' domains: large, tiny, +-1, 0, -0.0, NaN, +-inf."""
    x = torch.randn(3, n) * 3
    x[0, :8] = torch.tensor([1.0, -1.0, 0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-8])
    x[1, :4] = torch.tensor([0.5, -0.5, 2.0, 100.0])
    return x


MATH = {
    "inverse_trig": lambda x: (torch.asin(x), torch.acos(x), torch.atan(x)),
    "hyperbolic": lambda x: (torch.sinh(x), torch.cosh(x), torch.asinh(x), torch.acosh(x), torch.atanh(x)),
    "log_exp_base": lambda x: (torch.log2(x), torch.log10(x), torch.exp2(x), torch.special.erfc(x)),
    "two_arguments": lambda x: (torch.atan2(x, x.flip(-1)), torch.hypot(x, 2.0 * x.t().t()),
                                torch.copysign(x.abs() + 1, x), torch.copysign(x, -1.0)),
    "rounding": lambda x: (torch.round(x), torch.round(x * 10 + 0.5), torch.round(x, decimals=2),
                           torch.round(x * 100, decimals=-1), torch.signbit(x)),
    "xor_isinf_remainder": lambda x: (torch.logical_xor(x > 0, x < 1), torch.isinf(x), torch.remainder(x, 0.7),
                                      (x > 0).int() ^ (x < 1).int()),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(MATH))
def test_math_functions_match_eager(name, backend):
    x = unusual().to(device_for(backend))
    assert_same(MATH[name], x, backend=backend, rtol=1e-5, atol=1e-5)


def test_math_functions_on_integers_compute_in_float():
    """``torch.asin`` of an integer tensor is a float tensor: the backends compute in the result's dtype."""
    i = torch.arange(-3, 4)
    assert_same(lambda i: (torch.atan(i), torch.log2(i), torch.hypot(i.float(), i)), i, backend="cpp")


def test_cpp_math_functions_take_the_vector_path():
    """SLEEF's vector functions (exp2, log2, log10) and glibc's (erfc): the kernel says which path each op took."""
    report = toycompiler.explain(MATH["log_exp_base"], backend="cpp")(unusual(1000))
    note = report.frames[0].backend.kernels[0].source.split("vector paths: ")[1].splitlines()[0]
    assert "sleef: exp2, log10, log2; libmvec: erfc" in note, note


@pytest.mark.parametrize("backend", BACKENDS)
def test_flip_reads_back_to_front(backend):
    """One dim, several, negative ones, a transposed input; the result is a new tensor, as in eager."""
    x = torch.randn(4, 5, 6, device=device_for(backend))
    fn = lambda x: (x.flip(-1), x.flip(0, 2) * 2, x.transpose(0, 2).flip(1), torch.fliplr(x[0]))  # noqa: E731
    out = assert_same(fn, x, backend=backend)
    assert out[0].data_ptr() != x.data_ptr()


@pytest.mark.parametrize("backend", BACKENDS)
def test_norms_and_activations_compile(backend):
    """F.normalize, cosine_similarity, torch.norm, elu, bilinear upsampling, unfold and a diagonal: each
    decomposed by torch's own table into ops the backend has."""
    dev = device_for(backend)
    x, img = torch.randn(6, 10, device=dev), torch.randn(2, 3, 5, 5, device=dev)
    assert_same(lambda x: (F.normalize(x, dim=-1), F.cosine_similarity(x, x + 1), x.norm(dim=0),
                           torch.linalg.vector_norm(x, 1, -1), F.elu(x), x.unfold(1, 3, 2) * 1,
                           torch.diagonal(x) + 1), x, backend=backend, rtol=1e-4, atol=1e-5)
    assert_same(lambda x: F.interpolate(x, size=(8, 9), mode="bilinear"), img, backend=backend, rtol=1e-4, atol=1e-5)
