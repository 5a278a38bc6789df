"""Names, closures and calls: what the translator evaluates now and what it inlines."""

import functools
import math
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from translate_harness import XY, Case, X, case_id, run_case

SCALE = 2.5
OFFSET = torch.tensor([1.0, 2.0, 3.0, 4.0])


@dataclass
class Config:
    hidden: int = 4
    eps: float = 1e-5
    act: str = "gelu"


CFG = Config()


# -- names and closures ----------------------------------------------------------


def local_arithmetic(x):
    a = 3
    b = a * 2 + 1
    return x * b - a


def global_constant(x):
    return x * SCALE


def global_tensor(x):
    return x + OFFSET


def builtin_on_constant(x):
    return x * abs(-3) + round(2.6)


def make_scaler(factor):
    def scale(x):
        return x * factor

    return scale


closure_read = make_scaler(3.0)


def make_adder(t):
    def add(x):
        return x + t

    return add


closure_tensor = make_adder(torch.ones(4))


def nested_def_captures_local(x):
    y = x.sin()

    def inner(z):
        return z + y

    return inner(x.cos())


def nonlocal_counter(x):
    count = 0

    def bump(t):
        nonlocal count
        count += 1
        return t * count

    a = bump(x)
    b = bump(a)
    return b, count


def lambda_captures(x):
    k = x.shape[1]
    f = lambda t: t * k  # noqa: E731
    return f(x)


def lambda_default(x):
    f = lambda t, s=2.0: t * s  # noqa: E731
    return f(x) + f(x, 3.0)


def delete_local(x):
    tmp = x * 2
    y = tmp + 1
    del tmp
    return y


def augmented_ints(x):
    n = 1
    n += 2
    n *= 3
    n -= 1
    n //= 2
    return x * n


def math_module(x):
    return x * math.pi + math.sqrt(x.shape[1])


def multiple_assign(x):
    a = b = x * 2
    return a + b


def swap_names(x, y):
    x, y = y, x
    return x - y


def chained_compare(x):
    n = x.shape[0]
    return x * 2 if 1 < n < 10 else x


def import_inside(x):
    import math as m

    from torch.nn import functional as fn

    return fn.relu(x) * m.e


def config_object(x):
    return F.layer_norm(x, (CFG.hidden,), eps=CFG.eps)


def none_default(x, bias=None):
    if bias is None:
        return x * 2
    return x + bias


def keyword_only(x, *, scale=2.0, shift=1.0):
    return x * scale + shift


def bool_argument(x, flag):
    return x.relu() if flag else x.sigmoid()


# -- calls and inlining ---------------------------------------------------------


def helper(a, b=2):
    return a * b + 1


def inner_helper(t):
    return helper(t, 3).sin()


def outer_helper(t):
    return inner_helper(t) + helper(t)


def call_with_defaults(x):
    return helper(x) + helper(x, 4) + helper(x, b=5)


def call_nested_helpers(x):
    return outer_helper(x)


def call_star_args(x, y):
    args = (x, 3)
    return helper(*args) + helper(*[y], **{"b": 2})


def varargs_sum(*ts):
    total = ts[0]
    for t in ts[1:]:
        total = total + t
    return total


def call_varargs(x, y):
    return varargs_sum(x, y, x * 2)


def kwargs_taker(x, **opts):
    return x * opts["scale"] + opts.get("shift", 0.0)


def call_kwargs(x):
    opts = {"scale": 2.0}
    return kwargs_taker(x, **opts) + kwargs_taker(x, scale=1.0, shift=3.0)


def call_star_both(x, y):
    a = [x, y]
    k = {"dim": 0}
    return torch.cat(a, **k), torch.stack(a, *[1])


scale_by_three = functools.partial(helper, b=3)


def global_partial(x):
    return scale_by_three(x)


def local_partial(x):
    f = functools.partial(torch.sum, dim=1)
    return f(x)


def use_map(x, y):
    return list(map(lambda t: t * 2, [x, y]))


def use_reduce(x, y):
    return functools.reduce(lambda a, b: a * b, [x, y, x], torch.ones_like(x))


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return t * self.k

    @staticmethod
    def twice(t):
        return t * 2

    @classmethod
    def make(cls, t):
        return t + 1


SCALER = Scaler(4.0)


def method_on_object(x):
    return SCALER.apply(x) + Scaler.twice(x) + Scaler.make(x)


def apply_fn(fn, t):
    return fn(t)


def higher_order_arg(x):
    return apply_fn(torch.tanh, x) + apply_fn(lambda t: t.exp(), x)


def make_affine(a, b):
    return lambda t: t * a + b


def closure_factory_inside(x):
    f = make_affine(2.0, 1.0)
    return f(x)


def torch_kwargs(x):
    return torch.sum(x, dim=1, keepdim=True) + torch.mean(x, dim=(0, 1))


def functional_kwargs(x):
    return F.relu(x, inplace=False) + F.leaky_relu(x, negative_slope=0.2)


def pair(t):
    return t.sin(), t.cos()


def unpack_helper_result(x):
    s, c = pair(x)
    return s * s + c * c


def gen_helper(ts):
    for t in ts:
        yield t * 2


def generator_helper(x, y):
    return list(gen_helper([x, y]))


CASES = [
    Case(local_arithmetic, X),
    Case(global_constant, X),
    Case(global_tensor, X),
    Case(builtin_on_constant, X),
    Case(closure_read, X, name="closure_read"),
    Case(closure_tensor, X, name="closure_tensor"),
    Case(nested_def_captures_local, X),
    Case(nonlocal_counter, X),
    Case(lambda_captures, X),
    Case(lambda_default, X),
    Case(delete_local, X),
    Case(augmented_ints, X),
    Case(math_module, X),
    Case(multiple_assign, X),
    Case(swap_names, XY),
    Case(chained_compare, X),
    Case(import_inside, X),
    Case(config_object, X),
    Case(none_default, X),
    Case(keyword_only, X),
    Case(bool_argument, lambda n: (torch.randn(n, 4), True)),
    Case(call_with_defaults, X),
    Case(call_nested_helpers, X),
    Case(call_star_args, XY),
    Case(call_varargs, XY),
    Case(call_kwargs, X),
    Case(call_star_both, XY),
    Case(global_partial, X),
    Case(local_partial, X),
    Case(use_map, XY),
    Case(use_reduce, XY),
    Case(method_on_object, X),
    Case(higher_order_arg, X),
    Case(closure_factory_inside, X),
    Case(torch_kwargs, X),
    Case(functional_kwargs, X),
    Case(unpack_helper_result, X),
    Case(generator_helper, XY),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_translate(case):
    run_case(case)
