"""The runtime: how compiled graphs launch kernels, autotune, and replay CUDA graphs."""

import ctypes

import pytest
import torch

import toycompiler
from toycompiler.backend import codecache, launcher
from toycompiler.testing import assert_same

GPU = torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"  # Triton runs on the GPU, or in its interpreter on CPU tensors


def sin_cos(x, y):
    return torch.sin(x) + torch.cos(y) * 2


def chain(x, y):
    a = x * y + 1.5
    return torch.exp(-torch.relu(a - y)) * torch.tanh(a)


def runtime_of(fn, *args, **options):
    report = toycompiler.explain(fn, **options)(*args)
    return report.frames[0].backend.runtime


@pytest.mark.parametrize("shape", [(1,), (1000,), (33, 65)], ids=str)
def test_triton_launcher_matches_eager_on_repeated_calls(shape):
    f = toycompiler.compile(chain, backend="triton")
    for _ in range(3):  # the first call compiles; later ones take the direct path on a GPU
        x, y = torch.randn(shape, device=DEVICE), torch.randn(shape, device=DEVICE)
        assert_same(chain, x, y, backend="triton", compiled=f)
    assert len(f.cache.entries) == 1


def test_triton_launch_path_is_recorded():
    rt = runtime_of(sin_cos, torch.randn(64, device=DEVICE), torch.randn(64, device=DEVICE), backend="triton")
    if GPU:
        assert "launched directly" in rt.launch
    else:
        assert "interpreter" in rt.launch and "kernel[grid]" in rt.launch


@pytest.mark.skipif(not GPU, reason="direct launches need a GPU")
def test_misaligned_input_takes_the_jit_path_and_stays_correct():
    f = toycompiler.compile(sin_cos, backend="triton")
    x, y = torch.randn(1001, device="cuda"), torch.randn(1001, device="cuda")
    assert_same(sin_cos, x[:1000], y[:1000], backend="triton", compiled=f)
    assert_same(sin_cos, x[1:], y[1:], backend="triton", compiled=f)  # 4-byte offset: not 16-byte aligned


def test_cpp_kernels_declare_pointer_and_int64_arguments(tmp_cache):
    report = toycompiler.explain(sin_cos, backend="cpp")(torch.randn(10), torch.randn(10))
    assert "load_cpp_kernel(" in report.output_code and ", 4, 1)" in report.output_code
    kernel = report.frames[0].backend.kernels[0]
    fn = codecache.load_cpp_kernel(kernel.path, kernel.name, 4, 1)
    assert fn.argtypes == [ctypes.c_void_p] * 3 + [ctypes.c_int64]


def test_output_buffers_use_the_fast_allocator():
    report = toycompiler.explain(sin_cos, backend="cpp")(torch.randn(6, 4), torch.randn(6, 4))
    assert "empty_strided['cpu']((6, 4), (4, 1), torch.float32)" in report.output_code
    out = launcher.empty_strided["cpu"]((6, 4), (4, 1), torch.float32)
    assert out.shape == (6, 4) and out.stride() == (4, 1) and out.dtype == torch.float32


# -- modes -----------------------------------------------------------------------------


def test_max_autotune_records_every_candidate_and_stays_correct():
    x, y = torch.randn(3000, device=DEVICE), torch.randn(3000, device=DEVICE)
    f = toycompiler.compile(chain, backend="triton", mode="max-autotune")
    assert_same(chain, x, y, backend="triton", compiled=f)
    rt = f.compiled_frames[0].backend.runtime
    assert rt.mode == "max-autotune"
    (choice,) = rt.autotune.choices
    assert len(choice.timings) >= 6 and choice.chosen in [c for c, _ in choice.timings]
    assert choice.seconds == min(t for _, t in choice.timings)
    assert "XBLOCK" in choice.meta
    # a different size still runs correctly with the tuned kernel (it recompiles: static shapes)
    assert_same(chain, torch.randn(77, device=DEVICE), torch.randn(77, device=DEVICE), backend="triton", compiled=f)


def test_max_autotune_on_cpp_says_there_is_nothing_to_tune():
    rt = runtime_of(sin_cos, torch.randn(100), torch.randn(100), backend="cpp", mode="max-autotune")
    assert rt.autotune.choices == () and "nothing to tune" in rt.autotune.note


def test_mode_reaches_the_backend_and_default_is_default():
    assert runtime_of(sin_cos, torch.randn(8), torch.randn(8), backend="cpp").mode == "default"
    assert toycompiler.config.mode == "default"


@pytest.mark.skipif(GPU, reason="checks the CPU behaviour")
def test_reduce_overhead_on_cpu_is_a_noop_with_a_reason():
    x, y = torch.randn(100), torch.randn(100)
    f = toycompiler.compile(sin_cos, backend="cpp", mode="reduce-overhead")
    assert_same(sin_cos, x, y, backend="cpp", compiled=f)
    rt = f.compiled_frames[0].backend.runtime
    assert rt.mode == "reduce-overhead" and "no CUDA GPU" in rt.cudagraphs


@pytest.mark.skipif(not GPU, reason="CUDA graphs need a GPU")
def test_reduce_overhead_replays_a_cuda_graph_with_fresh_outputs():
    f = toycompiler.compile(chain, backend="triton", mode="reduce-overhead")
    outs = []
    for _ in range(4):
        x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
        outs.append((assert_same(chain, x, y, backend="triton", compiled=f), chain(x, y)))
    rt = f.compiled_frames[0].backend.runtime
    assert rt.cudagraphs.startswith("on")
    for got, want in outs:  # earlier outputs were not overwritten by later replays
        torch.testing.assert_close(got, want)


@pytest.mark.skipif(not GPU, reason="CUDA graphs need a GPU")
def test_reduce_overhead_with_changing_sizes_records_one_graph_per_shape():
    f = toycompiler.compile(chain, backend="triton", mode="reduce-overhead")
    for n in (100, 200, 300, 200, 100):  # the third size may reuse a dynamic-shape entry
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        assert_same(chain, x, y, backend="triton", compiled=f)
