"""At a graph break, the transformed code rebuilds the translator's values as real ones: lists,
dicts, methods, functions. Each case runs eagerly and compiled and compares results, the
caller's objects after the call, and object identity where eager code could observe it."""

import functools

import torch

import toycompiler
from toycompiler.testing import assert_close_tree


def list_alias_across_break(x):
    acc = []
    alias = acc
    acc.append(x * 2)
    print("break")
    alias.append(x + 1)  # the same list as acc, after the break too
    return acc, alias is acc


def test_list_made_while_tracing_is_one_object_after_the_break(capsys):
    x = torch.randn(3)
    expected = list_alias_across_break(x)
    actual = toycompiler.compile(list_alias_across_break, backend="eager")(x)
    assert type(actual[0]) is list and actual[1] is True
    assert_close_tree(actual, expected)


def dict_and_method_on_the_stack(x, log):
    d = {"a": x * 2}
    log.append(len(d))  # the caller's list: the call breaks, the method is rebuilt as log.append
    d["b"] = x + 1
    return d


def test_dict_made_while_tracing_and_a_callers_method_survive_the_break():
    x = torch.randn(3)
    eager_log, log = [], []
    expected = dict_and_method_on_the_stack(x, eager_log)
    actual = toycompiler.compile(dict_and_method_on_the_stack, backend="eager")(x, log)
    assert type(actual) is dict and log == eager_log == [1]
    assert_close_tree(actual, expected)


def partial_across_break(x):
    scale = functools.partial(torch.mul, other=3.0)
    print("break")
    return scale(x)


def test_partial_made_while_tracing_is_rebuilt(capsys):
    x = torch.randn(3)
    torch.testing.assert_close(toycompiler.compile(partial_across_break, backend="eager")(x),
                               partial_across_break(x))


def set_tuple_key(x, d):
    d[(1, 2)] = 5
    return x + 1


def test_callers_dict_with_tuple_keys_is_changed_as_in_eager():
    x = torch.randn(2)
    d_eager, d = {(0, 0): 1}, {(0, 0): 1}
    set_tuple_key(x, d_eager)
    toycompiler.compile(set_tuple_key, backend="eager")(x, d)
    assert d == d_eager == {(0, 0): 1, (1, 2): 5}


SCALE = {torch.float32: 2.0}


def scale_by_dtype(x):
    return x * SCALE[x.dtype]


def test_constant_dict_with_dtype_keys_is_guarded_by_value():
    x = torch.randn(2)
    compiled = toycompiler.compile(scale_by_dtype, backend="eager")
    try:
        torch.testing.assert_close(compiled(x), x * 2.0)
        SCALE[torch.float32] = 3.0  # a new value: the guard fails, the function recompiles
        torch.testing.assert_close(compiled(x), x * 3.0)
    finally:
        SCALE[torch.float32] = 2.0


def read_tensor_dict(x, d):
    return x + d[(0, 1)]


def test_dict_of_tensors_with_unguardable_keys_runs_eagerly():
    x, d = torch.randn(2), {(0, 1): torch.randn(2)}
    torch.testing.assert_close(toycompiler.compile(read_tensor_dict, backend="eager")(x, d), x + d[(0, 1)])
    (brk,) = toycompiler.explain(read_tensor_dict, backend="eager")(x, d).breaks
    assert "keys can't be written in a guard" in brk.reason and brk.no_resume_reason


def same_list(x, a, b):
    return x + (1 if a is b else 2)


def test_callers_list_reached_twice_is_one_object_and_guarded():
    x, shared = torch.randn(2), []
    compiled = toycompiler.compile(same_list, backend="eager")
    torch.testing.assert_close(compiled(x, shared, shared), x + 1)
    torch.testing.assert_close(compiled(x, shared, []), x + 2)  # the guard `b is a` fails: recompiles
    torch.testing.assert_close(compiled(x, shared, shared), x + 1)
    other = toycompiler.compile(same_list, backend="eager")
    torch.testing.assert_close(other(x, [], []), x + 2)  # distinct lists, traced first
    torch.testing.assert_close(other(x, shared, shared), x + 1)  # the distinctness guard fails
