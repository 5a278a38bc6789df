"""Automatic checks for the lessons' exercises.

Each lesson ends with a few exercises. The learner writes something in a cell
(a function, a number, a pass) and calls the matching checker, e.g.
``check_lesson01_unfused_bytes(my_fn)``. A checker prints one verdict:

- ``✓ ...`` when the answer is right (and returns True);
- ``✗ ...`` saying what is wrong, with the expected and actual values where
  that helps (and returns False);
- ``✎ ...`` with a hint while the cell still holds its placeholder ``...``
  (and returns False), so the lessons as shipped still run top to bottom.

Checkers never raise for a wrong answer: a learner should read the verdict,
not a traceback. The solution notebooks write ``assert check_...(...)`` so a
wrong solution fails the tests.
"""

from __future__ import annotations

import contextlib
import copy
import io
import warnings
from typing import Any, Callable

import torch

from . import api
from .testing import assert_close_tree

# -- verdicts ---------------------------------------------------------------------


class Verdict:
    """A checker's result: true when the answer is right. Shows nothing itself in a notebook
    (the checker has already printed its message), so a cell ends with the verdict alone."""

    def __init__(self, passed: bool, message: str):
        self.passed, self.message = passed, message

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verdict(passed={self.passed}, message={self.message!r})"

    def _ipython_display_(self) -> None:
        pass


def _ok(message: str) -> Verdict:
    print(f"✓ {message}")
    return Verdict(True, message)


def _wrong(message: str) -> Verdict:
    print(f"✗ {message}")
    return Verdict(False, message)


def _todo(hint: str) -> Verdict:
    message = f"Not answered yet: replace the ... placeholder. Hint: {hint}"
    print(f"✎ {message}")
    return Verdict(False, message)


def _missing(answer: Any) -> Verdict:
    return answer is ... or answer is None


def _call(fn: Callable, *args: Any) -> tuple[Any, str | None]:
    """Call the learner's ``fn``; return (result, None) or (None, what went wrong)."""
    try:
        return fn(*args), None
    except Exception as e:  # the learner's code: report, don't raise
        return None, f"{type(e).__name__}: {e}"


def _quiet_explain(fn: Callable, *args: Any, **options: Any):
    """``toycompiler.explain`` without the fallback warnings cluttering the verdict."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return api.explain(fn, **options)(*copy.deepcopy(args))


def _same(actual: Any, expected: Any) -> str | None:
    try:
        assert_close_tree(actual, expected)
        return None
    except AssertionError as e:
        return str(e).strip().splitlines()[0]


# -- lesson 1: why compile ----------------------------------------------------------


def _lesson01_g(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return ((x * y + 1.5) * x - y) * 0.5


def _schedule_of(n: int):
    x, y = torch.randn(n), torch.randn(n)
    return _quiet_explain(_lesson01_g, x, y, backend="cpp").frames[0].backend.schedule


def check_lesson01_unfused_bytes(bytes_moved: Callable[[int], int] | Any) -> Verdict:
    """``bytes_moved(n)``: bytes eager reads and writes for lesson 1's ``g`` on n float32 elements."""
    if _missing(bytes_moved):
        return _todo("eager runs g's five operations as five kernels; each reads its inputs from memory "
                     "and writes its output back; a float32 element is 4 bytes.")
    for n in (1, 100, 4096):
        got, err = _call(bytes_moved, n)
        if err:
            return _wrong(f"bytes_moved({n}) raised {err}")
        expected = _schedule_of(n).unfused_bytes
        if got != expected:
            return _wrong(f"bytes_moved({n}) returned {got}; eager moves {expected} bytes. "
                          "Count every kernel: what it reads plus what it writes.")
    return _ok("right: every eager op reads its inputs and writes its output, "
               "so intermediates cross memory twice.")


def check_lesson01_fused_bytes(bytes_moved: Callable[[int], int] | Any) -> Verdict:
    """``bytes_moved(n)``: bytes one fused kernel moves for lesson 1's ``g``."""
    if _missing(bytes_moved):
        return _todo("one fused kernel reads x and y once and writes the result once; "
                     "everything in between stays in registers.")
    for n in (1, 100, 4096):
        got, err = _call(bytes_moved, n)
        if err:
            return _wrong(f"bytes_moved({n}) raised {err}")
        expected = _schedule_of(n).fused_bytes
        if got != expected:
            return _wrong(f"bytes_moved({n}) returned {got}; the fused kernel moves {expected} bytes.")
    return _ok("right: the fused kernel touches memory only for its inputs and its output.")
