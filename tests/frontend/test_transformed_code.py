"""The code that replaces a compiled function is assembled bytecode, with or without a break.

It was once generated as Python source (``def <name>(<params>): ...``) and ``exec``-ed,
which fails for any code object whose name is not an identifier: every lambda.
"""

import torch

import toycompiler
from toycompiler.testing import assert_same


def _frames(compiled):
    return compiled.compiled_frames


def test_a_lambda_compiles_and_runs_on_cpp():
    fn = lambda x: x * 2 + 1  # noqa: E731
    compiled = toycompiler.compile(fn, backend="cpp")
    assert_same(fn, torch.randn(4), compiled=compiled)
    (frame,) = _frames(compiled)
    assert frame.graph is not None and frame.translation.graph_break is None
    assert "<lambda> (transformed)" in str(frame.transformed_bytecode)


def test_lambdas_with_defaults_keywords_and_varargs():
    fn = lambda x, *rest, scale=3.0, **extra: x * scale + sum(rest) + extra.get("shift", 0)  # noqa: E731
    compiled = toycompiler.compile(fn, backend="eager")
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(compiled(x, y, shift=2.0), fn(x, y, shift=2.0))
    torch.testing.assert_close(compiled(x, scale=0.5), fn(x, scale=0.5))


def test_a_code_object_whose_name_is_not_an_identifier():
    def f(x, y):
        return torch.sin(x) + y

    f.__code__ = f.__code__.replace(co_name="f-with spaces!", co_qualname="outer.<locals>.f-with spaces!")
    for backend in ("eager", "cpp"):
        assert_same(f, torch.randn(5), torch.randn(5), backend=backend)


def test_a_lambda_with_a_graph_break_resumes():
    fn = lambda x: (print("sum", x.sum()), x.cos() * 2)[1]  # noqa: E731
    compiled = toycompiler.compile(fn, backend="eager")
    assert_same(fn, torch.randn(4), compiled=compiled)
    (frame,) = [f for f in _frames(compiled) if f.translation.graph_break is not None]
    assert frame.translation.graph_break.kind == "print" and frame.resume_functions


def test_an_unchanged_input_is_returned_as_the_same_object():
    def f(x, y):
        return x, y * 2, [x]

    x = torch.randn(3)
    out = toycompiler.compile(f, backend="eager")(x, torch.randn(3))
    assert out[0] is x and out[2][0] is x, "the transformed code reads an unchanged input from its argument"


def test_returning_a_closure_over_a_local_made_while_tracing():
    def f(x):
        a = 2
        return x * a, lambda y: y + a

    compiled = toycompiler.compile(f, backend="eager")
    x = torch.randn(3)
    out, add = compiled(x)
    torch.testing.assert_close(out, x * 2)
    assert add(1) == 3
    (frame,) = _frames(compiled)
    assert frame.translation.graph_break is None


def test_returning_a_set_and_a_partial():
    import functools

    def f(x):
        return x + 1, {1, 2}, functools.partial(max, 3)

    out, s, p = toycompiler.compile(f, backend="eager")(torch.zeros(2))
    torch.testing.assert_close(out, torch.ones(2))
    assert s == {1, 2} and p(5) == 5 and p(1) == 3
