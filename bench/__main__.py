"""``python -m toycompiler.bench [--device cpu|cuda] [--quick] [--out|--merge FILE.json] [--chart FILE.png]``

Times every workload eagerly, with real ``torch.compile`` and with
toycompiler (C++ kernels on the CPU, Triton kernels on a GPU), all in one
run so that ratios compare like with like. Prints one line per workload as it
goes, then a markdown table; writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import warnings

import torch

from . import measure, runners, workloads
from .runners import make_compiled, outputs_match, toy_status, toy_target


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message="toycompiler:")  # fallbacks are reported in the table
    if args.child_compile:
        return measure.child_compile(args.child_compile, args.compiler, args.device)
    if args.table:  # the README's tables are printed from the results files, never typed in
        with open(args.table) as f:
            return print(markdown(json.load(f)))
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and argv is None:  # run from the command line: again, if need be, in huge pages
        measure.with_huge_pages(__package__)
    if args.threads:  # every contender, and the compile subprocesses, get the same CPU threads
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        torch.set_num_threads(args.threads)
    runners.TOY_MODE[0] = args.toy_mode
    allocator = measure.steady_allocator() if device == "cpu" else "PyTorch's CUDA caching allocator"
    torch.manual_seed(0)
    bandwidth = measure.copy_bandwidth(device, args.quick)
    print(f"# {machine_name(device)}: copy bandwidth {bandwidth / 1e9:.1f} GB/s", flush=True)
    pool = workloads.WORKLOADS + workloads.HALF_WORKLOADS
    chosen = [w for w in pool if not args.only or w.name in args.only]
    rows = [run_workload(w, device, args.quick) for w in chosen]
    later = measure.copy_bandwidth(device, args.quick)  # a shared machine's load changes: keep the best
    if later > bandwidth:
        print(f"# copy bandwidth measured again: {later / 1e9:.1f} GB/s", flush=True)
        bandwidth = later
    compile_times = {} if args.no_compile_time else measure_compile(device)
    overhead = per_call_overhead(device)
    result = {"machine": machine_info(device, bandwidth) | {"allocator": allocator}, "quick": args.quick,
              "toy_mode": args.toy_mode or "default",
              "workloads": rows,
              "compile": compile_times, "overhead_us": overhead, "notes": notes(device)}
    if args.merge:
        with open(args.merge) as f:
            result = merge(json.load(f), result)
        args.out = args.out or args.merge
    result["summary"] = summarize(result, device)
    table = markdown(result)
    print("\n" + table)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.out}")
    if args.chart:
        chart(result, args.chart)
        print(f"wrote {args.chart}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m toycompiler.bench", description=__doc__.split("\n\n")[1])
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available")
    p.add_argument("--quick", action="store_true", help="smaller inputs, shorter timing")
    p.add_argument("--out", help="write results as JSON, e.g. bench/results/<machine>.json")
    p.add_argument("--chart", help="write a PNG chart of speedups over eager")
    p.add_argument("--only", nargs="*", help="run only these workloads")
    p.add_argument("--toy-mode", choices=["default", "max-autotune", "reduce-overhead"],
                   help="toycompiler's mode for the workload timings (default: default)")
    p.add_argument("--threads", type=int, help="CPU threads for every contender (a shared machine: 1)")
    p.add_argument("--no-compile-time", action="store_true", help="skip cold/warm compile in subprocesses")
    p.add_argument("--merge", metavar="FILE.json",
                   help="add this run's workloads to a results file (replacing rows of the same name), recompute "
                        "its summary and write it back (or to --out): one long run split over several commands")
    p.add_argument("--table", metavar="FILE.json", help="print the markdown table of a results file, run nothing")
    p.add_argument("--child-compile", help=argparse.SUPPRESS)
    p.add_argument("--compiler", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# -- one workload ---------------------------------------------------------------------


def run_workload(w: workloads.Workload, device: str, quick: bool) -> dict:
    """Time eager, torch.compile and toycompiler on one workload; one progress line."""
    inputs = w.make_inputs(device, quick)
    eager = make_compiled(w, "eager", device)
    expected = eager(*inputs)
    row = {"name": w.name, "describe": w.describe, "shape": list(inputs[0].shape),
           "bandwidth_bound": w.bandwidth_bound, "times_ms": {}, "status": {}, "first_call_s": {}}
    row["gpu_ms"] = {}  # GPU time per call (CUDA only): measure.gpu_seconds
    contenders = {"eager": eager}
    for compiler in ("inductor", "toy"):
        status, first, fn = _compile_and_check(w, compiler, device, inputs, expected)
        row["status"][compiler], row["first_call_s"][compiler] = status, first
        if status == "ok":
            contenders[compiler] = fn
    for name, fn in contenders.items():
        try:  # wall time per call (host included), then GPU time
            row["times_ms"][name] = measure.median_seconds(lambda: fn(*inputs), device) * 1e3
            if device == "cuda":
                row["gpu_ms"][name] = measure.gpu_seconds(lambda: fn(*inputs)) * 1e3
        except Exception as e:  # e.g. a later call failing where the first one ran
            row["status"][name] = f"error on a later call: {type(e).__name__}: {str(e)[:160]}"
    if w.bandwidth_bound:  # GB/s from GPU time where there is one
        row["ideal_bytes"] = workloads.ideal_bytes(inputs, expected)
        best = row["gpu_ms"] or row["times_ms"]
        row["gbps"] = {c: row["ideal_bytes"] / (ms * 1e-3) / 1e9 for c, ms in best.items()}
        row["copy_ms"] = measure.copy_seconds(row["ideal_bytes"], device) * 1e3  # the same bytes, timed the same way
        row["fraction_of_copy"] = {c: row["copy_ms"] / ms for c, ms in best.items()}
    print(progress_line(row), flush=True)
    return row


def _compile_and_check(w: workloads.Workload, compiler: str, device: str, inputs: tuple,
                       expected: object) -> tuple[str, float | None, object]:
    sync = measure.synchronizer(device)
    try:
        fn = make_compiled(w, compiler, device)
        start = time.perf_counter()
        out = fn(*inputs)
        sync()
        first = time.perf_counter() - start
    except Exception as e:  # a benchmark reports failures, it does not stop at them
        return f"error: {type(e).__name__}: {str(e).splitlines()[0][:200]}", None, None
    status = toy_status(fn) if compiler == "toy" else "ok"
    if not outputs_match(out, expected):
        status = "WRONG: outputs differ from eager" + ("" if status == "ok" else f" ({status})")
    return status, first, fn


def progress_line(row: dict) -> str:
    t = row["times_ms"]
    parts = [f"{row['name']:<18}", f"eager {t['eager']:.3f} ms"]
    for c, label in (("inductor", "torch.compile"), ("toy", "toycompiler")):
        parts.append(f"{label} {t[c]:.3f} ms" if c in t else f"{label} {row['status'][c][:80]}")
    return " | ".join(parts)


# -- compile time and per-call overhead ------------------------------------------------


def measure_compile(device: str) -> dict:
    """Cold and warm compile of the 10-op function, each in a fresh process."""
    out = {}
    for compiler in ("inductor", "toy"):
        out[compiler] = measure.cold_and_warm(workloads.COMPILE_WORKLOAD.name, compiler, device)
        c = out[compiler]
        print(f"compile ten_ops with {compiler}: cold {c['cold_s']} s, warm {c['warm_s']} s"
              + (f" ({c['error']})" if c["error"] else ""), flush=True)
    return out


def tiny_sin_cos(x, y):
    return torch.sin(x) + torch.cos(y)


def per_call_overhead(device: str) -> dict:
    """Microseconds per call on 8-element inputs: nearly all of it is the runtime, not the kernel."""
    import toycompiler

    x, y = torch.randn(8, device=device), torch.randn(8, device=device)
    contenders = {"eager": lambda: tiny_sin_cos, "inductor": lambda: torch.compile(tiny_sin_cos),
                  "toy": lambda: toycompiler.compile(tiny_sin_cos, backend=toy_target(device))}
    if device == "cuda":
        contenders["inductor-reduce-overhead"] = lambda: torch.compile(tiny_sin_cos, mode="reduce-overhead")
        contenders["toy-reduce-overhead"] = lambda: toycompiler.compile(tiny_sin_cos, backend="triton",
                                                                        mode="reduce-overhead")
    out = {}
    for name, make in contenders.items():
        torch._dynamo.reset()
        fn = make()
        for _ in range(3):
            fn(x, y)
        out[name] = measure.median_seconds(lambda: fn(x, y), device, budget=0.5) * 1e6
    out |= launch_breakdown(x, y, device)
    print("per-call overhead (us): " + ", ".join(f"{k} {v:.1f}" for k, v in out.items()), flush=True)
    return out


def launch_breakdown(x: torch.Tensor, y: torch.Tensor, device: str) -> dict:
    """Where toycompiler's per-call time goes: the output code alone, and (GPU) one launch each way."""
    import toycompiler
    from toycompiler.backend import codecache

    report = toycompiler.explain(tiny_sin_cos, backend=toy_target(device))(x, y)
    backend = report.frames[0].backend
    if backend.output_code is None:
        return {}
    module = codecache.python_module_at(backend.output_code.path)
    out = {"toy_output_code_only": measure.median_seconds(lambda: module.call(x, y), device, budget=0.5) * 1e6}
    if device == "cuda":
        kernel = getattr(module, backend.kernels[0].name)
        buf = torch.empty_like(x)
        direct = lambda: kernel[(1,)](x, y, buf, 8, XBLOCK=16)  # noqa: E731
        jit = lambda: kernel.kernel[(1,)](x, y, buf, 8, XBLOCK=16)  # noqa: E731
        direct()
        out["triton_jit_launch"] = measure.median_seconds(jit, device, budget=0.5) * 1e6
        out["triton_direct_launch"] = measure.median_seconds(direct, device, budget=0.5) * 1e6
    return out


# -- summary, table, chart --------------------------------------------------------------


def merge(old: dict, new: dict) -> dict:
    """``new``'s rows over ``old``'s: a workload run now replaces its old row, the others are kept, in
    the suite's order. Both must come from one machine, device and mode; the copy bandwidth is the best
    of both runs; compile times are kept from ``old`` where this run did not measure them."""
    for key in ("name", "device", "threads"):
        if old["machine"][key] != new["machine"][key]:
            raise SystemExit(f"--merge: the results file was measured with {key} {old['machine'][key]!r}, "
                             f"this run with {new['machine'][key]!r}: not merged")
    if old["toy_mode"] != new["toy_mode"] or old["quick"] != new["quick"]:
        raise SystemExit("--merge: the results file used another --toy-mode or --quick: not merged")
    rows = {r["name"]: r for r in old["workloads"]} | {r["name"]: r for r in new["workloads"]}
    order = [w.name for w in workloads.WORKLOADS + workloads.HALF_WORKLOADS]
    in_order = sorted(rows.values(), key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
    merged = dict(new, workloads=in_order)
    merged["machine"] = dict(new["machine"], copy_gbps=max(old["machine"]["copy_gbps"], new["machine"]["copy_gbps"]))
    merged["compile"] = new["compile"] or old.get("compile", {})
    merged["merged_runs"] = old.get("merged_runs", 1) + 1
    return merged


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarize(result: dict, device: str) -> dict:
    rows = result["workloads"]
    both = [r for r in rows if "toy" in r["times_ms"] and "inductor" in r["times_ms"]]
    vs_inductor = {r["name"]: r["times_ms"]["inductor"] / r["times_ms"]["toy"] for r in both}
    gpu = [r for r in rows if "toy" in r.get("gpu_ms", {}) and "inductor" in r.get("gpu_ms", {})]
    gpu_vs_inductor = {r["name"]: r["gpu_ms"]["inductor"] / r["gpu_ms"]["toy"] for r in gpu}
    vs_eager = {r["name"]: r["times_ms"]["eager"] / r["times_ms"]["toy"] for r in rows if "toy" in r["times_ms"]}
    bw = [vs_inductor[r["name"]] for r in both if r["bandwidth_bound"]]
    summary = {"toy_vs_inductor": vs_inductor, "toy_vs_eager": vs_eager,
               "geomean_toy_vs_inductor_bandwidth_bound": geomean(bw),
               "gpu_time_toy_vs_inductor": gpu_vs_inductor,
               "geomean_gpu_time_toy_vs_inductor_bandwidth_bound":
                   geomean([gpu_vs_inductor[r["name"]] for r in gpu if r["bandwidth_bound"]]),
               "not_compiled_by_toy": {r["name"]: r["status"]["toy"] for r in rows if r["status"]["toy"] != "ok"}}
    comp = result.get("compile") or {}
    if comp.get("toy", {}).get("cold_s") and comp.get("inductor", {}).get("cold_s"):
        summary["cold_compile_toy_over_inductor"] = comp["toy"]["cold_s"] / comp["inductor"]["cold_s"]
    o = result["overhead_us"]
    summary["overhead_toy_over_inductor"] = o["toy"] / o["inductor"]
    return summary


def markdown(result: dict) -> str:
    m = result["machine"]
    # results files written before each row timed its own copy compare with the large copy's bandwidth
    same = all("copy_ms" in r for r in result["workloads"] if r.get("gbps"))
    reference = "a copy of the same bytes" if same else "the copy bandwidth"
    gpu = f"; GPU time ({m.get('gpu_timing', 'do_bench, L2 flushed')})" if m["device"] == "cuda" else ""
    lines = [f"**{m['name']}** ({m['device']}, {m['threads']} thread(s)), torch {m['torch']}, triton {m['triton']}; "
             f"copy bandwidth {m['copy_gbps']:.0f} GB/s; toycompiler mode {result['toy_mode']}; "
             f"measured {m.get('date', '(date not recorded)')}"
             f"{'; memory: ' + m['allocator'] if m['device'] == 'cpu' and 'allocator' in m else ''}. "
             f"Times are medians in ms: wall time per call (host included){gpu}. Ratios > 1 mean toycompiler "
             "is faster.", "",
             "| workload | input | eager | torch.compile | toycompiler | toy vs eager | toy vs torch.compile "
             f"| toy GB/s (% of {reference}) | GPU ms: eager / torch.compile / toy | toy vs torch.compile, GPU time |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["workloads"]:
        t = r["times_ms"]
        cell = lambda c: f"{t[c]:.3f}" if c in t else "-"  # noqa: E731
        speed = f"{t['eager'] / t['toy']:.2f}x" if "toy" in t else r["status"]["toy"][:60]
        ratio = f"{t['inductor'] / t['toy']:.2f}x" if "toy" in t and "inductor" in t else "-"
        gbps = "-"
        if r["bandwidth_bound"] and "toy" in r.get("gbps", {}):
            gbps = f"{r['gbps']['toy']:.1f} ({100 * r['fraction_of_copy']['toy']:.0f}%)"
        shape = "x".join(map(str, r["shape"]))
        g = r.get("gpu_ms", {})
        gpu = " / ".join(f"{g[c]:.3f}" if c in g else "-" for c in ("eager", "inductor", "toy")) if g else "-"
        gpu_ratio = f"{g['inductor'] / g['toy']:.2f}x" if "toy" in g and "inductor" in g else "-"
        lines.append(f"| {r['name']} | {shape} | {cell('eager')} | {cell('inductor')} | {cell('toy')} | {speed} "
                     f"| {ratio} | {gbps} | {gpu} | {gpu_ratio} |")
    s = result["summary"]
    lines.append("")
    if s.get("geomean_gpu_time_toy_vs_inductor_bandwidth_bound"):
        lines.append(f"Geomean toycompiler vs torch.compile on bandwidth-bound workloads, GPU time: "
                     f"{s['geomean_gpu_time_toy_vs_inductor_bandwidth_bound']:.2f}x")
    if s["geomean_toy_vs_inductor_bandwidth_bound"]:
        lines.append(f"Geomean toycompiler vs torch.compile on bandwidth-bound workloads, wall time: "
                     f"{s['geomean_toy_vs_inductor_bandwidth_bound']:.2f}x")
    comp = result.get("compile") or {}
    for c, label in (("inductor", "torch.compile"), ("toy", "toycompiler")):
        if c in comp:
            lines.append(f"Compile of a 10-op function with {label}: cold {_s(comp[c]['cold_s'])}, "
                         f"warm {_s(comp[c]['warm_s'])} (fresh processes)")
    o = result["overhead_us"]
    lines.append("Per-call time on 8-element inputs (us): " + ", ".join(f"{k} {v:.1f}" for k, v in o.items()))
    lines += [f"Note: {n}" for n in result["notes"]]
    return "\n".join(lines)


def _s(seconds: float | None) -> str:
    return f"{seconds:.2f} s" if seconds is not None else "n/a"


def chart(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["workloads"]
    names = [r["name"] for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.5))
    for i, (c, label) in enumerate((("inductor", "torch.compile"), ("toy", "toycompiler"))):
        speed = [r["times_ms"]["eager"] / r["times_ms"][c] if c in r["times_ms"] else 0 for r in rows]
        ax.barh([k + 0.4 * i for k in range(len(rows))], speed, height=0.4, label=label)
    ax.axvline(1.0, color="gray", linewidth=1)
    ax.set_yticks([k + 0.2 for k in range(len(rows))], names)
    ax.invert_yaxis()
    ax.set_xlabel("speedup over eager (higher is better; 0 = not compiled)")
    ax.set_title(f"{result['machine']['name']}")
    ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)


# -- the machine ---------------------------------------------------------------------------


def machine_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return platform.processor() or platform.machine()


def machine_info(device: str, bandwidth: float) -> dict:
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    return {"name": machine_name(device), "device": device, "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "triton": triton_version, "python": sys.version.split()[0], "copy_gbps": bandwidth / 1e9,
            "toy_target": toy_target(device), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "gpu_timing": measure.GPU_TIMING}


def notes(device: str) -> list[str]:
    if device == "cpu":
        return ["toycompiler's Triton kernels are not timed on the CPU: Triton's interpreter is far too slow; "
                "the CPU figures are toycompiler's C++ kernels."]
    return ["toycompiler's C++ kernels are not timed on the GPU machine: its figures are Triton kernels."]


if __name__ == "__main__":
    main()
