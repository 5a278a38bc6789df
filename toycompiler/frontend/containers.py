"""Containers on the symbolic stack: tuples, lists, dicts and iterators of variables.

A list may hold tensors (graph nodes) next to ints, so it can't be a plain
constant: it is a list of :class:`~.variables.Variable`. Lists and dicts made
while tracing can be changed freely (``append``, ``d[k] = v``): nobody outside
sees them. One that came from the caller (an argument, a global, a module
attribute: it has a ``source``) must not be changed, since the compiled code
would not repeat the change; that is a graph break with kind "mutation".

Mirrors: torch/_dynamo/variables/lists.py, dicts.py, iter.py.
Leaves out: sets of tensors, dict views as live objects, user-defined containers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .variables import Compared, ConstantVariable, MethodVariable, Unsupported, Variable, wrap_scalar


def wrap_constant_result(value: Any) -> Variable:
    """A compile-time Python result (e.g. ``x.shape``, a folded call) as a variable; variables in it
    (a builtin run on lists of variables, a dict method's result) stay as they are."""
    if isinstance(value, Variable):
        return value
    if type(value) in (tuple, list):  # a TupleVariable or a ListVariable (:data:`CONTAINERS`)
        return CONTAINERS[type(value)]([wrap_constant_result(v) for v in value])
    return DictVariable({k: wrap_constant_result(v) for k, v in value.items()}) if type(value) is dict \
        else wrap_scalar(value)


class ContainerVariable(Variable):
    """What tuples, lists, dicts and sets share: ``items``, read item by item as a value, an FX argument or a
    fake (:meth:`each`), truth by emptiness, methods by name."""

    items: Any
    kind: type  # the Python type it stands for: tuple, list, dict, set
    METHODS: tuple[str, ...] = ()  # the methods ``call_method`` models

    def python_type(self) -> type:
        return self.kind

    def truth(self) -> bool:
        return bool(self.items)

    def item_variables(self) -> list[Variable]:
        """The variables it holds: a tuple's or a set's items, a dict's values."""
        return list(self.items.values()) if isinstance(self.items, dict) else list(self.items)

    def each(self, part: str) -> Any:
        """A container of the same kind with each item replaced by ``item.part()`` (its value, FX argument, fake)."""
        if self.kind is dict:
            return {k: getattr(v, part)() for k, v in self.items.items()}
        return self.kind(getattr(v, part)() for v in self.item_variables())

    # The container as a value, as an FX argument, as a fake: the same kind of container of its items' own.
    as_python = functools.partialmethod(each, "as_python")
    node_arg = functools.partialmethod(each, "node_arg")
    fake = functools.partialmethod(each, "fake")

    def tensors(self):
        return [t for v in self.item_variables() for t in v.tensors()]

    def unpack(self, tx):
        return self.item_variables()

    def getattr(self, tx, name):
        if name in self.METHODS:
            return MethodVariable(self, name)
        raise Unsupported(f"{self.python_type().__name__} attribute .{name}")

    def before_change(self, tx, what: str) -> None:
        """Refuse to change the caller's container; remember the items so a break can undo the change."""
        if self.source is not None:
            raise Unsupported(f"{what} changes {self.source}, which the caller can see; "
                              "the compiled code would not repeat the change", "mutation")
        tx.output.remember(self, "items")


@dataclass(eq=False)
class TupleVariable(ContainerVariable):
    """A tuple of variables."""

    items: list[Variable] = field(default_factory=list)
    source: str | None = None
    METHODS = ("index", "count")
    kind = tuple

    def describe(self) -> str:
        inner = ", ".join(i.describe() for i in self.items)
        return f"[{inner}]" if self.kind is list else f"({inner})"

    def getitem(self, tx, index):
        key = index.as_python()
        item = Unsupported.if_raises(f"{self.describe()}[{key!r}]", lambda: self.items[key])
        return (ListVariable if self.kind is list else TupleVariable)(item) if isinstance(key, slice) else item

    def call_method(self, tx, name, args, kwargs):
        """``xs.index(x)``, ``xs.count(x)``: Python's own, on the items compared as :class:`.variables.Compared`
        says (identity first, then ``==``)."""
        items, bounds = self.kind(map(Compared, self.items)), [a.as_python() for a in args[1:]]
        what, x = f"{self.kind.__name__}.{name}()", Compared(args[0])
        return ConstantVariable(Unsupported.if_raises(what, lambda: getattr(items, name)(x, *bounds)))

    def reconstruct(self, cg):
        cg.build("BUILD_TUPLE", self.items)


@dataclass(eq=False)
class NamedTupleVariable(TupleVariable):
    """A structseq result (``torch.topk(...).values``); ``example`` names the fields."""

    example: Any = None

    def python_type(self) -> type:
        return type(self.example)

    def getattr(self, tx, name):
        field_value = getattr(self.example, name, None)
        named = [item for item, value in zip(self.items, self.example) if value is field_value]
        return named[0] if named else super().getattr(tx, name)

    def reconstruct(self, cg):
        """``torch.return_types.topk((values, indices))`` (a structseq), or ``Point._make((x, y))``."""
        cls = type(self.example)
        cg.call_function(getattr(cls, "_make", cls), [TupleVariable(list(self.items))])


class ListVariable(TupleVariable):
    """A list of variables; changes are allowed only to lists made while tracing.

    (A tuple's fields: ``items`` and ``source``, so no dataclass decorator of its own.)"""

    METHODS = ("append", "extend", "insert", "pop", "clear", "reverse", "sort", "index", "count", "copy", "remove")
    kind = list

    def setitem(self, tx, index: Variable, value: Variable) -> None:
        self.before_change(tx, "item assignment")
        key = index.as_python()
        self.items[key] = value.unpack(tx) if isinstance(key, slice) else value

    def reconstruct(self, cg):
        cg.build_once(self, lambda: cg.build("BUILD_LIST", self.items))

    def call_method(self, tx, name, args, kwargs):
        """The list's own method, run on the list of variables: ``xs.append(t)``, ``xs.pop(0)`` (a position
        is known now); ``remove`` finds the item as ``index`` does."""
        if name in ("index", "count"):
            return super().call_method(tx, name, args, kwargs)
        if name != "copy":
            self.before_change(tx, f"list.{name}()")
        if name == "sort":  # the items are constants: sorted by value
            values = sorted(self.as_python(), **{k: v.as_python() for k, v in kwargs.items()})
            self.items[:] = [wrap_constant_result(v) for v in values]
            return ConstantVariable(None)
        if name == "remove":
            del self.items[super().call_method(tx, "index", args, {}).value]
            return ConstantVariable(None)
        if name == "extend":
            args = [args[0].unpack(tx)]
        elif name in ("insert", "pop") and args:
            args = [args[0].as_python(), *args[1:]]
        return wrap_constant_result(Unsupported.if_raises(f"list.{name}()", lambda: getattr(self.items, name)(*args)))


@dataclass(eq=False)
class DictVariable(ContainerVariable):
    """A dict with compile-time keys and variable values (insertion order kept)."""

    items: dict[Any, Variable] = field(default_factory=dict)
    source: str | None = None
    METHODS = ("keys", "values", "items", "get", "copy", "update", "pop", "setdefault", "clear")
    kind = dict

    def describe(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v.describe()}" for k, v in self.items.items()) + "}"

    def unpack(self, tx):
        return [wrap_constant_result(k) for k in self.items]

    def getitem(self, tx, index):
        return Unsupported.if_raises(f"dict[{index.as_python()!r}]", lambda: self.items[index.as_python()])

    def setitem(self, tx, index: Variable, value: Variable) -> None:
        self.before_change(tx, "dict item assignment")
        self.items[index.as_python()] = value

    def reconstruct(self, cg):
        cg.build_once(self, lambda: cg.build_map(self.items))

    def call_method(self, tx, name, args, kwargs):
        """The dict's own method, run on the dict of variables with the key known now: ``d.get("k", x)``;
        ``keys()``, ``values()`` and ``items()`` give lists (no live views)."""
        if name not in ("keys", "values", "items", "get", "copy"):
            self.before_change(tx, f"dict.{name}()")
        if name == "update":  # from a dict, or from (key, value) pairs; then the keywords
            other = args[0] if args else DictVariable({})
            if not isinstance(other, DictVariable):
                other = DictVariable({k.as_python(): v for k, v in (pair.unpack(tx) for pair in other.unpack(tx))})
            self.items.update(other.items, **kwargs)
            return ConstantVariable(None)
        if name == "setdefault":
            args = [*args, ConstantVariable(None)][:2]  # the default it stores is a variable too
        args = [a.as_python() for a in args[:1]] + args[1:]  # the key's value, the default's variable
        result = Unsupported.if_raises(f"dict.{name}()", lambda: getattr(self.items, name)(*args))
        return wrap_constant_result(list(result) if name in ("keys", "values", "items") else result)


@dataclass(eq=False)
class SetVariable(ContainerVariable):
    """A set of variables, by identity for tensors and modules (as Python hashes them), by value
    for constants. Made while tracing only: a set from the caller stays an object."""

    items: dict[Any, Variable] = field(default_factory=dict)  # identity key -> variable
    METHODS = ("add", "update", "discard", "remove", "clear", "copy")
    kind = set

    def describe(self) -> str:
        return "{" + ", ".join(v.describe() for v in self.items.values()) + "}"

    def reconstruct(self, cg):
        """``set((item, ...))``, built once like a list."""
        cg.build_once(self, lambda: cg.call_function(set, [TupleVariable(list(self.items.values()))]))

    def call_method(self, tx, name, args, kwargs):
        if name == "copy":
            return SetVariable(dict(self.items))
        tx.output.remember(self, "items")
        if name == "clear":
            self.items.clear()
        elif name in ("discard", "remove"):
            if self.items.pop(args[0].identity_key(), None) is None and name == "remove":
                raise Unsupported("set.remove() of a missing item (KeyError while tracing)", "exception")
        else:  # add, update
            for v in args if name == "add" else [v for arg in args for v in arg.unpack(tx)]:
                self.items.setdefault(v.identity_key(), v)
        return ConstantVariable(None)


@dataclass(eq=False)
class IteratorVariable(Variable):
    """An iterator over variables known now (``zip``, ``enumerate``, a generator's yields)."""

    items: list[Variable] = field(default_factory=list)
    index: int = 0

    def describe(self) -> str:
        return f"iterator({len(self.items) - self.index} left)"

    def unpack(self, tx):
        return list(self.drawn(tx))

    def drawn(self, tx) -> Iterator[Variable]:
        """The items one at a time, each taken only when asked for (``zip``, ``islice`` may stop early)."""
        return iter(lambda: self.next(tx), None)

    def next(self, tx) -> Variable | None:
        """The next item (None when there is none), taken: the iterator moves past it."""
        if (item := self.at(self.index)) is not None:
            tx.output.remember(self, "index")
            self.index += 1
        return item

    def at(self, i: int) -> Variable | None:
        """The ``i``-th item, or None past the end."""
        return self.items[i] if i < len(self.items) else None

    def truth(self) -> bool:
        return True

    def reconstruct(self, cg):
        """``iter((item, ...))`` over the items not yet taken."""
        cg.build_once(self, lambda: cg.call_function(iter, [TupleVariable(list(self.items[self.index:]))]))


class ReadOnFirstUse:
    """A caller's tuple, list or dict whose items are read, and guarded, when first used.

    ``read()`` wraps the items and adds the guards on the length (or keys) and on
    each item. Calling ``log.append`` reads no item: guarding ``len(log) == 0``
    there would make every later call, with a longer ``log``, recompile.
    (Dynamo's LazyVariableTracker.)
    """

    def __init__(self, source: str, read: Callable[[], Any]) -> None:
        """The container's fields, set by hand: no ``items`` yet (the builder makes one only this way); they are read
        when first used, by ``read()``, which wraps the items and adds their guards."""
        self.source, self.read = source, read

    @functools.cached_property
    def items(self) -> Any:
        """Read on first use, then kept in the instance (where a change or a rollback also sets it)."""
        return self.read()

    def describe(self) -> str:
        return super().describe() if "items" in vars(self) else f"{self.python_type().__name__} {self.source}"


# The variable class of each Python container type, by the type it stands for.
CONTAINERS = {tuple: TupleVariable, list: ListVariable, dict: DictVariable}
# The classes of a caller's containers: CallerTupleVariable(ReadOnFirstUse, TupleVariable), CallerListVariable,
# CallerDictVariable; by the Python type they stand for.
CALLER_CONTAINERS = {kind: type(f"Caller{cls.__name__}", (ReadOnFirstUse, cls), {}) for kind, cls in CONTAINERS.items()}
