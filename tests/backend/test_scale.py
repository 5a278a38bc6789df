"""Linear cost at scale: long chains of pointwise ops compile, with the recursion of codegen bounded.

A fused kernel writes each value by walking the expressions it inlines; past a bound
(``scheduler.MAX_INLINE_WALK``) the scheduler stores the buffer and starts a new kernel, and says so in the
fusion view, as Inductor realizes a buffer past ``realize_opcount_threshold``.
"""

import pytest
import torch
from _util import check

import toycompiler
from toycompiler.backend.scheduler import MAX_INLINE_WALK
from toycompiler.testing import assert_same


def chain(n: int):
    def f(x):
        for i in range(n):
            x = x.sin() if i % 3 == 0 else x * 0.999 + 0.001 if i % 3 == 1 else x.abs()
        return x
    return f


def test_thousand_op_chain_compiles_on_cpp():
    f = toycompiler.compile(chain(1000), backend="cpp")
    assert_same(chain(1000), torch.randn(33), compiled=f, rtol=1e-4, atol=1e-5)
    arts = f.compiled_frames[0].backend
    split = [d for d in arts.schedule.decisions if not d.fused and "starts a new kernel" in d.reason]
    assert split and len(arts.kernels) >= 1000 // MAX_INLINE_WALK
    assert f"more than {MAX_INLINE_WALK}" in split[0].reason


def test_shared_subexpressions_do_not_blow_up():
    """``x * cos(x)`` uses x twice: walked once per use, 40 of them took 2**40 walks (a bound on the walk then
    split the chain into kernels). Codegen walks each value once (``KernelRenderer.expr``): the 80-op chain is
    one kernel, each cos computed once."""
    def f(x):
        for _ in range(40):
            x = x * x.cos()
        return x
    arts = check(f, torch.rand(17) * 0.5, rtol=1e-4)
    assert len(arts.kernels) == 1 and arts.kernels[0].source.count("std::cos(") == 40, arts.kernels[0].source



def test_short_chain_stays_one_kernel():
    arts = check(chain(30), torch.randn(9), rtol=1e-4)
    assert len(arts.kernels) == 1


@pytest.mark.parametrize("target", ["cpp", "triton"])
def test_integer_floor_division_and_remainder_are_one_kernel(target):
    """Torch decomposes ``//`` on integers into a truncating division corrected by the remainder's sign, and ``%``
    into a remainder corrected the same way: 17 ops that read some values two or three times. Counted as an
    expression tree (each read walked again) they made 114 ops, past the bound, and the kernel was split in two
    with three values stored between them (0.36x torch.compile on an H200); as a chain they are 11 deep."""
    a = torch.randint(-1000, 1000, (37, 65))
    b = torch.randint(1, 100, (37, 65)) * torch.where(torch.rand(37, 65) < 0.5, -1, 1)  # divisors of either sign
    arts = check(lambda a, b: (a * 3 + b) // 7 % 5 + a % b - a // b, a, b, target=target)
    assert len(arts.kernels) == 1, [d.reason for d in arts.schedule.decisions if not d.fused]
