"""The differential fuzzer: random small tensor programs, compiled on both backends, compared with eager.

``fuzz_programs.programs`` draws the programs (see its docstring for what they contain);
``check_program`` compiles one and compares outputs, inputs changed in place, and that nothing fell
back to eager. Every counterexample found is kept as a named test in ``test_regressions.py``.

The run in ``make test`` is fixed: derandomized (the same examples every time, no example database)
and small. A longer search is one command, e.g. two thousand examples per backend::

    TOYCOMPILER_FUZZ_EXAMPLES=2000 .venv/bin/pytest tests/fuzz/test_fuzz.py -p no:randomly

and ``TOYCOMPILER_FUZZ_SEED=<n>`` draws a different, still reproducible, series (hypothesis's seed)
instead of the derandomized one.
"""

import os

import pytest
from fuzz_programs import check_program, programs
from hypothesis import HealthCheck, given, seed, settings

EXAMPLES = int(os.environ.get("TOYCOMPILER_FUZZ_EXAMPLES", "0"))
SEED = os.environ.get("TOYCOMPILER_FUZZ_SEED")


def budget(default: int):
    """The fixed budget of `make test`, or the environment's; reproducible either way."""
    fuzz = settings(max_examples=EXAMPLES or default, derandomize=SEED is None, database=None, deadline=None,
                    print_blob=True, suppress_health_check=list(HealthCheck))
    return (lambda f: seed(int(SEED))(fuzz(f))) if SEED is not None else fuzz


@budget(default=25)
@given(programs(dtypes=("float32", "int64", "bool")))
def test_random_programs_match_eager_on_cpp(program):
    check_program(program, "cpp")


@budget(default=25)
@given(programs(dtypes=("float32", "float16", "int64", "bool")))
def test_random_programs_match_eager_on_triton(program):
    check_program(program, "triton")


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_programs_are_valid_eager_code(backend):
    """The generator itself: a drawn program runs eagerly and returns a tuple (else every check is empty)."""
    program = programs().example()
    import fuzz_programs

    out = fuzz_programs._compile_source(program.source)(*(s.make() for s in program.specs))
    assert isinstance(out, tuple) and out
