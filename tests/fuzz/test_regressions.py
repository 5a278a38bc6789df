"""Counterexamples the fuzzer found, one named test each, replayed exactly as found.

Each is the program and the inputs that hypothesis shrank a failure to (``tests/fuzz/test_fuzz.py``);
the docstring says what went wrong when it was found. They run on both backends: a bug found on one
backend is a case the other must get right too.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from fuzz_programs import InputSpec, Program, check_program

import toycompiler
from toycompiler.testing import assert_same, device_for


def program(source: str, *specs: InputSpec) -> Program:
    return Program(source, specs)


ADD_WITH_ALPHA_ON_BOOL = program(
    "def program(x0):\n    v1 = torch.add(x0, x0, alpha=2)\n    return (v1,)\n",
    InputSpec(shape=(), dtype="bool"))

SQUEEZE_OF_A_ZERO_DIM_TENSOR = program(
    "def program(x0):\n    v1 = x0.squeeze(0)\n    return (v1,)\n",
    InputSpec(shape=(), dtype="float32"))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_add_with_alpha_on_bool_keeps_bool(backend):
    """Found on cpp: ``torch.add(b, b, alpha=2)`` on bool tensors returned int64 (eager: bool)."""
    check_program(ADD_WITH_ALPHA_ON_BOOL, backend)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_squeeze_of_zero_dim_tensor(backend):
    """Found on cpp: ``x.squeeze(0)`` of a 0-d tensor made the backend fail with
    ``IndexError: tuple index out of range`` and run the graph eagerly."""
    check_program(SQUEEZE_OF_A_ZERO_DIM_TENSOR, backend)


MEAN_OVER_DIM_0_OF_A_ZERO_DIM_TENSOR = program(
    "def program(x0):\n    v1 = x0.mean(dim=0, keepdim=True)\n    return (v1,)\n",
    InputSpec(shape=(), dtype="float32"))

INPLACE_ON_AN_EMPTY_SLICE_OF_AN_INPUT = program(
    "def program(x0):\n    v1 = x0[0:0]\n    v1.mul_(2)\n    return (v1,)\n",
    InputSpec(shape=(1, 3), dtype="float32"))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_mean_over_dim_0_of_zero_dim_tensor(backend):
    """Found on triton, fails on both: ``x.mean(dim=0)`` of a 0-d tensor (eager allows dim 0 or -1 there)
    made the backend fail with ``IndexError: tuple index out of range`` and run the graph eagerly."""
    check_program(MEAN_OVER_DIM_0_OF_A_ZERO_DIM_TENSOR, backend)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_inplace_on_empty_slice_of_input(backend):
    """Found on triton: an in-place op on a 0-size slice of an input (``x[0:0].mul_(2)``, shrunk from
    ``x[1:1:1]`` of an expanded float16 input) crashed the process with a segmentation fault. Run in a
    child process, so that a crash fails this test instead of ending the whole test run."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from fuzz_programs import *; "
            f"check_program({INPLACE_ON_AN_EMPTY_SLICE_OF_AN_INPUT!r}, {backend!r})")
    done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"exit code {done.returncode} (-11: segmentation fault)\n{done.stderr[-3000:]}"


MAXIMUM_WITH_AN_EMPTY_TENSOR = program(
    "def program(x0, x1):\n    v2 = torch.maximum(x1, x0)\n    return (v2,)\n",
    InputSpec(shape=(0, 1), dtype="float32"), InputSpec(shape=(), dtype="float32"))

SIN_OF_AN_EMPTY_INT_TENSOR = program(
    "def program(x0):\n    v1 = torch.sin(x0)\n    return (v1,)\n",
    InputSpec(shape=(1, 0), dtype="int64"))


NEGATION_OF_AN_EMPTY_TENSOR = program(
    "def program(x0):\n    v1 = -x0\n    return (v1,)\n",
    InputSpec(shape=(2, 0), dtype="float32"))

SUM_INTO_AN_EMPTY_TENSOR = program(
    "def program(x0):\n    v1 = x0.sum(0)\n    v2 = x0.sum(-1)\n    return (v1, v2)\n",
    InputSpec(shape=(3, 0, 5), dtype="float32"))


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("case", ["maximum", "sin", "negation", "sum"])
def test_tensors_with_no_elements_compile(case, backend):
    """Found on both backends, each a fallback to eager (the answers were right, the kernels did not build):
    a kernel reads a tensor with no elements as a 0 (it has no memory), and that 0 was the bare text ``0``:
    C++'s ``toy_maximum(tmp0, 0)`` of a float found no template to call, and Triton's ``0.to(tl.float32)`` (the
    int64 input's cast) is no Python. Now a 0 of the buffer's dtype (``KernelRenderer.zero``: a Triton tensor).
    Triton's loop variables of a [2, 0] tensor divided by its stride of 0 (``ir.unravel``), and a C++ reduction
    into an empty output stored at an index of its reduction loop, which it never opens: a kernel with no
    output element now has no body."""
    cases = {"maximum": MAXIMUM_WITH_AN_EMPTY_TENSOR, "sin": SIN_OF_AN_EMPTY_INT_TENSOR,
             "negation": NEGATION_OF_AN_EMPTY_TENSOR, "sum": SUM_INTO_AN_EMPTY_TENSOR}
    check_program(cases[case], backend)


def _floor_division(a, b):
    return a // b, a % b, torch.div(a, b, rounding_mode="trunc")


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_float_floor_division_matches_eager(backend):
    """``torch.tensor([1.0]) // 0.1`` is 9.0 in eager (its fmod-based correction) where ``floor(1.0 / 0.1)``
    is 10.0; also negative operands, signed zeros and a zero divisor (IEEE's inf and nan)."""
    a = torch.tensor([1.0, -1.0, 5.5, -5.5, 0.0, -0.0, 3.0, -3.0, 1e10, 7.0])
    b = torch.tensor([0.1, 0.1, -2.0, 2.0, 3.0, 3.0, 0.0, 0.0, 0.3, -7.0])
    a, b = a.to(device_for(backend)), b.to(device_for(backend))
    assert_same(_floor_division, a, b, backend=backend, rtol=0, atol=0)
    assert_same(lambda x: (x // 0.1, x % 0.1), a, backend=backend, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_integer_floor_division_is_exact_above_2_53(backend):
    """Integer ``//`` and ``%`` went through float64, wrong for magnitudes above 2**53."""
    a = torch.tensor([2**62 + 1, -(2**62) - 3, 2**53 + 1, 7, -7, 7, -7, 0])
    b = torch.tensor([3, 5, 2, 2, 2, -2, -2, 3])
    a, b = a.to(device_for(backend)), b.to(device_for(backend))
    assert_same(_floor_division, a, b, backend=backend, rtol=0, atol=0)
    assert_same(lambda x: (x // 3, x % -3), a, backend=backend, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_bool_addition_is_or(backend):
    """``True + True`` is ``True`` in eager; on a GPU a bool held as a 1-bit integer wrapped to ``False``
    (the fuzzer's ``x0 + x0`` on a one-element bool tensor, found on the H100)."""
    a = torch.tensor([True, False, True, False], device=device_for(backend))
    b = torch.tensor([True, True, False, False], device=device_for(backend))
    assert_same(lambda x, y: (x + y, x + True, x + False, y.add(x, alpha=False), x + x), a, b,
                backend=backend, rtol=0, atol=0)


def _zip_strict_loop(x):
    out = []
    for a, b in zip([x, x + 1, x + 2], [1, 2], strict=True):
        out.append(a * b)
    return out


def test_a_real_iterator_is_not_used_up_while_tracing():
    """``for a, b in zip(..., strict=True)`` over lists of different lengths: after the break at ``zip``, the
    resumed frame traced ``iter()`` of the real zip object by reading it to the end, so the code then ran
    with an empty iterator and returned ``[]`` where eager raises ValueError."""
    compiled = toycompiler.compile(_zip_strict_loop, backend="cpp")
    with pytest.raises(ValueError, match="shorter"):
        compiled(torch.ones(2))


def _zip_then_next(x, y):
    it = iter([x, y, x + 1])
    pairs = list(zip(it, [y]))
    return pairs, next(it)


def test_zip_draws_from_an_iterator_only_what_eager_zip_draws():
    """``zip(it, [y])`` takes two items from ``it`` (the second before it finds ``[y]`` exhausted), as eager's
    zip does; it used to read ``it`` to the end, and the ``next(it)`` after it raised StopIteration."""
    x, y = torch.randn(3), torch.randn(3)
    assert_same(_zip_then_next, x, y, backend="cpp")
