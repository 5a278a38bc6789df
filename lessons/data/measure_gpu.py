"""Measure the GPU figures lessons 1 and 10 show; run on a machine with a CUDA GPU.

    python lessons/data/measure_gpu.py lessons/data/gpu_measurements.json

Writes one JSON file: the machine, the date, and
- launch overhead: host time per tiny eager op, and per call of a five-op eager function;
- the memory wall: lesson 1's g(x, y) eagerly (five kernels) and as one fused Triton kernel
  (the kernel toycompiler's Triton backend generates for it), over sizes;
- block size: the fused kernel's time for each XBLOCK on a large input (lesson 10).
Timings are medians from triton.testing.do_bench (CUDA events), in milliseconds.
"""

import datetime
import json
import sys
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


def g(x, y):
    return ((x * y + 1.5) * x - y) * 0.5


@triton.jit
def triton_mul_add_mul_sub_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), mask=xmask)
    tmp1 = tl.load(in_ptr1 + (xindex), mask=xmask)
    tmp2 = tmp0 * tmp1
    tmp3 = tmp2 + 1.5
    tmp4 = tmp3 * tmp0
    tmp5 = tmp4 - tmp1
    tmp6 = tmp5 * 0.5
    tl.store(out_ptr0 + (xindex), tmp6, mask=xmask)


def fused(x, y, out, block=1024):
    n = x.numel()
    triton_mul_add_mul_sub_mul_0[(triton.cdiv(n, block),)](x, y, out, n, XBLOCK=block)
    return out


def host_time_per_call(fn, calls=2000):
    """Wall time per call on the host with the GPU queue kept busy, then synchronised (launch-bound)."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


def main(path):
    dev = torch.device("cuda")
    a, b = torch.randn(1, device=dev), torch.randn(1, device=dev)
    out1 = torch.empty_like(a)
    launch = {
        "eager torch.add, 1 element (ms per call)": host_time_per_call(lambda: torch.add(a, b)),
        "eager g, 5 ops, 1 element (ms per call)": host_time_per_call(lambda: g(a, b)),
        "fused Triton g, 1 element (ms per call)": host_time_per_call(lambda: fused(a, b, out1)),
        "GPU time of one 1-element kernel (ms, CUDA events)": do_bench(lambda: torch.add(a, b), return_mode="median"),
    }
    memory_wall = []
    for k in range(3, 9):
        n = 10 ** k
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty_like(x)
        assert torch.allclose(fused(x, y, out), g(x, y), atol=1e-5)
        memory_wall.append({
            "n": n,
            "eager_ms": do_bench(lambda: g(x, y), return_mode="median"),
            "fused_ms": do_bench(lambda: fused(x, y, out), return_mode="median"),
            "eager_bytes": 52 * n,
            "fused_bytes": 12 * n,
        })
    n = 1 << 26
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    blocks = []
    for block in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384):
        ms = do_bench(lambda: fused(x, y, out, block), return_mode="median")
        blocks.append({"XBLOCK": block, "ms": ms, "GB/s": 12 * n / ms / 1e6})
    props = torch.cuda.get_device_properties(0)
    result = {
        "machine": torch.cuda.get_device_name(0),
        "multiprocessors": props.multi_processor_count,
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "how": "lessons/data/measure_gpu.py; medians of triton.testing.do_bench (CUDA events) unless noted",
        "launch_overhead": launch,
        "memory_wall": memory_wall,
        "block_size": {"n": n, "function": "lesson 1's g, fused", "rows": blocks},
    }
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
