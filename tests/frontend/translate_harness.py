"""The differential check behind every ``test_translate_*`` table.

Each case is a function written like ordinary model code, a factory that makes
its inputs for a given size, and what the translator should make of it: the
number of graphs, or the kind of graph break. :func:`run_case` checks, against
eager PyTorch:

1. the compiled function on the first call, on a cache hit (same shapes, new
   values, one cache entry) and after a recompile (another size, two entries);
2. the report of the first call (what ``explain`` shows): the graph count, and
   no break, or the expected kind of break;
3. the inputs after each call (in-place changes must match eager's);
4. that nothing ran eagerly instead, unless the case names the known gap
   (``allow_fallback="why"``).

The comparison itself is :func:`toycompiler.testing.assert_same`, as in every
differential test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import toycompiler
from toycompiler.artifacts import Report
from toycompiler.testing import assert_same


@dataclass
class Case:
    fn: Callable
    inputs: Callable[[int], tuple]  # size -> positional arguments
    graphs: int = 1  # graphs expected when it traces fully
    breaks: str | None = None  # expected graph-break kind, or None for "no break"
    backend: str = "eager"
    sizes: tuple[int, int] = (3, 5)
    allow_fallback: str | None = None  # a known gap: why part of it runs eagerly
    name: str = field(default="")

    def __post_init__(self):
        self.name = self.name or getattr(self.fn, "__name__", type(self.fn).__name__)


def case_id(case: Case) -> str:
    return case.name


def X(n: int) -> tuple:
    return (torch.randn(n, 4),)


def XY(n: int) -> tuple:
    return (torch.randn(n, 4), torch.randn(n, 4))


def _inputs(case: Case, n: int, seed: int) -> tuple:
    torch.manual_seed(seed)
    return case.inputs(n)


def _tensor_shapes(args: Any) -> list:
    out = []
    for a in (
        args
        if isinstance(args, tuple | list)
        else args.values()
        if isinstance(args, dict)
        else [args]
    ):
        if isinstance(a, torch.Tensor):
            out.append(tuple(a.shape))
        elif isinstance(a, tuple | list | dict):
            out += _tensor_shapes(a)
    return out


def _cache_of(compiled: Any):
    target = getattr(compiled, "_compiled_forward", compiled)
    return target.cache


def run_case(case: Case) -> None:
    compiled = toycompiler.compile(case.fn, backend=case.backend)
    first = _inputs(case, case.sizes[0], 1)
    calls = [first, _inputs(case, case.sizes[0], 2), _inputs(case, case.sizes[1], 3)]
    for what, args in zip(("first call", "cache hit", "recompile"), calls):
        try:
            assert_same(case.fn, *args, compiled=compiled, allow_fallback=case.allow_fallback)
        except AssertionError as e:
            raise AssertionError(f"{case.name}: {what}: {e}") from None
        if what == "first call":
            _check_report(case, _first_call_report(compiled))
    if case.breaks is None:
        changed = _tensor_shapes(first) != _tensor_shapes(calls[2])
        entries = len(_cache_of(compiled).entries)
        expected = 2 if changed else 1
        assert entries == expected, f"expected {expected} cache entries, got {entries}"


def _first_call_report(compiled: Any) -> Report:
    """What ``toycompiler.explain(fn)(*args)`` reports, from the compiled function's own first call
    (one compile saved per case: the suite must stay fast)."""
    target = getattr(compiled, "_compiled_forward", compiled)
    return Report(tuple(target.compiled_frames))


def _check_report(case: Case, report: Report) -> None:
    if case.breaks is None:
        assert report.graph_break_count == 0, f"unexpected graph break:\n{report}"
        assert report.graph_count == case.graphs, f"expected {case.graphs} graph(s):\n{report}"
    else:
        kinds = [b.kind for b in report.breaks]
        assert case.breaks in kinds, f"expected a {case.breaks!r} break, got {kinds}:\n{report}"
        assert all(b.reason for b in report.breaks)
