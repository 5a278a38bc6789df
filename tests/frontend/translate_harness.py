"""The differential check behind every ``test_translate_*`` table.

Each case is a function written like ordinary model code, a factory that makes
its inputs for a given size, and what the translator should make of it: the
number of graphs, or the kind of graph break. :func:`run_case` checks, against
eager PyTorch:

1. the compiled function on the first call, on a cache hit (same shapes, new
   values, one cache entry) and after a recompile (another size, two entries);
2. the report of the first call (what ``explain`` shows): the graph count, and
   no break, or the expected kind of break;
3. the inputs after each call (in-place changes must match eager's).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import toycompiler
from toycompiler.artifacts import Report
from toycompiler.testing import assert_close_tree


@dataclass
class Case:
    fn: Callable
    inputs: Callable[[int], tuple]  # size -> positional arguments
    graphs: int = 1  # graphs expected when it traces fully
    breaks: str | None = None  # expected graph-break kind, or None for "no break"
    backend: str = "eager"
    sizes: tuple[int, int] = (3, 5)
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
    _check_same(case, compiled, first, 0)
    _check_report(case, _first_call_report(compiled))
    for step, args in enumerate(
        [_inputs(case, case.sizes[0], 2), _inputs(case, case.sizes[1], 3)], 1
    ):
        _check_same(case, compiled, args, step)
    if case.breaks is None:
        changed = _tensor_shapes(first) != _tensor_shapes(_inputs(case, case.sizes[1], 3))
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


def _check_same(case: Case, compiled: Any, args: tuple, step: int) -> None:
    eager_args = copy.deepcopy(args)
    expected = case.fn(*eager_args)
    actual = compiled(*args)
    what = ("first call", "cache hit", "recompile")[step]
    try:
        assert_close_tree(actual, expected)
        assert_close_tree(args, eager_args)  # in-place changes to the inputs must match too
    except AssertionError as e:
        report = toycompiler.explain(case.fn, backend=case.backend)(*copy.deepcopy(eager_args))
        raise AssertionError(f"{case.name}: {what}: {e}\n\n{report}") from None
