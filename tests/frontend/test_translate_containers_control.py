"""Containers (tuples, lists, dicts), iteration helpers, and control flow on compile-time values."""

import itertools

import pytest
import torch
from translate_harness import XY, Case, X, case_id, run_case


def XS(n):
    return ([torch.randn(n, 4), torch.randn(n, 4)],)


# -- containers --------------------------------------------------------------------


def return_nested_tuple(x, y):
    return (x, (y, x + y), 3, None)


def return_list(x):
    return [x, x * 2, "a", 1.5]


def return_dict(x, y):
    return {"sum": x + y, "parts": [x, y], "n": x.shape[0]}


def dict_build_get_items(x):
    d = {"a": x, "b": x * 2}
    d["c"] = d.get("a") + d.get("missing", 1.0)
    total = x * 0
    for k, v in d.items():
        total = total + v * len(k)
    return total, sorted(d.keys())


def list_methods(x, y):
    xs = [x]
    xs.append(y)
    xs.extend([x * 2, y * 2])
    last = xs.pop()
    xs.insert(0, last)
    xs.reverse()
    return xs, len(xs)


def tuple_argument(pair):
    a, b = pair
    return a * b


def list_argument(xs):
    return xs[0] + xs[-1], len(xs)


def dict_argument(d):
    return d["x"] * d["scale"]


def starred_unpack(x, y):
    first, *rest = [x, y, x + y]
    *init, last = (1, 2, 3)
    return first, rest, init, last


def build_with_star(x, y):
    a = [x]
    b = (y,)
    return [*a, *b, x], (*a, *b)


def dict_merge(x, y):
    base = {"a": x}
    extra = {"b": y}
    merged = {**base, **extra, "c": x + y}
    return merged


def zip_enumerate_reversed(x, y):
    out = []
    for i, (a, b) in enumerate(zip([x, y], [y, x])):
        out.append(a * b + i)
    for t in reversed(out):
        out.append(t.sum())
    return out


def sorted_min_max(x):
    sizes = [3, 1, 2]
    return x * max(sizes) + min(sizes, default=0) + sorted(sizes)[0] + sum(sizes)


def itertools_chain_product(x, y):
    outs = [a * b for a, b in itertools.product([x, y], [1, 2])]
    return list(itertools.chain([x], outs, (y,)))


def contains_checks(x):
    d = {"a": 1}
    names = ["relu", "gelu"]
    if "a" in d and "tanh" not in names:
        return x + 1
    return x


def tuple_methods(x):
    t = (1, 2, 2, 3)
    return x * t.index(3) + t.count(2)


def nested_indexing(x, y):
    xs = [[x, y], [y]]
    return xs[1][0] - xs[0][0]


def set_membership(x):
    ok = {1, 2, 3}
    return x * 2 if x.shape[1] - 3 in ok else x


def return_constants(x):
    return x.sum(), None, True, "done", (1, 2.5)


def list_of_shapes(x, y):
    return [t.shape for t in (x, y)], [t.shape[0] for t in (x, y)]


def slice_list(x, y):
    xs = [x, y, x * y, x - y]
    return xs[1:3], xs[::2], xs[-1]


def list_comprehension_arg(xs):
    return [t.relu() for t in xs]


# -- control flow --------------------------------------------------------------------


def if_on_shape(x):
    if x.shape[0] > 4:
        return x.sum(0)
    else:
        return x.mean(0)


def ternary(x):
    k = 2 if x.ndim == 2 else 3
    return x * k


def for_range_accumulate(x):
    acc = torch.zeros_like(x)
    for i in range(3):
        acc = acc + x * i
    return acc


def while_static(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def break_continue(x):
    out = x
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 5:
            break
        out = out + i
    return out


def nested_loops(x):
    for i in range(2):
        for j in range(2):
            x = x + i * j
    return x


def try_no_raise(x):
    try:
        y = x * 2
    except RuntimeError:
        y = x
    return y


def _relu_or_raise(x):
    try:
        return x.relu()
    except (TypeError, ValueError) as e:
        raise RuntimeError("bad input") from e


def try_except_as_else(x):
    """The happy path is traced whole, through an inlined helper's own ``try``; ``else`` runs too."""
    try:
        y = _relu_or_raise(x)
    except Exception as e:
        print(e)
        y = x
    else:
        y = y * 2
    return y


def try_in_loop_nested(x):
    for i in range(3):
        try:
            try:
                x = x + i
            except KeyError:
                continue
        finally:
            x = x * 2
    with torch.no_grad():
        try:
            x = x.sin()
        except RuntimeError:
            pass
    return x


def try_except_would_raise(x):
    """Tracing would raise here (the dict has no key): a break, and the frame runs as Python."""
    options = {}
    try:
        scale = options["scale"]
    except KeyError:
        scale = 2.0
    return x * scale


def itertools_more(x, y):
    """As TorchDynamo's itertools polyfills: accumulate, zip_longest, islice, count in zip."""
    out = sum(itertools.accumulate([x, y, x * y]))
    out = sum(itertools.accumulate([x, y], torch.maximum, initial=out), out)
    for a, b in itertools.zip_longest([x, y], [y], fillvalue=0.5):
        out = out + a * b
    it = iter([x, y, x + 1, y + 1])
    out = out + sum(itertools.islice(it, 1, 3)) + next(it)  # islice takes only the items it reaches
    for i, t in zip(itertools.count(1, 2), [x, y]):
        out = out + i * t
    return out


def try_finally(x):
    try:
        y = x + 1
    finally:
        y = y * 2
    return y


def early_return_in_loop(x):
    for i in range(5):
        if i == 2:
            return x * i
    return x


def and_or_constants(x, flag):
    use = flag and x.shape[0] > 1
    k = (flag or 0) + 1
    return x * k if use else x


def is_none_branch(x, mask=None):
    if mask is not None:
        x = x * mask
    return x


def assert_static(x):
    assert x.dim() == 2, "expects a matrix"
    return x.T


def for_else(x):
    for i in range(3):
        if i == 5:
            break
    else:
        x = x + 10
    return x


def while_over_list(x, y):
    todo = [x, y]
    total = 0
    while todo:
        total = total + todo.pop()
    return total


def any_all_constants(x):
    dims = [2, 4]
    if all(d % 2 == 0 for d in dims) and not any(d > 10 for d in dims):
        return x * 3
    return x


def loop_over_dict(x):
    weights = {"a": 1.0, "b": 2.0}
    out = x
    for name in weights:
        out = out + weights[name]
    return out


def not_operator(x, flag):
    if not flag:
        return x - 1
    return x + 1


CASES = [
    Case(return_nested_tuple, XY),
    Case(return_list, X),
    Case(return_dict, XY),
    Case(dict_build_get_items, X),
    Case(list_methods, XY),
    Case(tuple_argument, lambda n: ((torch.randn(n, 4), torch.randn(n, 4)),)),
    Case(list_argument, XS),
    Case(dict_argument, lambda n: ({"x": torch.randn(n, 4), "scale": 2.0},)),
    Case(starred_unpack, XY),
    Case(build_with_star, XY, graphs=0),  # no tensor op: an empty graph is not compiled
    Case(dict_merge, XY),
    Case(zip_enumerate_reversed, XY),
    Case(sorted_min_max, X),
    Case(itertools_chain_product, XY),
    Case(contains_checks, X),
    Case(tuple_methods, X),
    Case(nested_indexing, XY),
    Case(set_membership, X),
    Case(return_constants, X),
    Case(list_of_shapes, XY, graphs=0),  # no tensor op: an empty graph is not compiled
    Case(slice_list, XY),
    Case(list_comprehension_arg, XS),
    Case(if_on_shape, X),
    Case(ternary, X),
    Case(for_range_accumulate, X),
    Case(while_static, X),
    Case(break_continue, X),
    Case(nested_loops, X),
    Case(try_no_raise, X),
    Case(try_finally, X),
    Case(try_except_as_else, X),
    Case(try_in_loop_nested, X),
    Case(try_except_would_raise, X, graphs=0, breaks="exception",
         allow_fallback="the KeyError's handler is not traced: the frame runs as Python"),
    Case(itertools_more, XY),
    Case(early_return_in_loop, X),
    Case(and_or_constants, lambda n: (torch.randn(n, 4), True)),
    Case(is_none_branch, X, name="is_none_default", graphs=0),  # no tensor op: an empty graph is not compiled
    Case(is_none_branch, lambda n: (torch.randn(n, 4), torch.randn(4)), name="is_not_none"),
    Case(assert_static, X),
    Case(for_else, X),
    Case(while_over_list, XY),
    Case(any_all_constants, X),
    Case(loop_over_dict, X),
    Case(not_operator, lambda n: (torch.randn(n, 4), False)),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)


NEG_INF = float("-inf")
DEVICE = torch.device("cpu")
BY_DTYPE = {torch.float32: 2.0}


def special_constants(x):
    y = x.masked_fill(x < 0, NEG_INF).to(DEVICE)
    return y.softmax(-1) * BY_DTYPE[x.dtype]


def return_input_list(xs):
    return xs


def test_special_constants():
    run_case(Case(special_constants, X))


def test_returned_input_container_is_the_same_object():
    import toycompiler

    xs = [torch.randn(2)]
    out = toycompiler.compile(return_input_list, backend="eager")(xs)
    assert out is xs


def same_object_branch(a, b):
    if a is b:
        return a * 2, len({a, b})
    return a + b, len({a, b})


def test_the_same_tensor_twice_is_one_variable_and_guarded():
    import toycompiler

    x, y = torch.randn(3), torch.randn(3)
    compiled = toycompiler.compile(same_object_branch, backend="eager")
    for args in [(x, x), (x, y), (x, x), (y, x)]:
        out, n = compiled(*args)
        expected, n_expected = same_object_branch(*args)
        torch.testing.assert_close(out, expected)
        assert n == n_expected
    assert len(compiled.cache.entries) == 2
