"""Symbolic execution of CPython bytecode into an FX graph.

The translator walks a function's instructions with a symbolic stack. Tensor
operations become nodes in a ``torch.fx.Graph``; everything else (ints, shapes,
modules, control flow on constants) is evaluated now, at compile time, and
protected by guards. When an instruction can't be traced, the translator stops
and records a :class:`~toycompiler.artifacts.GraphBreak` (a value, not a
restart).

One handler per opcode, named after it (``def LOAD_FAST(self, inst)``). The
instructions arrive normalised by :mod:`.bytecode`, so handlers contain no
Python-version checks.

Mirrors: torch/_dynamo/symbolic_convert.py (InstructionTranslator) and
torch/_dynamo/output_graph.py (OutputGraph).
"""

from __future__ import annotations

import operator
import types
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from ..artifacts import GraphBreak, SourceArtifact, TranslationArtifact, TranslationStep
from .. import provenance
from ..config import Config
from . import bytecode as bc
from .guards import GuardBuilder
from .resume import graph_break
from .shapes import ShapePolicy
from .variables import (
    CONSTANT_TYPES,
    FOLDABLE,
    ConstantVariable,
    NullVariable,
    ObjectVariable,
    TensorMethodVariable,
    TensorVariable,
    TupleVariable,
    Unsupported,
    Variable,
    is_torch_op,
    wrap_constant_result,
)

# BINARY_OP's argrepr -> the function it applies. In-place forms ("+=") are
# separate: on a tensor they mutate the caller's object.
BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}
INPLACE_BINARY_OPS = {op + "=": fn for op, fn in BINARY_OPS.items()}
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
               ">": operator.gt, ">=": operator.ge}


@dataclass
class _Unread:
    """A frame argument not yet looked at: it becomes a graph input on first read."""

    value: Any


@dataclass
class FrameState:
    """Everything the translator knows at one instruction: one explicit object."""

    stack: list[Variable] = field(default_factory=list)
    locals: dict[str, Variable | _Unread] = field(default_factory=dict)
    ip: int = 0  # index into the instruction list
    kw_names: tuple[str, ...] = ()


@dataclass
class TranslationResult:
    """What the translator hands to the rest of the frontend."""

    graph_module: torch.fx.GraphModule
    example_inputs: list[torch.Tensor]  # real tensors, in placeholder order
    input_sources: list[str]  # Python expressions reaching each graph input
    return_expr: str | None  # how to rebuild the return value from ``__out`` (None if it broke)
    constants: dict[str, Any]  # objects the return expression refers to
    guards: GuardBuilder
    guard_objects: dict[str, Any]  # objects ID guards compare against
    artifact: TranslationArtifact
    ops: int  # call nodes recorded
    break_plan: Any = None  # resume.BreakPlan: how to split the frame at its break (None: no break)
    no_resume_reason: str | None = None  # why the break can't be split (the entry then runs eagerly)
    shapes: Any = None  # shapes.ShapePolicy: symbolic sizes and their guards


class OutputGraph:
    """The FX graph under construction, its fake tensors and its inputs."""

    def __init__(self, source: SourceArtifact, shapes: ShapePolicy | None = None) -> None:
        self.filename, self.source_line = source.filename, source.line
        self.graph = torch.fx.Graph()
        self.shapes = shapes or ShapePolicy(dynamic=False)  # symbolic sizes: see shapes.py
        self.fake_mode = self.shapes.fake_mode
        self.example_inputs: list[torch.Tensor] = []
        self.input_sources: list[str] = []
        self.current_line: int | None = None
        self.current_offset: int | None = None
        self.events: list[str] = []

    def add_input(self, source: str, value: torch.Tensor) -> TensorVariable:
        name = source.replace(".", "_").replace("[", "_").replace("]", "").replace("'", "")
        node = self.graph.placeholder(name)
        fake = self.shapes.fake(source, value)
        node.meta.update(example_value=fake, toy_source=source)
        self.example_inputs.append(value)
        self.input_sources.append(source)
        self.events.append(f"graph input {node.name}")
        return TensorVariable(node, fake, source)

    def create_node(self, op: str, target: Any, args: tuple, kwargs: dict, example: Any) -> torch.fx.Node:
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["example_value"] = example
        provenance.tag(node, self.current_line, self.current_offset, self.filename, self.source_line(self.current_line))
        self.events.append(f"node added: {node.name}")
        return node


class InstructionTranslator:
    """Runs one code object symbolically. Construct, then call :meth:`run`."""

    def __init__(self, fn: types.FunctionType, args: tuple, kwargs: dict, source: SourceArtifact, config: Config,
                 shapes: ShapePolicy | None = None):
        self.fn, self.code, self.config, self.source = fn, fn.__code__, config, source
        self.globals = fn.__globals__
        self.builtins = self.globals.get("__builtins__", __builtins__)
        if isinstance(self.builtins, types.ModuleType):
            self.builtins = vars(self.builtins)
        self.instructions = bc.normalise(self.code)
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.output = OutputGraph(source, shapes)
        self.guards = GuardBuilder()
        self.guard_objects: dict[str, Any] = {}
        self.state = FrameState(locals={k: _Unread(v) for k, v in _bind(fn, args, kwargs).items()})
        self.steps: list[TranslationStep] = []
        self.returned: Variable | None = None
        self.graph_break: GraphBreak | None = None
        self.break_state: tuple | None = None  # (stack, locals, kw_names) just before the breaking instruction
        self.break_plan: Any = None  # resume.BreakPlan, made by plan_break()
        self.no_resume_reason: str | None = None

    # -- the main loop ----------------------------------------------------------

    def run(self) -> TranslationResult:
        while self.returned is None and self.graph_break is None:
            inst = self.instructions[self.state.ip]
            self.state.ip += 1
            self.step(inst)
        return self.result()

    def step(self, inst: bc.Inst) -> None:
        """Run one instruction through its handler and log what it did."""
        before = tuple(v.describe() for v in self.state.stack)
        self.output.current_line, self.output.current_offset = inst.line, inst.offset
        self.output.events = events = []
        guards_before = len(self.guards.guards)
        snapshot = (list(self.state.stack), dict(self.state.locals), self.state.kw_names)
        handler = getattr(self, inst.opname, None)
        try:
            if handler is None:
                raise Unsupported(f"opcode {inst.opname} is not supported by the translator", "unsupported-opcode")
            handler(inst)
        except Unsupported as e:
            self.graph_break = self.make_break(inst, e.reason, e.kind)
            self.break_state = snapshot
            events.append(f"graph break: {e.reason}")
        events += [f"guard added: {g.expr}" for g in self.guards.guards[guards_before:]]
        self.steps.append(TranslationStep(
            inst.offset, inst.opname, inst.argrepr, inst.line, before,
            tuple(v.describe() for v in self.state.stack),
            tuple((k, v.describe()) for k, v in self.state.locals.items() if isinstance(v, Variable)),
            tuple(events),
        ))

    def make_break(self, inst: bc.Inst, reason: str, kind: str) -> GraphBreak:
        line = inst.line or self.code.co_firstlineno
        return GraphBreak(reason, self.code.co_filename, line, self.source.line(line), inst.offset, inst.opname, kind)

    def result(self) -> TranslationResult:
        return_expr, constants = None, {}
        graph = self.output.graph
        if self.returned is not None:
            outputs: list[torch.fx.Node] = []
            return_expr = _rebuild_expr(self.returned, outputs, constants)
            graph.output(tuple(outputs))
        else:
            graph.output(tuple(v.node for v in self.plan_break()))
        graph.eliminate_dead_code()
        gm = torch.fx.GraphModule(torch.nn.Module(), graph, class_name=self.code.co_name)
        ops = sum(n.op in ("call_function", "call_method", "call_module") for n in graph.nodes)
        artifact = TranslationArtifact(self.code.co_qualname, tuple(self.steps), self.graph_break)
        return TranslationResult(gm, self.output.example_inputs, self.output.input_sources, return_expr,
                                 constants, self.guards, self.guard_objects, artifact, ops, self.break_plan,
                                 self.no_resume_reason, self.output.shapes)

    def plan_break(self) -> list:
        """At a break: plan the resume (see resume.py) and return the tensors the graph must output."""
        from .resume import CannotResume, plan_break

        self.break_plan, self.no_resume_reason = None, None
        if self.graph_break is None:
            return []
        # The symbolic state just before the breaking instruction (a translator that rolls its state
        # back on a break can leave break_state unset).
        stack, locals_, kw_names = self.break_state or (self.state.stack, self.state.locals, self.state.kw_names)
        try:
            self.break_plan = plan_break(self.code, self.instructions, stack, locals_, kw_names,
                                         self.graph_break.offset)
        except CannotResume as e:
            self.no_resume_reason = str(e)
            return []
        return self.break_plan.graph_outputs

    # -- helpers used by handlers and variables ---------------------------------

    def push(self, v: Variable) -> None:
        self.state.stack.append(v)

    def pop(self) -> Variable:
        return self.state.stack.pop()

    def popn(self, n: int) -> list[Variable]:
        if n == 0:
            return []
        items = self.state.stack[-n:]
        del self.state.stack[-n:]
        return items

    def wrap(self, value: Any, source: str | None) -> Variable:
        """A real Python value (an argument, a global, an attribute) as a variable, guarded."""
        line = self.output.current_line
        if isinstance(value, torch.Tensor):
            if source is None:
                raise Unsupported("a tensor reached without a source (e.g. a global's attribute chain)")
            var = self.output.add_input(source, value)
            self.guards.tensor(source, value, line, self.output.shapes.dims.get(source, frozenset()))
            return var
        if isinstance(value, CONSTANT_TYPES) and not isinstance(value, slice):
            if source is not None:
                self.guards.constant(source, value, line)
            return ConstantVariable(value, source)
        if isinstance(value, tuple) and source is not None:
            self.guards.add(f"len({source}) == {len(value)}", "LENGTH_MATCH", f"{source} was unpacked", line)
            return TupleVariable([self.wrap(v, f"{source}[{i}]") for i, v in enumerate(value)], source)
        if source is not None and "." not in source and not isinstance(value, types.ModuleType):
            name = f"___obj_{len(self.guard_objects)}"
            self.guard_objects[name] = value
            self.guards.identity(source, value, line, name)
        return ObjectVariable(value, source)

    def call_python(self, fn: Any, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        """Call a compile-time-known callable: record it, fold it, or refuse."""
        if fn is graph_break or fn is getattr(torch._dynamo, "graph_break", graph_break):
            raise Unsupported("toycompiler.graph_break() called", "explicit")
        has_tensor = any(_contains_tensor(a) for a in [*args, *kwargs.values()])
        if is_torch_op(fn):
            return self.record_call("call_function", fn, args, kwargs)
        if not has_tensor and fn in FOLDABLE:
            values = [a.as_python() for a in args]
            result = fn(*values, **{k: v.as_python() for k, v in kwargs.items()})
            self.output.events.append(f"constant folded: {getattr(fn, '__name__', fn)}(...) = {result!r}")
            return wrap_constant_result(result)
        name = getattr(fn, "__qualname__", None) or repr(fn)
        kind = "print" if fn is print else "unsupported-call"
        raise Unsupported(f"call to {name} cannot be traced", kind)

    def call_method(self, tensor: TensorVariable, name: str, args: list[Variable], kwargs: dict[str, Variable],
                    as_property: bool = False) -> Variable:
        if name in ("item", "tolist", "numpy", "__bool__"):
            raise Unsupported(f"Tensor.{name}() needs the tensor's data, which is unknown while tracing", name)
        if name.endswith("_") and not name.startswith("_"):
            raise Unsupported(f"in-place Tensor.{name}() is not traced yet", "mutation")
        if as_property:
            return self.record_call("call_function", getattr, [tensor, ConstantVariable(name)], {})
        return self.record_call("call_method", name, [tensor, *args], kwargs)

    def record_call(self, op: str, target: Any, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        """Add a node and compute its fake result to learn the output's shape and dtype."""
        node_args = tuple(_as_node_arg(a) for a in args)
        node_kwargs = {k: _as_node_arg(v) for k, v in kwargs.items()}
        fake_args = tuple(_as_fake(a) for a in args)
        fake_kwargs = {k: _as_fake(v) for k, v in kwargs.items()}
        try:
            with self.output.fake_mode:
                if op == "call_method":
                    example = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    example = target(*fake_args, **fake_kwargs)
        except Exception as e:
            name = target if isinstance(target, str) else getattr(target, "__name__", repr(target))
            raise Unsupported(f"{name} failed on fake tensors: {type(e).__name__}: {e}", "fake-tensor") from e
        if isinstance(example, torch.Tensor):
            return TensorVariable(self.output.create_node(op, target, node_args, node_kwargs, example), example)
        if isinstance(example, tuple) and all(isinstance(t, torch.Tensor) for t in example):
            node = self.output.create_node(op, target, node_args, node_kwargs, example)
            items = []
            for i, t in enumerate(example):
                item = self.output.create_node("call_function", operator.getitem, (node, i), {}, t)
                items.append(TensorVariable(item, t))
            return TupleVariable(items)
        if isinstance(example, CONSTANT_TYPES) or isinstance(example, tuple):
            return wrap_constant_result(example)
        raise Unsupported(f"{target} returned {type(example).__name__}, which the translator can't track")

    # -- handlers: stack and no-ops ---------------------------------------------

    def NOP(self, inst):
        """Does nothing (also PRECALL on 3.11)."""

    RESUME = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        """``PUSH_NULL`` -- marks a plain function call (no ``self``)."""
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.state.stack[-inst.arg])

    def SWAP(self, inst):
        s = self.state.stack
        s[-1], s[-inst.arg] = s[-inst.arg], s[-1]

    # -- handlers: names ----------------------------------------------------------

    def LOAD_CONST(self, inst):
        """``LOAD_CONST 2`` -- a literal from co_consts."""
        self.push(wrap_constant_result(inst.argval))

    def LOAD_FAST(self, inst):
        """``LOAD_FAST x`` -- a local or an argument; arguments become graph inputs on first read."""
        name = inst.argval
        if name not in self.state.locals:
            raise Unsupported(f"local {name!r} is unbound here")
        value = self.state.locals[name]
        if isinstance(value, _Unread):
            value = self.state.locals[name] = self.wrap(value.value, name)
        self.push(value)

    def STORE_FAST(self, inst):
        self.state.locals[inst.argval] = self.pop()

    def LOAD_GLOBAL(self, inst):
        """``LOAD_GLOBAL torch`` -- a global (or builtin), guarded by value or identity."""
        name = inst.argval
        if inst.flag:
            self.push(NullVariable())
        if name in self.globals:
            self.push(self.wrap(self.globals[name], f"G[{name!r}]"))
        elif name in self.builtins:
            self.push(ObjectVariable(self.builtins[name]))
        else:
            raise Unsupported(f"name {name!r} is not defined", "name-error")

    def LOAD_ATTR(self, inst):
        """``LOAD_ATTR shape`` -- attribute of the value on top of the stack."""
        obj = self.pop()
        if inst.flag:  # 3.12 folds PUSH_NULL into LOAD_ATTR for non-method loads
            self.push(NullVariable())
        self.push(obj.getattr(self, inst.argval))

    def LOAD_METHOD(self, inst):
        """``LOAD_METHOD sin`` -- pushes [NULL, bound callable]; CALL treats both layouts alike."""
        obj = self.pop()
        self.push(NullVariable())
        self.push(obj.getattr(self, inst.argval))

    # -- handlers: calls ------------------------------------------------------------

    def KW_NAMES(self, inst):
        """``KW_NAMES ('dim',)`` -- names of the keyword arguments of the next CALL."""
        self.state.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        """``CALL 2`` -- [NULL|callable, callable|self, *args] -> result."""
        args = self.popn(inst.arg)
        kw_names, self.state.kw_names = self.state.kw_names, ()
        kwargs = dict(zip(kw_names, args[len(args) - len(kw_names):])) if kw_names else {}
        args = args[: len(args) - len(kw_names)]
        if bc.CALL_LAYOUT == "null_or_callable_first":
            second, first = self.pop(), self.pop()
            fn, args = (second, args) if isinstance(first, NullVariable) else (first, [second, *args])
        else:
            self_or_null, fn = self.pop(), self.pop()
            if not isinstance(self_or_null, NullVariable):
                args = [self_or_null, *args]
        self.push(fn.call(self, args, kwargs))

    # -- handlers: operators ----------------------------------------------------------

    def BINARY_OP(self, inst):
        """``BINARY_OP +`` -- tensors make a node; constants fold."""
        b, a = self.pop(), self.pop()
        if inst.argrepr in INPLACE_BINARY_OPS:
            if isinstance(a, TensorVariable):
                raise Unsupported(f"in-place {inst.argrepr} on a tensor is not traced yet", "mutation")
            fn = INPLACE_BINARY_OPS[inst.argrepr]
        else:
            fn = BINARY_OPS[inst.argrepr]
        self.push(self.call_python(fn, [a, b], {}))

    def COMPARE_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(self.call_python(COMPARE_OPS[inst.argval], [a, b], {}))

    def UNARY_NEGATIVE(self, inst):
        self.push(self.call_python(operator.neg, [self.pop()], {}))

    def BINARY_SUBSCR(self, inst):
        """``BINARY_SUBSCR`` -- ``a[b]``: indexing a tensor records a node."""
        index, obj = self.pop(), self.pop()
        self.push(self.call_python(operator.getitem, [obj, index], {}))

    # -- handlers: building containers --------------------------------------------

    def BUILD_TUPLE(self, inst):
        self.push(TupleVariable(self.popn(inst.arg)))

    # -- handlers: jumps on compile-time values ------------------------------------

    def JUMP_FORWARD(self, inst):
        self.state.ip = self.index_of[inst.target]

    JUMP_BACKWARD = JUMP_FORWARD

    def POP_JUMP_IF_FALSE(self, inst):
        self._jump_if(inst, lambda v: not v)

    def POP_JUMP_IF_TRUE(self, inst):
        self._jump_if(inst, bool)

    def _jump_if(self, inst, taken):
        value = self.pop()
        if isinstance(value, TensorVariable):
            raise Unsupported("branching on a tensor's value (data-dependent control flow)", "data-dependent-branch")
        if taken(value.as_python()):
            self.state.ip = self.index_of[inst.target]

    # -- handlers: return ----------------------------------------------------------

    def RETURN_VALUE(self, inst):
        self.returned = self.pop()

    def RETURN_CONST(self, inst):
        """3.12: ``RETURN_CONST None`` -- LOAD_CONST then RETURN_VALUE in one."""
        self.returned = wrap_constant_result(inst.argval)


def _bind(fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
    import inspect

    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _contains_tensor(v: Variable) -> bool:
    if isinstance(v, TensorVariable | TensorMethodVariable):
        return True
    return isinstance(v, TupleVariable) and any(_contains_tensor(i) for i in v.items)


def _as_node_arg(v: Variable) -> Any:
    if isinstance(v, TensorVariable):
        return v.node
    if isinstance(v, TupleVariable):
        return tuple(_as_node_arg(i) for i in v.items)
    return v.as_python()


def _as_fake(v: Variable) -> Any:
    if isinstance(v, TensorVariable):
        return v.example
    if isinstance(v, TupleVariable):
        return tuple(_as_fake(i) for i in v.items)
    return v.as_python()


def _rebuild_expr(v: Variable, outputs: list[torch.fx.Node], constants: dict[str, Any]) -> str:
    """Python source that rebuilds the returned value from the graph's outputs ``__out``."""
    if isinstance(v, TensorVariable):
        outputs.append(v.node)
        return f"__out[{len(outputs) - 1}]"
    if isinstance(v, TupleVariable):
        inner = ", ".join(_rebuild_expr(i, outputs, constants) for i in v.items)
        return f"({inner},)" if len(v.items) == 1 else f"({inner})"
    value = v.as_python()
    if isinstance(value, int | float | bool | str | type(None)):
        return repr(value)
    name = f"__const_{len(constants)}"
    constants[name] = value
    return name
