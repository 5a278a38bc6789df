"""Wrapping real Python values as variables, with the guards that make it safe.

When the translator first reads an argument, a global, a closure cell or an
attribute, it knows the real value and an expression (the *source*) that
reaches it at run time: ``x``, ``G['net']``, ``self.fc.weight``. ``wrap``
turns the pair into a variable and records what the trace relies on: a tensor
becomes a graph input with a TENSOR_MATCH guard, an int a CONSTANT_MATCH, a
module or function an ID_MATCH (plus ``training`` for modules), a list or
dict its type, and its length or keys and each item only when first used.

Functions of the translator ``tx`` (its graph, guards and registered objects),
which it offers to variables as ``tx.wrap``.

Mirrors: torch/_dynamo/variables/builder.py (VariableBuilder).
Leaves out: dynamic shapes for wrapped sizes, weak references for ID guards.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import torch

from .containers import CALLER_CONTAINERS, DictVariable, wrap_constant_result
from .variables import CONSTANT_TYPES, CellVariable, ConstantVariable, ObjectVariable, Unsupported, Variable

if TYPE_CHECKING:
    from .translator import InstructionTranslator as Tx


def register_object(tx: Tx, obj: Any) -> str:
    """A name for ``obj`` that guards and the transformed code can both refer to."""
    if (name := next((name for name, known in tx.guard_objects.items() if known is obj), None)) is None:
        # a new one: ``___obj_0`` (``G``, the globals, comes first)
        name = f"___obj_{len(tx.guard_objects) - 1}"
        tx.guard_objects[name] = obj
    return name


def wrap(tx: Tx, value: Any, source: str | None, identity: bool = True) -> Variable:
    """A real Python value (an argument, a global, an attribute) as a variable, guarded.

    ``identity=False`` skips the ID guard on objects (used for attributes of Python
    modules, like ``torch.relu``: assumed not to be monkey-patched, as Dynamo does).
    """
    if source is not None and source not in tx.wrapped:  # once a source: its variable, and its guards, are kept
        tx.wrapped[source] = _wrap(tx, value, source, identity)
    return _wrap(tx, value, None, identity) if source is None else tx.wrapped[source]


def _wrap(tx: Tx, value: Any, source: str | None, identity: bool) -> Variable:
    line = tx.output.current.line
    if isinstance(value, torch.Tensor):
        if source is None:
            raise Unsupported("a tensor reached without a source the compiled code could read it from "
                              "(e.g. a module made inside the function, or a tensor default argument)")
        # the same tensor reached twice (f(x, x)): one variable, as in eager, the one ``wrap`` made for it first
        if (other := next((s for s, t in tx.output.inputs.items() if t is value), None)) is not None:
            tx.guards.same_object(source, other, "tensor", line)
            return tx.wrapped[other]
        var = tx.output.add_input(source, value)  # first: it decides the symbolic dims
        tx.guards.tensor(source, value, line, tx.output.shapes.dims.get(source, frozenset()))
        return var
    if isinstance(value, CONSTANT_TYPES) and not isinstance(value, slice | set):
        if source is not None:
            tx.guards.constant(source, value, line)
        return ConstantVariable(value, source)
    if type(value) in (tuple, list, dict):  # a caller's list or dict may be reached twice: see below
        if source is None:
            return wrap_constant_result(value)
        return (_wrap_container if type(value) is tuple else _wrap_mutable_container)(tx, value, source, line)
    if source is not None and identity and not isinstance(value, types.ModuleType):
        tx.guards.identity(source, value, line, register_object(tx, value))
        if isinstance(value, torch.nn.Module):
            training = f"{source}.training"  # ``is True``: one guard for the value and its type
            tx.guards.add(f"{training} is {value.training}", "CONSTANT_MATCH", f"{training} was read as a constant",
                          line, training, repr(value.training))
    return ObjectVariable(value, source)


def _wrap_mutable_container(tx: Tx, value: Any, source: str, line: int | None) -> Variable:
    """A caller's list or dict: one variable per object, even when reached twice (``b = a``
    before a break: the resume function gets both), so ``a is b`` and changes agree."""
    if (known := tx.output.caller_containers.get(id(value))) is not None and known[0] is value:
        _, other_source, var = known
        tx.guards.same_object(source, other_source, type(value).__name__, line)
        return var
    writable = not isinstance(value, dict) or all(type(k) in (str, int, bool) for k in value)  # keys in a guard
    var = (_wrap_container if writable else _wrap_dict_by_value)(tx, value, source, line)
    tx.output.caller_containers[id(value)] = (value, source, var)
    return var


def _wrap_container(tx: Tx, value: Any, source: str, line: int | None) -> Variable:
    """A caller's tuple, list or dict: its type is guarded now, its contents when first used
    (``log.append`` reads no item, and must not recompile when ``log`` grows)."""
    kind = type(value).__name__
    tx.guards.add(f"type({source}) is {kind}", "TYPE_MATCH", f"{source} was read as a {kind}", line)
    return CALLER_CONTAINERS[type(value)](source, lambda: _read_container(tx, value, source))


def _read_container(tx: Tx, value: Any, source: str) -> list[Variable] | dict[Any, Variable]:
    line = tx.output.current.line
    if isinstance(value, dict):
        tx.guards.add(f"list({source}.keys()) == {list(value)!r}", "DICT_KEYS", f"{source}'s keys were read", line)
        return {k: wrap(tx, v, f"{source}[{k!r}]") for k, v in value.items()}
    tx.guards.add(f"len({source}) == {len(value)}", "LENGTH_MATCH", f"{source} was unpacked", line)
    return [wrap(tx, v, f"{source}[{i}]") for i, v in enumerate(value)]


def _wrap_dict_by_value(tx: Tx, value: dict, source: str, line: int | None) -> Variable:
    """A caller's dict whose keys can't be written in a guard (``{torch.float32: 2.0}``): a
    constant, guarded equal to a copy of itself; like any caller's dict, it may not be changed."""
    if not all(isinstance(v, CONSTANT_TYPES) for v in value.values()):
        raise Unsupported(f"{source} is a dict whose keys can't be written in a guard and whose values are not "
                          "constants; not traced")
    copy = register_object(tx, dict(value))
    tx.guards.add(f"{source} == {copy}", "DICT_MATCH", f"{source} was read as a constant dict", line)
    # with its source: the caller's object, so changing it is a "mutation" break
    return DictVariable({k: wrap_constant_result(v) for k, v in value.items()}, source)


def wrap_cell(tx: Tx, cell: types.CellType, name: str) -> CellVariable:
    """A real closure cell; its contents are read (and guarded) through ``___obj_N.cell_contents``."""
    return CellVariable(name=name, cell=cell, source=f"{register_object(tx, cell)}.cell_contents")
