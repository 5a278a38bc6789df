"""The code that runs instead of the user's function once it is compiled.

For a function traced without a break, the transformed code is small: call the
compiled graph with the graph inputs, then rebuild the return value.

With a graph break it does what TorchDynamo does. Say tracing stopped at the
``print`` on line 3::

    def f(x):                       transformed f(x):
        y = x.sin()                     out = compiled_graph(x)       # y = x.sin()
        print(y)             ->         return __resume_at_14_0(print(out[0]), out[0])
        return y * 2
                                    __resume_at_14_0(___stack0, y):   # a new code object:
                                        <push ___stack0>; jump to offset 14 of f's own bytecode

The transformed code calls the graph captured so far, rebuilds the symbolic
stack and the live locals from the graph's outputs and constants, runs the one
instruction the translator could not trace as ordinary Python (the real
``print``; for a branch on a tensor, the real jump), then calls a *resume
function*: a copy of the original bytecode whose prologue pushes the saved stack
and jumps to the next instruction. A resume function is an ordinary Python
function, so it is compiled lazily like any other, with its own guards and
cache, and may break again. Code objects are assembled with the ``bytecode``
package (which computes stack sizes, jump offsets, line and exception tables).
How each kind of symbolic value is rebuilt as a real one: :mod:`.reconstruct`.

Mirrors: torch/_dynamo/resume_execution.py (ContinueExecutionCache,
generate_based_on_original_code_object), torch/_dynamo/codegen.py (PyCodegen)
and torch/_dynamo/symbolic_convert.py (create_call_resume_at).
Leaves out: breaks inside ``try``/``with`` blocks and in functions with cell
variables (those entries run eagerly), generators, and output aliasing
(a graph output is a new tensor even if eager would return a view).
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bytecode as pybc
import torch.fx
from bytecode.instr import InstrLocation

from ..artifacts import BytecodeArtifact
from .bytecode import disassemble
from .reconstruct import CannotRebuild, reconstruct
from .variables import NullVariable, TensorVariable, Variable

VERSION = sys.version_info[:2]

# -- the version table: how the few instructions this module emits are spelled ----
# (the ``bytecode`` package names instructions as CPython does; only these differ)
_SPELLING: dict[tuple[int, int], dict[str, Any]] = {
    (3, 11): {
        "call": ("PRECALL", "CALL"),  # 3.11 calls in two steps
        "attr_arg": lambda name: name,  # LOAD_ATTR's argument is the name
        "POP_JUMP_IF_FALSE": "POP_JUMP_FORWARD_IF_FALSE",  # 3.11 names the direction
        "POP_JUMP_IF_TRUE": "POP_JUMP_FORWARD_IF_TRUE",
    },
    (3, 12): {
        "call": ("CALL",),
        "attr_arg": lambda name: (False, name),  # low bit: method load
        "POP_JUMP_IF_FALSE": "POP_JUMP_IF_FALSE",
        "POP_JUMP_IF_TRUE": "POP_JUMP_IF_TRUE",
    },
}
SPELLING = _SPELLING.get(VERSION)

# Instructions after which control never falls through to the next one.
NO_FALLTHROUGH = {"RETURN_VALUE", "RETURN_CONST", "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
                  "RAISE_VARARGS", "RERAISE", "JUMP", "JUMP_NO_INTERRUPT"}
JUMPS = set(dis.hasjrel) | set(dis.hasjabs)
CONDITIONAL_JUMPS = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"}  # normalised names
# Instructions whose result may include a NULL (which can't be passed to a resume function).
PUSHES_NULL = {"LOAD_METHOD", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_SUPER_ATTR", "FOR_ITER", "RETURN_VALUE",
               "RETURN_CONST", "YIELD_VALUE", "SEND", "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"}
# Instructions that can't run in the transformed function, which has no cells and its own globals.
NOT_REPLAYABLE = {"COPY_FREE_VARS", "MAKE_CELL", "LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE",
                  "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME",
                  "IMPORT_FROM", "RESUME", "RETURN_GENERATOR", "GET_AWAITABLE", "BEFORE_WITH", "SETUP_ANNOTATIONS"}
LITERALS = (int, float, bool, str, bytes, complex, type(None), type(...))
CO_VARARGS, CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS
CO_OPTIMIZED, CO_NEWLOCALS = inspect.CO_OPTIMIZED, inspect.CO_NEWLOCALS


def graph_break() -> None:
    """Break the graph here on purpose (like ``torch._dynamo.graph_break()``); does nothing when run."""


class CannotResume(Exception):
    """The break can't be split into graph + Python + resume function; the entry runs eagerly."""


# -- planning a break ---------------------------------------------------------------


@dataclass
class ResumePoint:
    """Where a resume function continues, and what it receives."""

    offset: int
    stack_nulls: tuple[bool, ...]  # the stack there, bottom first: True where CPython's NULL sits
    locals: tuple[str, ...]  # live locals passed as arguments, in order


@dataclass
class BreakPlan:
    """How to split a frame at a break: made by :func:`plan_break`, used by :func:`build_break`."""

    kind: str  # "call", "call_ex", "jump" or "generic"
    offset: int
    below: list[Variable]  # stack items the instruction leaves alone
    operands: list[Variable]  # stack items it consumes
    produced: int  # values it pushes
    kw_names: tuple[str, ...]
    locals: dict[str, Any]  # the translator's locals (Variables, or unread arguments)
    resumes: list[ResumePoint]  # one per successor (two for a branch: fallthrough, then jump target)
    graph_outputs: list[TensorVariable] = field(default_factory=list)
    written: tuple[str, ...] = ()  # locals the instruction stores: the resume reads them after it ran


def plan_break(code: types.CodeType, instructions: list, stack: list[Variable], locals_: dict[str, Any],
               kw_names: tuple[str, ...], offset: int) -> BreakPlan:
    """Decide what the transformed code must rebuild; raise :class:`CannotResume` if it can't."""
    if SPELLING is None:
        raise CannotResume(f"resume functions are not implemented for Python {VERSION[0]}.{VERSION[1]}")
    if code.co_cellvars:
        raise CannotResume("the function has cell variables (a closure reads its locals)")
    if any(start <= offset < end for start, end, _ in exception_ranges(code)):
        raise CannotResume("the break is inside a try/with block, whose handler would not run")
    index = next(i for i, inst in enumerate(instructions) if inst.offset == offset)
    inst, after = instructions[index], instructions[index + 1].offset if index + 1 < len(instructions) else None
    if inst.opname == "CALL":
        kind, consumed, produced, targets = "call", inst.arg + 2, 1, [after]
    elif inst.opname == "CALL_FUNCTION_EX":  # f(*args, **kwargs): [NULL, f, args, kwargs if arg & 1]
        kind, consumed, produced, targets = "call_ex", 3 + (inst.arg & 1), 1, [after]
    elif inst.opname in CONDITIONAL_JUMPS:
        kind, consumed, produced, targets = "jump", 1, 0, [after, inst.target]
    elif inst.opname in PUSHES_NULL | NOT_REPLAYABLE or instruction_at(code, offset).has_jump():
        raise CannotResume(f"can't resume after {inst.opname}")
    elif inst.opname.startswith("LOAD_FAST") and inst.argval in locals_ and not isinstance(locals_[inst.argval],
                                                                                            Variable):
        # The break is the first read of an argument: a resume function would read it again, and break again.
        raise CannotResume(f"the first read of {inst.argval} broke: {inst.argval} can't be traced")
    else:
        pre, post = instruction_at(code, offset).pre_and_post_stack_effect(jump=False)
        kind, consumed, produced, targets = "generic", -pre, post, [after]
    nulls_consumed = any(isinstance(v, NullVariable) for v in stack[len(stack) - consumed:])
    if consumed > len(stack) or (nulls_consumed and kind not in ("call", "call_ex")):
        raise CannotResume(f"unexpected stack at {inst.opname}")
    below, operands = stack[:len(stack) - consumed], stack[len(stack) - consumed:]
    original, to_original = origin_of(code)  # a resume function resumes in the original code
    live = liveness(original)
    layout = tuple(isinstance(v, NullVariable) for v in below) + (False,) * produced
    targets = [to_original[t] for t in targets]
    # A local the instruction itself stores (a break at ``STORE_FAST x``) is read after it ran for real.
    written = (inst.argval,) if inst.opname == "STORE_FAST" else ()
    resumes = [ResumePoint(t, layout, tuple(n for n in original.co_varnames
                                            if n in live[t] and (n in locals_ or n in written)))
               for t in targets]
    plan = BreakPlan(kind, offset, below, operands, produced, kw_names, locals_, resumes, written=written)
    plan.graph_outputs = _tensors_to_output(plan, _params(code))
    return plan


def _tensors_to_output(plan: BreakPlan, params: set[str]) -> list[TensorVariable]:
    """A dry run of the rebuilding: the tensors the transformed code needs from the graph (graph
    inputs are reloaded from their source); :class:`CannotResume` for a value it can't rebuild."""
    cg = Codegen(params, {}, {}, 0, planning=True)
    for v in [*plan.below, *plan.operands]:
        cg.reconstruct(v)
    for point in plan.resumes:
        for name in point.locals:
            if name not in plan.written:
                cg.reconstruct_local(name, plan.locals[name])
    return cg.needed


def _params(code: types.CodeType) -> set[str]:
    """The parameter names of ``code`` (positional, keyword-only, ``*args``, ``**kwargs``)."""
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & CO_VARARGS) + bool(code.co_flags & CO_VARKEYWORDS)
    return set(code.co_varnames[:n])


@functools.lru_cache(maxsize=256)
def liveness(code: types.CodeType) -> dict[int, frozenset[str]]:
    """Locals live at each offset: read on some path before being written (backward dataflow)."""
    insts = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    handlers = exception_ranges(code)
    uses: dict[int, set[str]] = {}
    defs: dict[int, set[str]] = {}
    succ: dict[int, list[int]] = {}
    for k, ins in enumerate(insts):
        names = set(ins.argval) if isinstance(ins.argval, tuple) else {ins.argval}
        uses[ins.offset] = names if ins.opname.startswith(("LOAD_FAST", "DELETE_FAST")) else set()
        defs[ins.offset] = names if ins.opname.startswith("STORE_FAST") else set()
        nxt = [insts[k + 1].offset] if ins.opname not in NO_FALLTHROUGH and k + 1 < len(insts) else []
        jump = [ins.argval] if ins.opcode in JUMPS else []
        succ[ins.offset] = nxt + jump + [t for start, end, t in handlers if start <= ins.offset < end]
    live: dict[int, frozenset[str]] = {i.offset: frozenset() for i in insts}
    changed = True
    while changed:
        changed = False
        for ins in reversed(insts):
            out = frozenset().union(*(live.get(s, frozenset()) for s in succ[ins.offset]))
            new = (out - defs[ins.offset]) | uses[ins.offset]
            if new != live[ins.offset]:
                live[ins.offset], changed = new, True
    return live


def exception_ranges(code: types.CodeType) -> list[tuple[int, int, int]]:
    """(start, end, handler) offsets of the code's exception table."""
    return [(e.start, e.end, e.target) for e in getattr(dis.Bytecode(code), "exception_entries", [])]


# -- locating original instructions in the ``bytecode`` package's list -------------------


@functools.lru_cache(maxsize=256)
def _index_by_offset(code: types.CodeType) -> tuple[pybc.Bytecode, dict[int, int]]:
    """The code as a ``bytecode.Bytecode`` list and, for each dis offset, the index of its Instr."""
    original = pybc.Bytecode.from_code(code)
    positions = [k for k, item in enumerate(original) if isinstance(item, pybc.Instr)]
    index: dict[int, int] = {}
    j = 0
    for ins in dis.get_instructions(code):
        if ins.opname == "CACHE":
            continue
        index[ins.offset] = positions[j]
        if ins.opname != "EXTENDED_ARG":  # the bytecode package folds EXTENDED_ARG into the next Instr
            assert original[positions[j]].name == ins.opname, (original[positions[j]].name, ins.opname)
            j += 1
    return original, index


def instruction_at(code: types.CodeType, offset: int) -> pybc.Instr:
    original, index = _index_by_offset(code)
    return original[index[offset]]


# -- emitting instructions -----------------------------------------------------------


class Codegen:
    """Emits instructions that rebuild symbolic values as real ones (like Dynamo's PyCodegen).

    A variable kind this module does not know can define ``reconstruct(codegen)`` and push its
    value with ``codegen.reconstruct(part)``, ``load_source``, ``load_const``, ``load_attr``,
    ``emit(opname, arg)`` and ``call(nargs)``; e.g. a method of a container:
    ``codegen.reconstruct(self.container); codegen.load_attr(self.name)``.
    """

    def __init__(self, params: set[str], namespace: dict[str, Any], outputs: dict[torch.fx.Node, int],
                 lineno: int, planning: bool = False) -> None:
        self.params, self.namespace, self.outputs = params, namespace, outputs
        self.location = InstrLocation(lineno, None, None, None)
        self.instrs: list[Any] = []
        self.planning = planning  # a dry run made by plan_break: collects the graph outputs needed
        self.needed: list[TensorVariable] = []  # (planning) tensors the graph must output, in order
        self.built: dict[int, str] = {}  # id(container made while tracing) -> temporary local holding it
        self.building: set[int] = set()
        self.temps = 0

    def emit(self, name: str, arg: Any = pybc.UNSET, location: Any = None) -> None:
        self.instrs.append(pybc.Instr(name, arg, location=location or self.location))

    def call(self, nargs: int, location: Any = None) -> None:
        for name in SPELLING["call"]:
            self.emit(name, nargs, location)

    def load_attr(self, name: str) -> None:
        self.emit("LOAD_ATTR", SPELLING["attr_arg"](name))

    def load_global(self, name: str, push_null: bool = False) -> None:
        self.emit("LOAD_GLOBAL", (push_null, name))

    def load_const(self, value: Any) -> None:
        """Literals inline; any other object through a named global of the transformed function."""
        if isinstance(value, LITERALS) or (isinstance(value, tuple) and all(isinstance(v, LITERALS) for v in value)):
            self.emit("LOAD_CONST", value)
            return
        name = getattr(value, "__name__", None)
        if isinstance(name, str) and getattr(builtins, name, None) is value:
            self.load_global(name)  # print, len, ...: found in builtins
            return
        for existing, obj in self.namespace.items():
            if obj is value and existing.startswith("__const_"):
                self.load_global(existing)
                return
        safe = "".join(c if c.isalnum() else "_" for c in str(name or type(value).__name__))
        const = f"__const_{sum(k.startswith('__const_') for k in self.namespace)}_{safe}"
        self.namespace[const] = value
        self.load_global(const)

    def load_source(self, source: str) -> None:
        """A guard-style source expression (``x``, ``x.weight``, ``G['w']``, ``args[0]``) as instructions."""
        self._load_ast(ast.parse(source, mode="eval").body, source)

    def _load_ast(self, node: ast.AST, source: str) -> None:
        if isinstance(node, ast.Name):
            self.emit("LOAD_FAST", node.id) if node.id in self.params else self.load_global(node.id)
        elif isinstance(node, ast.Attribute):
            self._load_ast(node.value, source)
            self.load_attr(node.attr)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            self._load_ast(node.value, source)
            self.emit("LOAD_CONST", node.slice.value)
            self.emit("BINARY_SUBSCR")
        else:
            raise CannotResume(f"can't load source {source!r}")

    def reconstruct(self, v: Variable) -> None:
        """Push the real value of symbolic ``v`` (how, for each kind of variable: see reconstruct.py)."""
        try:
            reconstruct(self, v)
        except CannotRebuild as e:
            raise CannotResume(str(e)) from None

    def load_graph_output(self, v: TensorVariable) -> None:
        """``___graph_out[i]``; while planning, the tensor is added to the graph's outputs."""
        if v.node not in self.outputs:
            if not self.planning:
                raise CannotResume(f"tensor {v.describe()} is neither a graph output nor an input")
            self.outputs[v.node] = len(self.outputs)
            self.needed.append(v)
        self.emit("LOAD_FAST", "___graph_out")
        self.emit("LOAD_CONST", self.outputs[v.node])
        self.emit("BINARY_SUBSCR")

    def call_function(self, fn: Any, args: list[Variable]) -> None:
        """``fn(*args)`` for a known ``fn`` and symbolic ``args``."""
        self.emit("PUSH_NULL")
        self.load_const(fn)
        for arg in args:
            self.reconstruct(arg)
        self.call(len(args))

    def call_function_ex(self, fn: Any, args: list[Variable], kwargs: dict[str, Variable]) -> None:
        """``fn(*args, **kwargs)`` through ``CALL_FUNCTION_EX`` (spelled alike in 3.11 and 3.12)."""
        self.emit("PUSH_NULL")
        self.load_const(fn)
        for arg in args:
            self.reconstruct(arg)
        self.emit("BUILD_TUPLE", len(args))
        for key, value in kwargs.items():
            self.emit("LOAD_CONST", key)
            self.reconstruct(value)
        self.emit("BUILD_MAP", len(kwargs))
        self.emit("CALL_FUNCTION_EX", 1)

    def build_once(self, v: Variable, build: Callable[[], None]) -> None:
        """A mutable container made while tracing: built once, kept in a temporary local, and
        loaded from there wherever it appears again, so that aliases stay one object."""
        if id(v) in self.built:
            self.emit("LOAD_FAST", self.built[id(v)])
            return
        if id(v) in self.building:
            raise CannotResume(f"{v.describe()} contains itself")
        self.building.add(id(v))
        build()
        self.building.discard(id(v))
        self.built[id(v)] = name = f"___tmp{self.temps}"
        self.temps += 1
        self.emit("COPY", 1)
        self.emit("STORE_FAST", name)

    def reconstruct_local(self, name: str, value: Any) -> None:
        if isinstance(value, Variable):
            self.reconstruct(value)
        else:  # an argument the trace never read: still in the parameter of the same name
            self.emit("LOAD_FAST", name)


# -- building the code objects ---------------------------------------------------------


_resume_codes: dict[tuple, types.CodeType] = {}
_origins: dict[types.CodeType, tuple[types.CodeType, dict[int, int]]] = {}  # resume code -> original, offsets


def origin_of(code: types.CodeType) -> tuple[types.CodeType, dict[int, int]]:
    """The user's code a (resume) code object was copied from, and its offsets -> the original's."""
    if code in _origins:
        return _origins[code]
    return code, {i.offset: i.offset for i in dis.get_instructions(code)}


def _offset_map(new: types.CodeType, original: types.CodeType, inserted_after: int, inserted: int) -> dict[int, int]:
    real = lambda c: [i for i in dis.get_instructions(c) if i.opname not in ("CACHE", "EXTENDED_ARG")]  # noqa: E731
    a, b = real(original), real(new)
    return {b[k if k <= inserted_after else k + inserted].offset: ins.offset for k, ins in enumerate(a)}


def resume_code(code: types.CodeType, point: ResumePoint) -> types.CodeType:
    """A copy of ``code`` that takes the stack and live locals as arguments and continues at ``point.offset``.

    Cached, so each recompile of the caller finds the same resume function (and its cache entries).
    """
    key = (code, point.offset, point.stack_nulls, point.locals)
    if key in _resume_codes:
        return _resume_codes[key]
    original, index = _index_by_offset(code)
    items = list(original)
    target = pybc.Label()
    at = index[point.offset]
    items.insert(at, target)
    location = InstrLocation(items[at + 1].location.lineno, None, None, None)
    prologue = [pybc.Instr("PUSH_NULL", location=location) if null
                else pybc.Instr("LOAD_FAST", f"___stack{i}", location=location)
                for i, null in enumerate(point.stack_nulls)]
    prologue.append(pybc.Instr("JUMP_FORWARD", target, location=location))
    first_resume = next(k for k, item in enumerate(items) if isinstance(item, pybc.Instr) and item.name == "RESUME")
    items[first_resume + 1:first_resume + 1] = prologue
    resume_index = sum(isinstance(item, pybc.Instr) for item in items[:first_resume])
    n = sum(1 for k in _resume_codes if k[0] is code)
    name = f"__resume_at_{point.offset}_{n}"
    out = pybc.Bytecode(items)
    out.argnames = [f"___stack{i}" for i, null in enumerate(point.stack_nulls) if not null] + list(point.locals)
    out.argcount, out.posonlyargcount, out.kwonlyargcount = len(out.argnames), 0, 0
    out.flags = original.flags & ~(CO_VARARGS | CO_VARKEYWORDS)
    out.name, out.qualname = name, f"{code.co_qualname}.<resume at {point.offset}>"
    out.filename, out.first_lineno = code.co_filename, code.co_firstlineno
    out.freevars, out.cellvars = list(original.freevars), list(original.cellvars)
    _resume_codes[key] = new = out.to_code()
    _origins[new] = (code, _offset_map(new, code, resume_index, len(prologue)))
    return new


def build_break(fn: types.FunctionType, plan: BreakPlan, compiled_graph: Callable | None, input_sources: list[str],
                wrap_resume: Callable[[types.FunctionType], Callable]) -> tuple[Callable, BytecodeArtifact,
                                                                                tuple[BytecodeArtifact, ...]]:
    """The transformed function for a break, and the bytecode of each resume function it calls."""
    code = fn.__code__
    original = pybc.Bytecode.from_code(code)
    namespace: dict[str, Any] = {"__builtins__": builtins, "G": fn.__globals__}
    outputs = {v.node: i for i, v in enumerate(plan.graph_outputs)}
    cg = Codegen(set(original.argnames), namespace, outputs, code.co_firstlineno)
    cg.emit("RESUME", 0)
    if compiled_graph is not None:
        namespace["__compiled_graph"] = compiled_graph
        cg.load_global("__compiled_graph", push_null=True)
        for source in input_sources:
            cg.load_source(source)
        cg.call(len(input_sources))
        cg.emit("STORE_FAST", "___graph_out")
    resume_arts = []
    resume_names = []
    for point in plan.resumes:
        rcode = resume_code(origin_of(code)[0], point)
        rfn = types.FunctionType(rcode, fn.__globals__, rcode.co_name, None, fn.__closure__)
        namespace[rcode.co_name] = wrap_resume(rfn)
        resume_names.append(rcode.co_name)
        resume_arts.append(disassemble(rcode, rcode.co_qualname))
    the_inst = instruction_at(code, plan.offset)
    if plan.kind == "jump":
        _emit_branch(cg, plan, the_inst, resume_names)
    else:
        _emit_call_then_resume(cg, plan, the_inst, resume_names[0])
    transformed = _assemble(original, cg.instrs, code)
    func = types.FunctionType(transformed, namespace, code.co_name, fn.__defaults__)
    func.__kwdefaults__ = fn.__kwdefaults__
    return func, disassemble(transformed, f"{code.co_qualname} (transformed)"), tuple(resume_arts)


def _emit_call_then_resume(cg: Codegen, plan: BreakPlan, the_inst: pybc.Instr, resume_name: str) -> None:
    """``return resume(*stack_below, <the instruction run for real>, *live_locals)``."""
    cg.load_global(resume_name, push_null=True)
    for v in plan.below:
        if not isinstance(v, NullVariable):  # re-pushed by the resume function's prologue
            cg.reconstruct(v)
    for v in plan.operands:
        cg.reconstruct(v)
    if plan.kind == "call":
        if plan.kw_names:
            cg.emit("KW_NAMES", plan.kw_names, the_inst.location)
        cg.call(len(plan.operands) - 2, the_inst.location)
    else:
        cg.instrs.append(pybc.Instr(the_inst.name, the_inst.arg, location=the_inst.location))
    point = plan.resumes[0]
    for name in point.locals:
        if name in plan.written:
            cg.emit("LOAD_FAST", name)  # stored by the instruction that just ran
        else:
            cg.reconstruct_local(name, plan.locals[name])
    cg.call(sum(not null for null in point.stack_nulls) + len(point.locals))
    cg.emit("RETURN_VALUE")


def _emit_branch(cg: Codegen, plan: BreakPlan, the_inst: pybc.Instr, resume_names: list[str]) -> None:
    """``if <tensor>: return resume_fallthrough(...) else: return resume_target(...)`` (same jump opcode)."""
    cg.reconstruct(plan.operands[0])
    taken = pybc.Label()
    opname = the_inst.name.replace("_FORWARD", "").replace("_BACKWARD", "")
    cg.emit(SPELLING[opname], taken, the_inst.location)
    built = dict(cg.built)  # containers built before the jump; each branch builds its own after it
    for k, (point, name) in enumerate(zip(plan.resumes, resume_names)):
        if k == 1:
            cg.instrs.append(taken)
        cg.built = dict(built)
        cg.load_global(name, push_null=True)
        for v in plan.below:
            if not isinstance(v, NullVariable):
                cg.reconstruct(v)
        for local in point.locals:
            cg.reconstruct_local(local, plan.locals[local])
        cg.call(sum(not null for null in point.stack_nulls) + len(point.locals))
        cg.emit("RETURN_VALUE")


def _assemble(original: pybc.Bytecode, instrs: list, code: types.CodeType) -> types.CodeType:
    out = pybc.Bytecode(instrs)
    out.argnames = list(original.argnames)
    out.argcount, out.posonlyargcount = original.argcount, original.posonlyargcount
    out.kwonlyargcount = original.kwonlyargcount
    out.flags = CO_OPTIMIZED | CO_NEWLOCALS | (original.flags & (CO_VARARGS | CO_VARKEYWORDS))
    out.name, out.qualname = code.co_name, code.co_qualname
    out.filename, out.first_lineno = code.co_filename, code.co_firstlineno
    return out.to_code()


# -- no break: call the graph, rebuild the return value ------------------------------


def build_transformed_function(
    fn: types.FunctionType,
    params: str,
    compiled_graph: Callable,
    input_sources: list[str],
    return_expr: str,
    constants: dict[str, Any],
) -> tuple[Callable, BytecodeArtifact]:
    """``def f(x, y): __out = __compiled_graph(x, y); return <return_expr>`` with ``fn``'s signature."""
    inputs = ", ".join(input_sources)
    src = (
        f"def {fn.__code__.co_name}({params}):\n"
        f"    __out = __compiled_graph({inputs})\n"
        f"    return {return_expr}\n"
    )
    namespace: dict[str, Any] = {"__compiled_graph": compiled_graph, "G": fn.__globals__, **constants}
    exec(compile(src, f"<toycompiler transformed {fn.__code__.co_qualname}>", "exec"), namespace)
    transformed = namespace[fn.__code__.co_name]
    transformed.__defaults__ = fn.__defaults__
    transformed.__kwdefaults__ = fn.__kwdefaults__
    return transformed, disassemble(transformed.__code__, f"{fn.__code__.co_qualname} (transformed)")
