"""``assert_same``: the differential check every test and exercise uses.

Runs a function eagerly and compiled on the same inputs, compares results,
and on a mismatch shows every stage of the compilation so the cause can be
found in the report, not by guesswork.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch

from .api import CompiledFunction, compile, explain


def assert_same(fn: Callable, *args: Any, backend: str | Callable = "cpp", rtol: float = 1e-5,
                atol: float = 1e-5, compiled: CompiledFunction | None = None, allow_fallback: bool = True,
                **kwargs: Any) -> Any:
    """Compare ``fn(*args)`` eager vs compiled; return the compiled result.

    With ``allow_fallback=False`` it also fails when a backend gave up and ran a graph eagerly,
    so a test of generated code can't pass on eager's answer.
    """
    eager_args = copy.deepcopy(args)
    expected = fn(*eager_args, **kwargs)
    compiled = compiled or compile(fn, backend=backend)
    actual = compiled(*args, **kwargs)
    try:
        assert_close_tree(actual, expected, rtol, atol)
        assert_close_tree(args, eager_args, rtol, atol)  # in-place changes to the inputs must match too
    except AssertionError as e:
        report = explain(fn, backend=backend)(*copy.deepcopy(args), **kwargs)
        raise AssertionError(f"{e}\n\n---- compilation report ----\n{report}") from None
    if not allow_fallback:
        fell_back = [f.backend.fallback_reason for f in compiled.compiled_frames
                     if f.backend is not None and f.backend.fallback_reason]
        assert not fell_back, f"the backend fell back to eager: {fell_back}"
    return actual


def assert_close_tree(actual: Any, expected: Any, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Like ``torch.testing.assert_close``, also for nested tuples, lists, dicts and plain values."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual).__name__}"
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    elif isinstance(expected, list | tuple):
        assert type(actual) is type(expected), f"expected {type(expected).__name__}, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"expected {len(expected)} items, got {len(actual)}"
        for a, e in zip(actual, expected):
            assert_close_tree(a, e, rtol, atol)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), f"dict keys differ: {actual} vs {expected}"
        for k in expected:
            assert_close_tree(actual[k], expected[k], rtol, atol)
    else:
        assert actual == expected, f"expected {expected!r}, got {actual!r}"


def device_for(backend: str) -> str:
    """The device a backend's tests use: CUDA for Triton when a GPU is present, else the CPU
    (where Triton kernels run in its interpreter)."""
    return "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
