"""Operators with no lowering and no decomposition run torch's own kernel, the generated kernels around them.

As Inductor's ``implicit_fallbacks``: a custom operator (``torch.library.custom_op``), a pooling, scan or special
function that no table decomposes, a random draw. Before, each sent its whole graph to eager. Only an operator
that writes to its inputs or returns no tensor still does.
"""

import pytest
import torch
import torch.nn.functional as F

import toycompiler
from toycompiler.testing import assert_same, device_for


@torch.library.custom_op("toytest::python_sort", mutates_args=())
def python_sort(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor(sorted(x.tolist()), dtype=x.dtype, device=x.device)


@python_sort.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("toytest::bump", mutates_args=("x",))
def bump(x: torch.Tensor) -> None:
    x.add_(1)


@bump.register_fake
def _(x):
    return None


@torch.library.custom_op("toytest::column_major", mutates_args=())
def column_major(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous().t() * 2  # the values in column-major order


@column_major.register_fake
def _(x):
    return torch.empty_like(x)  # says row-major, as x: wrong about the strides


def explained(fn, *args, backend="cpp"):
    report = toycompiler.explain(fn, backend=backend)(*args)
    code = "\n".join(f.backend.output_code.source for f in report.frames if f.backend and f.backend.output_code)
    return report, code


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_custom_operator_is_a_library_call_between_kernels(backend):
    x = torch.randn(37, device=device_for(backend))
    fn = lambda x: python_sort(torch.sin(x)) * 2 + 1  # noqa: E731
    assert_same(fn, x, backend=backend)
    report, code = explained(fn, x, backend=backend)
    assert not report.fallback_reasons and report.graph_break_count == 0
    assert "torch.ops.toytest.python_sort.default(x=" in code
    assert len(report.kernels) == 2  # sin before the call, * 2 + 1 after it
    assert "implicit fallback" in str(report.frames[0].backend.ir)


CASES = {  # ops that no decomposition table turns into loops, each with a value eager can check
    "cummax": (lambda x: torch.cummax(x, 1).values.exp() + torch.cummax(x, 1).indices, (5, 9)),
    "bicubic": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic") * 3, (2, 3, 7, 9)),
    "adaptive_max_pool": (lambda x: F.adaptive_max_pool2d(x.relu(), (3, 4)) - 1, (2, 3, 10, 11)),
    "lgamma": (lambda x: torch.lgamma(x.abs() + 0.5) * x, (6, 7)),
    "searchsorted": (lambda x: torch.searchsorted(x.sort(1).values, x * 0.5), (4, 10)),
    "kthvalue": (lambda x: torch.kthvalue(x.cos(), 3, 1).values, (6, 8)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_ops_without_loops_run_torchs_kernel_and_match_eager(name):
    fn, shape = CASES[name]
    x = torch.randn(*shape)
    assert_same(fn, x, rtol=1e-5, atol=1e-5)
    report, code = explained(fn, x)
    assert not report.fallback_reasons and "torch.ops.aten." in code


def test_random_draws_are_torchs_in_eagers_order():
    """torch.randn inside the function draws what eager draws from the same seed (two draws, in order)."""
    fn = lambda x: x + torch.randn_like(x) * 0.1 - torch.rand(x.shape) * 2  # noqa: E731
    x = torch.randn(4, 5)
    compiled = toycompiler.compile(fn, backend="cpp")
    torch.manual_seed(7)
    got = compiled(x)
    torch.manual_seed(7)
    torch.testing.assert_close(got, fn(x))
    report, _ = explained(fn, x)
    assert not report.fallback_reasons


def test_backward_of_an_implicit_op_is_one_too():
    fn = lambda x: F.interpolate(x.sin(), scale_factor=2, mode="bicubic").square().sum()  # noqa: E731
    assert_same(fn, torch.randn(1, 2, 5, 6, requires_grad=True), backward=True, rtol=1e-4, atol=1e-4)


def test_an_operator_that_writes_to_its_input_still_sends_the_graph_to_eager():
    def fn(x):
        y = x * 2
        bump(y)
        return y + 1
    x = torch.randn(5)
    assert_same(fn, x, allow_fallback="torch cannot functionalize a custom operator that writes to its input")
    with pytest.warns(UserWarning, match="running this graph eagerly"):
        report, _ = explained(fn, x)
    assert "toytest::bump" in report.fallback_reasons[0] and not report.kernels


@pytest.mark.parametrize("backend", ["cpp", "triton"])
def test_a_result_in_other_strides_than_its_fake_said_is_copied_into_them(backend):
    """The kernels after a library call read its result with the strides its fake tensor gave; where torch's
    kernel returned others (a custom op's fake kernel is only what its author wrote), codecache.conform copies
    it into those, so the kernels read the right values."""
    x = torch.randn(5, 7, device=device_for(backend))
    fn = lambda x: column_major(x.sin()) + torch.arange(7.0, device=x.device)  # noqa: E731
    assert_same(fn, x, backend=backend)
    _, code = explained(fn, x, backend=backend)
    assert "= codecache.conform(torch.ops.toytest.column_major.default(x=buf0), (7, 1))" in code


@pytest.mark.parametrize("op, falls_back", [(torch.ops.aten.lgamma.default, True),
                                            (torch.ops.toytest.python_sort.default, True),
                                            (torch.ops.aten.view_as_real.default, False),  # a view of its input
                                            (torch.ops.aten.positive.default, False),  # may return its input
                                            (torch.ops.toytest.bump.default, False),  # writes to its input
                                            (torch.ops.aten.sym_size.int, False)])  # returns a size
def test_which_operators_fall_back_implicitly(op, falls_back):
    """The rule itself, on one node each: a tensor among the results, and no argument written or viewed."""
    from toycompiler.backend.lowering import fallback_kernel, implicit_fallback

    graph = torch.fx.Graph()
    node = graph.call_function(op, (graph.placeholder("x"),))
    node.meta["val"] = 3 if op is torch.ops.aten.sym_size.int else torch.empty(2)
    assert (implicit_fallback(node) is fallback_kernel) == falls_back
