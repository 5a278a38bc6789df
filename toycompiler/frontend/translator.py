"""Symbolic execution of CPython bytecode into an FX graph.

The translator walks a function's instructions with a symbolic stack. Tensor
operations become nodes in a ``torch.fx.Graph``; everything else (ints, shapes,
modules, control flow on constants) is evaluated now, at compile time, and
protected by guards. When an instruction can't be traced, the translator stops
and records a :class:`~toycompiler.artifacts.GraphBreak` (a value, not a
restart).

One handler per opcode, named after it (``def LOAD_FAST(self, inst)``). The
handlers live in four modules, one per family, mixed into
:class:`InstructionTranslator`: :mod:`.handlers_names` (stack, names, cells,
attributes), :mod:`.handlers_calls` (calls, functions), :mod:`.handlers_data`
(operators, subscripts, containers, strings) and :mod:`.handlers_control`
(jumps, loops, return, generators). Calls to Python functions are *inlined*
by a child translator sharing this one's graph and guards (:mod:`.inline`).
The instructions arrive normalised by :mod:`.bytecode`, so handlers contain no
Python-version checks.

The graph being built, shared with inlined calls, is an :class:`~.output_graph.OutputGraph`;
real values become variables (with their guards) in :mod:`.builder`.

Mirrors: torch/_dynamo/symbolic_convert.py (InstructionTranslator,
InliningInstructionTranslator). Leaves out: restarting analysis after a break
(a break is recorded, never retried), speculation logs, ``with`` blocks.
"""

from __future__ import annotations

import operator
import types
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException

from ..artifacts import GraphBreak, SourceArtifact, TranslationArtifact, TranslationStep
from ..config import Config
from . import bytecode as bc
from .builder import WrapMixin
from .calls import CallDispatch
from .containers import (
    IteratorVariable,
    ListVariable,
    NamedTupleVariable,
    TupleVariable,
)
from .guards import GuardBuilder
from .handlers_calls import CallHandlers
from .handlers_control import ControlHandlers
from .handlers_data import DataHandlers
from .handlers_names import NameHandlers
from .inline import InlineMixin, instructions_of
from .output_graph import OutputGraph, as_fake, as_node_arg, rebuild_expr, tensor_variables
from .shapes import ShapePolicy
from .variables import (
    CONSTANT_TYPES,
    ConstantVariable,
    TensorVariable,
    Unsupported,
    Variable,
    wrap_constant_result,
)


@dataclass
class _Unread:
    """A frame argument not yet looked at: it becomes a graph input on first read."""

    value: Any


@dataclass
class FrameState:
    """Everything the translator knows at one instruction: one explicit object.

    After a graph break it holds the state just *before* the breaking instruction
    (``ip`` is that instruction's index), with the graph rolled back to match.
    """

    stack: list[Variable] = field(default_factory=list)
    locals: dict[str, Variable | _Unread] = field(default_factory=dict)
    ip: int = 0  # index into the instruction list
    kw_names: tuple[str, ...] = ()
    cells: dict[str, Variable] = field(
        default_factory=dict
    )  # closure cells by name (MAKE_CELL, COPY_FREE_VARS)

    def snapshot(self) -> FrameState:
        """A copy to go back to if the next instruction breaks (variables shared, not copied)."""
        return FrameState(
            list(self.stack), dict(self.locals), self.ip, self.kw_names, dict(self.cells)
        )


@dataclass
class TranslationResult:
    """What the translator hands to the rest of the frontend."""

    graph_module: torch.fx.GraphModule
    example_inputs: list[torch.Tensor]  # real tensors, in placeholder order
    input_sources: list[str]  # Python expressions reaching each graph input
    return_expr: str | None  # how to rebuild the return value from ``__out`` (None if it broke)
    constants: dict[str, Any]  # objects the return expression (and input sources) refer to
    guards: GuardBuilder
    guard_objects: dict[str, Any]  # objects ID guards compare against
    artifact: TranslationArtifact
    ops: int  # call nodes recorded
    break_plan: Any = None  # resume.BreakPlan: how to split the frame at its break (None: no break)
    no_resume_reason: str | None = None  # why the break can't be split (the entry then runs eagerly)
    shapes: Any = None  # shapes.ShapePolicy: symbolic sizes and their guards


class InstructionTranslator(
    NameHandlers, CallHandlers, DataHandlers, ControlHandlers, CallDispatch, InlineMixin, WrapMixin
):
    """Runs one code object symbolically. Construct, then call :meth:`run`."""

    MAX_INLINE_DEPTH = 32

    def __init__(
        self,
        fn: types.FunctionType,
        args: tuple,
        kwargs: dict,
        source: SourceArtifact,
        config: Config,
        shapes: ShapePolicy | None = None,
    ):
        self.fn, self.code, self.config, self.source = fn, fn.__code__, config, source
        self.parent: InstructionTranslator | None = None
        self.depth = 0
        self.set_globals(fn.__globals__)
        self.instructions, self.index_of = instructions_of(self.code)
        self.output = OutputGraph(source, shapes)
        self.guards = GuardBuilder()
        self.guard_objects: dict[str, Any] = {"G": fn.__globals__}
        self.wrapped: dict[
            str, Variable
        ] = {}  # source -> variable, so a value is wrapped (and guarded) once
        self.initial_grad_mode = torch.is_grad_enabled()
        self.closure = [
            self.wrap_cell(c, name) for c, name in zip(fn.__closure__ or (), self.code.co_freevars)
        ]
        self.state = FrameState(locals={k: _Unread(v) for k, v in _bind(fn, args, kwargs).items()})
        self.steps: list[TranslationStep] = []
        self.returned: Variable | None = None
        self.graph_break: GraphBreak | None = None
        self.break_state: tuple | None = None  # (stack, locals, kw_names) just before the breaking instruction
        self.break_plan: Any = None  # resume.BreakPlan, made by plan_break()
        self.no_resume_reason: str | None = None
        self.yielded: list[Variable] | None = (
            [] if self.code.co_flags & 0x20 else None
        )  # CO_GENERATOR

    def set_globals(self, globals_: dict) -> None:
        self.globals = globals_
        builtins_ = globals_.get("__builtins__", __builtins__)
        self.builtins = vars(builtins_) if isinstance(builtins_, types.ModuleType) else builtins_

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
        saved, mark = self.state.snapshot(), self.output.checkpoint()
        grad_mode = torch.is_grad_enabled()
        try:
            self.dispatch(inst)
        except Unsupported as e:
            self.record_break(inst, e.reason, e.kind, saved, mark, grad_mode)
        except Exception as e:  # a translator bug must cost a graph break, never the user's call
            reason = f"internal error while tracing {inst.opname}: {type(e).__name__}: {e}"
            self.record_break(inst, reason, "internal-error", saved, mark, grad_mode)
        events += [f"guard added: {g.expr}" for g in self.guards.guards[guards_before:]]
        self.steps.append(
            TranslationStep(
                inst.offset,
                inst.opname,
                inst.argrepr,
                inst.line,
                before,
                tuple(v.describe() for v in self.state.stack),
                tuple(
                    (k, v.describe())
                    for k, v in self.state.locals.items()
                    if isinstance(v, Variable)
                ),
                tuple(events),
            )
        )

    def record_break(
        self, inst: bc.Inst, reason: str, kind: str, saved: FrameState, mark: tuple, grad_mode: bool
    ) -> None:
        """Stop here: the graph and the frame state go back to just before ``inst``."""
        self.graph_break = self.make_break(inst, reason, kind)
        torch._C._set_grad_enabled(grad_mode)
        self.output.rollback(mark)
        self.state = saved
        self.state.ip -= 1
        self.output.events.append(f"graph break: {reason}")

    def dispatch(self, inst: bc.Inst) -> None:
        self.output.instructions_run += 1
        if self.output.instructions_run > MAX_INSTRUCTIONS:
            raise Unsupported(
                f"tracing ran {MAX_INSTRUCTIONS} instructions (a very long unrolled loop?); "
                "stopping here",
                "unsupported",
            )
        handler = getattr(self, inst.opname, None)
        if handler is None or not inst.opname.isupper():
            reason = UNSUPPORTED.get(inst.opname, "is not supported by the translator")
            raise Unsupported(f"opcode {inst.opname} {reason}", "unsupported-opcode")
        handler(inst)

    def make_break(self, inst: bc.Inst, reason: str, kind: str) -> GraphBreak:
        line = inst.line or self.code.co_firstlineno
        return GraphBreak(
            reason,
            self.code.co_filename,
            line,
            self.source.line(line),
            inst.offset,
            inst.opname,
            kind,
        )

    def result(self) -> TranslationResult:
        return_expr, constants = None, {}
        graph = self.output.graph
        if self.returned is not None:
            outputs: list[torch.fx.Node] = []
            try:
                return_expr = rebuild_expr(self.returned, outputs, constants)
            except Unsupported as e:
                inst = self.instructions[self.state.ip - 1]
                self.graph_break = self.make_break(inst, e.reason, e.kind)
                self.returned, return_expr, outputs = None, None, []
            graph.output(tuple(outputs))
        else:
            graph.output(tuple(v.node for v in self.plan_break()))
        self.restore_grad_mode()
        self.guard_no_aliasing()
        self.output.remove_dead_nodes()
        root = torch.nn.Module()
        for name, sub in self.output.submodules.items():
            root.add_module(name, sub)
        gm = torch.fx.GraphModule(root, graph, class_name=self.code.co_name)
        ops = sum(n.op in ("call_function", "call_method", "call_module") for n in graph.nodes)
        constants.update(
            self.guard_objects
        )  # input sources may name registered objects (cells, globals dicts)
        artifact = TranslationArtifact(self.code.co_qualname, tuple(self.steps), self.graph_break)
        return TranslationResult(
            gm,
            self.output.example_inputs,
            self.output.input_sources,
            return_expr,
            constants,
            self.guards,
            self.guard_objects,
            artifact,
            ops,
            self.break_plan,
            self.no_resume_reason,
            self.output.shapes,
        )

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

    def set_grad_mode(self, enabled: bool) -> None:
        """Record a grad-mode switch in the graph, and make it now for the fake tensors."""
        node = self.output.create_node(
            "call_function", torch._C._set_grad_enabled, (enabled,), {}, None
        )
        self.output.side_effect_nodes.append(node)
        torch._C._set_grad_enabled(enabled)

    def guard_no_aliasing(self) -> None:
        """The tensor inputs (and the caller's lists and dicts) were distinct objects: ``a is b``,
        sets and lookups relied on it."""
        sources = self.output.input_sources + [src for _, src, _ in self.output.caller_containers.values()]
        if len(sources) > 1:
            expr = f"len({{id(t) for t in ({', '.join(sources)})}}) == {len(sources)}"
            self.guards.add(expr, "NO_ALIASING", "the tensor inputs were distinct objects")

    def restore_grad_mode(self) -> None:
        """At the end of tracing: the graph leaves grad mode as it found it (a break inside a
        ``with torch.no_grad()`` block ends the graph inside the block), and so does tracing."""
        if torch.is_grad_enabled() != self.initial_grad_mode:
            outputs = [n for n in self.output.graph.nodes if n.op == "output"]
            with self.output.graph.inserting_before(outputs[0] if outputs else None):
                self.set_grad_mode(self.initial_grad_mode)

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

    def identity_key(self, v: Variable) -> Any:
        """What ``list.index`` and ``in`` compare: the constant value, or the variable itself."""
        return (
            v.as_python() if v.is_python_constant() and not isinstance(v, TensorVariable) else id(v)
        )

    def record_call(
        self, op: str, target: Any, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """Add a node and compute its fake result to learn the output's shape and dtype.

        In-place operations are recognised by the fake tensors' version counters, whatever
        their spelling (``x.add_(1)``, ``x += 1``, ``F.relu(x, inplace=True)``, ``out=``): the
        node is kept through dead-code elimination, and a tensor that the op returns
        (``self``) is pointed at the new node, so every alias reads the new value.
        """
        node_args = tuple(as_node_arg(a) for a in args)
        node_kwargs = {k: as_node_arg(v) for k, v in kwargs.items()}
        fake_args = tuple(as_fake(a) for a in args)
        fake_kwargs = {k: as_fake(v) for k, v in kwargs.items()}
        tensors = [v for v in tensor_variables([*args, *kwargs.values()])]
        versions = [t.example._version for t in tensors]
        try:
            with self.output.fake_mode:
                if op == "call_method":
                    example = getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    example = target(*fake_args, **fake_kwargs)
        except DATA_DEPENDENT_ERRORS as e:
            raise Unsupported(
                f"the output shape of {_op_name(target)} depends on the tensor's values ({e}); "
                "the graph needs static shapes",
                "data-dependent",
            ) from e
        except Exception as e:
            name = _op_name(target)
            raise Unsupported(
                f"{name} failed on fake tensors: {type(e).__name__}: {e}", "fake-tensor"
            ) from e
        result = self.wrap_result(op, target, node_args, node_kwargs, example)
        mutated = [t for t, v in zip(tensors, versions) if t.example._version != v]
        if mutated:
            node = result.node if isinstance(result, TensorVariable) else self.last_node()
            self.output.side_effect_nodes.append(node)
            for t in mutated:
                if isinstance(result, TensorVariable) and result.example is t.example:
                    self.output.remember(t, "node")
                    t.node, result = result.node, t
                    self.output.events.append(f"in-place: {t.node.name} changes its input")
        return result

    def last_node(self) -> torch.fx.Node:
        return next(iter(reversed(self.output.graph.nodes)))

    def wrap_result(
        self, op: str, target: Any, node_args: tuple, node_kwargs: dict, example: Any
    ) -> Variable:
        if isinstance(example, torch.Tensor):
            return TensorVariable(
                self.output.create_node(op, target, node_args, node_kwargs, example), example
            )
        if (
            isinstance(example, tuple | list)
            and example
            and all(isinstance(t, torch.Tensor) for t in example)
        ):
            node = self.output.create_node(op, target, node_args, node_kwargs, example)
            items = []
            for i, t in enumerate(example):
                item = self.output.create_node("call_function", operator.getitem, (node, i), {}, t)
                items.append(TensorVariable(item, t))
            if type(example) not in (tuple, list):  # torch.return_types.topk(values, indices)
                return NamedTupleVariable(items, example=example)
            return TupleVariable(items) if isinstance(example, tuple) else ListVariable(items)
        if example is None and op == "call_function" and target is not None:
            self.output.create_node(
                op, target, node_args, node_kwargs, None
            )  # e.g. torch.add(a, b, out=c)
            return ConstantVariable(None)
        if example is None or isinstance(example, CONSTANT_TYPES) or type(example) in (tuple, list):
            return wrap_constant_result(example)
        raise Unsupported(
            f"{target} returned {type(example).__name__}, which the translator can't track"
        )


class InliningTranslator(InstructionTranslator):
    """Traces a called Python function into the caller's graph (see :mod:`.inline`)."""

    def __init__(
        self,
        parent: InstructionTranslator,
        code: types.CodeType,
        globals_: dict,
        local_vars: dict[str, Variable],
        closure: list[Variable],
    ):
        self.parent, self.depth = parent, parent.depth + 1
        if self.depth > self.MAX_INLINE_DEPTH:
            raise Unsupported(
                f"inlining {code.co_qualname} goes {self.depth} calls deep (recursion?)",
                "unsupported-call",
            )
        self.fn, self.code, self.config, self.source = None, code, parent.config, parent.source
        self.set_globals(globals_)
        self.instructions, self.index_of = instructions_of(code)
        # shared with the caller: one graph, one set of guards, one list of inputs
        self.output, self.guards, self.guard_objects = (
            parent.output,
            parent.guards,
            parent.guard_objects,
        )
        self.wrapped, self.closure = parent.wrapped, closure
        self.state = FrameState(locals=dict(local_vars))
        self.steps, self.returned, self.graph_break = [], None, None
        self.yielded = [] if code.co_flags & 0x20 else None  # CO_GENERATOR

    def run_inline(self) -> Variable:
        """Run to ``RETURN_VALUE``; a break propagates to the caller with this frame's location."""
        while self.returned is None:
            inst = self.instructions[self.state.ip]
            self.state.ip += 1
            try:
                self.dispatch(inst)
            except Unsupported as e:
                if not getattr(e, "located", False):
                    where = f"{self.code.co_filename}:{inst.line}"
                    e.reason = f"{e.reason} (inside {self.code.co_qualname}, {where})"
                    e.located = True
                raise
        return IteratorVariable(self.yielded) if self.yielded is not None else self.returned


# Loops are unrolled; this bounds the work of one translation (inlined calls included).
MAX_INSTRUCTIONS = 100_000

DATA_DEPENDENT_ERRORS = (DynamicOutputShapeException, DataDependentOutputException)


def _op_name(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))


def supported_opcodes() -> list[str]:
    """Every opcode the translator has a handler for (after normalisation), by introspection."""
    return sorted(
        n
        for n in dir(InstructionTranslator)
        if n.isupper() and callable(getattr(InstructionTranslator, n))
    )


# Opcodes that have no handler on purpose, with the reason a user sees.
UNSUPPORTED: dict[str, str] = {
    "SETUP_WITH": "(a `with` block) is not traced",
    "RAISE_VARARGS": "(raising an exception) is not traced: the compiled graph can't raise",
    "RERAISE": "(re-raising inside an except block) is not traced: exceptions are not traced",
    "PUSH_EXC_INFO": "(entering an except block) is not traced: exceptions are not traced",
    "POP_EXCEPT": "(leaving an except block) is not traced: exceptions are not traced",
    "CALL_INTRINSIC_1": "(a 3.12 intrinsic other than unary + and list-to-tuple) is not traced",
    "CALL_INTRINSIC_2": "(a 3.12 intrinsic: exception groups, type parameters) is not traced",
    "CHECK_EXC_MATCH": "(an except clause) is not traced: exceptions are not traced",
    "LOAD_ASSERTION_ERROR": "(a failing assert) is not traced: the compiled graph can't raise",
    "GET_AWAITABLE": "(await) is not traced: coroutines are out of scope",
    "LOAD_BUILD_CLASS": "(a class statement inside the function) is not traced",
    "IMPORT_STAR": "(from m import *) is not allowed inside functions",
    "MATCH_CLASS": "(a match statement) is not traced",
    "MATCH_MAPPING": "(a match statement) is not traced",
    "MATCH_SEQUENCE": "(a match statement) is not traced",
    "MATCH_KEYS": "(a match statement) is not traced",
    "GET_LEN": "(a match statement) is not traced",
    "STORE_GLOBAL": "(assigning a global) changes state outside the function; not traced",
    "DELETE_GLOBAL": "(deleting a global) changes state outside the function; not traced",
    "DELETE_ATTR": "(deleting an attribute) changes an object the caller can see; not traced",
    "SETUP_ANNOTATIONS": "(annotations at module level) is not traced",
    "GET_AITER": "(async for) is not traced",
    "GET_ANEXT": "(async for) is not traced",
    "BEFORE_ASYNC_WITH": "(async with) is not traced",
    "YIELD_FROM": "(yield from) is not traced",
    "WITH_EXCEPT_START": "(leaving a `with` block on an exception) is not traced",
    "CHECK_EG_MATCH": "(except*) is not traced",
    "PREP_RERAISE_STAR": "(except*) is not traced",
    "DELETE_DEREF": "(del of a closure variable) is not traced",
    "LOAD_NAME": "(module or class body code) is not traced: only functions are compiled",
    "STORE_NAME": "(module or class body code) is not traced",
    "DELETE_NAME": "(module or class body code) is not traced",
    "LOAD_CLASSDEREF": "(class body code) is not traced",
    "LOAD_LOCALS": "(class body code) is not traced",
    "LOAD_FROM_DICT_OR_DEREF": "(class body code) is not traced",
    "LOAD_FROM_DICT_OR_GLOBALS": "(class body code) is not traced",
    "PRINT_EXPR": "(interactive-mode expression printing) is not traced",
    "ASYNC_GEN_WRAP": "(async generators) is not traced",
    "END_ASYNC_FOR": "(async for) is not traced",
    "CLEANUP_THROW": "(generator.throw) is not traced",
    "INTERPRETER_EXIT": "(the interpreter's own exit) never appears in a function",
}


def _bind(fn: types.FunctionType, args: tuple, kwargs: dict) -> dict[str, Any]:
    import inspect

    bound = inspect.signature(fn, follow_wrapped=False).bind(
        *args, **kwargs
    )  # the code's own names
    bound.apply_defaults()
    return dict(bound.arguments)
