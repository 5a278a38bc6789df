"""C++ row kernels that keep a costly element value between loops, against eager.

A softmax row kernel needs ``exp(x - max)`` twice: for the sum, and for the output. The loop that
sums writes the values into the output, and the last loop reads them back and divides (as eager's
softmax does), so ``exp`` runs once per element. These tests check that, and eager's answers for
odd sizes (vector tails), NaN and infinities, and kernels where the value cannot be kept.
"""

import pytest
import torch

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


def test_softmax_computes_exp_once_per_element():
    report = toycompiler.explain(lambda x: torch.softmax(x, -1), backend="cpp")(torch.randn(8, 100))
    source = report.frames[0].backend.kernels[0].source
    body = source[source.index("vector paths"):]
    assert body.count("std::exp(") == 1
    assert "= out_ptr0[" in body  # the last loop reads the kept values back


def test_exp_is_recomputed_when_the_output_has_another_dtype():
    fn = lambda x: (torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)).double()  # noqa: E731
    report = toycompiler.explain(fn, backend="cpp")(torch.randn(4, 30))
    kernel = report.frames[0].backend.kernels[0].source
    assert "= out_ptr0[" not in kernel
