"""How the transformed code rebuilds each kind of symbolic value as a real Python value.

At a graph break the transformed code (see :mod:`.resume`) must push the real
values of the symbolic stack and of the live locals: a tensor is read from the
graph's outputs or from where it came from, a constant is loaded, a list made
while tracing is built again item by item. One function per kind of
:class:`~.variables.Variable`, in a table keyed by the variable's class; a kind
that can't be rebuilt names its reason, and the frame then runs eagerly.

Three rules keep the rebuilt values faithful to eager:

- a value that came from the caller (it has a source) is read from that source,
  so it is the caller's own object. The translator never changes such an
  object (that is a "mutation" break), so it still holds what the trace saw;
- a mutable container made while tracing (list, dict, iterator) is built once
  and kept in a temporary local, so two references to it (a local and a stack
  slot) are the same object again;
- a function, method or ``functools.partial`` made while tracing is made again
  from its parts, with the caller's real closure cells.

Mirrors: the ``reconstruct(codegen)`` methods of torch/_dynamo/variables/*.py
(lists.py, dicts.py, iter.py, functions.py, misc.py). Leaves out: sets of
tensors, closure cells made while tracing, user-defined objects made while
tracing, and side effects replayed after the graph (Dynamo's side_effects.py):
the translator breaks before changing anything the caller can see.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .containers import (
    ContainerMethodVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    NamedTupleVariable,
    TupleVariable,
)
from .variables import (
    BoundMethodVariable,
    CellVariable,
    ConstantVariable,
    GradModeExitVariable,
    GradModeVariable,
    NullVariable,
    ObjectVariable,
    PartialVariable,
    RealCellVariable,
    SuperVariable,
    TensorMethodVariable,
    TensorVariable,
    UnboundVariable,
    UserFunctionVariable,
    Variable,
)

if TYPE_CHECKING:
    from .resume import Codegen


class CannotRebuild(Exception):
    """This value can't be rebuilt as a real Python value (the reason is the message)."""


def reconstruct(cg: Codegen, v: Variable) -> None:
    """Emit instructions that push the real value of ``v`` (dispatch on its class, most derived first).

    A kind missing from the table can teach itself with a ``reconstruct(codegen)`` method; failing
    that, one with a source is read from it again (it can't have changed: that would have broken).
    """
    for kind in type(v).__mro__:
        rebuild = REBUILD.get(kind)
        if rebuild is not None:
            rebuild(cg, v)
            return
    if hasattr(v, "reconstruct"):
        v.reconstruct(cg)
    elif simple_source(getattr(v, "source", None)):
        cg.load_source(v.source)
    else:
        raise CannotRebuild(f"can't rebuild {v.describe()} ({type(v).__name__}) as a Python value")


def simple_source(source: str | None) -> bool:
    """A source the transformed code can read (a name, attributes, constant subscripts; no calls)."""
    return source is not None and "(" not in source


# -- values read from somewhere -------------------------------------------------------


def _null(cg: Codegen, v: NullVariable) -> None:
    cg.emit("PUSH_NULL")


def _tensor(cg: Codegen, v: TensorVariable) -> None:
    """A graph input still unchanged is read from its source; any other tensor is a graph output."""
    if v.node not in cg.outputs and v.source is not None and v.node.op == "placeholder":
        cg.load_source(v.source)
    else:
        cg.load_graph_output(v)


def _tensor_method(cg: Codegen, v: TensorMethodVariable) -> None:
    cg.reconstruct(v.tensor)
    cg.load_attr(v.name)


def _constant(cg: Codegen, v: ConstantVariable) -> None:
    if isinstance(v.value, set):  # a set built while tracing: a fresh copy on every call
        cg.call_function(set, [ConstantVariable(frozenset(v.value))])
    else:
        cg.load_const(v.value)


def _object(cg: Codegen, v: ObjectVariable) -> None:
    cg.load_source(v.source) if simple_source(v.source) else cg.load_const(v.value)


# -- containers -------------------------------------------------------------------------


def _tuple(cg: Codegen, v: TupleVariable) -> None:
    if simple_source(v.source):
        cg.load_source(v.source)  # a tuple can't have changed: read it where it came from
        return
    for item in v.items:
        cg.reconstruct(item)
    cg.emit("BUILD_TUPLE", len(v.items))


def _named_tuple(cg: Codegen, v: NamedTupleVariable) -> None:
    """``torch.return_types.topk((values, indices))`` (a structseq), or ``Point._make((x, y))``."""
    if simple_source(v.source):
        cg.load_source(v.source)
        return
    cls = type(v.example)
    cg.call_function(getattr(cls, "_make", cls), [TupleVariable(list(v.items))])


def _list(cg: Codegen, v: ListVariable) -> None:
    if simple_source(v.source):
        cg.load_source(v.source)  # the caller's list, unchanged: the translator refuses to change it
        return
    _not_a_copy(v)

    def build() -> None:
        for item in v.items:
            cg.reconstruct(item)
        cg.emit("BUILD_LIST", len(v.items))

    cg.build_once(v, build)


def _dict(cg: Codegen, v: DictVariable) -> None:
    if simple_source(v.source):
        cg.load_source(v.source)
        return
    _not_a_copy(v)

    def build() -> None:
        for key, value in v.items.items():
            cg.load_const(key)
            cg.reconstruct(value)
        cg.emit("BUILD_MAP", len(v.items))

    cg.build_once(v, build)


def _not_a_copy(v: Variable) -> None:
    """A caller's list or dict that can't be read again must not be replaced by a copy."""
    if v.source is not None:
        raise CannotRebuild(f"{v.source} is the caller's {v.python_type().__name__}, and can't be read again")


def _iterator(cg: Codegen, v: IteratorVariable) -> None:
    """``iter((item, ...))`` over the items not yet taken."""
    cg.build_once(v, lambda: cg.call_function(iter, [TupleVariable(list(v.items[v.index:]))]))


def _container_method(cg: Codegen, v: ContainerMethodVariable) -> None:
    """``log.append``: the method of the (rebuilt) container."""
    cg.reconstruct(v.container)
    cg.load_attr(v.name)


# -- functions made while tracing ------------------------------------------------------


def _user_function(cg: Codegen, v: UserFunctionVariable) -> None:
    """A nested ``def`` or lambda: the same code, with the caller's real closure cells."""
    if any(not isinstance(c, RealCellVariable) for c in v.closure):
        raise CannotRebuild(f"{v.describe()} closes over a cell made while tracing")
    if not all(isinstance(d, ConstantVariable) for d in [*v.defaults, *v.kwdefaults.values()]):
        raise CannotRebuild(f"{v.describe()} has default values that are not constants")
    fn = types.FunctionType(v.code, v.globals, v.code.co_name, tuple(d.value for d in v.defaults) or None,
                            tuple(c.cell for c in v.closure) or None)
    fn.__kwdefaults__ = {k: d.value for k, d in v.kwdefaults.items()} or None
    cg.load_const(fn)


def _bound_method(cg: Codegen, v: BoundMethodVariable) -> None:
    """``types.MethodType(function, self)``."""
    cg.call_function(types.MethodType, [v.function, v.self_var])


def _partial(cg: Codegen, v: PartialVariable) -> None:
    """``functools.partial(function, *args, **kwargs)``."""
    cg.call_function_ex(functools.partial, [v.function, *v.args], v.kwargs)


# -- kinds that are refused -------------------------------------------------------------


def _refuse(what: str) -> Callable[[Codegen, Variable], None]:
    def refuse(cg: Codegen, v: Variable) -> None:
        raise CannotRebuild(f"can't rebuild {v.describe()}: {what}")

    return refuse


REBUILD: dict[type, Callable[[Codegen, Any], None]] = {
    NullVariable: _null,
    TensorVariable: _tensor,
    TensorMethodVariable: _tensor_method,
    ConstantVariable: _constant,
    ObjectVariable: _object,
    TupleVariable: _tuple,
    NamedTupleVariable: _named_tuple,
    ListVariable: _list,
    DictVariable: _dict,
    IteratorVariable: _iterator,
    ContainerMethodVariable: _container_method,
    UserFunctionVariable: _user_function,
    BoundMethodVariable: _bound_method,
    PartialVariable: _partial,
    CellVariable: _refuse("a closure cell made while tracing"),
    RealCellVariable: _refuse("a closure cell is not a value the code can push"),
    SuperVariable: _refuse("super() is only traced inside an inlined method"),
    GradModeVariable: _refuse("a grad-mode switch in flight"),
    GradModeExitVariable: _refuse("the exit of a grad-mode block"),
    UnboundVariable: _refuse("a local saved by an inlined comprehension"),
}
