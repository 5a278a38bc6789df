"""Cost at scale: does compiling and calling grow linearly with the work?

    python -m toycompiler.bench.scaling          # or: python bench/scaling.py
    python -m toycompiler.bench.scaling --quick  # fewer sizes, no torch.compile

Two families, each against real ``torch.compile`` (Inductor) and eager, on this machine:

- **ops**: a function of N chained pointwise ops (an unrolled loop), N = 10 ... 1,000;
- **layers**: an ``nn.Sequential`` of L ``Linear(16, 16)`` layers on a [4, 16] input under
  ``no_grad``, L = 1 ... 100: every parameter is a graph input, so the guards grow with L.

For each: compile time (the first call, toycompiler's graph cache off), the guards listed for the
entry and the terms its check function evaluates, the time of one guard check, and the time per
call. A graph that fell back to eager is recorded with its reason, never hidden. Results are kept
in ``bench/results/scaling-<device>.json``. Times are medians of timed blocks from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from toycompiler.bench.measure import median_seconds  # noqa: E402

import toycompiler  # noqa: E402

OPS = (10, 100, 400, 1000)
LAYERS = (1, 10, 50, 100)
CHAIN_STEPS = ("x = x * 0.999", "x = x + 0.001", "x = torch.sin(x)")


def chain(n: int) -> Callable:
    """``def chain_n(x)`` with ``n`` pointwise statements, as an unrolled loop would leave them."""
    body = "\n".join(f"    {CHAIN_STEPS[i % 3]}" for i in range(n))
    namespace = {"torch": torch}
    exec(compile(f"def chain_{n}(x):\n{body}\n    return x\n", f"<chain {n}>", "exec"), namespace)
    return namespace[f"chain_{n}"]


def stack(layers: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(layers)])


def first_call_seconds(fn: Callable, x: torch.Tensor) -> float:
    start = time.perf_counter()
    fn(x)
    return time.perf_counter() - start


def measure(model: Callable, x: torch.Tensor, with_torch: bool) -> dict:
    """One size: toycompiler's compile, guards and calls; torch.compile's compile and calls; eager."""
    row: dict = {"eager_us": median_seconds(lambda: model(x), "cpu", budget=0.2) * 1e6}
    compiled = toycompiler.compile(model, backend="cpp")
    with toycompiler.config.patch(graph_cache=False):
        row["toy_compile_s"] = first_call_seconds(compiled, x)
    target = getattr(compiled, "_compiled_forward", compiled)
    (entry,) = target.cache.entries
    args = (model, x) if isinstance(model, torch.nn.Module) else (x,)
    guards = entry.artifact.guards
    row["guards"] = len(guards.guards)
    row["checks"] = guards.code.count("\n        and ") + 1  # terms of the compiled check function
    row["guard_check_us"] = median_seconds(lambda: entry.check(*args), "cpu", budget=0.2) * 1e6
    row["toy_us"] = median_seconds(lambda: compiled(x), "cpu", budget=0.2) * 1e6
    row["toy_fallback"] = entry.artifact.backend.fallback_reason if entry.artifact.backend else None
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    if with_torch:
        torch._dynamo.reset()
        real = torch.compile(model)
        row["torch_compile_s"] = first_call_seconds(real, x)
        row["torch_us"] = median_seconds(lambda: real(x), "cpu", budget=0.2) * 1e6
    return row


def line(size: str, row: dict) -> str:
    torch_part = (f"{row['torch_compile_s']:7.2f} s {row['torch_us']:9.0f} us" if "torch_us" in row
                  else f"{'-':>9} {'-':>12}")
    fallback = f"  FELL BACK: {row['toy_fallback'][:70]}" if row["toy_fallback"] else ""
    return (f"{size:<11} {row['toy_compile_s']:7.2f} s {row['guards']:6d} {row['checks']:6d} "
            f"{row['guard_check_us']:8.1f} us {row['toy_us']:9.0f} us | {torch_part} | {row['eager_us']:7.0f} us"
            f"{fallback}")


HEADER = (f"{'size':<11} {'toy: compile':>9} {'guards':>6} {'checks':>6} {'check':>11} {'per call':>12} | "
          f"{'torch.compile':>9} {'per call':>12} | {'eager':>10}")


def markdown(record: dict) -> str:
    """The README's scaling table, printed from a results file."""
    m = record["machine"]
    out = [f"{m['name']}, {m['threads']} thread(s), torch {m['torch']}, Python {m['python']}; "
           f"measured {record['date']}",
           "", "| size | toy compile (s) | guards | checks | guard check (us) | toy per call (us) "
           "| torch.compile compile (s) | torch.compile per call (us) | eager (us) |", "|---|" + "---:|" * 8]
    for family in ("ops", "layers"):
        for n, r in record["results"][family].items():
            torch_part = f"{r['torch_compile_s']:.2f} | {r['torch_us']:.0f}" if "torch_us" in r else "- | -"
            toy = f"{r['toy_us']:.0f}" + (" (fell back)" if r["toy_fallback"] else "")
            out.append(f"| {n} {family} | {r['toy_compile_s']:.2f} | {r['guards']} | {r['checks']} "
                       f"| {r['guard_check_us']:.1f} | {toy} | {torch_part} | {r['eager_us']:.0f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two sizes each, no torch.compile")
    parser.add_argument("--table", metavar="FILE.json", help="print the markdown table of a results file, run nothing")
    args = parser.parse_args(argv)
    if args.table:
        with open(args.table) as fh:
            return print(markdown(json.load(fh)))
    warnings.simplefilter("ignore")
    ops, layers = (OPS[:2], LAYERS[:2]) if args.quick else (OPS, LAYERS)
    results: dict = {"ops": {}, "layers": {}}
    print(HEADER)
    with torch.no_grad():
        for n in ops:
            row = results["ops"][n] = measure(chain(n), torch.randn(1024), not args.quick)
            print(line(f"{n} ops", row), flush=True)
        for n in layers:
            row = results["layers"][n] = measure(stack(n), torch.randn(4, 16), not args.quick)
            print(line(f"{n} layers", row), flush=True)
    record = {
        "benchmark": "scaling: chained pointwise ops [1024] and Sequential of Linear(16, 16) on [4, 16], no_grad",
        "units": "compile in s (first call); check and per call in us (median); guards listed; checks evaluated",
        "results": results,
        "machine": {"name": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                    "threads": torch.get_num_threads(), "python": platform.python_version(),
                    "torch": torch.__version__},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "scaling-cpu.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not args.quick:
        with open(path, "w") as fh:
            json.dump(record, fh, indent=2)
        print(f"saved {path}")


if __name__ == "__main__":
    main()
