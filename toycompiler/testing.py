"""``assert_same``: the differential check every test and exercise uses.

Runs a function eagerly and compiled on the same inputs, compares results
(and the inputs afterwards: in-place changes must match), and on a mismatch
shows every stage of the compilation so the cause can be found in the report,
not by guesswork.

It refuses to pass on eager's answer: if any part of the compiled function
ran eagerly instead (a backend that gave up, a frame that could not resume
after a graph break, the recompile limit), the check fails unless the test
names the known gap with ``allow_fallback="why"``. Such an allowance is
strict: once the gap is closed and nothing falls back, the check fails too,
so ``grep allow_fallback tests/`` lists exactly the gaps that are still open.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from .api import CompiledFunction, compile


def assert_same(fn: Callable, *args: Any, backend: str | Callable = "cpp", rtol: float = 1e-5,
                atol: float = 1e-5, compiled: Callable | None = None, allow_fallback: str | None = None,
                backward: bool = False, **kwargs: Any) -> Any:
    """Compare ``fn(*args, **kwargs)`` eager vs compiled; return the compiled result.

    ``compiled`` is what to compare against eager (default: ``toycompiler.compile(fn, backend=backend)``):
    any callable, e.g. a compiled function called before (a cache hit), or what a backend returned for a
    captured graph. ``backward=True`` also runs ``out.backward(ones)`` on both results and compares the
    gradients of the inputs.
    """
    eager_args = copy.deepcopy(args)
    expected = fn(*eager_args, **kwargs)
    compiled = compiled if compiled is not None else compile(fn, backend=backend)
    actual = compiled(*args, **kwargs)
    try:
        assert_close_tree(actual, expected, rtol, atol)
        assert_close_tree(args, eager_args, rtol, atol)  # in-place changes to the inputs must match too
        if backward:
            actual.backward(torch.ones_like(actual))
            expected.backward(torch.ones_like(expected))
            grads = [[getattr(a, "grad", None) for a in inputs] for inputs in (args, eager_args)]  # None: not a tensor
            assert_close_tree(*grads, rtol, atol)
    except AssertionError as e:  # show every stage of what ran: each compiled frame, or a backend's artifacts
        # ``_compiled_forward``: toycompiler.compile(module)
        frames = getattr(getattr(compiled, "_compiled_forward", compiled), "compiled_frames", None)
        report = "\n".join(map(str, frames)) if frames else str(getattr(compiled, "artifacts", "(no artifacts)"))
        raise AssertionError(f"{e}\n\n---- compilation report ----\n{report}") from None
    reasons = fallback_reasons(compiled)
    if allow_fallback is None:
        assert not reasons, f"ran eagerly instead of compiled (if this is a known gap, say so with " \
            f"allow_fallback='why'): {reasons}"
    else:
        assert reasons, f"nothing fell back any more: remove allow_fallback={allow_fallback!r}"
    return actual


def fallback_reasons(compiled: Any) -> list[str]:
    """Why parts of ``compiled`` ran eagerly: a compiled function or module (``CompiledFunction.fallback_reasons``,
    what ``explain()`` reports too), or what a backend returned (its graph, or AOTAutograd's backward graph)."""
    # ``_compiled_forward``: toycompiler.compile(module)
    if isinstance(target := getattr(compiled, "_compiled_forward", compiled), CompiledFunction):
        return target.fallback_reasons()
    backend = getattr(compiled, "artifacts", None)
    return [b.fallback_reason for b in (backend, backend and backend.backward) if b and b.fallback_reason]


def assert_close_tree(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """``torch.testing.assert_close`` on each tensor of nested tuples, lists and dicts (NaN equal to NaN), the
    containers themselves the same (their pytree specs: a tuple is not a list), any other value equal."""
    (got, got_spec), (want, want_spec) = tree_flatten(actual), tree_flatten(expected)
    assert got_spec == want_spec, f"expected {want_spec}, got {got_spec}"
    for a, e in zip(got, want):
        assert isinstance(a, torch.Tensor) == isinstance(e, torch.Tensor), f"expected {type(e)}, got {type(a)}"
        if isinstance(e, torch.Tensor):
            torch.testing.assert_close(a, e, rtol=rtol, atol=atol, equal_nan=True)
        else:
            assert a == e, f"expected {e!r}, got {a!r}"


def device_for(backend: str) -> str:
    """The device a backend's tests use: CUDA for Triton when a GPU is present, else the CPU
    (where Triton kernels run in its interpreter)."""
    return "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
