"""Counterexamples the fuzzer found, one named test each, replayed exactly as found.

Each is the program and the inputs that hypothesis shrank a failure to (``tests/fuzz/test_fuzz.py``);
the docstring says what went wrong when it was found. They run on both backends: a bug found on one
backend is a case the other must get right too.
"""

import pytest
from fuzz_programs import InputSpec, Program, check_program


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
