"""Dynamic shapes: static first, symbolic after a size change (or when asked), guarded by ShapeEnv facts."""

import pytest
import torch

import toycompiler


def f(x, y):
    return (x + y).sin() * 2


def pairs(sizes, cols=3):
    return [(torch.randn(n, cols), torch.randn(n, cols)) for n in sizes]


def compile_counts(compiled, inputs):
    for x, y in inputs:
        torch.testing.assert_close(compiled(x, y), f(x, y))
    return len(compiled.compiled_frames)


def test_automatic_dynamic_after_first_size_change():
    c = toycompiler.compile(f, backend="eager")
    assert compile_counts(c, pairs([4, 5, 6, 7])) == 2
    static, dynamic = c.compiled_frames
    assert "x.shape == (4, 3)" in [g.expr for g in static.guards.guards]
    exprs = [g.expr for g in dynamic.guards.guards]
    for expected in ("x.shape[0] >= 2", "y.shape[0] >= 2", "x.shape[1] == 3", "x.shape[0] == y.shape[0]"):
        assert expected in exprs
    assert "x.shape == (5, 3)" not in exprs
    assert dynamic.symbolic_sizes[0].startswith("x.shape[0]: automatic dynamic")
    assert dynamic.backend.fallback_reason is None  # the eager backend runs any size


def test_automatic_dynamic_can_be_turned_off():
    c = toycompiler.compile(f, backend="eager")
    with toycompiler.config.patch(automatic_dynamic_shapes=False):
        assert compile_counts(c, pairs([4, 5, 6, 7])) == 4


def test_dynamic_true_compiles_once():
    c = toycompiler.compile(f, backend="eager", dynamic=True)
    assert compile_counts(c, pairs([4, 5, 6, 7])) == 1
    shapes = {n.name: n.shape for n in c.compiled_frames[0].graph.nodes}
    assert shapes["x"] == shapes["y"] == shapes["mul"] == "[s0, s1]"  # same sizes when traced: same symbols


def test_size_one_is_specialised_even_when_dynamic():
    c = toycompiler.compile(f, backend="eager", dynamic=True)
    assert compile_counts(c, pairs([1, 4, 5])) == 2  # 1 is static (broadcasting), then 4 and 5 share s0
    assert "x.shape[0] == 1" in [g.expr for g in c.compiled_frames[0].guards.guards]


def test_mark_dynamic():
    c = toycompiler.compile(f, backend="eager")
    inputs = pairs([4, 5, 6])
    for x, y in inputs:
        toycompiler.mark_dynamic(x, 0)
        toycompiler.mark_dynamic(y, 0)
    assert compile_counts(c, inputs) == 1
    assert "x.shape[0]: mark_dynamic" in c.compiled_frames[0].symbolic_sizes


def test_dynamic_guard_failure_names_the_symbolic_guard():
    c = toycompiler.compile(f, backend="eager", dynamic=True)
    compile_counts(c, pairs([4, 5]))
    x, y = torch.randn(6, 3), torch.randn(7, 3)
    with pytest.raises(RuntimeError):
        c(x, y)  # eager raises too: sizes don't broadcast
    failure = c.cache.misses[0].failures[0]
    assert failure.expr == "x.shape[0] == y.shape[0]" and failure.actual == "6"


def shape_in_python(x):
    return x.view(x.shape[0] * 2, -1) + 1


def test_sizes_read_as_python_ints_are_specialised_and_guarded():
    c = toycompiler.compile(shape_in_python, backend="eager", dynamic=True)
    for n in (4, 6):
        x = torch.randn(n, 4)
        torch.testing.assert_close(c(x), shape_in_python(x))
    assert len(c.compiled_frames) == 2
    assert "x.shape[0] == 4" in [g.expr for g in c.compiled_frames[0].guards.guards]


def test_cpp_backend_with_symbolic_sizes_falls_back_with_a_reason():
    c = toycompiler.compile(f, backend="cpp")
    assert compile_counts(c, pairs([4, 5, 6])) == 2
    reason = c.compiled_frames[1].backend.fallback_reason
    if not getattr(toycompiler.get_backend("cpp"), "supports_dynamic_shapes", False):
        assert "symbolic sizes" in reason


def halves(x):
    return x.view(-1, 2) * 2


def test_shape_env_relations_render_as_python():
    c = toycompiler.compile(halves, backend="eager", dynamic=True)
    for n in (4, 6, 8):
        x = torch.randn(n)
        torch.testing.assert_close(c(x), halves(x))
    assert len(c.compiled_frames) == 1
    exprs = [g.expr for g in c.compiled_frames[0].guards.guards]
    assert "(x.shape[0] % 2) == 0" in exprs  # view(-1, 2) needs an even size
    assert c.compiled_frames[0].guards.code.count("x.shape[0]") >= 2


def test_resume_function_inputs_are_guarded_by_value_where_rebuilt_each_call():
    def pairs_sum(x):
        print("slicing")
        return x[1:] + x[:-1]

    c = toycompiler.compile(pairs_sum, backend="eager")
    for n in (4, 4, 4):
        x = torch.randn(n)
        torch.testing.assert_close(c(x), pairs_sum(x))
    assert not c.all_misses  # no recompiles: nothing compared by identity that is rebuilt per call


def test_parameters_and_buffers_keep_static_sizes_under_dynamic_true():
    """``dynamic=True`` makes the input's sizes symbols, not the weights' (Dynamo's
    ``force_parameter_static_shapes``): symbolic weights made every size after a convolution an expression in
    them too, and a ResNet's average pool divided by such a size ran the whole graph eagerly."""
    from torch import nn

    from toycompiler.testing import assert_same

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(4, 2)).eval()
    compiled = toycompiler.compile(net, backend="cpp", dynamic=True)
    with torch.no_grad():
        for side in (9, 12, 17):
            assert_same(net, torch.randn(3, 3, side, side + 1), compiled=compiled)
    frames = compiled._compiled_forward.compiled_frames
    assert len(frames) == 1 and frames[0].backend.kernels
    assert frames[0].symbolic_sizes and all(s.startswith("input.shape") for s in frames[0].symbolic_sizes), \
        frames[0].symbolic_sizes


def test_a_missed_shape_guard_reports_the_value_of_its_left_hand_side():
    """A guard the trace relied on can be an expression (a pooled size that was 1, which torch specialises):
    a miss shows that expression's value now (it showed a SyntaxError, from evaluating ``(x.shape[3]``)."""
    import torch.nn.functional as F

    pool = lambda x: F.max_pool2d(x, 4) + 1  # noqa: E731
    c = toycompiler.compile(pool, backend="eager", dynamic=True)
    for side in (4, 8):
        x = torch.randn(2, 3, side, side)
        torch.testing.assert_close(c(x), pool(x))
    failures = c.cache.misses[-1].failures
    assert any(f.expr.endswith("== 1") and "// 4" in f.expr and f.actual == "2" for f in failures), failures
