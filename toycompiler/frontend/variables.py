"""What a value on the symbolic stack can be.

The translator never holds real tensors. Each stack slot and local is a
:class:`Variable`: a tensor that lives in the FX graph (:class:`TensorVariable`),
a Python value known at compile time (:class:`ConstantVariable`,
:class:`ObjectVariable`), a container of variables, or CPython's NULL marker.

Each variable answers the same few questions (``getattr``, ``call``,
``as_python``), so the translator dispatches on behaviour, not on
``isinstance`` ladders.

Mirrors: torch/_dynamo/variables/ (builder.py, tensor.py, constant.py, torch.py).
Leaves out: user-defined classes, generators, and most of Dynamo's 40 kinds.
"""

from __future__ import annotations

import builtins
import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

if TYPE_CHECKING:
    from .translator import InstructionTranslator


class Unsupported(Exception):
    """Raised by a handler that cannot trace an instruction; the translator records a graph break."""

    def __init__(self, reason: str, kind: str = "unsupported"):
        super().__init__(reason)
        self.reason, self.kind = reason, kind


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

    def getattr(self, tx: InstructionTranslator, name: str) -> Variable:
        raise Unsupported(f"attribute .{name} of {self.describe()}")

    def call(self, tx: InstructionTranslator, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        raise Unsupported(f"calling {self.describe()}")


@dataclass(eq=False)
class NullVariable(Variable):
    """CPython's NULL stack marker (pushed before a plain function call)."""

    def describe(self) -> str:
        return "NULL"


@dataclass(eq=False)
class ConstantVariable(Variable):
    """An int, float, bool, str, None, dtype, device... known while tracing."""

    value: Any
    source: str | None = None

    def describe(self) -> str:
        return repr(self.value)

    def as_python(self) -> Any:
        return self.value

    def getattr(self, tx: InstructionTranslator, name: str) -> Variable:
        return wrap_constant_result(getattr(self.value, name))

    def call(self, tx, args, kwargs):
        raise Unsupported(f"calling constant {self.value!r}")


@dataclass(eq=False)
class ObjectVariable(Variable):
    """A Python object known at compile time: a module, function, class or callable."""

    value: Any
    source: str | None = None

    def describe(self) -> str:
        name = getattr(self.value, "__qualname__", None) or getattr(self.value, "__name__", None)
        return name or type(self.value).__name__

    def as_python(self) -> Any:
        return self.value

    def getattr(self, tx, name):
        try:
            attr = getattr(self.value, name)
        except AttributeError as e:
            raise Unsupported(f"{self.describe()} has no attribute {name!r}") from e
        source = f"{self.source}.{name}" if self.source else None
        return tx.wrap(attr, source)

    def call(self, tx, args, kwargs):
        return tx.call_python(self.value, args, kwargs)


@dataclass(eq=False)
class TensorVariable(Variable):
    """A tensor: an FX node plus a fake tensor carrying its shape, dtype and device."""

    node: torch.fx.Node
    example: torch.Tensor  # a FakeTensor
    source: str | None = None

    def describe(self) -> str:
        shape = ",".join(str(s) for s in self.example.shape)
        return f"T[{shape}]:{self.node.name}"

    # Attributes read at compile time. They depend only on properties already
    # checked by the tensor's guard (dtype, device, shape, requires_grad).
    STATIC_ATTRIBUTES = ("shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout")

    def getattr(self, tx, name):
        if name in self.STATIC_ATTRIBUTES:
            return wrap_constant_result(getattr(self.example, name))
        if name in ("T", "mT", "real"):
            return tx.call_method(self, name, [], {}, as_property=True)
        if callable(getattr(torch.Tensor, name, None)):
            return TensorMethodVariable(self, name)
        raise Unsupported(f"tensor attribute .{name}")


@dataclass(eq=False)
class TensorMethodVariable(Variable):
    """``x.sin`` before it is called."""

    tensor: TensorVariable
    name: str

    def describe(self) -> str:
        return f"{self.tensor.node.name}.{self.name}"

    def call(self, tx, args, kwargs):
        return tx.call_method(self.tensor, self.name, args, kwargs)


@dataclass(eq=False)
class TupleVariable(Variable):
    """A tuple (or torch.Size) of variables."""

    items: list[Variable] = field(default_factory=list)
    source: str | None = None

    def describe(self) -> str:
        return "(" + ", ".join(i.describe() for i in self.items) + ")"

    def as_python(self) -> Any:
        return tuple(i.as_python() for i in self.items)

    def getattr(self, tx, name):
        if name in ("index", "count"):
            return ObjectVariable(getattr(self.as_python(), name))
        raise Unsupported(f"tuple attribute .{name}")


def wrap_constant_result(value: Any) -> Variable:
    """A compile-time Python result (e.g. ``x.shape``) as a variable."""
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
        value = specialize_symbol(value)
    if isinstance(value, tuple):
        return TupleVariable([wrap_constant_result(v) for v in value])
    if isinstance(value, CONSTANT_TYPES):
        return ConstantVariable(value)
    return ObjectVariable(value)


def specialize_symbol(value: Any) -> Any:
    """A symbolic size read as a Python value: fix it to its traced value (the ShapeEnv adds the guard)."""
    from torch.fx.experimental.symbolic_shapes import guard_scalar

    return guard_scalar(value)


CONSTANT_TYPES = (int, float, bool, str, type(None), complex, torch.dtype, torch.device, slice, type(...))

# Python functions that are pure on constant arguments, so a call can be folded.
FOLDABLE = {
    *(getattr(builtins, n) for n in ("abs", "len", "min", "max", "int", "float", "bool", "str", "round", "pow", "tuple", "isinstance", "range")),
    *(v for v in vars(math).values() if callable(v)),
    *(v for v in vars(operator).values() if callable(v)),
}


def is_torch_op(fn: Any) -> bool:
    """Functions recorded into the graph when called with tensors."""
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("torch") and not module.startswith(("torch._dynamo", "torch.fx", "torch.compiler")):
        return True
    if fn in OPERATOR_FUNCTIONS:
        return True
    return isinstance(fn, torch._ops.OpOverload | torch._ops.OpOverloadPacket)


OPERATOR_FUNCTIONS = {v for v in vars(operator).values() if callable(v)}
