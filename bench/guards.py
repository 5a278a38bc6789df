"""Per-call overhead on a tiny input: what guards and the compiled-call path cost.

    python bench/guards.py            # all variants (real inductor compiles once: ~20 s)
    python bench/guards.py --quick    # skip real torch.compile with inductor

Calls ``f(x) = x + 1`` on a 1-element tensor, so the work itself is negligible
and what is measured is the machinery around it: eager; toycompiler with the
eager and cpp backends; the guard check alone; real ``torch.compile`` with
``backend="eager"`` and the default Inductor. Each figure is the median over
many batches of calls, the variants taking turns batch by batch in this one
run; ratios are to eager.
Results are saved as JSON in bench/results/guards.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import toycompiler  # noqa: E402


def f(x):
    return x + 1


def medians_ns(calls: dict[str, Callable[[], object]], batches: int, per_batch: int) -> dict[str, float]:
    """Per call, in nanoseconds: the median over ``batches`` of the mean of ``per_batch`` calls.

    Variants take turns batch by batch, so a busy machine slows them all alike and the ratios hold.
    """
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():  # warm up
        for _ in range(per_batch):
            call()
    for _ in range(batches):
        for name, call in calls.items():
            start = time.perf_counter_ns()
            for _ in range(per_batch):
                call()
            samples[name].append((time.perf_counter_ns() - start) / per_batch)
    return {name: statistics.median(s) for name, s in samples.items()}


def variants(quick: bool) -> dict[str, Callable]:
    x = torch.randn(1)
    out: dict[str, Callable] = {"eager": lambda: f(x)}
    for backend in ("eager", "cpp"):
        compiled = toycompiler.compile(f, backend=backend)
        compiled(x)
        entry = compiled.cache.entries[0]
        out[f"toycompiler backend={backend}"] = lambda c=compiled: c(x)
        if backend == "eager":
            out["toycompiler guard check alone"] = lambda e=entry: e.check(x)
            out["toycompiler entry without guards"] = lambda e=entry: e.run(x)
    torch._dynamo.reset()
    real_eager = torch.compile(f, backend="eager")
    real_eager(x)
    out['torch.compile backend="eager"'] = lambda: real_eager(x)
    if not quick:
        real_inductor = torch.compile(f)
        real_inductor(x)
        out["torch.compile (inductor)"] = lambda: real_inductor(x)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip torch.compile with inductor")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--per-batch", type=int, default=200)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    results = medians_ns(variants(args.quick), args.batches, args.per_batch)
    base = results["eager"]
    print(f"per-call time of f(x) = x + 1 on a 1-element tensor (median of {args.batches} x {args.per_batch} calls)")
    for name, ns in results.items():
        print(f"  {name:<36} {ns / 1e3:8.2f} us   {ns / base:6.2f}x eager")
    record = {
        "benchmark": "guards: per-call overhead, f(x) = x + 1, x = torch.randn(1)",
        "unit": "ns per call (median)",
        "results": results,
        "ratio_to_eager": {k: v / base for k, v in results.items()},
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", "guards.json")
    with open(path, "w") as fh:
        json.dump(record, fh, indent=2)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
