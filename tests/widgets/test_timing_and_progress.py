"""The timing measurement (widgets/timing.py) and its chart (widgets/timing_view.py); progress stays silent in tests."""

import torch
from toycompiler.widgets import TimingView
from toycompiler.widgets.progress import Progress
from toycompiler.widgets.timing import Timing, measure

import toycompiler


def twice(x):
    return torch.sin(x) * 2


def test_measure_separates_compile_time_from_run_time():
    compiled = toycompiler.compile(twice, backend="cpp")
    t = measure(twice, compiled, torch.randn(256), repeat=3, backend="cpp")
    assert t.name == "twice" and t.repeat == 3 and t.backend == "cpp"
    assert t.eager_s > 0 and t.compiled_s > 0 and t.compile_s > 0
    assert len(compiled.cache.entries) == 1  # the first call compiled, the rest reused it
    assert "compile" in str(t) and "median of 3 calls" in str(t)


def test_chart_is_inline_svg_and_deterministic():
    t = Timing("f", 2e-3, 5e-4, 0.25, 7, backend="cpp")
    first, second = TimingView(t).html(), TimingView(t).html()
    assert first == second  # stable ids, no date: same input, same bytes
    assert "<svg" in first and "<script" not in first
    assert "compile time (first call, once): 250.00 ms" in first
    assert "4.00x" in TimingView(t).text()


def test_chart_shows_torch_compile_when_measured():
    t = Timing("f", 2e-3, 5e-4, 0.25, 7, torch_compile_s=4e-4, torch_compile_compile_s=12.0, backend="cpp")
    html = TimingView(t).html()
    assert "torch.compile compile time 12.00 s" in html and "torch.compile" in str(t)


def test_progress_is_silent_outside_a_live_kernel(capsys):
    with Progress() as p:
        p.update("working...")
    assert not p.live and capsys.readouterr().out == ""


def test_large_runs_report_achieved_bandwidth_beside_the_copy_bandwidth():
    x = torch.randn(1 << 18)  # 1 MB in, 1 MB out
    t = measure(twice, toycompiler.compile(twice, backend="cpp"), x, repeat=3, backend="cpp")
    assert t.bytes_moved == 2 * x.numel() * 4 and t.copy_gbps > 0
    text = str(t)
    assert text.count("GB/s (copy: ") == 2  # eager and compiled lines
    small = measure(twice, toycompiler.compile(twice, backend="cpp"), torch.randn(8), repeat=3, backend="cpp")
    assert small.bytes_moved == 0 and "GB/s" not in str(small)  # 64 bytes: overhead, not bandwidth
