"""The compiled-graph cache: a second process reuses generated code from disk."""

import json
import os
import subprocess
import sys
import textwrap

import torch

import toycompiler
from toycompiler.testing import assert_same

# A child process compiles a 10-op function and prints what its backend did, as JSON.
CHILD = textwrap.dedent("""
    import json, sys, time
    import torch, toycompiler

    def f(x, y):
        a = torch.sin(x) * y + 1.5
        b = torch.relu(a - y) / (torch.abs(x) + 1)
        return torch.exp(-b) * torch.tanh(a) - torch.cos(y)

    x = torch.arange(1000, dtype=torch.float32) / 100
    y = torch.linspace(-2, 2, 1000)
    start = time.perf_counter()
    report = toycompiler.explain(f, backend=sys.argv[1])(x, y)
    seconds = time.perf_counter() - start
    backend = report.frames[0].backend
    out = toycompiler.compile(f, backend=sys.argv[1])(x, y)
    print(json.dumps({"cache": backend.runtime.cache, "stages": [t.stage for t in backend.times],
                      "seconds": seconds, "ok": bool(torch.allclose(out, f(x, y), atol=1e-5)),
                      "kernels": [k.path for k in backend.kernels]}))
""")


def run_child(cache_dir, backend="cpp"):
    env = dict(os.environ, TOYCOMPILER_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CHILD, backend], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_reuses_the_compiled_graph(tmp_path):
    cold = run_child(tmp_path / "cache")
    warm = run_child(tmp_path / "cache")
    assert cold["cache"].startswith("miss, stored as") and cold["ok"]
    assert warm["cache"] == "hit " + cold["cache"].split()[-1] and warm["ok"]
    assert "passes" in cold["stages"] and "codegen" in cold["stages"]
    assert warm["stages"] == ["cache lookup"]  # no passes, lowering, scheduling, codegen or C++ build
    assert warm["kernels"] == cold["kernels"]


def test_changed_shape_or_config_is_a_different_entry(tmp_cache):
    def f(x):
        return torch.sin(x) + 1

    def cache_of(*args):
        return toycompiler.explain(f, backend="cpp")(*args).frames[0].backend.runtime.cache

    first = cache_of(torch.randn(10))
    assert first.startswith("miss")
    assert cache_of(torch.randn(10)) == "hit " + first.split()[-1]
    assert cache_of(torch.randn(11)).startswith("miss")
    assert cache_of(torch.randn(10, dtype=torch.float64)).startswith("miss")
    with toycompiler.config.patch(fusion=False):
        assert cache_of(torch.randn(10)).startswith("miss")


def test_a_graph_with_symbolic_sizes_is_not_the_entry_of_its_example_sizes(tmp_cache):
    """A dynamic graph traced from a [5, 70] input and a static graph of [5, 70] have the same code and example
    inputs, but not the same kernels: the key takes each input as the graph traced it (``s0`` in one, 5 in the
    other). Keyed by the example alone, the dynamic frame loaded the static kernels, and for [8, 70] it returned
    the softmax of 5 rows."""
    def f(x):
        return x.sum(0), torch.softmax(x, 0)

    static = toycompiler.explain(f, backend="cpp")(torch.randn(5, 70)).frames[0].backend.runtime.cache
    toycompiler.reset()
    compiled = toycompiler.compile(f, backend="cpp", dynamic=True)
    for rows in (5, 8):
        assert_same(f, torch.randn(rows, 70), compiled=compiled, rtol=1e-5, atol=1e-6)
    dynamic = toycompiler.explain(f, backend="cpp", dynamic=True)(torch.randn(5, 70)).frames[0].backend.runtime.cache
    assert static.startswith("miss") and dynamic.startswith("hit") and dynamic.split()[-1] != static.split()[-1]


def test_hit_from_disk_runs_correctly_after_the_module_was_forgotten(tmp_cache):
    def f(x, y):
        return torch.tanh(x) * y

    x, y = torch.randn(50), torch.randn(50)
    assert_same(f, x, y)
    for name in [m for m in sys.modules if m.startswith("toycompiler_generated_")]:
        del sys.modules[name]  # as in a fresh process: the hit must import the output code again
    toycompiler.reset()
    report = toycompiler.explain(f, backend="cpp")(x, y)
    assert report.frames[0].backend.runtime.cache.startswith("hit")
    assert_same(f, x, y)


def test_missing_kernel_file_means_compile_again(tmp_cache):
    def f(x):
        return torch.cos(x) * 3

    report = toycompiler.explain(f, backend="cpp")(torch.randn(5))
    os.remove(report.frames[0].backend.kernels[0].path)
    again = toycompiler.explain(f, backend="cpp")(torch.randn(5)).frames[0].backend
    assert again.runtime.cache.startswith("miss") and os.path.exists(again.kernels[0].path)


def test_cache_can_be_turned_off(tmp_cache):
    def f(x):
        return torch.sin(x) * 2

    with toycompiler.config.patch(graph_cache=False):
        rt = toycompiler.explain(f, backend="cpp")(torch.randn(5)).frames[0].backend.runtime
    assert rt.cache.startswith("off")
    assert not os.path.exists(tmp_cache / "graphs")


def test_graph_with_constant_tensors_is_cached_with_them(tmp_cache):
    def f(x):
        keep = torch.ones(6, 6).tril()  # becomes a constant tensor of the compiled graph
        return x.masked_fill(keep == 0, -1.0) * 2

    x = torch.randn(6, 6)
    first = toycompiler.explain(f, backend="cpp")(x).frames[0].backend.runtime.cache
    for name in [m for m in sys.modules if m.startswith("toycompiler_generated_")]:
        del sys.modules[name]
    toycompiler.reset()
    second = toycompiler.explain(f, backend="cpp")(x).frames[0].backend.runtime.cache
    assert first.startswith("miss") and second.startswith("hit"), (first, second)
    assert_same(f, x)
