"""Comprehensions (nested code on 3.11, inlined on 3.12), generator expressions, f-strings."""

import pytest
import torch
from translate_harness import XY, Case, X, case_id, run_case

# -- comprehensions -----------------------------------------------------------------


def list_comp(x, y):
    return [t * 2 for t in (x, y)]


def list_comp_condition(x):
    return [x * i for i in range(5) if i % 2]


def dict_comp(x, y):
    return {name: t.sum(0) for name, t in zip(["a", "b"], [x, y])}


def set_comp_constants(x):
    sizes = {d * 2 for d in x.shape}
    return x * len(sizes)


def genexp_sum(x, y):
    return sum(t.sin() for t in [x, y])


def genexp_tuple(x):
    return tuple(x * i for i in range(3))


def nested_comp(x):
    return [[x * i + j for j in range(2)] for i in range(2)]


def comp_captures_outer(x):
    scale = x.shape[1]
    bias = x.mean()
    return [t * scale + bias for t in x.unbind(0)]


def comp_makes_tensors(x):
    return torch.stack([torch.full_like(x, i) for i in range(3)])


def map_filter(x):
    evens = list(filter(lambda i: i % 2 == 0, range(6)))
    return list(map(lambda i: x * i, evens))


def comp_shadows_name(x):
    t = x + 1
    ys = [t * 2 for t in (x, x)]
    return t, ys


def stack_comp(x, y):
    return torch.stack([a @ b.T for a, b in [(x, y), (y, x)]])


def any_genexp(x):
    if any(s > 100 for s in x.shape):
        return x
    return x * 2


def dict_comp_items(x):
    d = {"a": x, "b": x * 2}
    return {k + "_sq": v * v for k, v in d.items()}


def comp_with_helper_call(x, y):
    def act(t):
        return torch.relu(t) - 1

    return [act(t) for t in (x, y)]


def genexp_max_dim(x):
    return x * max(s for s in x.shape)


def gen_pairs(ts):
    yield from ts
    yield from (t * 2 for t in ts)


def yield_from_generator(x, y):
    return list(gen_pairs([x, y]))


def set_of_tensors(x, y):
    seen = set()
    out = []
    for t in [x, y, x]:
        if t not in seen:
            seen.add(t)
            out.append(t + 1)
    return out, len(seen), len({x, y, x})


# -- f-strings and strings -------------------------------------------------------------


def fstring_shape(x):
    return x * 2, f"shape={tuple(x.shape)}"


def fstring_spec(x):
    n = x.shape[0]
    return x + 1, f"{n:04d}|{1.5:.2f}|{'a':>3}"


def fstring_repr(x):
    name = "x"
    return x, f"{name!r}{name!s}{x.dtype}"


def string_methods(x):
    key = "Layer" + "_" + str(x.shape[1])
    return x, key.upper(), "{}-{}".format(key, 3), key.split("_"), "-".join(["a", "b"])  # noqa: UP032


def fstring_dict_keys(x):
    return {f"out_{i}": x * i for i in range(2)}


def string_branch(x, mode):
    if mode == "double":
        return x * 2
    elif mode.startswith("tri"):
        return x * 3
    return x


CASES = [
    Case(list_comp, XY),
    Case(list_comp_condition, X),
    Case(dict_comp, XY),
    Case(set_comp_constants, X),
    Case(genexp_sum, XY),
    Case(genexp_tuple, X),
    Case(nested_comp, X),
    Case(comp_captures_outer, X),
    Case(comp_makes_tensors, X),
    Case(map_filter, X),
    Case(comp_shadows_name, X),
    Case(stack_comp, XY),
    Case(any_genexp, X),
    Case(dict_comp_items, X),
    Case(comp_with_helper_call, XY),
    Case(genexp_max_dim, X),
    Case(yield_from_generator, XY),
    Case(set_of_tensors, XY),
    Case(fstring_shape, X),
    Case(fstring_spec, X),
    Case(fstring_repr, X, graphs=0),  # no tensor op: an empty graph is not compiled
    Case(string_methods, X, graphs=0),  # no tensor op: an empty graph is not compiled
    Case(fstring_dict_keys, X),
    Case(string_branch, lambda n: (torch.randn(n, 4), "double"), name="string_arg_eq"),
    Case(string_branch, lambda n: (torch.randn(n, 4), "triple"), name="string_arg_method"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)
