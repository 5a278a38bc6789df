"""Python builtins (and a few of functools/itertools) applied to symbolic values.

Most builtins called on constants are simply folded. These handlers are for
the calls whose arguments may hold tensors or containers of them:
``len(x)`` is ``x.shape[0]``, ``zip(xs, ys)`` pairs variables, ``sum(ts)``
adds graph nodes, ``isinstance(x, torch.Tensor)`` is known from the variable's
kind, ``torch.cond`` is :func:`.higher_order.trace_cond`. A handler returns
``NotImplemented`` to let the caller fold the call on constants instead;
:func:`fold` is that folding (run the function now). Builtins that only
rearrange items (``zip``, ``enumerate``, ``itertools.product``...) run for real
on lists of variables (:func:`_rearrange`).

Mirrors: torch/_dynamo/variables/builtin.py (BuiltinVariable) and
torch/_dynamo/polyfills/ (itertools, functools).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import operator
from collections.abc import Callable
from typing import Any

import torch

from . import higher_order, variables
from .containers import DictVariable, IteratorVariable, ListVariable, SetVariable, TupleVariable, wrap_constant_result
from .variables import ConstantVariable, GradModeVariable, ObjectVariable, TensorVariable, Unsupported, Variable

# A handler has the builtin's own signature, with the translator first and variables for values, so Python
# binds the call's arguments: ``def _sum(tx, iterable, /, start=ZERO)`` for ``sum(iterable, /, start=0)``.
# One that serves several builtins takes the one called before the translator (``handles(..., pass_fn=True)``).
# A handler that is one expression goes straight into the table, as a lambda with that signature.
Handler = Callable[..., Variable]
HANDLERS: dict[Any, Handler] = {}
NONE, ZERO, EMPTY = ConstantVariable(None), ConstantVariable(0), TupleVariable([])  # the builtins' defaults


def fold(tx: Any, fn: Any, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    """Run ``fn`` now on constant arguments; the result is a constant of the trace."""
    values, kw = [a.as_python() for a in args], {k: v.as_python() for k, v in kwargs.items()}
    result = Unsupported.if_raises(f"{callable_name(fn)}(...)", lambda: fn(*values, **kw), Exception)
    tx.output.events.append(f"constant folded: {getattr(fn, '__name__', fn)}(...) = {result!r}")
    return wrap_constant_result(result)


def callable_name(fn: Any) -> str:
    """``math.sqrt``, ``len``, ``torch.nn.functional.relu``: how a message names a callee."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    if isinstance(name, str):
        return f"{module}.{name}" if isinstance(module, str) and module not in ("builtins", "__main__") else name
    return type(fn).__name__


def handles(*fns: Any, pass_fn: bool = False) -> Callable[[Handler], Handler]:
    """Register ``h`` as the handler of ``fns``; ``pass_fn``: it is told which one was called, ``h(fn, tx, *args)``."""

    def register(h: Handler) -> Handler:
        HANDLERS.update({fn: functools.partial(h, fn) if pass_fn else h for fn in fns})
        return h

    return register


# -- sizes and types ------------------------------------------------------------


@handles(len)
def _len(tx, obj, /):
    if isinstance(obj, TensorVariable):  # its first size (a symbolic one is fixed, with a guard); 0-d: TypeError
        return ConstantVariable(Unsupported.if_raises("len()", lambda: len(obj.example)))
    container = isinstance(obj, TupleVariable | DictVariable | SetVariable)
    return ConstantVariable(len(obj.items)) if container else NotImplemented


HANDLERS[isinstance] = lambda tx, obj, cls, /: ConstantVariable(issubclass(obj.python_type(), cls.as_python()))


HANDLERS[type] = lambda tx, obj, /, *rest: ObjectVariable(obj.python_type()) \
    if not rest and not obj.is_python_constant() else NotImplemented


# a variable with no value now answers by its kind: a tensor, a list: no; a function made here: yes
HANDLERS[callable] = lambda tx, obj, /: ConstantVariable(
    callable(obj.as_python()) if obj.is_python_constant() else type(obj).call is not Variable.call)


@handles(getattr)
def _getattr(tx, obj, name, /, *default):
    try:
        return obj.getattr(tx, name.as_python())
    except Unsupported:
        if default and obj.is_python_constant() and not hasattr(obj.as_python(), name.as_python()):
            return default[0]
        raise


# asked of the value, or of a tensor's class
HANDLERS[hasattr] = lambda tx, obj, name, /: ConstantVariable(
    hasattr(obj.as_python() if obj.is_python_constant() else obj.python_type(), name.as_python()))


# -- conversions that need a tensor's data ---------------------------------------


@handles(int, float, bool, complex)
def _scalar(tx, /, *args, **kwargs):
    if args and isinstance(args[0], TensorVariable):
        raise Unsupported("converting a tensor to a Python number needs its data (like .item())", "item")
    return NotImplemented


# a tensor's: an ``operator.abs`` node (call_python records operator functions); anything else: folded
HANDLERS[abs] = lambda tx, x, /: tx.call_python(operator.abs, [x], {}) if isinstance(x, TensorVariable) \
    else NotImplemented


# -- building containers and iterators -------------------------------------------


# ``list(xs)``, ``tuple(xs)``: the items, in a new list or tuple of variables
HANDLERS[list] = lambda tx, iterable=EMPTY, /: ListVariable(iterable.unpack(tx))
HANDLERS[tuple] = lambda tx, iterable=EMPTY, /: TupleVariable(iterable.unpack(tx))


@handles(dict)
def _dict(tx, /, *args, **kwargs):
    d = DictVariable({})
    d.call_method(tx, "update", args, kwargs)  # dict(pairs, **kw) is {}.update(pairs, **kw)
    return d


HANDLERS[set] = lambda tx, iterable=EMPTY, /: SetVariable({v.identity_key(): v for v in iterable.unpack(tx)})


HANDLERS[iter] = lambda tx, obj, /: obj if isinstance(obj, IteratorVariable) else IteratorVariable(obj.unpack(tx))


@handles(next)
def _next(tx, it, /, *default):
    if not isinstance(it, IteratorVariable):
        return NotImplemented
    if (item := it.next(tx)) is None and not default:
        raise Unsupported("next() on an exhausted iterator raised StopIteration while tracing", "exception")
    return default[0] if item is None else item


def _rearrange(tx, fn: Any, columns: list, kwargs: dict[str, Variable]) -> IteratorVariable:
    """Run ``fn`` (``zip``, ``enumerate``, ``itertools.product``...) now on lists of variables: it only
    rearranges them. A constant keyword (``start=1``, ``strict=True``) goes in as its value, a variable
    one (``fillvalue=x``) as the variable; each tuple it makes becomes a tuple of variables."""
    options = {k: v.as_python() if isinstance(v, ConstantVariable) else v for k, v in kwargs.items()}
    rows = Unsupported.if_raises(f"{fn.__name__}()", lambda: list(fn(*columns, **options)))  # zip(strict=True)
    return IteratorVariable([wrap_constant_result(row) for row in rows])


def _items(tx, v: Variable) -> Any:
    """An iterable argument as ``zip`` and ``map`` take it: a constant's value, an iterator's items drawn one
    at a time (``zip(it, ys)`` leaves in ``it`` what eager's zip leaves), else the list of variables."""
    return v.as_python() if isinstance(v, ConstantVariable) else v.drawn(tx) if isinstance(v, IteratorVariable) \
        else v.unpack(tx)


@handles(enumerate, reversed, itertools.chain, itertools.product, itertools.zip_longest, pass_fn=True)
def _rearranging(fn: Any, tx, /, *args, **kwargs):
    """``enumerate(xs, 1)``, ``reversed(xs)``, ``itertools.chain/product/zip_longest``: :func:`_rearrange` on
    the items, all of them (listing an ``itertools.count()`` is refused: it would never end). A constant goes
    in as its value, as a constant keyword does: ``enumerate``'s start (unpacked, it was "not iterable")."""
    if fn is reversed and args and isinstance(args[0], IteratorVariable):  # eager: "... is not reversible"
        raise Unsupported("reversed() of an iterator raises TypeError: it is not reversible", "exception")
    columns = [a.as_python() if isinstance(a, ConstantVariable) else a.unpack(tx) for a in args]
    return _rearrange(tx, fn, columns, kwargs)


def _shortest(tx, fn: Any, iterables: tuple[Variable, ...]) -> list:
    """What ``zip`` and ``map`` take (:func:`_items`): an ``itertools.count()`` among them (endless) is drawn
    only as far as the others go."""
    if iterables and all(isinstance(a, CountVariable) for a in iterables):
        raise Unsupported(f"{fn.__name__}() of itertools.count() alone would never end", "unsupported-call")
    return [_items(tx, a) for a in iterables]


HANDLERS[zip] = lambda tx, /, *iterables, **kwargs: _rearrange(tx, zip, _shortest(tx, zip, iterables), kwargs)


@handles(itertools.islice)
def _islice(tx, it, /, *bounds):
    """``islice(it, [start,] stop[, step])``: an iterator gives up only the items the slice reaches."""
    bounds = [b.as_python() for b in bounds]
    lazily = isinstance(it, IteratorVariable) and slice(*bounds).stop is not None
    return _rearrange(tx, itertools.islice, [it.drawn(tx) if lazily else it.unpack(tx), *bounds], {})


def _as_function(tx, fn: Variable) -> Callable[..., Variable]:
    """A variable one can call, as a Python function of variables that a real builtin can call."""
    return lambda *args: fn.call(tx, list(args), {})


HANDLERS[map] = lambda tx, fn, /, *iterables: \
    _rearrange(tx, map, [_as_function(tx, fn), *_shortest(tx, map, iterables)], {})


HANDLERS[filter] = lambda tx, fn, iterable, /: \
    IteratorVariable([v for v in iterable.unpack(tx) if (v if fn.is_none() else fn.call(tx, [v], {})).truth()])


@handles(itertools.accumulate)
def _accumulate(tx, iterable, func=NONE, *, initial=NONE):
    """``accumulate(xs, func=add, initial=None)``: running results, each a graph node for tensors."""
    add = ObjectVariable(operator.add) if func.is_none() else func
    return _rearrange(tx, itertools.accumulate, [iterable.unpack(tx), _as_function(tx, add)], {"initial": initial})


# Builtins that compare their items, and why they break over tensors.
MIN_MAX = "min()/max() of tensors compares their values (data-dependent); use torch.minimum/maximum"
COMPARING = {sorted: "sorted() over tensors compares their values (data-dependent)", min: MIN_MAX, max: MIN_MAX}


@handles(*COMPARING, pass_fn=True)
def _fold_over_items(fn: Any, tx, /, *args, **kwargs):
    """``sorted(xs)``, ``min(xs)``, ``max(a, b)``: folded when every item is a constant."""
    items = args[0].unpack(tx) if len(args) == 1 else list(args)
    if not all(v.is_python_constant() for v in [*items, *kwargs.values()]):
        raise Unsupported(COMPARING[fn], "data-dependent-branch")
    return fold(tx, fn, [ObjectVariable([i.as_python() for i in items])], kwargs)


# -- reductions over iterables ------------------------------------------------------


@handles(sum)
def _sum(tx, iterable, /, start=ZERO):
    items = iterable.unpack(tx)
    if all(v.is_python_constant() for v in [*items, start]):
        return ConstantVariable(sum((i.as_python() for i in items), start.as_python()))
    return functools.reduce(_as_function(tx, ObjectVariable(operator.add)), items, start)


# ``any(xs)``, ``all(xs)``: each item's truth is known now (a tensor's is not: a break)
HANDLERS[any] = lambda tx, iterable, /: ConstantVariable(any(v.truth() for v in iterable.unpack(tx)))
HANDLERS[all] = lambda tx, iterable, /: ConstantVariable(all(v.truth() for v in iterable.unpack(tx)))


@handles(functools.reduce)
def _reduce(tx, fn, iterable, /, *initial):
    items = iterable.unpack(tx)  # empty, with no initial value: TypeError, the user's
    return Unsupported.if_raises("functools.reduce()", lambda: functools.reduce(_as_function(tx, fn), items, *initial))


HANDLERS[functools.partial] = lambda tx, fn, /, *args, **kwargs: variables.PartialVariable(fn, list(args), kwargs)


class CountVariable(IteratorVariable):
    """``itertools.count(start, step)``: endless, so never listed; ``zip`` and ``islice`` take what they need."""

    def __init__(self, start: Any, step: Any):
        super().__init__([])
        self.start, self.step = start, step

    def describe(self) -> str:
        return f"count({self.start + self.index * self.step}, {self.step})"

    def unpack(self, tx):
        raise Unsupported("listing itertools.count() would never end", "unsupported-call")

    def at(self, i: int) -> Variable:
        return ConstantVariable(self.start + i * self.step)  # never past the end

    def reconstruct(self, cg):
        """``itertools.count(start, step)``, starting at the next number it would give (not the
        iterator over the items not yet taken that other iterators rebuild: a count has none)."""
        now = [self.at(self.index), ConstantVariable(self.step)]
        cg.build_once(self, lambda: cg.call_function(itertools.count, now))


HANDLERS[itertools.count] = lambda tx, start=ZERO, step=ConstantVariable(1): \
    CountVariable(start.as_python(), step.as_python())


# a tuple's or a dict's item; a tensor's is a node, recorded as for any operator function
HANDLERS[operator.getitem] = lambda tx, obj, index, /: obj.getitem(tx, index) \
    if isinstance(obj, TupleVariable | DictVariable) else NotImplemented


@handles(operator.contains)
def _contains(tx, container, item, /):
    """``item in xs``: a dict's keys and a set's items are found by hash (a tensor's is its identity); a tuple's,
    list's or iterator's are compared one by one, as :class:`.variables.Compared` says, until one is equal
    (an iterator is drawn only up to it, as eager's ``in`` does)."""
    if isinstance(container, TensorVariable):
        raise Unsupported("`in` on a tensor compares values (data-dependent)", "data-dependent-branch")
    if isinstance(container, DictVariable | SetVariable):
        return ConstantVariable(item.identity_key() in [i.identity_key() for i in container.unpack(tx)])
    if isinstance(container, TupleVariable | IteratorVariable):  # (_items: an iterator's drawn one at a time)
        return ConstantVariable(variables.Compared(item) in map(variables.Compared, _items(tx, container)))
    return NotImplemented


@handles(super)
def _super(tx, *args):
    if not args:  # in a method, super() is super(__class__, <the method's first argument>)
        if "__class__" not in tx.state.cells or not tx.code.co_argcount:
            raise Unsupported("super() outside a method", "unsupported-call")
        cls = tx.read_cell(tx.state.cells["__class__"])
        name = tx.code.co_varnames[0]  # the first argument: a local, or a cell when a closure reads it
        args = [cls, tx.load_local(name) if name in tx.state.locals else tx.read_cell(tx.state.cells[name])]
    return variables.SuperVariable(args[0].as_python(), args[1])


HANDLERS[torch.is_tensor] = lambda tx, obj, /: ConstantVariable(isinstance(obj, TensorVariable))
HANDLERS[torch.cond] = higher_order.trace_cond


@handles(torch.is_grad_enabled, torch.get_default_dtype, pass_fn=True)
def _global_state(fn: Any, tx) -> Variable:
    """Global torch state ``fn`` reads (``torch.is_grad_enabled()``): its value now, and a guard that it stays so."""
    value = fn()
    expr = f"torch.{fn.__name__}()"
    tx.guards.add(f"{expr} == {value}", "GLOBAL_STATE", f"{expr} was read", tx.output.current.line, expr, str(value))
    return ConstantVariable(value)


@handles(torch.autograd.profiler.record_function, contextlib.nullcontext, pass_fn=True)
def _null_context(fn: Any, tx, /, *args, **kwargs) -> Variable:
    """``record_function("name")`` (a profiler range) or ``contextlib.nullcontext()``: nothing the graph computes,
    so a no-op ``with`` (TorchDynamo does the same for profiler ranges)."""
    return variables.NullContextVariable(callable_name(fn))


HANDLERS[torch.no_grad] = lambda tx: GradModeVariable(False)
HANDLERS[torch.enable_grad] = lambda tx: GradModeVariable(True)


@handles(torch.set_grad_enabled)
def _set_grad_enabled(tx, mode):
    """Switches at once (it works as a plain call too); as a ``with``, the exit switches back."""
    previous = torch.is_grad_enabled()
    tx.output.set_grad_mode(bool(mode.as_python()))
    return GradModeVariable(bool(mode.as_python()), previous)
