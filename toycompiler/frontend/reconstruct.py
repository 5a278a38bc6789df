"""What the transformed code must rebuild, and how it rebuilds each symbolic value.

After the compiled graph runs, the transformed code (see :mod:`.resume`) turns
symbolic values back into real ones: the return value when the function was
traced to its end, or, at a graph break, the symbolic stack and the live
locals that a resume function receives. A tensor is read from the graph's
outputs or from where it came from, a constant is loaded, a list made while
tracing is built again item by item. :class:`Codegen` emits those
instructions (with the ``bytecode`` package); what to emit for each kind of
:class:`~.variables.Variable` is that class's ``reconstruct(cg)`` method, as in
TorchDynamo; a kind that can't be rebuilt names its reason
(:class:`~.variables.CannotResume`, its ``cannot_rebuild``).

Planning is a dry run of the same code generation (:func:`plan_return`,
:func:`plan_break`): it finds which tensors the graph must output, before the
graph is finished, and whether the frame can be split at all.

Three rules keep the rebuilt values faithful to eager:

- a value that came from the caller (it has a source) is read from that source,
  so it is the caller's own object. The translator never changes such an
  object (that is a "mutation" break), so it still holds what the trace saw;
- a mutable container made while tracing (list, dict, set, iterator) is built
  once and kept in a temporary local, so two references to it (a local and a
  stack slot) are the same object again;
- a function, method or ``functools.partial`` made while tracing is made again
  from its parts, with the caller's real closure cells.

Mirrors: torch/_dynamo/codegen.py (PyCodegen), the ``reconstruct(codegen)``
methods of torch/_dynamo/variables/*.py and the break planning in
torch/_dynamo/symbolic_convert.py (create_call_resume_at).
Leaves out: breaks inside ``try``/``with`` blocks and in functions with cell
variables (those entries run eagerly), sets of tensors made before a break,
user-defined objects made while tracing, and side effects replayed after the
graph (Dynamo's side_effects.py): the translator breaks before changing
anything the caller can see.
"""

from __future__ import annotations

import ast
import builtins
import types
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import bytecode as pybc
import torch.fx
from bytecode.instr import InstrLocation

from . import bytecode as bc
from .containers import ContainerVariable
from .variables import CannotResume, NullVariable, Variable, simple_source

# Instructions whose result may include a NULL (which can't be passed to a resume function).
PUSHES_NULL = {"LOAD_METHOD", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_SUPER_ATTR", "FOR_ITER", "RETURN_VALUE",
               "RETURN_CONST", "YIELD_VALUE", "SEND", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}
# Instructions that can't run in the transformed function, which has no cells and its own globals.
NOT_REPLAYABLE = {"COPY_FREE_VARS", "MAKE_CELL", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE",
                  "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME",
                  "IMPORT_FROM", "RESUME", "RETURN_GENERATOR", "GET_AWAITABLE", "BEFORE_WITH", "SETUP_ANNOTATIONS"}
LITERALS = (int, float, bool, str, bytes, complex, type(None), type(...))


# -- planning -----------------------------------------------------------------------


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume function continues, and what it receives."""

    offset: int
    stack_nulls: tuple[bool, ...]  # the stack there, bottom first: True where CPython's NULL sits
    locals: tuple[str, ...]  # live locals passed as arguments, in order


@dataclass(frozen=True)
class TransformPlan:
    """What the transformed code does after calling the graph: made by :func:`plan_return` or
    :func:`plan_break`, carried out by :func:`.resume.build_transformed`."""

    kind: str  # "return" (traced to the end); at a break: "call", "call_ex", "jump" or "generic"
    offset: int  # the returning or breaking instruction
    below: list[Variable]  # stack items the instruction leaves alone
    operands: list[Variable]  # stack items it consumes (the return value, for "return")
    kw_names: tuple[str, ...] = ()
    locals: dict[str, Any] = field(default_factory=dict)  # the translator's locals (Variables, or unread arguments)
    resumes: tuple[ResumePoint, ...] = ()  # one per successor (two for a branch: fallthrough, then jump target)
    written: tuple[str, ...] = ()  # locals the instruction stores: the resume reads them after it ran
    graph_outputs: tuple[torch.fx.Node, ...] = ()  # what the graph must return, in order


def plan_return(code: types.CodeType, returned: Variable, offset: int) -> TransformPlan:
    """Traced to the end: the transformed code rebuilds the return value (:class:`CannotResume` if it can't)."""
    return _with_graph_outputs(TransformPlan("return", offset, [], [returned]), code)


def plan_break(code: types.CodeType, instructions: list, stack: list[Variable], locals_: dict[str, Any],
               kw_names: tuple[str, ...], offset: int) -> TransformPlan:
    """At a break: decide what the transformed code must rebuild; :class:`CannotResume` if it can't."""
    if code.co_cellvars:
        raise CannotResume("the function has cell variables (a closure reads its locals)")
    if any(start <= offset < end for start, end, _ in bc.exception_ranges(code)):
        raise CannotResume("the break is inside a try/with block, whose handler would not run")
    index = next(i for i, inst in enumerate(instructions) if inst.offset == offset)
    if index + 1 == len(instructions):  # (a ``raise`` that ends the code: it never falls through)
        raise CannotResume(f"no code follows the break at the last instruction ({instructions[index].opname})")
    inst, after = instructions[index], instructions[index + 1].offset
    if inst.opname == "CALL":  # (on 3.11 the stack effect is split with PRECALL: counted here)
        kind, consumed, produced, targets = "call", inst.arg + 2, 1, [after]
    elif inst.opname in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"):  # a branch (normalised names): two targets
        kind, consumed, produced, targets = "jump", 1, 0, [after, inst.target]
    elif inst.opname in PUSHES_NULL | NOT_REPLAYABLE or bc.instruction_at(code, offset).has_jump():
        raise CannotResume(f"can't resume after {inst.opname}")
    elif inst.opname.startswith("LOAD_FAST") and not isinstance(locals_.get(inst.argval), Variable | None):
        # The break is the first read of an argument: a resume function would read it again, and break again.
        raise CannotResume(f"the first read of {inst.argval} broke: {inst.argval} can't be traced")
    else:  # run for real; CALL_FUNCTION_EX ([NULL, f, args, kwargs if arg & 1]) too, its NULL included
        pre, post = bc.instruction_at(code, offset).pre_and_post_stack_effect(jump=False)
        # `bytecode` gives a plain push (LOAD_BUILD_CLASS) as (1, 0): it consumes nothing and produces one
        consumed, produced = (0, pre) if pre > 0 else (-pre, post)
        kind, targets = "call_ex" if inst.opname == "CALL_FUNCTION_EX" else "generic", [after]
    below, operands = stack[:len(stack) - consumed], stack[len(stack) - consumed:]
    # only a call ("call", "call_ex") consumes NULLs
    if consumed > len(stack) or (not kind.startswith("call") and any(isinstance(v, NullVariable) for v in operands)):
        raise CannotResume(f"unexpected stack at {inst.opname}")
    original, to_original = origin_of(code)  # a resume function resumes in the original code
    live = bc.liveness(original)
    layout = tuple(isinstance(v, NullVariable) for v in below) + (False,) * produced
    # A local the instruction itself stores (a break at ``STORE_FAST x``) is read after it ran for real.
    written = (inst.argval,) if inst.opname == "STORE_FAST" else ()
    resumes = tuple(ResumePoint(to_original[t], layout, tuple(n for n in original.co_varnames if n in live[
        to_original[t]] and (n in locals_ or n in written))) for t in targets)
    return _with_graph_outputs(TransformPlan(kind, offset, below, operands, kw_names, locals_, resumes, written), code)


def _with_graph_outputs(plan: TransformPlan, code: types.CodeType) -> TransformPlan:
    """A dry run of the rebuilding: the tensors the transformed code needs from the graph (graph
    inputs are reloaded from their source); :class:`CannotResume` for a value it can't rebuild."""
    cg = Codegen(set(bc.index_by_offset(code)[0].argnames), {}, (), 0)  # no outputs yet: they are collected
    cg.reconstruct(*plan.below, *plan.operands)
    for point in plan.resumes:
        for name in point.locals:
            cg.load_local(plan, name)
    return replace(plan, graph_outputs=tuple(cg.outputs))


# Resume functions made so far: resume code -> (the user's code it was copied from, offsets -> the original's).
ORIGINS: dict[types.CodeType, tuple[types.CodeType, dict[int, int]]] = {}


def origin_of(code: types.CodeType) -> tuple[types.CodeType, dict[int, int]]:
    """The user's code a (resume) code object was copied from, and its offsets -> the original's."""
    return ORIGINS.get(code) or (code, {offset: offset for offset in bc.instructions_of(code)[1]})


# -- emitting instructions -----------------------------------------------------------


class Codegen:
    """Emits instructions that rebuild symbolic values as real ones (like Dynamo's PyCodegen).

    ``namespace`` becomes the transformed function's globals (objects it loads by name);
    ``outputs`` maps each of the graph's outputs (nodes) to its index in ``___graph_out``. The variables'
    ``reconstruct(cg)`` methods use ``reconstruct(part)``, ``load_source``, ``load_const``, ``load_attr``,
    ``emit(opname, arg)`` and ``call(nargs)``.
    """

    def __init__(self, params: set[str], namespace: dict[str, Any], graph_outputs: tuple[torch.fx.Node, ...],
                 lineno: int) -> None:
        self.params, self.namespace = params, namespace
        self.outputs = {node: i for i, node in enumerate(graph_outputs)}  # (planning: grows, in order of need)
        self.location = InstrLocation(lineno, None, None, None)
        self.instrs: list[Any] = []
        self.built: dict[int, str] = {}  # id(container made while tracing) -> temporary local holding it
        self.building: set[int] = set()

    def emit(self, name: str, arg: Any = pybc.UNSET, location: Any = None) -> None:
        self.instrs.append(pybc.Instr(name, arg, location=location or self.location))

    def call(self, nargs: int, location: Any = None) -> None:
        for name in bc.EMIT["call"]:
            self.emit(name, nargs, location)

    def load_attr(self, name: str) -> None:
        self.emit("LOAD_ATTR", bc.EMIT["attr_arg"](name))

    def load_global(self, name: str, push_null: bool = False) -> None:
        self.emit("LOAD_GLOBAL", (push_null, name))

    def load_const(self, value: Any) -> None:
        """Literals inline; any other object through a named global of the transformed function."""
        if isinstance(value, LITERALS) or (isinstance(value, tuple) and all(isinstance(v, LITERALS) for v in value)):
            return self.emit("LOAD_CONST", value)
        name = getattr(value, "__name__", None)
        if isinstance(name, str) and getattr(builtins, name, None) is value:
            return self.load_global(name)  # print, len, ...: found in builtins
        const = next((k for k, obj in self.namespace.items() if obj is value and k.startswith("__const_")), None)
        if const is None:  # a new one: ``__const_0_helper``
            safe = "".join(c if c.isalnum() else "_" for c in str(name or type(value).__name__))
            const = f"__const_{sum(k.startswith('__const_') for k in self.namespace)}_{safe}"
            self.namespace[const] = value
        self.load_global(const)

    def load_source(self, source: str, node: ast.expr | None = None) -> None:
        """A guard-style source expression (``x``, ``x.weight``, ``G['w']``, ``args[0]``) as instructions.

        ``node`` is the part of its syntax tree to load: the whole expression at first, then (recursively) what
        an attribute or an item is read from."""
        node = node or ast.parse(source, mode="eval").body
        if isinstance(node, ast.Name):
            return self.emit("LOAD_FAST", node.id) if node.id in self.params else self.load_global(node.id)
        if not isinstance(node, ast.Attribute | ast.Subscript):
            raise CannotResume(f"can't load source {source!r}")  # a call, an operator...
        self.load_source(source, node.value)  # what the attribute or item is read from
        if isinstance(node, ast.Attribute):
            return self.load_attr(node.attr)
        try:
            self.emit("LOAD_CONST", ast.literal_eval(node.slice))  # x[0], x['k'], x[-1]
        except ValueError:
            raise CannotResume(f"can't load source {source!r}") from None
        self.emit("BINARY_SUBSCR")

    def reconstruct(self, *values: Variable) -> None:
        """Push the real value of each symbolic value, in order: each kind of variable says how, in its
        own ``reconstruct(cg)`` method (a kind without one can't be rebuilt: :class:`CannotResume` says why).

        A container the caller passed in (it has a source) is read from there: the translator
        refuses to change such an object, so it still holds what the trace saw.
        """
        for v in values:
            if isinstance(v, ContainerVariable) and simple_source(v.source):
                self.load_source(v.source)
            elif isinstance(v, ContainerVariable) and v.source is not None and v.python_type() in (list, dict):
                # a copy would not be the caller's object
                raise CannotResume(f"{v.source} is the caller's {v.python_type().__name__}: it can't be read again")
            else:
                v.reconstruct(self)

    def build(self, opname: str, items: list[Variable]) -> None:
        """``BUILD_TUPLE n`` / ``BUILD_LIST n`` over the rebuilt items."""
        self.reconstruct(*items)
        self.emit(opname, len(items))

    def call_function(self, fn: Any, args: list[Variable], kwargs: dict[str, Variable] | None = None) -> None:
        """``fn(*args)`` for a known ``fn`` and symbolic ``args``; with ``kwargs``, ``fn(*args, **kwargs)``
        through ``CALL_FUNCTION_EX`` (spelled alike in 3.11 and 3.12)."""
        self.emit("PUSH_NULL")
        self.load_const(fn)
        if kwargs is None:
            self.reconstruct(*args)
            return self.call(len(args))
        self.build("BUILD_TUPLE", args)
        self.build_map(kwargs)
        self.emit("CALL_FUNCTION_EX", 1)

    def build_map(self, items: dict[Any, Variable]) -> None:
        """``BUILD_MAP n`` over constant keys and rebuilt values."""
        for key, value in items.items():
            self.load_const(key)
            self.reconstruct(value)
        self.emit("BUILD_MAP", len(items))

    def build_once(self, v: Variable, build: Callable[[], None]) -> None:
        """A mutable container made while tracing: built once, kept in a temporary local, and
        loaded from there wherever it appears again, so that aliases stay one object."""
        if id(v) in self.built:
            return self.emit("LOAD_FAST", self.built[id(v)])
        if id(v) in self.building:
            raise CannotResume(f"{v.describe()} contains itself")
        self.building.add(id(v))
        build()
        self.building.discard(id(v))
        self.built[id(v)] = name = f"___tmp{len(self.built)}"  # (after a branch, the other path reuses names)
        self.emit("COPY", 1)
        self.emit("STORE_FAST", name)

    def load_local(self, plan: TransformPlan, name: str) -> None:
        """A live local a resume function receives: rebuilt, or read where it already is (a local the
        breaking instruction stored, an argument the trace never read: still in its parameter)."""
        if name in plan.written or not isinstance(value := plan.locals.get(name), Variable):
            return self.emit("LOAD_FAST", name)
        self.reconstruct(value)
