"""Edge cases where compiled code once behaved differently from eager, each checked against eager.

- an endless ``itertools.count()`` rebuilt after a graph break (it was rebuilt as an empty iterator, so a
  ``for`` loop over ``zip(itertools.count())`` never bound its variable), and ``enumerate`` of one;
- ``in``, ``list.index`` and ``list.count`` over tensors: Python compares by identity first, then with
  ``==``, whose result for tensors is a tensor that ``bool()`` must read (an error past one element);
- an exception raised by a container method (``dict.pop`` of a missing key) is the user's exception;
- a class statement inside the function: a graph break, then the rest compiled;
- lists and tuples inside `in` and `index()`: compared item by item, each item by identity first.
"""

import collections
import dataclasses
import itertools
import re

import pytest
import torch
from translate_harness import Case, X, case_id, run_case

import toycompiler
from toycompiler.testing import assert_same

# -- itertools.count() across a graph break ----------------------------------------------


def zip_count_alone_break(x):
    for i, in zip(itertools.count()):
        if i > 2:
            break
    return x + i


def zip_two_counts_break(x):
    for (a, b) in zip(itertools.count(5), itertools.count(2, 3)):
        if a > 7:
            break
    return x + a * b


def zip_count_and_list_break(x):
    for i, j in zip(itertools.count(), [1, 2]):
        if j > 1:
            break
    return x + i + j


def enumerate_count_break(x):
    for i, c in enumerate(itertools.count(3)):
        if c > 5:
            break
    return x + i * c


def count_used_after_break(x):
    it = itertools.count(2, 3)
    next(it)
    toycompiler.graph_break()
    return x + next(it)


def count_in_zip_after_break(x):
    it = itertools.count(1)
    y = x * next(it)
    toycompiler.graph_break()
    for i, _ in zip(it, range(2)):
        y = y * i
    return y, next(it)


LOOP_OVER_REAL_ITERATOR = "a loop over a real iterator (zip, enumerate, a count passed on) runs as Python"
COUNT_CASES = [
    Case(zip_count_alone_break, X, breaks="unsupported-call", allow_fallback=LOOP_OVER_REAL_ITERATOR),
    Case(zip_two_counts_break, X, breaks="unsupported-call", allow_fallback=LOOP_OVER_REAL_ITERATOR),
    Case(zip_count_and_list_break, X),
    Case(enumerate_count_break, X, breaks="unsupported-call", allow_fallback=LOOP_OVER_REAL_ITERATOR),
    Case(count_used_after_break, X, graphs=0, breaks="explicit"),
    Case(count_in_zip_after_break, X, breaks="explicit", allow_fallback=LOOP_OVER_REAL_ITERATOR),
]


@pytest.mark.parametrize("case", COUNT_CASES, ids=case_id)
def test_itertools_count_survives_a_graph_break(case):
    run_case(case)


# -- in, list.index, list.count over tensors ----------------------------------------------


def assert_same_or_same_error(fn, *args, allow_fallback=None):
    """``assert_same``; where eager raises, the compiled function must raise the same error."""
    try:
        fn(*args)
    except Exception as e:
        with pytest.raises(type(e), match=re.escape(str(e))):
            toycompiler.compile(fn, backend="eager")(*args)
    else:
        assert_same(fn, *args, backend="eager", allow_fallback=allow_fallback)


def identity_first(x, y):
    """Each finds ``x`` itself before comparing it with anything else: no ``==`` runs."""
    return x in [x, y], x in (x, 1), [x, y].index(x), (x, 2).index(x), x + 1


def nested_identity_first(x, y):
    """Lists and tuples compare item by item, each item itself first: ``[x] == [x]`` needs no ``x == x``."""
    return [x] in [[y, 1], [x]], (x, 1) in [(x, 1)], [x] in [(x,)], [[x], (y,)].index((y,)), x + 1


def in_compares_values(x, y):
    return y in [x, 2]


def nested_in_compares_values(x, y):
    return [y] in [[x]]


def int_in_list_of_tensors(x, y):
    return 2 in [x, 2]


def index_compares_values(x, y):
    return [2, x].index(x)


def tuple_index_compares_values(x, y):
    return (x, 1).index(1)  # x == 1 first


def count_compares_values(x, y):
    return [x, y].count(x)


def remove_compares_values(x, y):
    xs = [y, x]
    xs.remove(x)
    return xs


def in_iterator_compares_values(x, y):
    return x in iter([y, x])


EQ_CASES = [in_compares_values, int_in_list_of_tensors, index_compares_values, tuple_index_compares_values,
            count_compares_values, remove_compares_values, in_iterator_compares_values, nested_in_compares_values]


def test_identity_first_needs_no_value():
    x, y = torch.randn(3, 2), torch.randn(3, 2)
    for fn in (identity_first, nested_identity_first):
        assert_same(fn, x, y, backend="eager")
        assert toycompiler.explain(fn, backend="eager")(x, y).graph_break_count == 0


@pytest.mark.parametrize("fn", EQ_CASES, ids=lambda fn: fn.__name__)
def test_tensor_equality_in_containers_raises_as_eager(fn):
    """Several elements: eager's ``bool(x == y)`` raises "Boolean value of Tensor ... is ambiguous"."""
    x, y = torch.randn(3, 2), torch.randn(3, 2)
    with pytest.raises(RuntimeError, match="ambiguous"):
        fn(x, y)
    assert_same_or_same_error(fn, x, y)


@pytest.mark.parametrize("fn", EQ_CASES, ids=lambda fn: fn.__name__)
def test_tensor_equality_in_containers_reads_one_element_values(fn):
    """One element: eager compares the values; the compiled code breaks the graph to read them."""
    x, y = torch.tensor([2.0]), torch.tensor([2.0])
    assert_same(fn, x, y, backend="eager")
    report = toycompiler.explain(fn, backend="eager")(x, y)
    assert [b.kind for b in report.breaks] == ["data-dependent-branch"]
    assert "==" in report.breaks[0].reason


Pair = collections.namedtuple("Pair", "a b")


def equal_dicts_in_list(x, p):
    return {"t": x} in [{"t": x}], x + 1  # two dicts, equal item by item: True


def tuple_in_namedtuples(x, p):
    return (x, 1) in [p], [Pair(x, 2), p].index((x, 1)), x + 1  # a namedtuple equals a tuple of its items


def namedtuple_in_tuples(x, p):
    return p in [(x, 2), (x, 1)], x + 1


@pytest.mark.parametrize("fn", [equal_dicts_in_list, tuple_in_namedtuples, namedtuple_in_tuples],
                         ids=lambda fn: fn.__name__)
def test_containers_other_than_lists_and_tuples_compare_by_python_eq(fn):
    """A dict or a namedtuple has an ``==`` that identity cannot answer: the comparison breaks the graph
    and runs for real (it said False, a wrong answer, when it compared the two objects' identity)."""
    x = torch.randn(3)
    p = Pair(x, 1)
    assert fn(x, p)[0] is True
    assert_same(fn, x, p, backend="eager")
    report = toycompiler.explain(fn, backend="eager")(x, p)
    assert {b.kind for b in report.breaks if "==" in b.reason} == {"unsupported"}


def test_tuples_as_set_items_and_dict_keys_hash_by_their_items():
    """``(x, 1)`` built twice is two tuple objects with one hash: one set item, one dict key."""
    def fn(x):
        return (x, 1) in {(x, 1)}, len({(x, 1), (x, 1)}), {(x, 1): 3}[(x, 1)], x + 1
    assert fn(torch.randn(3))[:3] == (True, 1, 3)
    assert_same(fn, torch.randn(3), backend="eager")


def test_the_same_dict_is_found_without_a_break():
    def fn(x):
        d = {"t": x}
        return d in [d], x + 1
    assert toycompiler.explain(fn, backend="eager")(torch.randn(3)).graph_break_count == 0
    assert toycompiler.compile(fn, backend="eager")(torch.randn(3))[0] is True


# -- exceptions raised by container methods ------------------------------------------------


def dict_pop_missing(x):
    d = {"a": x}
    try:
        return d.pop("b")
    except KeyError:
        return x * 2


def list_pop_empty(x):
    xs = []
    try:
        return xs.pop()
    except IndexError:
        return x * 2


def list_index_missing(x):
    try:
        return x * [1, 2].index(3)
    except ValueError:
        return x * 2


def tuple_index_missing(x):
    try:
        return x * (1, 2).index(3)
    except ValueError:
        return x * 2


@pytest.mark.parametrize("fn", [dict_pop_missing, list_pop_empty, list_index_missing, tuple_index_missing],
                         ids=lambda fn: fn.__name__)
def test_container_method_exception_is_the_users(fn):
    x = torch.randn(3)
    assert_same(fn, x, backend="eager", allow_fallback="the handler of the exception is not traced")
    (brk,) = toycompiler.explain(fn, backend="eager")(x).breaks
    assert brk.kind == "exception", brk
    assert "Error" in brk.reason and "internal" not in brk.reason


# -- a class statement inside the function -------------------------------------------------


def class_inside(x):
    class Shift:
        def apply(self, t):
            return t + 1
    return Shift().apply(x) * 2


def test_class_statement_breaks_and_resumes():
    """``LOAD_BUILD_CLASS`` pushes one value; the resume function must receive it (``bytecode`` reports a
    plain push as consumed, which once built a resume function with a negative stack, run eagerly)."""
    x = torch.randn(5)
    assert_same(class_inside, x)
    report = toycompiler.explain(class_inside)(x)
    assert "class statement" in str(report.frames[0].translation.graph_break)
    assert not report.fallback_reasons and report.frames[-1].graph is not None  # `apply` and `* 2` traced


# -- + and * on lists and tuples that hold tensors ---------------------------------------------


def list_times_in_place(x, y):
    xs = [x, y]
    alias = xs
    xs *= 2  # the same list, longer: alias sees it
    return torch.cat(alias)


def list_plus_in_place(x, y):
    xs = [x]
    alias = xs
    xs += (y,)  # a list extends by any sequence
    return torch.cat(alias)


def constant_list_in_place(x, y):
    xs = [1]
    alias = xs
    xs += [2]  # a list of constants too: once folded on a copy, alias kept [1]
    xs *= 2
    return x * len(alias) + sum(alias)


def tuple_plus_and_times(x, y):
    t = (x, y)
    t += (x,)
    return torch.cat(t + 2 * (y,))


def list_plus_tuple(x, y):
    try:
        return [x] + (1,)  # TypeError, as in eager
    except TypeError:
        return x * 2


@pytest.mark.parametrize("fn", [list_times_in_place, list_plus_in_place, constant_list_in_place, tuple_plus_and_times],
                         ids=lambda fn: fn.__name__)
def test_sequence_arithmetic_on_tensor_lists_is_pythons(fn):
    """``+=`` and ``*=`` change a list in place (``*=`` once built a new one: a name for the old list saw
    the old items); one graph, no break."""
    x, y = torch.randn(3), torch.randn(2)
    assert_same(fn, x, y, backend="eager")
    assert not toycompiler.explain(fn, backend="eager")(x, y).breaks


def test_the_callers_list_extended_in_place_is_changed_as_in_eager():
    def extend(x, lst):
        lst += [3]
        lst *= 2
        return x + 1

    eager, compiled = [1], [1]
    extend(torch.zeros(2), eager)
    toycompiler.compile(extend, backend="eager")(torch.zeros(2), compiled)
    assert compiled == eager == [1, 3, 1, 3]


def test_a_list_plus_a_tuple_raises_as_in_eager():
    """``[x] + (1,)`` is a TypeError (it was once accepted, the tuple's items joined to the list)."""
    x, y = torch.randn(3), torch.randn(2)
    assert_same(list_plus_tuple, x, y, backend="eager", allow_fallback="the handler of the exception is not traced")
    (brk,) = toycompiler.explain(list_plus_tuple, backend="eager")(x, y).breaks
    assert brk.kind == "exception", brk


# -- a generator function, and a list display across a graph break -------------------------------


def yields_twice(x):
    yield x + 1
    yield x * 2


def test_a_compiled_generator_function_returns_a_generator():
    """Its frame runs eagerly (it returned None: the translator ran the body to the end, as it does for a
    generator it inlines)."""
    x = torch.randn(3)
    gen = toycompiler.compile(yields_twice, backend="eager")(x)
    assert [t.tolist() for t in gen] == [t.tolist() for t in yields_twice(x)]


def list_display_across_a_break(a, x):
    return [*a, print("in the middle"), x + 1]


def test_a_list_display_keeps_its_items_across_a_graph_break(capsys):
    """The resumed frame appends to the list built before the break (the item appended was lost)."""
    a, x = [torch.randn(2)], torch.randn(2)
    out = toycompiler.compile(list_display_across_a_break, backend="eager")(a, x)
    expected = list_display_across_a_break(a, x)
    assert len(out) == 3 and out[1] is None and torch.equal(out[2], expected[2]) and out[0] is a[0]
    assert capsys.readouterr().out.count("in the middle") == 2  # once each


# -- a slice of a named tuple, super() of a classmethod -----------------------------------------------


def topk_slice(t):
    r = torch.topk(t, 2)[:1]
    print("break")  # the slice crosses a graph break (it was rebuilt as NoneType(...): a TypeError)
    return isinstance(r, tuple) and not hasattr(r, "values"), r[0] * 2


class Named(torch.nn.Module):
    @classmethod
    def scale(cls, t):
        return t * len(cls.__name__)


class Child(Named):
    def forward(self, t):
        return super().scale(t) + 1  # the classmethod gets the class (it got the instance: no __name__)


@pytest.mark.parametrize("fn", [topk_slice, Child().forward], ids=["topk_slice", "super_classmethod"])
def test_slices_of_named_tuples_and_super_classmethods_match_eager(fn):
    assert_same(fn, torch.randn(5), backend="eager")


def enumerate_from_one(t):
    return [a * i for i, a in enumerate([t, t + 1], 1)] + [list(reversed((1, 2, 3)))[0] * t]


def test_enumerate_with_a_start_traces_without_a_break():
    """``enumerate(xs, 1)``: the start goes in as a number (it was unpacked as an iterable: a graph break)."""
    t = torch.randn(3)
    assert_same(enumerate_from_one, t, backend="eager")
    assert not toycompiler.explain(enumerate_from_one, backend="eager")(t).breaks


def reversed_iterator(t):
    return [a * 2 for a in reversed(iter([t, t + 1]))]


def test_reversed_of_an_iterator_raises_eagers_type_error():
    """An iterator is not reversible: eager raises TypeError, and so does the compiled function (a graph break
    that runs the call eagerly). Its items were listed and reversed, and the call returned a list."""
    with pytest.raises(TypeError, match="not reversible"):
        toycompiler.compile(reversed_iterator, backend="eager")(torch.randn(3))
    assert_same(lambda t: [a * 2 for a in reversed([t, t + 1])], torch.randn(3), backend="eager")


def named_tuples_joined(t):
    r = torch.topk(t, 2) + torch.topk(t, 1)  # a plain tuple of 4, as is topk * 2
    s = torch.topk(t, 1) * 2
    return type(r).__name__, type(s).__name__, isinstance(r, tuple), len(r), r[2] * 2, s[1] + 1


def test_named_tuples_joined_or_repeated_are_plain_tuples():
    """``+`` and ``*`` on named tuples make a plain tuple (they made a named tuple of no class: 'NoneType')."""
    assert_same(named_tuples_joined, torch.randn(5), backend="eager")


@dataclasses.dataclass
class Scale:  # eq=True: instances do not hash (a lookup in a table of functions raised "unhashable type")
    k: float

    def __call__(self, x):
        return x * self.k


class Shift:
    def __init__(self, b):
        self.b = b

    def __call__(self, x, twice=False):
        return x + self.b * (2 if twice else 1)


SCALE, SHIFT = Scale(2.0), Shift(torch.ones(3))


def calls_objects(x):
    return SHIFT(SCALE(x), twice=True) + 1


def test_an_object_with_a_call_method_is_inlined_and_guarded():
    """Calling an object runs its class's ``__call__``, inlined as a method (it was a graph break, and an internal
    error for an object that does not hash); what it reads of the object is guarded like any attribute."""
    x = torch.randn(3)
    assert not toycompiler.explain(calls_objects, backend="eager")(x).breaks
    compiled = toycompiler.compile(calls_objects, backend="eager")
    assert_same(calls_objects, x, compiled=compiled)
    SCALE.k, SHIFT.b = 3.0, torch.zeros(3)
    try:
        assert_same(calls_objects, x, compiled=compiled)  # a recompile: the guards saw the changes
    finally:
        SCALE.k, SHIFT.b = 2.0, torch.ones(3)
