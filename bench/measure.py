"""How the benchmark measures: medians of timed blocks, copy bandwidth, compile time in fresh processes."""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import torch


def synchronizer(device: str) -> Callable[[], None]:
    return torch.cuda.synchronize if device == "cuda" else (lambda: None)


HUGE_PAGES = "glibc.malloc.hugetlb=1"  # glibc's tunable: its malloc asks for transparent huge pages


def steady_allocator() -> str:
    """Have glibc's malloc keep freed blocks of up to 32 MB for reuse, as a long-running process's does; says how
    the process allocates (the results file keeps it).

    By default glibc maps a block of 128 KB or more afresh (``mmap``) and unmaps it when it is freed, raising
    that threshold as such blocks are freed, and returns the heap's free top to the system: whether a call's
    4 MB buffers cost page faults depends on what the process allocated before. The same command timed a layer
    norm + GELU training step over [1024, 1024] on one thread at 5.66 ms with toycompiler and 3.86 with
    torch.compile in one run, at 2.15 and 3.81 in the next. With freed blocks kept (four runs, the same setting
    made through glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_): toycompiler
    1.94-2.29 ms, torch.compile 2.05-2.38, eager 2.95-3.14. Every contender runs under the same setting."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return "the platform's malloc, as configured"
    m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt's parameters (malloc.h); 32 MB: the largest it takes
    if not (libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)):
        return "glibc malloc, defaults"
    kept = "glibc malloc keeping freed blocks of up to 32 MB for reuse (mallopt)"
    return f"{kept}, in transparent huge pages ({HUGE_PAGES})" if HUGE_PAGES in os.environ.get("GLIBC_TUNABLES", "") \
        else kept


def with_huge_pages(module: str) -> None:
    """Run this command again, in a process whose glibc malloc asks the kernel for transparent huge pages for
    what it maps (``GLIBC_TUNABLES``, read when a process starts; glibc 2.35 and later).

    A block larger than 32 MB is mapped afresh at every call whatever :func:`steady_allocator` asks, and its 4 KB
    pages faulted in one by one: a cross entropy training step over [256, 50257] writes a 51 MB gradient, 12565
    faults a step. How long they took moved from process to process (the same command timed toycompiler 9.4, 32.6
    and 9.7 ms, torch.compile 24.4, 36.4 and 14.0). In huge pages, 281 to 812 faults a step, and three processes
    timed toycompiler 13.9, 14.0 and 13.1 ms, torch.compile 18.1, 18.1 and 16.8; smaller blocks, reused from the
    heap, stay as they were (no fault). Every contender runs under the same setting."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if sys.platform == "linux" and HUGE_PAGES not in tunables:
        os.environ["GLIBC_TUNABLES"] = ":".join(filter(None, (tunables, HUGE_PAGES)))
        os.execv(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]])


def median_seconds(fn: Callable[[], object], device: str, budget: float = 0.3, blocks: int = 9) -> float:
    """Median time of one call: calls run in blocks long enough to time, the GPU synchronized per block."""
    sync = synchronizer(device)
    fn()
    sync()
    calls = 1
    while True:  # grow the block until it takes a fair share of the budget
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        elapsed = time.perf_counter() - start
        if elapsed > budget / blocks or calls >= 1 << 16:
            break
        calls *= 2 if elapsed * 4 > budget / blocks else 8
    times = []
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


GPU_TIMING = "CUDA events around each call, L2 flushed by a read, the host's time hidden"  # in results files


def gpu_seconds(fn: Callable[[], object], reps: int = 100) -> float:
    """GPU time of one call: CUDA events around each call, the L2 cache flushed before it, median.

    Before each call a 256 MB buffer is read, so every call reads its inputs from memory.
    ``triton.testing.do_bench`` zeroes such a buffer instead; that leaves the L2 cache full of dirty
    lines, which the timed call then writes back as its reads evict them: a read-only kernel (a
    reduction) pays for the flush's writes. On an H100 a row sum of 128 MB took 55.8 us after a
    zeroing flush and 46.1 us after a reading one; a copy of the same bytes 49.6 and 43.7 us.
    Unlike do_bench, a spin kernel (``torch.cuda._sleep``) then keeps the GPU busy for longer than
    the host takes to queue the call: the events measure the GPU's work, never the GPU waiting for a
    slow host (a compiled function's guards, its launches), which :func:`median_seconds`, the wall
    time per call, measures instead."""
    cache = torch.zeros(64 << 20, device="cuda")  # 256 MB, five times the L2 cache of an H100
    for _ in range(3):  # warm up (compiles, autotunes)
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    host = (time.perf_counter() - start) / 10  # an upper bound of the host's time per call
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    torch.cuda._sleep(10_000_000)  # long enough for the GPU's clock to rise: a cold GPU spins slower at first
    end.record()
    torch.cuda.synchronize()
    cycles = int(3 * (host + 20e-6) * 1e7 / (begin.elapsed_time(end) * 1e-3))  # 3x the host's time, in spin cycles
    times = []
    for _ in range(reps):
        cache.sum()  # reads evict every line, and write back the dirty ones before the timed call
        torch.cuda._sleep(cycles)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        times.append((begin, end))
    torch.cuda.synchronize()
    return statistics.median(b.elapsed_time(e) for b, e in times) * 1e-3


def copy_bandwidth(device: str, quick: bool) -> float:
    """Bytes per second of a large tensor copy (read + write), the machine's practical ceiling."""
    numel = (1 << 26 if device == "cuda" else 1 << 24) >> (2 if quick else 0)
    src = torch.randn(numel, device=device)
    dst = torch.empty_like(src)
    seconds = median_seconds(lambda: dst.copy_(src), device)
    return 2 * src.numel() * src.element_size() / seconds


def copy_seconds(nbytes: int, device: str) -> float:
    """Time of a copy that reads and writes ``nbytes`` in all (half each), timed as the workloads are
    (GPU time on a GPU): what a kernel moving that many bytes could at best take on this machine,
    launch, cache and L2-flush effects included, which a large copy's bandwidth leaves out."""
    src = torch.randn(max(1, nbytes // 8), device=device)
    dst = torch.empty_like(src)
    return gpu_seconds(lambda: dst.copy_(src)) if device == "cuda" else median_seconds(lambda: dst.copy_(src), device)


def compile_seconds(workload: str, compiler: str, device: str, cache_dir: str) -> dict:
    """Time of the first call (compile + one run) in a fresh process, with caches under ``cache_dir``."""
    env = dict(os.environ, TOYCOMPILER_CACHE_DIR=os.path.join(cache_dir, "toy"),
               TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_dir, "inductor"),
               TRITON_CACHE_DIR=os.path.join(cache_dir, "triton"))
    cmd = [sys.executable, "-m", "toycompiler.bench", "--child-compile", workload, "--compiler", compiler,
           "--device", device]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cold_and_warm(workload: str, compiler: str, device: str) -> dict:
    """Cold: empty caches. Warm: a second fresh process with the caches the first one filled."""
    with tempfile.TemporaryDirectory(prefix="toybench-") as cache_dir:
        cold = compile_seconds(workload, compiler, device, cache_dir)
        warm = compile_seconds(workload, compiler, device, cache_dir)
    return {"cold_s": cold.get("seconds"), "warm_s": warm.get("seconds"),
            "error": cold.get("error") or warm.get("error")}


def child_compile(workload_name: str, compiler: str, device: str) -> None:
    """Run in the fresh process: build inputs, time the first compiled call, print JSON."""
    from . import workloads
    from .runners import make_compiled

    w = workloads.by_name(workload_name)
    inputs = w.make_inputs(device, True)
    fn = make_compiled(w, compiler, device)
    sync = synchronizer(device)
    start = time.perf_counter()
    fn(*inputs)
    sync()
    print(json.dumps({"seconds": time.perf_counter() - start}))
