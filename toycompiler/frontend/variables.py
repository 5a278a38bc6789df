"""What a value on the symbolic stack can be.

The translator never holds real tensors. Each stack slot and local is a
:class:`Variable`: a tensor that lives in the FX graph (:class:`TensorVariable`),
a Python value known at compile time (:class:`ConstantVariable`,
:class:`ObjectVariable`), a container of variables, a function the translator
will inline, a closure cell, or CPython's NULL marker.

Each variable answers the same few questions (``getattr``, ``call``,
``as_python``, ``unpack``, ``getitem``, ``setitem``, ``truth``, ``is_none``,
``identity_key``), so the translator dispatches on behaviour, not on
``isinstance`` ladders; the same holds for the graph: ``node_arg``, ``fake``
and ``tensors`` say what a value is as an FX argument, as a fake-tensor
argument, and which tensors it holds; and for the transformed code:
``reconstruct(cg)`` emits the instructions that push the value as a real one
(see :mod:`.reconstruct`). Containers (lists, dicts, iterators) live in
:mod:`.containers`.

The translator is passed to these methods as ``tx`` (never imported): a
variable asks it to ``wrap`` a real value, ``call_python`` a callable,
``call_method`` on a tensor or ``inline_code``, and records nodes through
``tx.output`` (the :class:`~.output_graph.OutputGraph`).

Mirrors: torch/_dynamo/variables/ (builder.py, tensor.py, constant.py, torch.py,
functions.py, nn_module.py). Leaves out: user-defined classes created while
tracing, generators that escape, and most of Dynamo's 40 kinds.
"""

from __future__ import annotations

import collections.abc
import functools
import operator
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch.fx.experimental.symbolic_shapes import guard_scalar

if TYPE_CHECKING:
    from .reconstruct import Codegen
    from .translator import InstructionTranslator


class Unsupported(Exception):
    """Raised by a handler that cannot trace an instruction; the translator records a break."""

    def __init__(self, reason: str, kind: str = "unsupported"):
        super().__init__(reason)
        self.reason, self.kind = reason, kind

    @staticmethod
    def if_raises(what: str, fn: collections.abc.Callable[[], Any], errors=(LookupError, ValueError, TypeError)) -> Any:
        """``fn()``: Python run now on the user's values (``d.pop(k)``, ``zip(xs, ys, strict=True)``, a call's
        arguments bound to its parameters). What it raises is the user's exception: tracing stops there, with a
        break of kind "exception" (the code runs as Python from there on, and raises as eager does)."""
        try:
            return fn()
        except errors as e:
            raise Unsupported(f"{what} raised {type(e).__name__}: {e} while tracing; exceptions are not traced",
                              "exception") from e


class CannotResume(Exception):
    """A value can't be rebuilt, or the frame can't be split at its break (the reason is the message)."""


def simple_source(source: str | None) -> bool:
    """A source the transformed code can read (a name, attributes, constant subscripts; no calls)."""
    return source is not None and "(" not in source


class Variable:
    """Base class: a value the translator tracks symbolically."""

    source: str | None = None  # Python expression that reaches the value at run time

    def describe(self) -> str:
        return type(self).__name__

    def as_python(self) -> Any:
        """The compile-time value; only constants and known objects have one."""
        raise Unsupported(f"{self.describe()} is not known at compile time", "data-dependent")

    def is_python_constant(self) -> bool:
        try:
            self.as_python()
            return True
        except Unsupported:
            return False

    def python_type(self) -> type:
        return type(self.as_python())

    def getattr(self, tx: InstructionTranslator, name: str) -> Variable:
        raise Unsupported(f"attribute .{name} of {self.describe()}")

    def call(self, tx: InstructionTranslator, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        raise Unsupported(f"calling {self.describe()}", "unsupported-call")

    def unpack(self, tx: InstructionTranslator) -> list[Variable]:
        """The items ``for``, ``*args`` and ``a, b = ...`` see."""
        if isinstance(value := self.as_python(), collections.abc.Iterator):
            # a zip, map or generator object: one pass only
            raise Unsupported(f"iterating over {self.describe()}, a real iterator, is not traced (reading it "
                              "while tracing would use it up before the code runs)")
        try:
            return [tx.wrap(v, None) for v in value]
        except TypeError as e:
            raise Unsupported(f"{self.describe()} is not iterable") from e

    def getitem(self, tx: InstructionTranslator, index: Variable) -> Variable:
        """``obj[index]``: ``operator.getitem`` called as any function is (on a tensor: recorded, a node)."""
        return tx.call_python(operator.getitem, [self, index], {})

    def setitem(self, tx: InstructionTranslator, index: Variable, value: Variable) -> None:
        """``obj[index] = value``: only tensors, and lists and dicts made while tracing, take it."""
        raise Unsupported(f"item assignment on {self.describe()} changes an object outside the compiled code",
                          "mutation")

    def truth(self) -> bool:
        """``bool(value)`` at compile time, for jumps."""
        return bool(self.as_python())

    def is_none(self) -> bool:
        """``value is None`` at compile time, for jumps: known for every variable (only a constant can be None,
        a tensor never is)."""
        return isinstance(self, ConstantVariable) and self.value is None

    def identity_key(self) -> Any:
        """What sets and dict lookups compare: the constant value, or the variable itself (a tensor has no
        compile-time value, and Python hashes it by identity). A tuple hashes and compares by its items, so
        ``(x, 1)`` twice is one key."""
        if getattr(self, "kind", None) is tuple:
            return tuple(v.identity_key() for v in self.items)
        return self.as_python() if self.is_python_constant() else id(self)

    def enter(self, tx: InstructionTranslator) -> tuple[Variable, Variable]:
        """``with value:`` -- enter the block: the exit function ``BEFORE_WITH`` leaves on the stack, and
        what ``as`` binds. Only grad-mode switches and no-op contexts say how."""
        raise Unsupported(f"`with {self.describe()}:` is not traced: only torch.no_grad(), torch.enable_grad(), "
                          "torch.set_grad_enabled() and no-op (record_function) blocks are", "unsupported-opcode")

    # -- the value as an argument of a graph node ----------------------------------

    def node_arg(self) -> Any:
        """The value as an FX node argument: a node for a tensor, the Python value otherwise."""
        return self.as_python()

    # The value as an argument when the op runs on fake tensors (to learn its result): here the Python value too
    # (a tensor's is its fake tensor, a container's holds its items' own).
    fake = node_arg

    def tensors(self) -> list[TensorVariable]:
        """The tensors this value holds (itself, or a container's items)."""
        return []

    # -- the value rebuilt as a real one by the transformed code (see reconstruct.py) -------

    cannot_rebuild: str | None = None  # why no code can push this kind of value (None: it can)

    def reconstruct(self, cg: Codegen) -> None:
        """Emit, through ``cg``, instructions that push this value as a real one.

        Each kind that can be rebuilt overrides this (a value from the caller is read from its source
        again); here: a kind that can't, with its reason."""
        reason = self.cannot_rebuild or f"a {type(self).__name__} has no code that rebuilds it as a Python value"
        raise CannotResume(f"can't rebuild {self.describe()}: {reason}")


@dataclass(eq=False)
class Compared:
    """A variable as ``in``, ``list.index`` and ``list.count`` compare it, one item after another: put in a
    real list (``[Compared(v) for v in items].index(Compared(x))``), they run Python's own search.

    As CPython's PyObject_RichCompareBool, the same object is equal without ``==`` being called. Otherwise
    a tensor's ``==`` is a tensor whose truth needs its values (and raises past one element): a graph break,
    where the comparison runs for real. Lists and tuples compare their items the same way (``[x] in [[x]]``
    is True without ``x == x``). Shown as the variable in their errors (``3 is not in list``)."""

    v: Variable

    def __eq__(self, other: Compared) -> bool:
        a, b = self.v, other.v
        if a is b or (a.is_python_constant() and b.is_python_constant()):
            return a is b or a.as_python() == b.as_python()
        if getattr(a, "kind", None) in (list, tuple) and getattr(b, "kind", None) in (list, tuple):
            return a.kind is b.kind and [*map(Compared, a.items)] == [*map(Compared, b.items)]  # item by item
        # Anything else (a tensor, a dict, a namedtuple, an object with its own __eq__) has an == that
        # only running it can answer: comparing by identity would say False where Python may say True.
        kind = "data-dependent-branch" if any(isinstance(v, TensorVariable) for v in (a, b)) else "unsupported"
        raise Unsupported(f"{self!r} == {other!r}: `in`, index() and count() need its truth, which only running it "
                          "tells (a tensor's values, or Python's own ==)", kind)

    def __repr__(self) -> str:
        return self.v.describe()


class NullVariable(Variable):
    """CPython's NULL stack marker (pushed before a plain function call)."""

    def describe(self) -> str:
        return "NULL"

    def reconstruct(self, cg):
        cg.emit("PUSH_NULL")


class UnboundVariable(Variable):
    """What 3.12's ``LOAD_FAST_AND_CLEAR`` saves for a local that had no value yet."""

    cannot_rebuild = "a local saved by an inlined comprehension"

    def describe(self) -> str:
        return "<unbound>"


@dataclass(eq=False)
class KnownVariable(Variable):
    """A Python value known at compile time, and the source it was read from (if any).

    ConstantVariable and ObjectVariable add no fields: they inherit its dataclass ``__init__`` and ``__repr__``."""

    value: Any
    source: str | None = None

    def as_python(self) -> Any:
        return self.value

    def attribute(self, name: str) -> Any:
        """The value's real attribute ``name``; a missing one is a break, as eager raises AttributeError."""
        return Unsupported.if_raises(f"{self.describe()}.{name}", lambda: getattr(self.value, name), AttributeError)


class ConstantVariable(KnownVariable):
    """An int, float, bool, str, None, dtype, device, torch.Size... known while tracing."""

    def describe(self) -> str:
        return repr(self.value)

    def getattr(self, tx: InstructionTranslator, name: str) -> Variable:
        return wrap_scalar(self.attribute(name))

    def call(self, tx, args, kwargs):
        raise Unsupported(f"calling constant {self.value!r}", "unsupported-call")

    def reconstruct(self, cg):
        if isinstance(self.value, set):  # a set built while tracing: a fresh copy on every call
            return cg.call_function(set, [ConstantVariable(frozenset(self.value))])
        cg.load_const(self.value)


class ObjectVariable(KnownVariable):
    """A Python object known at compile time: a module, function, class, nn.Module or callable."""

    def describe(self) -> str:
        name = getattr(self.value, "__qualname__", None) or getattr(self.value, "__name__", None)
        return name if isinstance(name, str) else type(self.value).__name__

    def getattr(self, tx, name):
        attr = self.attribute(name)
        source = attribute_source(self.value, self.source, name) if self.source else None
        # ``self.helper``: inline the function with this object as ``self``; any other attribute, wrapped
        return bound_method(attr, self) or tx.wrap(attr, source, identity=not isinstance(self.value, types.ModuleType))

    def call(self, tx, args, kwargs):
        return tx.call_python(self.value, args, kwargs, self.source)

    def unpack(self, tx):
        # ``for layer in self.layers``: each item as ``self.layers[i]`` reads it
        if isinstance(self.value, torch.nn.Sequential | torch.nn.ModuleList | torch.nn.ParameterList):
            return [self.getitem(tx, ConstantVariable(i)) for i in range(len(self.value))]
        return super().unpack(tx)  # a ModuleDict or ParameterDict: its keys, as constants

    def getitem(self, tx, index):
        if isinstance(self.value, torch.nn.Module):
            key = index.as_python()
            source = f"{self.source}[{key!r}]" if self.source and not isinstance(key, slice) else None
            if source and isinstance(self.value, torch.nn.Sequential | torch.nn.ModuleList | torch.nn.ModuleDict):
                name = list(self.value._modules)[key] if isinstance(key, int) else key  # -1 too
                source = f"{self.source}._modules[{name!r}]"
            return tx.wrap(self.value[key], source)
        return super().getitem(tx, index)

    def enter(self, tx):
        # a torch.no_grad() made outside the trace (e.g. by a decorator) enters as one; anything else: a break
        return (grad_mode_of(self.value) or super()).enter(tx)

    def reconstruct(self, cg):
        cg.load_source(self.source) if simple_source(self.source) else cg.load_const(self.value)


def attribute_source(obj: Any, source: str, name: str) -> str:
    """How compiled code reads ``obj.name`` again, cheaply.

    A module's submodules, parameters and buffers are not in its ``__dict__``: ``net.fc`` runs
    ``Module.__getattr__`` (a Python call), and ``seq[3]`` runs ``Sequential.__getitem__``, which walks
    the list. Guards and the transformed code run on every call, so they read the dict the value
    lives in, as TorchDynamo's sources do: ``net._modules['fc']``, ``fc._parameters['weight']``.
    """
    # Module.__getattr__ runs only for a name neither the object nor its class has: then it looks in its tables
    module_getattr = isinstance(obj, torch.nn.Module) and name not in vars(obj) and not hasattr(type(obj), name)
    tables = ("_parameters", "_buffers", "_modules") if module_getattr else ()  # (in Module.__getattr__'s order)
    return next((f"{source}.{t}[{name!r}]" for t in tables if name in vars(obj)[t]), f"{source}.{name}")


@dataclass(eq=False)
class TensorVariable(Variable):
    """A tensor: an FX node plus a fake tensor carrying its shape, dtype and device.

    An in-place operation (``x.add_(1)``) points the variable at the node that
    did it, so every alias (other locals, list items) sees the new value.
    """

    node: torch.fx.Node
    example: torch.Tensor  # a FakeTensor
    source: str | None = None

    def describe(self) -> str:
        return f"T[{','.join(str(s) for s in self.example.shape)}]:{self.node.name}"  # T[4,3]:x

    def python_type(self) -> type:
        return torch.nn.Parameter if isinstance(self.example, torch.nn.Parameter) else torch.Tensor

    # Attributes read at compile time. They depend only on properties already
    # checked by the tensor's guard (dtype, device, shape, stride, requires_grad).
    STATIC_ATTRIBUTES = ("shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout", "is_sparse",
                         "is_quantized", "is_meta", "is_leaf", "is_nested", "is_cpu", "is_mkldnn")
    # Methods answered from the fake tensor, without a graph node.
    STATIC_METHODS = ("size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous", "element_size",
                      "is_floating_point", "is_complex", "get_device", "type")

    def node_arg(self) -> Any:
        return self.node

    def fake(self) -> Any:
        return self.example

    def tensors(self) -> list[TensorVariable]:
        return [self]

    def getattr(self, tx, name):
        if name in self.STATIC_ATTRIBUTES:
            return wrap_scalar(getattr(self.example, name))
        if name in ("T", "mT", "H", "mH", "real", "imag"):
            return tx.output.record_call("call_function", getattr, [self, ConstantVariable(name)], {})  # a node
        if name in ("data", "grad", "grad_fn", "_base"):
            raise Unsupported(f"tensor attribute .{name} is not traced", "unsupported-call")
        if callable(getattr(torch.Tensor, name, None)):
            return MethodVariable(self, name)
        raise Unsupported(f"tensor attribute .{name}")

    def call_method(self, tx, name, args, kwargs):
        return tx.call_method(self, name, args, kwargs)

    def unpack(self, tx):
        if not self.example.dim():
            raise Unsupported("iterating over a 0-d tensor", "exception")
        return [tx.call_python(operator.getitem, [self, ConstantVariable(i)], {}) for i in range(self.example.shape[0])]

    def setitem(self, tx, index, value):
        """``out[idx] = v`` as an ``operator.setitem`` node, which dead-code elimination keeps: ``record_call``
        sees that it changed the tensor."""
        tx.output.record_call("call_function", operator.setitem, [self, index, value], {})

    def truth(self) -> bool:
        raise Unsupported("branching on a tensor's value (data-dependent control flow)", "data-dependent-branch")

    def reconstruct(self, cg):
        """A graph input still unchanged is read from its source; any other tensor is a graph output,
        ``___graph_out[i]``. While planning, the tensor is added to the graph's outputs (the real run rebuilds
        the same values, so it finds each one there: planning is a dry run of the same code)."""
        if self.node not in cg.outputs and self.source is not None and self.node.op == "placeholder":
            return cg.load_source(self.source)
        cg.emit("LOAD_FAST", "___graph_out")
        cg.emit("LOAD_CONST", cg.outputs.setdefault(self.node, len(cg.outputs)))
        cg.emit("BINARY_SUBSCR")


@dataclass(eq=False)
class MethodVariable(Variable):
    """``x.sin``, ``lst.append``, ``d.items`` before it is called: calling it is the owner's ``call_method``
    (a tensor's records a node, a container's changes or reads its items)."""

    owner: Variable
    name: str

    def describe(self) -> str:
        return f"{self.owner.describe()}.{self.name}"

    def tensors(self) -> list[TensorVariable]:
        return self.owner.tensors()  # ``x.add`` passed to a function: the call involves a tensor

    def call(self, tx, args, kwargs):
        return self.owner.call_method(tx, self.name, args, kwargs)

    def reconstruct(self, cg):
        """``x.sin``, ``log.append``: the method of the (rebuilt) owner."""
        cg.reconstruct(self.owner)
        cg.load_attr(self.name)


@dataclass(eq=False)
class CellVariable(Variable):
    """A closure cell. One made while tracing (``MAKE_CELL``) holds a variable; a real function's
    (``cell``, see ``builder.wrap_cell``) has its contents read, and guarded through ``source``, on first use."""

    contents: Variable | None = None
    name: str = ""
    cell: types.CellType | None = None  # the real cell, for a cell of a real function
    source: str | None = None
    cannot_rebuild = "a closure cell is not a value the code can push"

    def describe(self) -> str:
        inside = self.contents.describe() if self.contents else "empty"
        return f"cell {self.name}" if self.cell is not None else f"cell({inside})"

    def as_cell(self) -> types.CellType:
        """The real cell; for one made while tracing, a new cell holding the (constant) contents."""
        if self.cell is not None:
            return self.cell
        return types.CellType() if self.contents is None else types.CellType(self.contents.as_python())


@dataclass(eq=False)
class UserFunctionVariable(Variable):
    """A function made while tracing (``MAKE_FUNCTION``: nested ``def``, lambda, comprehension)."""

    code: types.CodeType
    globals: dict
    defaults: list[Variable] = field(default_factory=list)
    kwdefaults: dict[str, Variable] = field(default_factory=dict)
    closure: list[Variable] = field(default_factory=list)  # CellVariables

    def describe(self) -> str:
        return f"function {self.code.co_qualname}"

    def python_type(self) -> type:
        return types.FunctionType

    def as_python(self) -> Any:
        """A real function with the same code, when everything it captured is a constant (a cell of
        the real enclosing function is that cell itself)."""
        cells = tuple(c.as_cell() for c in self.closure) or None
        defaults = tuple(d.as_python() for d in self.defaults) or None
        fn = types.FunctionType(self.code, self.globals, self.code.co_name, defaults, cells)
        fn.__kwdefaults__ = {k: v.as_python() for k, v in self.kwdefaults.items()} or None
        return fn

    def call(self, tx, args, kwargs):
        return tx.inline_code(self.code, self.globals, args, kwargs, self.defaults, self.kwdefaults, self.closure)

    def reconstruct(self, cg):
        """The same code, with the caller's real closure cells; a cell made while tracing becomes
        a new cell holding its (constant) contents (:meth:`as_python`)."""
        if not all(isinstance(d, ConstantVariable) for d in [*self.defaults, *self.kwdefaults.values()]):
            raise CannotResume(f"{self.describe()} has default values that are not constants")
        # a real cell (``c.cell``) is passed on as it is; one made while tracing needs constant contents
        if not all(c.cell or (c.contents is not None and c.contents.is_python_constant()) for c in self.closure):
            raise CannotResume(f"{self.describe()} closes over a cell made while tracing")
        cg.load_const(self.as_python())


@dataclass(eq=False)
class PartialVariable(Variable):
    """``functools.partial(fn, *args, **kwargs)`` built while tracing."""

    function: Variable
    args: list[Variable]
    kwargs: dict[str, Variable] = field(default_factory=dict)

    def describe(self) -> str:
        return f"partial({self.function.describe()})"

    def call(self, tx, args, kwargs):
        return self.function.call(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def reconstruct(self, cg):
        cg.call_function(functools.partial, [self.function, *self.args], self.kwargs)


class BoundMethodVariable(PartialVariable):
    """``obj.method`` where ``method`` is a Python function: the function with ``self`` bound first, as a
    partial (``args == [self]``), so calling it inlines the function with ``self``. It is rebuilt as
    ``types.MethodType(function, self)``, and known at compile time when both parts are."""

    def describe(self) -> str:
        return f"bound {self.function.describe()}"

    def as_python(self) -> Any:
        return types.MethodType(self.function.as_python(), self.args[0].as_python())

    def reconstruct(self, cg):
        cg.call_function(types.MethodType, [self.function, *self.args])


def bound_method(attr: Any, self_var: Variable) -> BoundMethodVariable | None:
    """``attr``, read from ``self_var``'s value, as a method to inline with ``self_var`` as ``self``, when it is a
    Python function bound to that very object (``self.helper``; a classmethod is bound to the class); else None."""
    if isinstance(attr, types.MethodType) and attr.__self__ is self_var.as_python() \
            and isinstance(attr.__func__, types.FunctionType):
        return BoundMethodVariable(ObjectVariable(attr.__func__), [self_var])


@dataclass(eq=False)
class SuperVariable(Variable):
    """``super()`` inside an inlined method: attribute lookups start after ``cls`` in the MRO."""

    cls: type
    self_var: Variable
    cannot_rebuild = "super() is only traced inside an inlined method"

    def getattr(self, tx, name):
        attr = getattr(super(self.cls, self.self_var.as_python()), name)
        return bound_method(attr, self.self_var) or tx.wrap(attr, None)  # (a classmethod's is bound to the class)


@dataclass(eq=False)
class GradModeVariable(Variable):
    """``torch.no_grad()``, ``torch.enable_grad()``, ``torch.set_grad_enabled(b)``, for a ``with``.

    Entering records ``torch._C._set_grad_enabled(b)`` in the graph (and sets it
    while tracing, so fake results get the right ``requires_grad``); the exit
    function it leaves on the stack records the switch back.
    """

    enabled: bool
    previous: bool | None = None  # set_grad_enabled switches at the call, not at __enter__
    cannot_rebuild = "a grad-mode switch in flight"

    def describe(self) -> str:
        return f"grad_mode({self.enabled})"

    def enter(self, tx):
        if (previous := self.previous) is None:
            previous = torch.is_grad_enabled()
            tx.output.set_grad_mode(self.enabled)
        return GradModeExitVariable(previous), ConstantVariable(None)


@dataclass(eq=False)
class NullContextVariable(Variable):
    """``record_function(...)`` (a profiler range) or ``contextlib.nullcontext()``: a ``with`` that changes
    nothing the graph computes, so it is traced as a no-op, as TorchDynamo does for profiler ranges
    (the range is not recorded in the compiled code). Its own exit function does nothing."""

    name: str

    def describe(self) -> str:
        return f"no-op context {self.name}"

    def enter(self, tx):
        return self, self

    def call(self, tx, args, kwargs):
        return ConstantVariable(None)


# The grad-mode contexts a call makes (``torch.no_grad()``): the class -> the mode inside its block.
GRAD_MODES = {torch.no_grad: False, torch.enable_grad: True}


def grad_mode_of(obj: Any) -> GradModeVariable | None:
    """A ``torch.no_grad()``-style object made outside the trace (e.g. by a decorator)."""
    return next((GradModeVariable(enabled) for cls, enabled in GRAD_MODES.items() if isinstance(obj, cls)), None)


@dataclass(eq=False)
class GradModeExitVariable(Variable):
    """The ``__exit__`` of a grad-mode block: called with (None, None, None) on the normal path."""

    previous: bool
    cannot_rebuild = "the exit of a grad-mode block"

    def call(self, tx, args, kwargs):
        tx.output.set_grad_mode(self.previous)
        return ConstantVariable(None)


def wrap_scalar(value: Any) -> Variable:
    """A compile-time Python value that is not a container (``x.dtype``, ``x.shape``, ``"a".upper``).

    (Tuples, lists and dicts of values: :func:`.containers.wrap_constant_result`.)
    """
    # A symbolic size read as a Python value is fixed to its traced value (the ShapeEnv adds the guard).
    value = guard_scalar(value) if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool) else value
    if isinstance(value, torch.Size):  # and so is each symbolic size in a shape
        value = torch.Size(guard_scalar(v) if isinstance(v, torch.SymInt) else v for v in value)
    return ConstantVariable(value) if isinstance(value, CONSTANT_TYPES) else ObjectVariable(value)


# Values a ConstantVariable holds: immutable (or copied when rebuilt, like a set) and cheap to compare.
CONSTANT_TYPES = (int, float, bool, str, bytes, type(None), complex, torch.dtype, torch.device, torch.layout,
                  torch.memory_format, slice, type(...), range, torch.Size, frozenset, set)
