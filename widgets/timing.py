"""Measure eager against compiled: medians of repeated calls, kept as data.

``measure(fn, compiled, *args)`` calls each version a few times after a
warm-up and returns a frozen :class:`Timing`. The first compiled call (the one
that compiles) is timed on its own, so compile time is never mixed into run
time. The chart (:mod:`.timing_view`) only draws the result; it never times anything.

Timing never decides a test: the numbers depend on the machine and its load.

Mirrors: torch/_inductor/utils.py (``do_bench``-style medians), minus CUDA
events and cache flushing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Timing:
    """Seconds per call (medians), and the one-off compile time."""

    name: str
    eager_s: float
    compiled_s: float
    compile_s: float  # wall time of the first compiled call (compiling plus one run)
    repeat: int
    torch_compile_s: float | None = None  # real torch.compile, when asked for
    torch_compile_compile_s: float | None = None
    backend: str = ""

    @property
    def speedup(self) -> float:
        return self.eager_s / self.compiled_s if self.compiled_s > 0 else float("nan")

    def __str__(self) -> str:
        out = [f"timing of {self.name} (median of {self.repeat} calls)",
               f"  eager     {_fmt(self.eager_s)}",
               f"  compiled  {_fmt(self.compiled_s)}  ({self.speedup:.2f}x, backend {self.backend or '?'})",
               f"  compile   {_fmt(self.compile_s)} (first call, once)"]
        if self.torch_compile_s is not None:
            out.append(f"  torch.compile  {_fmt(self.torch_compile_s)} "
                       f"(compile {_fmt(self.torch_compile_compile_s or 0.0)})")
        return "\n".join(out)


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def median_time(fn: Callable, args: tuple, kwargs: dict | None = None, repeat: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``fn(*args)`` over ``repeat`` calls, after ``warmup`` untimed ones."""
    kwargs = kwargs or {}
    for _ in range(warmup):
        fn(*args, **kwargs)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def first_call_time(fn: Callable, args: tuple, kwargs: dict | None = None) -> float:
    start = time.perf_counter()
    fn(*args, **(kwargs or {}))
    return time.perf_counter() - start


def measure(fn: Callable, compiled: Callable, *args: Any, repeat: int = 7, name: str | None = None,
            compile_s: float | None = None, torch_compile: bool = False, backend: str = "",
            **kwargs: Any) -> Timing:
    """Time ``fn`` eagerly and ``compiled``; pass ``compile_s`` if ``compiled`` has already run once."""
    if compile_s is None:
        compile_s = first_call_time(compiled, args, kwargs)
    eager = median_time(fn, args, kwargs, repeat)
    fast = median_time(compiled, args, kwargs, repeat)
    tc = tc_compile = None
    if torch_compile:
        real = torch.compile(fn)
        tc_compile = first_call_time(real, args, kwargs)
        tc = median_time(real, args, kwargs, repeat)
    return Timing(name or getattr(fn, "__qualname__", "fn"), eager, fast, compile_s, repeat, tc, tc_compile, backend)
