"""End to end: one function through every stage, on both backends, against eager."""

import pathlib
import sys

import pytest
import torch

import toycompiler
from toycompiler.testing import assert_same, device_for


def sin_cos(x, y):
    return torch.sin(x) + torch.cos(y) * 2


def chain(x, y):
    a = x * y + 1.5
    b = torch.relu(a - y) / (torch.abs(x) + 1)
    return torch.exp(-b) * torch.tanh(a)


def mixed(x, y):
    return (x.sin() - y.cos()).sigmoid(), x * 3


FUNCTIONS = [sin_cos, chain, mixed]
SHAPES = [(1,), (7,), (1000,), (3, 5), (17, 33)]


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_compiled_matches_eager(backend, fn, shape):
    x, y = torch.randn(shape, device=device_for(backend)), torch.randn(shape, device=device_for(backend))
    assert_same(fn, x, y, backend=backend)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_same_shape_reuses_other_shape_recompiles(backend):
    f = toycompiler.compile(sin_cos, backend=backend)
    dev = device_for(backend)
    for _ in range(2):
        assert_same(sin_cos, torch.randn(10, device=dev), torch.randn(10, device=dev), compiled=f)
    assert len(f.cache.entries) == 1
    out = assert_same(sin_cos, torch.randn(20, device=dev), torch.randn(20, device=dev), compiled=f)
    assert out.shape == (20,)
    assert len(f.cache.entries) == 2
    failure = f.cache.failures[-1]
    assert failure.expr == "x.shape == (10,)"
    assert failure.actual == "(20,)"


def test_report_shows_every_stage():
    x, y = torch.randn(100), torch.randn(100)
    report = toycompiler.explain(sin_cos, backend="cpp")(x, y)
    text = str(report)
    for heading in ("== source", "== bytecode", "== guards", "== FX graph", "== lowered IR", "== fusion groups",
                    "== kernel cpp_sin_cos_mul_add_0 (cpp)", "== output code"):
        assert heading in text, heading
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.ops_per_graph == (4,)
    assert "x.shape == (100,)" in [g.expr for g in report.guards]
    assert len(report.kernels) == 1 and report.kernels[0].language == "cpp"
    assert "std::sin" in report.kernels[0].source
    assert "def call(arg0, arg1)" in report.output_code


def test_explain_given_the_arguments_says_how_to_call_it():
    with pytest.raises(TypeError, match=r"explain\(fn\) returns a function to call with the arguments: "
                                        r"explain\(fn\)\(\*args\)"):
        toycompiler.explain(sin_cos, torch.randn(3), torch.randn(3))


def test_fusion_makes_one_kernel_and_says_why():
    report = toycompiler.explain(chain, backend="cpp")(torch.randn(64), torch.randn(64))
    schedule = report.frames[0].backend.schedule
    assert len(schedule.groups) == 1
    assert all(d.fused for d in schedule.decisions)
    assert schedule.fused_bytes < schedule.unfused_bytes
    with toycompiler.config.patch(fusion=False):
        report = toycompiler.explain(chain, backend="cpp")(torch.randn(64), torch.randn(64))
    schedule = report.frames[0].backend.schedule
    assert len(schedule.groups) == len(report.frames[0].backend.ir.buffers) - 2  # one per op (2 inputs)
    assert all("fusion is turned off" in d.reason for d in schedule.decisions)


def test_toy_backend_inside_real_torch_compile():
    torch._dynamo.reset()
    compiled = []

    def spy(gm, example_inputs):
        compiled.append(toycompiler.get_backend("cpp")(gm, example_inputs))
        return compiled[-1]

    x, y = torch.randn(50), torch.randn(50)
    assert_same(sin_cos, x, y, compiled=torch.compile(sin_cos, backend=spy))
    assert compiled[0].artifacts.fallback_reason is None  # torch.compile's frames are not ours to inspect
    assert len(compiled[0].artifacts.kernels) == 1
    torch._dynamo.reset()
    assert_same(sin_cos, x, y, compiled=torch.compile(sin_cos, backend="toycompiler_cpp"))
    assert "toycompiler" in torch._dynamo.list_backends()


def test_untraceable_function_falls_back_with_reason():
    def noisy(x):
        print("hello")
        return x + 1

    x = torch.randn(4)
    report = toycompiler.explain(noisy, backend="cpp")(x)
    assert report.graph_break_count == 1
    brk = report.breaks[0]
    assert "print" in brk.reason and brk.source == 'print("hello")'
    assert_same(noisy, x, backend="cpp")


def test_fullgraph_raises_with_source_line():
    def noisy(x):
        print("hello")
        return x + 1

    with pytest.raises(toycompiler.CompileError, match=r"test_walking_skeleton.py:\d+: call to print"):
        toycompiler.compile(noisy, backend="cpp", fullgraph=True)(torch.randn(3))


def test_eager_and_custom_backends():
    seen = []

    def my_backend(gm, example_inputs):
        seen.append(len(example_inputs))
        return gm.forward

    x, y = torch.randn(5), torch.randn(5)
    assert_same(sin_cos, x, y, backend=my_backend)
    assert seen == [2]
    assert_same(sin_cos, x, y, backend="eager")
    assert set(toycompiler.list_backends()) >= {"cpp", "triton", "eager", "inductor", "auto"}
    assert callable(toycompiler.get_backend("cpp"))
    with pytest.raises(ValueError, match="unknown backend"):
        toycompiler.get_backend("nope")


def test_config_patch_restores():
    assert toycompiler.config.fusion is True
    with toycompiler.config.patch(fusion=False):
        assert toycompiler.config.fusion is False
    assert toycompiler.config.fusion is True
    with pytest.raises(AttributeError):
        toycompiler.config.patch(no_such_option=1)


def test_compile_nn_module():
    class Net(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(x) * 2

    net = Net()
    assert_same(net, torch.randn(8), backend="cpp")


@pytest.mark.parametrize("op", [torch.relu, torch.nn.functional.gelu, torch.sigmoid])
def test_compile_builtin_function(op):
    """torch.compile takes a builtin (C) function as it takes a Python one; so does toycompiler.compile."""
    assert_same(op, torch.randn(8), backend="cpp")
    report = toycompiler.explain(op, backend="cpp")(torch.randn(8))
    assert (report.graph_count, report.graph_break_count, report.fallback_reasons) == (1, 0, ())
    with pytest.raises(TypeError, match="needs a Python function or nn.Module, got int"):
        toycompiler.compile(3)


def test_cpp_compiler_error_falls_back_to_eager(tmp_cache):
    with toycompiler.config.patch(cxx_flags=("-O3", "--definitely-not-a-flag", "-shared", "-fPIC")):
        with pytest.warns(UserWarning, match="cpp backend failed"):
            report = toycompiler.explain(sin_cos, backend="cpp")(torch.randn(4), torch.randn(4))
    assert "--definitely-not-a-flag" in report.fallback_reasons[0]
    assert "kernel source" in report.fallback_reasons[0]


def test_assert_same_refuses_eager_fallback_unless_the_gap_is_named(tmp_cache):
    x, y = torch.randn(4), torch.randn(4)
    with toycompiler.config.patch(cxx_flags=("--definitely-not-a-flag", "-shared", "-fPIC")):
        with pytest.warns(UserWarning), pytest.raises(AssertionError, match="ran eagerly instead of compiled"):
            assert_same(sin_cos, x, y, backend="cpp")  # eager's answer is right, and still not a pass
        with pytest.warns(UserWarning):
            assert_same(sin_cos, x, y, backend="cpp", allow_fallback="the C++ compiler rejects a flag")
    with pytest.raises(AssertionError, match="nothing fell back any more"):
        assert_same(sin_cos, x, y, backend="cpp", allow_fallback="a gap since closed")


def test_assert_same_catches_wrong_results_and_input_changes():
    def off_by_one(gm, example_inputs):
        return lambda *a: tuple(t + 1 for t in gm(*a))

    with pytest.raises(AssertionError, match="compilation report"):
        assert_same(sin_cos, torch.randn(4), torch.randn(4), backend=off_by_one)

    def scale_(x):
        x.mul_(2)
        return x.sum()

    with pytest.raises(AssertionError):  # same result, but the input was left as it was
        assert_same(scale_, torch.randn(4), compiled=lambda x: (x * 2).sum())


def test_disk_cache_reuses_shared_library(tmp_cache):
    toycompiler.compile(sin_cos, backend="cpp")(torch.randn(4), torch.randn(4))
    libs = list((tmp_cache / "cpp").glob("*.so"))
    assert len(libs) == 1
    mtime = libs[0].stat().st_mtime_ns
    toycompiler.reset()
    toycompiler.compile(sin_cos, backend="cpp")(torch.randn(4), torch.randn(4))
    assert [p.stat().st_mtime_ns for p in (tmp_cache / "cpp").glob("*.so")] == [mtime]


def test_torch_finds_backend_by_entry_point_without_import():
    """torch.compile(backend="toycompiler") works in a process that never imported toycompiler."""
    import subprocess
    import sys

    code = (
        "import torch\n"
        "f = torch.compile(lambda x: torch.sin(x) * 2, backend='toycompiler')\n"
        "x = torch.randn(8)\n"
        "assert torch.allclose(f(x), torch.sin(x) * 2)\n"
        "import toycompiler.backends\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.parametrize("version", [(3, 10), (3, 13), (3, 14), (4, 0)])
def test_unsupported_python_is_refused_at_import(version, monkeypatch):
    monkeypatch.setattr(sys, "version_info", (*version, 0, "final", 0))
    with pytest.raises(ImportError, match=rf"Python 3.11 and 3.12 only, not {version[0]}.{version[1]}"):
        toycompiler.check_python_version()


def test_supported_pythons_are_the_ones_declared():
    import tomllib

    for version in toycompiler.SUPPORTED_PYTHON:
        toycompiler.check_python_version(version)  # no error
    pyproject = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert pyproject["project"]["requires-python"] == ">=3.11,<3.13"
    assert toycompiler.SUPPORTED_PYTHON == ((3, 11), (3, 12))
