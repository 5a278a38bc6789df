"""Custom ops, torch.cond, and the graph breaks the translator must report (results still right)."""

import contextlib

import pytest
import torch
from translate_harness import XY, Case, X, case_id, run_case


@torch.library.custom_op("toytest::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return x * alpha + 1


@scale_shift.register_fake
def _(x, alpha):
    return torch.empty_like(x)


@torch.library.custom_op("toytest::split_sign", mutates_args=())
def split_sign(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x.clamp(min=0), x.clamp(max=0)


@split_sign.register_fake
def _(x):
    return torch.empty_like(x), torch.empty_like(x)


@torch.library.custom_op("toytest::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x.nonzero().float()


# -- custom ops ------------------------------------------------------------------------


def custom_op_call(x):
    return torch.ops.toytest.scale_shift(x, 2.0).relu()


def custom_op_python_handle(x):
    return scale_shift(x, 0.5) + x


def custom_op_tuple(x):
    pos, neg = torch.ops.toytest.split_sign(x)
    return pos - neg


def custom_op_without_fake(x):
    return torch.ops.toytest.no_fake(x)


# -- torch.cond -----------------------------------------------------------------------


def true_branch(x, y):
    return x.sin() + y


def false_branch(x, y):
    return x.cos() - y


def cond_on_tensor(x, y):
    return torch.cond(x.sum() > 0, true_branch, false_branch, (x, y))


def cond_on_constant(x, y):
    return torch.cond(x.shape[0] > 2, true_branch, false_branch, (x, y))


def cond_with_lambdas(x):
    return torch.cond(x.mean() < 0, lambda t: (t * 2, t + 1), lambda t: (t * 3, t - 1), [x])


# -- graph breaks, each with its kind --------------------------------------------------


def break_item(x):
    return x * x.sum().item()


def break_tolist(x):
    return x.tolist()


def break_numpy(x):
    return torch.from_numpy(x.numpy() * 2)


def break_print(x):
    print("x", x.shape)
    return x + 1


def break_data_dependent(x):
    if x.sum() > 0:
        return x
    return -x


def break_bool_tensor(x):
    return x * 2 if x.max() else x


class Holder:
    value = 0


HOLDER = Holder()


def break_setattr_global(x):
    HOLDER.value = x.shape[0]
    return x


def break_mutate_list_arg(xs):
    xs.append(xs[0] * 2)
    return xs[0]


def raise_not_taken(x):
    if x.shape[0] > 100:
        raise ValueError("too big")
    return x * 2


def with_no_grad(x):
    with torch.no_grad():
        y = x * 2
    return y + 1, torch.is_grad_enabled()


def with_set_grad_enabled(x):
    with torch.set_grad_enabled(False):
        y = x.sin()
        with torch.enable_grad():
            z = y * x
    return z


NULLCTX = contextlib.nullcontext()


def break_other_with_block(x):
    with NULLCTX:
        y = x * 2
    return y


def break_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        print(y.shape)
    return y


def break_exception_in_try(x):
    d = {}
    try:
        k = d["missing"]
    except KeyError:
        k = 1
    return x * k


def break_inside_helper(x):
    return helper_that_prints(x) + 1


def helper_that_prints(t):
    print(t.shape)
    return t


def break_boolean_mask(x):
    return x[x > 0].sum()


def break_explicit(x):
    y = x * 2
    torch._dynamo.graph_break()
    return y + 1


def break_float_of_tensor(x):
    return x * float(x.mean())


def break_nonlocal_outer_factory():
    count = 0

    def f(x):
        nonlocal count
        count = x.shape[0]
        return x * 2

    return f


break_nonlocal_outer = break_nonlocal_outer_factory()


CASES = [
    Case(custom_op_call, X),
    Case(custom_op_python_handle, X),
    Case(custom_op_tuple, X),
    Case(custom_op_without_fake, X, breaks="fake-tensor"),
    Case(cond_on_tensor, XY),
    Case(cond_on_constant, XY),
    Case(cond_with_lambdas, X),
    Case(break_item, X, breaks="item"),
    Case(break_tolist, X, breaks="tolist"),
    Case(break_numpy, X, breaks="numpy"),
    Case(break_print, X, breaks="print"),
    Case(break_data_dependent, X, breaks="data-dependent-branch"),
    Case(break_bool_tensor, X, breaks="data-dependent-branch"),
    Case(break_setattr_global, X, breaks="mutation"),
    Case(break_mutate_list_arg, lambda n: ([torch.randn(n, 4)],), breaks="mutation"),
    Case(raise_not_taken, X),
    Case(with_no_grad, X),
    Case(with_set_grad_enabled, X),
    Case(break_other_with_block, X, breaks="unsupported-opcode",
         allow_fallback="no resume after BEFORE_WITH: the frame runs eagerly"),
    Case(break_inside_no_grad, X, breaks="print",
         allow_fallback="a break inside a with block: the frame runs eagerly"),
    Case(break_exception_in_try, X, breaks="exception",
         allow_fallback="a break inside a try block: the frame runs eagerly"),
    Case(break_inside_helper, X, breaks="print"),
    Case(break_float_of_tensor, X, breaks="item"),
    Case(break_boolean_mask, X, breaks="data-dependent"),
    Case(break_explicit, X, breaks="explicit"),
    Case(break_nonlocal_outer, X, breaks="mutation", name="break_nonlocal_outer",
         allow_fallback="no resume after STORE_DEREF: the frame runs eagerly"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)


def test_break_inside_helper_names_the_helper():
    import toycompiler

    report = toycompiler.explain(break_inside_helper, backend="eager")(torch.randn(2, 4))
    (brk,) = report.breaks
    assert "helper_that_prints" in brk.reason and "print" in brk.reason
    assert brk.source.strip().startswith("return helper_that_prints(x)")


def test_no_grad_block_matches_eager_requires_grad():
    import toycompiler

    def f(x):
        with torch.no_grad():
            a = x * 2
        b = x * 3
        return a, b

    x = torch.randn(3, requires_grad=True)
    a, b = toycompiler.compile(f, backend="eager")(x)
    ea, eb = f(x)
    assert (
        (a.requires_grad, b.requires_grad) == (ea.requires_grad, eb.requires_grad) == (False, True)
    )
    assert torch.is_grad_enabled()


def test_break_inside_no_grad_leaves_grad_mode_alone():
    import toycompiler

    report = toycompiler.explain(break_inside_no_grad, backend="eager")(torch.randn(2, 4))
    assert report.graph_break_count == 1 and torch.is_grad_enabled()
    graph = report.frames[0].graph
    assert str(graph).count("torch._C._set_grad_enabled(") in (0, 2), (
        "a graph may not leave grad mode switched"
    )
