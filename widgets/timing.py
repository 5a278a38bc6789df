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

import math
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
    bytes_moved: int = 0  # the least a run must read and write: its tensor arguments and its outputs
    copy_gbps: float | None = None  # this machine's copy bandwidth, measured in the same process

    def gbps(self, seconds: float) -> str:
        """Achieved bandwidth beside the copy bandwidth: far above it means the data sat in cache."""
        if not self.bytes_moved or not seconds:
            return ""
        text = f"  {self.bytes_moved / seconds / 1e9:.1f} GB/s"
        return text + (f" (copy: {self.copy_gbps:.1f} GB/s)" if self.copy_gbps else "")

    @property
    def speedup(self) -> float:
        return self.eager_s / self.compiled_s if self.compiled_s > 0 else float("nan")

    def __str__(self) -> str:
        out = [f"timing of {self.name} (median of {self.repeat} calls)",
               f"  eager     {_fmt(self.eager_s)}{self.gbps(self.eager_s)}",
               f"  compiled  {_fmt(self.compiled_s)}  ({self.speedup:.2f}x, backend {self.backend or '?'})"
               f"{self.gbps(self.compiled_s)}",
               f"  compile   {_fmt(self.compile_s)} (first call, once)"]
        if self.torch_compile_s is not None:
            out.append(f"  torch.compile  {_fmt(self.torch_compile_s)} "
                       f"(compile {_fmt(self.torch_compile_compile_s or 0.0)}){self.gbps(self.torch_compile_s)}")
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


def tensor_bytes(value: Any) -> int:
    """Bytes of every tensor in ``value`` (nested tuples, lists and dicts included)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(map(tensor_bytes, value))
    return sum(map(tensor_bytes, value.values())) if isinstance(value, dict) else 0


_COPY_GBPS: dict[str, float] = {}


def copy_bandwidth(device: str = "cpu") -> float:
    """GB/s of a 64 MB tensor copy (read plus write) on ``device``, best of five; measured once per process."""
    if device not in _COPY_GBPS:
        src = torch.randn(1 << 24, device=device)
        dst = torch.empty_like(src)
        sync = torch.cuda.synchronize if src.is_cuda else (lambda: None)
        best = math.inf
        for _ in range(6):
            start = time.perf_counter()
            dst.copy_(src)
            sync()
            best = min(best, time.perf_counter() - start)
        _COPY_GBPS[device] = 2 * src.numel() * src.element_size() / best / 1e9
    return _COPY_GBPS[device]


def measure(fn: Callable, compiled: Callable, *args: Any, repeat: int = 7, name: str | None = None,
            compile_s: float | None = None, torch_compile: bool = False, backend: str = "",
            **kwargs: Any) -> Timing:
    """Time ``fn`` eagerly and ``compiled``; pass ``compile_s`` if ``compiled`` has already run once.

    Inputs and outputs of 1 MB or more also give the achieved GB/s of each version, beside the copy
    bandwidth of the same machine."""
    if compile_s is None:
        compile_s = first_call_time(compiled, args, kwargs)
    moved = tensor_bytes((args, kwargs)) + tensor_bytes(fn(*args, **kwargs))
    device = next((str(a.device) for a in args if isinstance(a, torch.Tensor)), "cpu")
    eager = median_time(fn, args, kwargs, repeat)
    fast = median_time(compiled, args, kwargs, repeat)
    tc = tc_compile = None
    if torch_compile:
        real = torch.compile(fn)
        tc_compile = first_call_time(real, args, kwargs)
        tc = median_time(real, args, kwargs, repeat)
    big = moved >= 1 << 20  # smaller runs are per-call overhead, not bandwidth
    return Timing(name or getattr(fn, "__qualname__", "fn"), eager, fast, compile_s, repeat, tc, tc_compile, backend,
                  moved if big else 0, copy_bandwidth(device) if big else None)
