"""The benchmark command's pieces: workloads compile and match eager, results summarise honestly."""

import os
import subprocess
import sys

import pytest
import torch
from toycompiler.bench import workloads
from toycompiler.bench.__main__ import geomean, markdown, summarize
from toycompiler.bench.runners import make_compiled, outputs_match, toy_status


@pytest.mark.parametrize("name", ["sin_cos", "row_sum"])
def test_toy_contender_matches_eager_and_reports_ok(name):
    w = workloads.by_name(name)
    inputs = tuple(t[:64] if t.dim() == 1 else t[:8] for t in w.make_inputs("cpu", True))
    toy = make_compiled(w, "toy", "cpu")
    assert outputs_match(toy(*inputs), w.fn(*inputs))
    assert toy_status(toy) == "ok"


def test_toy_status_names_the_fallback_reason():
    def needs_a_break(x):
        print("side effect")  # a graph break: the frontend splits the function here
        return x + 1

    w = workloads.Workload("brk", needs_a_break, lambda d, q: (torch.randn(4),), True)
    toy = make_compiled(w, "toy", "cpu")
    toy(torch.randn(4))
    assert toy_status(toy).startswith("fallback: graph break")


def fake_result():
    row = lambda name, eager, ind, toy, bw: {  # noqa: E731
        "name": name, "describe": "", "shape": [8], "bandwidth_bound": bw,
        "times_ms": {"eager": eager, "inductor": ind, **({"toy": toy} if toy else {})},
        "status": {"inductor": "ok", "toy": "ok" if toy else "fallback: no lowering for aten.foo"},
    }
    return {"machine": {"name": "test machine", "device": "cpu", "threads": 1, "torch": "x", "triton": "y",
                        "copy_gbps": 10.0},
            "toy_mode": "default", "quick": True,
            "workloads": [row("a", 4.0, 2.0, 1.0, True), row("b", 4.0, 1.0, 2.0, True),
                          row("c", 1.0, 1.0, None, False)],
            "compile": {"inductor": {"cold_s": 10.0, "warm_s": 1.0}, "toy": {"cold_s": 1.0, "warm_s": 0.1}},
            "overhead_us": {"eager": 5.0, "inductor": 50.0, "toy": 10.0}, "notes": []}


def test_summary_ratios_come_from_the_measured_times():
    result = fake_result()
    s = summarize(result, "cpu")
    assert s["toy_vs_inductor"] == {"a": 2.0, "b": 0.5}
    assert s["geomean_toy_vs_inductor_bandwidth_bound"] == pytest.approx(1.0)
    assert s["toy_vs_eager"] == {"a": 4.0, "b": 2.0}
    assert s["not_compiled_by_toy"] == {"c": "fallback: no lowering for aten.foo"}
    assert s["cold_compile_toy_over_inductor"] == pytest.approx(0.1)
    assert s["overhead_toy_over_inductor"] == pytest.approx(0.2)
    result["summary"] = s
    table = markdown(result)
    assert "| a | 8 | 4.000 | 2.000 | 1.000 | 4.00x | 2.00x |" in table
    assert "fallback: no lowering for aten.foo" in table


def test_geomean():
    assert geomean([]) is None
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)


def test_share_of_copy_is_against_a_copy_of_the_same_bytes(monkeypatch):
    """A bandwidth-bound row times a copy of its own bytes the same way as the contenders, and its share
    of copy speed is that copy's time over the contender's; the table says which copy it compared with."""
    import toycompiler.bench.__main__ as bench_main
    from toycompiler.bench import measure

    w = workloads.by_name("row_sum")
    times = {"eager": 4e-3, "inductor": 2e-3, "toy": 1e-3}
    contenders = {c: (lambda c=c: lambda *a: c)() for c in times}
    monkeypatch.setattr(bench_main, "make_compiled", lambda w, c, d: w.fn)
    monkeypatch.setattr(bench_main, "_compile_and_check", lambda w, c, *a: ("ok", 0.0, contenders[c]))
    monkeypatch.setattr(measure, "median_seconds", lambda fn, device: times.get(fn(), 4e-3))
    copied = []
    monkeypatch.setattr(measure, "copy_seconds", lambda nbytes, device: copied.append(nbytes) or 0.5e-3)
    row = bench_main.run_workload(w, "cpu", True)
    assert copied == [row["ideal_bytes"]]
    assert row["fraction_of_copy"] == pytest.approx({"eager": 0.125, "inductor": 0.25, "toy": 0.5})

    result = fake_result()
    result["summary"] = summarize(result, "cpu")
    for r in result["workloads"]:  # a results file written before rows timed their own copy
        r.update(gbps={"toy": 1.0}, fraction_of_copy={"toy": 0.1})
    assert "% of the copy bandwidth" in markdown(result)
    for r in result["workloads"]:
        r.update(copy_ms=1.0, fraction_of_copy={"toy": 0.5})
    assert "% of a copy of the same bytes" in markdown(result) and "1.0 (50%)" in markdown(result)


def test_copy_seconds_times_a_real_copy():
    from toycompiler.bench import measure

    assert 0 < measure.copy_seconds(1 << 20, "cpu") < 1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU time needs a GPU")
def test_gpu_time_leaves_out_the_hosts_time():
    """A call whose host work (300 us of Python) is far longer than its kernel's: its GPU time is the
    kernel's, as the same copy without the host work measures it (do_bench's events would count the GPU
    waiting for the host whenever that is longer than its L2 flush)."""
    import time

    from toycompiler.bench import measure

    src = torch.randn(1 << 20, device="cuda")
    dst = torch.empty_like(src)

    def slow_host():
        start = time.perf_counter()
        while time.perf_counter() - start < 300e-6:
            pass
        dst.copy_(src)

    alone = measure.gpu_seconds(lambda: dst.copy_(src), reps=50)
    assert measure.gpu_seconds(slow_host, reps=50) < max(2 * alone, alone + 20e-6) < 150e-6


def test_table_says_how_its_gpu_times_were_taken():
    """A results file from a GPU records its GPU timing method and the table prints it; files from before
    the field existed were timed with do_bench, and say so. A CPU's table speaks of wall time only."""
    from toycompiler.bench import measure

    result = fake_result()
    result["summary"] = summarize(result, "cpu")
    assert "GPU time" not in markdown(result).split("|")[0]
    result["machine"]["device"] = "cuda"
    assert "GPU time (do_bench, L2 flushed)" in markdown(result)
    result["machine"]["gpu_timing"] = measure.GPU_TIMING
    assert f"GPU time ({measure.GPU_TIMING})" in markdown(result) and "do_bench" not in markdown(result)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's mallopt")
def test_cpu_runs_keep_freed_blocks_and_their_table_says_so():
    """A CPU run has glibc keep freed blocks for reuse (``measure.steady_allocator``: mallopt refuses a
    threshold past 32 MB, and the run would then time page faults that vary from process to process);
    the results file records how memory was allocated and the CPU table prints it."""
    from toycompiler.bench import measure

    assert measure.steady_allocator() == "glibc malloc keeping freed blocks of up to 32 MB for reuse (mallopt)"
    result = fake_result()
    result["summary"] = summarize(result, "cpu")
    assert "memory:" not in markdown(result)  # files from before the field: nothing claimed
    result["machine"]["allocator"] = measure.steady_allocator()
    assert "; memory: glibc malloc keeping freed blocks of up to 32 MB for reuse (mallopt)." in markdown(result)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's tunables")
def test_a_cpu_run_starts_again_in_huge_pages_keeping_its_arguments_and_says_so(tmp_path, monkeypatch):
    """``measure.with_huge_pages`` runs the command again with glibc's malloc asking for transparent huge pages
    (tunables are read only when a process starts), the user's own tunables and arguments kept; once is enough."""
    from toycompiler.bench import measure

    (tmp_path / "show.py").write_text("import os, sys; print(os.environ['GLIBC_TUNABLES'], sys.argv[1:])")
    script = "from toycompiler.bench import measure; measure.with_huge_pages('show'); print('not run again')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "GLIBC_TUNABLES": "glibc.a=1"}
    run = subprocess.run([sys.executable, "-c", script, "--only", "x"], capture_output=True, text=True, env=env)
    assert run.stdout.strip() == "glibc.a=1:glibc.malloc.hugetlb=1 ['--only', 'x']", run.stderr
    env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert run.stdout.strip() == "not run again"
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    assert measure.steady_allocator().endswith(", in transparent huge pages (glibc.malloc.hugetlb=1)")
