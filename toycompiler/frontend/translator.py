"""Symbolic execution of CPython bytecode into an FX graph.

The translator walks a function's instructions with a symbolic stack. Tensor
operations become nodes in a ``torch.fx.Graph``; everything else (ints, shapes,
modules, control flow on constants) is evaluated now, at compile time, and
protected by guards. When an instruction can't be traced, the translator stops
and records a :class:`~toycompiler.artifacts.GraphBreak` (a value, not a
restart).

One handler per opcode, named after it (``def LOAD_FAST(self, inst)``), all in
:class:`InstructionTranslator` below, under banners: the stack, names, cells
and attributes, calls, operators, subscripts, containers, strings, jumps,
loops, ``with`` blocks, return. The instructions arrive normalised by
:mod:`.bytecode`, so handlers contain no Python-version checks.

Where the rest lives, each module a layer that imports only the ones before it:

- :mod:`.variables` and :mod:`.containers`: what a value on the stack can be;
- :mod:`.output_graph`: the graph being built (shared with inlined calls), and
  ``record_call``, where a tensor operation becomes a node;
- :mod:`.builder`: real values (arguments, globals) as variables, with guards;
- :mod:`.calls` (with :mod:`.pybuiltins`, :mod:`.higher_order`): what a call does;
- :mod:`.reconstruct`: at the end, what the transformed code must rebuild.

Calls to Python functions are *inlined* by a child :class:`InliningTranslator`
sharing this one's graph and guards: the one recursion of the design
(translator -> calls -> ``tx.inline_code`` -> translator), made through the
``tx`` object, not an import.

Mirrors: torch/_dynamo/symbolic_convert.py (InstructionTranslator,
InliningInstructionTranslator). Leaves out: restarting analysis after a break
(a break is recorded, never retried), speculation logs, ``with`` blocks other
than grad mode.
"""

from __future__ import annotations

import inspect
import operator
import types
from dataclasses import dataclass, field, replace
from typing import Any

import torch.fx

from ..artifacts import GraphBreak, Guard, SourceArtifact, TranslationArtifact, TranslationStep
from ..config import Config
from . import builder, calls, variables
from . import bytecode as bc
from .containers import DictVariable, IteratorVariable, ListVariable, TupleVariable, wrap_constant_result
from .guards import GuardBuilder, TensorCheck
from .output_graph import OutputGraph
from .reconstruct import CannotResume, TransformPlan, plan_break, plan_return
from .shapes import ShapePolicy
from .variables import CellVariable, ConstantVariable, NullVariable, ObjectVariable, Unsupported, Variable


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
    cells: dict[str, Variable] = field(default_factory=dict)  # closure cells by name (the free variables, MAKE_CELL)

    def snapshot(self) -> FrameState:
        """A copy to go back to if the next instruction breaks (variables shared, not copied)."""
        return FrameState(list(self.stack), dict(self.locals), self.ip, self.kw_names, dict(self.cells))


@dataclass(frozen=True)
class Translation:
    """What the translator hands to the rest of the pipeline: the finished graph and what it relied on."""

    graph_module: torch.fx.GraphModule
    inputs: dict[str, torch.Tensor]  # the graph inputs, in placeholder order: source -> real tensor
    guards: tuple[Guard, ...]
    guard_objects: dict[str, Any]  # objects guards and input sources name (``G``, ``___obj_0``)
    artifact: TranslationArtifact  # the log of every instruction, and the finished break (if any)
    plan: TransformPlan | None  # what the transformed code rebuilds; None: the whole frame runs eagerly
    shapes: ShapePolicy  # symbolic sizes and their guards
    tensor_check: TensorCheck  # the tensors the check function checks in one C++ call


class InstructionTranslator:
    """Runs one code object symbolically. Construct, then call :meth:`run`.

    Its state: ``state`` (stack, locals, cells, instruction pointer); ``output``
    (the graph), ``guards`` and ``guard_objects`` (shared with inlined calls);
    ``steps`` (the log), ``returned`` or ``broke`` (how it stopped).
    """

    MAX_INLINE_DEPTH = 32

    def __init__(self, fn: types.FunctionType, args: tuple, kwargs: dict, source: SourceArtifact, config: Config,
                 shapes: ShapePolicy | None = None, label: str = ""):
        self.config, self.source, self.label, self.depth = config, source, label, 0
        # shared with inlined calls: one graph, one set of guards, the objects they name
        self.output, self.guards = OutputGraph(source, shapes), GuardBuilder()
        self.guard_objects: dict[str, Any] = {"G": fn.__globals__}
        self.wrapped: dict[str, Variable] = {}  # source -> variable, so a value is wrapped (and guarded) once
        closure = [builder.wrap_cell(self, c, name) for c, name in zip(fn.__closure__ or (), fn.__code__.co_freevars)]
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)  # the code's own names
        bound.apply_defaults()
        self.enter_frame(fn.__code__, fn.__globals__, {k: _Unread(v) for k, v in bound.arguments.items()}, closure)

    def enter_frame(self, code: types.CodeType, globals_: dict, locals_: dict, closure: list[Variable]) -> None:
        """The state of this frame alone: its code, globals, stack, locals and cells, log, and how it ended.

        The closure's cells are the free variables from the start: what ``COPY_FREE_VARS``, in the code's
        prologue, does in CPython."""
        self.code, self.globals = code, globals_
        builtins_ = globals_.get("__builtins__", __builtins__)
        self.builtins = vars(builtins_) if isinstance(builtins_, types.ModuleType) else builtins_
        self.instructions, self.index_of = bc.instructions_of(code)
        self.state = FrameState(locals=dict(locals_), cells=dict(zip(code.co_freevars, closure)))
        self.steps: list[TranslationStep] = []
        self.returned: Variable | None = None
        self.broke: GraphBreak | None = None  # where tracing stopped and why (see break_at)
        # an inlined generator's values (InliningTranslator); never the compiled function's own (depth 0): a
        # compiled generator runs eagerly
        self.yielded: list[Variable] | None = [] if self.depth and code.co_flags & inspect.CO_GENERATOR else None

    # -- the main loop ------------------------------------------------------------

    def run(self) -> Translation:
        while self.returned is None and self.broke is None:
            self.step(self.instructions[self.state.ip])
        return self.finish()

    def step(self, inst: bc.Inst) -> None:
        """Run one instruction through its handler and log what it did."""
        before = tuple(v.describe() for v in self.state.stack)
        self.output.current = inst
        self.output.events = events = []
        guards_before = len(self.guards.guards)
        saved, mark = self.state.snapshot(), self.output.checkpoint()  # to go back to if ``inst`` breaks
        try:
            self.dispatch(inst)
        except Exception as e:  # a translator bug must cost a graph break, never the user's call
            internal = (f"internal error while tracing {inst.opname}: {type(e).__name__}: {e}", "internal-error")
            reason, kind = (e.reason, e.kind) if isinstance(e, Unsupported) else internal
            # Stop here: the graph and the frame state go back to just before ``inst``.
            self.broke = self.break_at(inst, reason, kind)
            self.output.rollback(mark)
            self.state = saved
            self.output.events.append(f"graph break: {reason}")
        events += [f"guard added: {expr}" for expr in list(self.guards.guards)[guards_before:]]
        after = tuple(v.describe() for v in self.state.stack)
        locals_ = tuple((k, v.describe()) for k, v in self.state.locals.items() if isinstance(v, Variable))
        self.steps.append(TranslationStep(inst.offset, inst.opname, inst.argrepr, inst.line, before, after, locals_,
                                          tuple(events)))

    def dispatch(self, inst: bc.Inst) -> None:
        """Step past ``inst`` (a jump sets ``ip`` again) and run its handler."""
        self.state.ip += 1
        self.output.instructions_run += 1
        if self.output.instructions_run > MAX_INSTRUCTIONS:
            raise Unsupported(f"tracing ran {MAX_INSTRUCTIONS} instructions (a very long unrolled loop?); "
                              "stopping here", "unsupported")
        if (handler := getattr(self, inst.opname, None)) is None or not inst.opname.isupper():
            reason = UNSUPPORTED.get(inst.opname, "is not supported by the translator")
            raise Unsupported(f"opcode {inst.opname} {reason}", "unsupported-opcode")
        handler(inst)

    # -- the end: what the transformed code rebuilds, the finished graph -----------------

    def finish(self) -> Translation:
        """Plan the transformed code, give the graph its outputs, and hand everything on."""
        plan, no_resume, last = None, None, self.instructions[self.state.ip - 1]
        try:
            plan = (plan_return(self.code, self.returned, last.offset) if self.returned is not None
                    else plan_break(self.code, self.instructions, self.state.stack, self.state.locals,
                                    self.state.kw_names, self.broke.offset))
        except CannotResume as e:
            no_resume = str(e)
            if self.returned is not None:  # traced to the end, but the value can't be rebuilt: a break at the return
                reason = f"returning {self.returned.describe()} is not supported: the compiled code can't rebuild it"
                self.broke, self.returned = self.break_at(last, reason, "unsupported-return"), None
        # The graph leaves grad mode as it found it (a break inside a ``with torch.no_grad()`` block ends the graph
        # inside the block), and so does tracing: the switch back is its last node before the output.
        if torch.is_grad_enabled() != self.output.initial_grad_mode:
            self.output.set_grad_mode(self.output.initial_grad_mode)
        self.output.graph.output(plan.graph_outputs if plan else ())
        # The tensor inputs (and the caller's lists and dicts) were distinct objects: ``a is b``, sets and lookups
        # relied on it.
        sources = list(self.output.inputs) + [src for _, src, _ in self.output.caller_containers.values()]
        if len(sources) > 1:
            expr = f"len({{id(t) for t in ({', '.join(sources)})}}) == {len(sources)}"
            self.guards.add(expr, "NO_ALIASING", "the tensor inputs were distinct objects")
        # SHAPE_ENV: what the trace assumed about symbolic sizes (see shapes.py)
        for expr, reason, actual, expected in self.output.shapes.guards():
            self.guards.add(expr, "SHAPE_ENV", reason, None, actual, expected)
        self.output.remove_dead_nodes()
        # the submodules: torch.cond's branch graphs
        gm = torch.fx.GraphModule(self.output.submodules, self.output.graph, class_name=self.code.co_name)
        if self.broke is not None:  # now that the plan is known: where the resume functions continue
            resumes_at = tuple(p.offset for p in plan.resumes) if plan else ()
            self.broke = replace(self.broke, resumes_at=resumes_at, no_resume_reason=no_resume)
        artifact = TranslationArtifact(self.code.co_qualname, tuple(self.steps), self.broke)
        return Translation(gm, dict(self.output.inputs), tuple(self.guards.guards.values()), self.guard_objects,
                           artifact, plan, self.output.shapes, self.guards.tensor_check(self.guard_objects))

    def break_at(self, inst: bc.Inst, reason: str, kind: str) -> GraphBreak:
        """A graph break at ``inst``, in the user's code (``finish`` adds where the frame resumes)."""
        line = inst.line or self.code.co_firstlineno
        return GraphBreak(reason, self.code.co_filename, line, self.source.line(line), inst.offset, inst.opname, kind,
                          self.label)

    # -- what variables and builtins ask of the translator (``tx``) ----------------------
    # (defined in builder.py and calls.py, with the translator as first argument)

    wrap = builder.wrap
    call_python = calls.call_python
    call_method = calls.call_method

    def inline_code(self, code: types.CodeType, globals_: dict, args: list[Variable], kwargs: dict[str, Variable],
                    defaults: list[Variable], kwdefaults: dict[str, Variable], closure: list[Variable]) -> Variable:
        """Trace a call of ``code`` into this graph with a child translator (see :class:`InliningTranslator`)."""
        local_vars = calls.bind_arguments(code, args, kwargs, defaults, kwdefaults)
        child = InliningTranslator(self, code, globals_, local_vars, closure)
        self.output.events.append(f"inlining {code.co_qualname}")
        return child.run_inline()

    def push(self, v: Variable) -> None:
        self.state.stack.append(v)

    def pop(self) -> Variable:
        return self.state.stack.pop()

    def popn(self, n: int) -> list[Variable]:
        """The top ``n`` items, popped, in the order they were pushed."""
        return [self.pop() for _ in range(n)][::-1]

    def push_loaded(self, inst: bc.Inst, value: Variable) -> None:
        """Push what a load produced, after a NULL when the instruction's flag asks for one (a method
        load, or ``LOAD_GLOBAL`` of a function about to be called)."""
        if inst.flag:
            self.push(NullVariable())
        self.push(value)

    # -- the stack and no-ops --------------------------------------------------------

    def NOP(self, inst):
        """Does nothing (also PRECALL on 3.11)."""

    # ``COPY_FREE_VARS n`` does nothing here either: the frame starts with its closure's cells (enter_frame)
    RESUME = COPY_FREE_VARS = NOP

    def POP_TOP(self, inst):
        self.pop()

    def PUSH_NULL(self, inst):
        """``PUSH_NULL`` -- marks a plain function call (no ``self``)."""
        self.push(NullVariable())

    def COPY(self, inst):
        self.push(self.state.stack[-inst.arg])

    def SWAP(self, inst):
        stack = self.state.stack
        stack[-1], stack[-inst.arg] = stack[-inst.arg], stack[-1]

    # -- locals ----------------------------------------------------------------------

    def LOAD_CONST(self, inst):
        """``LOAD_CONST 2`` -- a literal from co_consts."""
        self.push(wrap_constant_result(inst.argval))

    def load_local(self, name: str) -> Variable:
        if name not in self.state.locals:
            raise Unsupported(f"local variable {name!r} is used before it is assigned", "exception")
        if not isinstance(value := self.state.locals[name], Variable):
            # an argument read for the first time: wrap and guard it
            value = self.state.locals[name] = self.wrap(value.value, name)
        return value

    def LOAD_FAST(self, inst):
        """``LOAD_FAST x`` -- a local or an argument; an argument is wrapped on first read."""
        self.push(self.load_local(inst.argval))

    def STORE_FAST(self, inst):
        """``STORE_FAST y`` -- (also restores what 3.12's LOAD_FAST_AND_CLEAR saved)."""
        if isinstance(value := self.pop(), variables.UnboundVariable):
            # the local had no value before the comprehension: none again
            return self.DELETE_FAST(inst)
        self.state.locals[inst.argval] = value

    def DELETE_FAST(self, inst):
        self.state.locals.pop(inst.argval, None)

    def LOAD_FAST_AND_CLEAR(self, inst):
        """3.12 inlined comprehension: ``LOAD_FAST_AND_CLEAR a`` saves the outer ``a``."""
        self.push(self.load_local(inst.argval) if inst.argval in self.state.locals else variables.UnboundVariable())
        self.state.locals.pop(inst.argval, None)

    # -- globals and builtins ------------------------------------------------------------

    def LOAD_GLOBAL(self, inst):
        """``LOAD_GLOBAL torch`` -- a global (or builtin), guarded by value or identity."""
        if inst.argval in self.globals:  # compiled code reaches the compiled function's own globals as ``G``
            # ``G``, or ``___obj_N`` for an inlined function's module
            where = builder.register_object(self, self.globals)
            return self.push_loaded(inst, self.wrap(self.globals[inst.argval], f"{where}[{inst.argval!r}]"))
        if inst.argval not in self.builtins:
            raise Unsupported(f"name {inst.argval!r} is not defined", "name-error")
        self.push_loaded(inst, ObjectVariable(self.builtins[inst.argval]))

    def IMPORT_NAME(self, inst):
        """``import math`` inside the function: the import happens now, at compile time."""
        fromlist, level = self.pop().as_python(), self.pop().as_python()
        self.push(ObjectVariable(__import__(inst.argval, self.globals, None, fromlist, level)))

    def IMPORT_FROM(self, inst):
        self.push(self.state.stack[-1].getattr(self, inst.argval))

    # -- closure cells -----------------------------------------------------------------
    # Every name the DEREF instructions and LOAD_CLOSURE name has a cell in ``state.cells``: a free
    # variable from the frame's start (enter_frame), a cell variable from MAKE_CELL, in the code's prologue.

    def MAKE_CELL(self, inst):
        """``MAKE_CELL y`` -- ``y`` is captured by an inner function: its value moves to a cell."""
        name = inst.argval
        self.state.cells[name] = CellVariable(self.load_local(name) if name in self.state.locals else None, name)
        self.state.locals.pop(name, None)

    def read_cell(self, cell: CellVariable) -> Variable:
        if cell.cell is not None and cell.contents is None:  # a real cell, read for the first time
            # (an empty cell, a free variable not bound yet, raises ValueError: the user's exception)
            value = Unsupported.if_raises(f"reading free variable {cell.name!r}", lambda: cell.cell.cell_contents)
            cell.contents = self.wrap(value, cell.source)
        if cell.contents is None:
            raise Unsupported(f"free variable {cell.name!r} is used before it is assigned", "exception")
        return cell.contents

    def LOAD_DEREF(self, inst):
        """``LOAD_DEREF y`` -- read a closure cell (``nonlocal`` / captured variable)."""
        self.push(self.read_cell(self.state.cells[inst.argval]))

    def STORE_DEREF(self, inst):
        """``STORE_DEREF y`` -- assign a closure cell; a real outer function's cell: a break."""
        cell = self.state.cells[inst.argval]
        if cell.cell is not None:
            raise Unsupported(f"assigning `nonlocal {inst.argval}` changes a variable of an enclosing function "
                              "outside the compiled code", "mutation")
        self.output.remember(cell, "contents")
        cell.contents = self.pop()

    def LOAD_CLOSURE(self, inst):
        """``LOAD_CLOSURE y`` -- push the cell itself, to build an inner function's closure."""
        self.push(self.state.cells[inst.argval])

    # -- attributes -----------------------------------------------------------------------

    def LOAD_ATTR(self, inst):
        """``LOAD_ATTR shape`` -- attribute of the value on top of the stack.

        ``LOAD_METHOD sin`` (3.12: ``LOAD_ATTR`` with its low bit set) is the same with a NULL pushed
        first (the flag): [NULL, bound callable]; CALL treats both layouts alike."""
        self.push_loaded(inst, self.pop().getattr(self, inst.argval))

    LOAD_METHOD = LOAD_ATTR

    def LOAD_SUPER_ATTR(self, inst):
        """3.12: ``LOAD_GLOBAL super; LOAD_DEREF __class__; LOAD_FAST self; LOAD_SUPER_ATTR f``."""
        super_, cls, self_var = self.popn(3)  # ``super(cls, self).f``, as CPython does
        self.push_loaded(inst, super_.call(self, [cls, self_var], {}).getattr(self, inst.argval))

    def STORE_ATTR(self, inst):
        """``STORE_ATTR name`` -- ``obj.name = v``: changes an object the caller can see."""
        # [value, obj]: the object is read where it is (nothing to pop, the break restores the stack anyway)
        raise Unsupported(f"assigning {self.state.stack[-1].describe()}.{inst.argval} changes an object outside "
                          "the compiled code; not traced", "mutation")

    # -- calls (what a call *does* is decided in calls.py) -------------------------------

    def KW_NAMES(self, inst):
        """``KW_NAMES ('dim',)`` -- names of the keyword arguments of the next CALL."""
        self.state.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        """``CALL 2`` -- [NULL|callable, callable|self, *args] -> result (the last ``kw_names`` are keywords)."""
        null_or_fn, fn_or_self, *args = self.popn(inst.arg + 2)
        fn, args = (fn_or_self, args) if isinstance(null_or_fn, NullVariable) else (null_or_fn, [fn_or_self, *args])
        positional = len(args) - len(self.state.kw_names)
        kwargs, self.state.kw_names = dict(zip(self.state.kw_names, args[positional:])), ()
        self.push(fn.call(self, args[:positional], kwargs))

    def CALL_FUNCTION_EX(self, inst):
        """``f(*args, **kw)`` -- [NULL, callable, args tuple, kwargs dict if arg & 1] -> result."""
        _null, fn, args, *mapping = self.popn(3 + (inst.arg & 1))
        kwargs = {k.as_python(): mapping[0].getitem(self, k) for k in mapping[0].unpack(self)} if mapping else {}
        if not all(isinstance(k, str) for k in kwargs):
            raise Unsupported("**kwargs with non-string keys", "exception")
        self.push(fn.call(self, args.unpack(self), kwargs))

    def MAKE_FUNCTION(self, inst):
        """``MAKE_FUNCTION 8 (closure)`` -- a nested def or lambda:
        [defaults?, kwdefaults?, annotations?, closure?, code] -> function. It is inlined when called."""
        code = self.pop().as_python()
        closure = self.pop().unpack(self) if inst.arg & 0x08 else []
        _annotations = self.pop() if inst.arg & 0x04 else None  # not needed to run the function
        kwdefaults = dict(self.pop().items) if inst.arg & 0x02 else {}
        defaults = self.pop().unpack(self) if inst.arg & 0x01 else []
        self.push(variables.UserFunctionVariable(code, self.globals, defaults, kwdefaults, closure))

    # -- operators: tensors make nodes, constants fold ------------------------------------

    def BINARY_OP(self, inst):
        """``BINARY_OP +`` -- tensors make a node; constants fold; tensor ``+=`` is in place.

        (``x += y`` is ``operator.iadd``: ``record_call`` sees the change in the fake tensor's version and
        keeps the node.)"""
        b, a, op = self.pop(), self.pop(), inst.argrepr
        # a list's ``+=`` changes it in place, constant or not: folded on a copy, its other names would miss it
        if any(isinstance(v, TupleVariable) and not v.is_python_constant() for v in (a, b)) \
                and op.rstrip("=") in ("+", "*") or op in ("+=", "*=") and isinstance(a, ListVariable):
            return self.push(self.sequence_op(op, a, b))
        self.push(self.call_python(INPLACE_BINARY_OPS.get(op) or BINARY_OPS[op], [a, b], {}))

    def sequence_op(self, op: str, a: Variable, b: Variable) -> Variable:
        """``[x] + ys``, ``(x,) * 3``, ``xs += [y]``, ``xs *= 2`` on containers holding tensors, as Python does
        them: ``+`` joins two lists or two tuples only, and ``+=`` and ``*=`` change a list in place, so every
        name for it sees the change."""
        in_place = op in ("+=", "*=") and isinstance(a, ListVariable)
        seq = a if isinstance(a, TupleVariable) else b  # the list or tuple (a named tuple's result is a plain tuple)
        if op.startswith("*"):
            items = seq.items * (b if seq is a else a).as_python()  # repeated as many times as the other operand
        elif in_place or a.python_type() is b.python_type():  # (``+=`` extends a list by any sequence)
            items = a.unpack(self) + b.unpack(self)
        else:
            raise Unsupported(f"can only concatenate {a.python_type().__name__} to the same type", "exception")
        if in_place:
            a.before_change(self, f"list {op}")
            a.items[:] = items
            return a
        return (ListVariable if isinstance(seq, ListVariable) else TupleVariable)(items)

    def COMPARE_OP(self, inst):
        """``COMPARE_OP <`` -- on tensors a node (a bool tensor); on constants folded."""
        self.push(self.call_python(COMPARE_OPS[inst.argval], self.popn(2), {}))

    def IS_OP(self, inst):
        """``IS_OP 1`` -- ``a is not b``: known from what the variables are."""
        a, b = self.popn(2)
        known = a.is_python_constant() and b.is_python_constant() and not isinstance(a, TupleVariable)
        same = a.as_python() is b.as_python() if known else a is b  # two constants, or two variables
        self.push(ConstantVariable(same != bool(inst.arg)))

    def CONTAINS_OP(self, inst):
        """``CONTAINS_OP 0`` -- ``a in b`` (1: ``not in``)."""
        found = self.call_python(operator.contains, [self.pop(), self.pop()], {}).as_python()  # [container, item]
        self.push(ConstantVariable(bool(found) != bool(inst.arg)))

    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self.pop().truth()))

    def UNARY_NEGATIVE(self, inst):
        """``-x``, ``+x``, ``~x`` -- like a binary operator, through :data:`UNARY_OPS`.

        (3.12 spells ``+x`` ``CALL_INTRINSIC_1 INTRINSIC_UNARY_POSITIVE``, renamed by the table.)"""
        self.push(self.call_python(UNARY_OPS[inst.opname], [self.pop()], {}))

    UNARY_POSITIVE = UNARY_INVERT = UNARY_NEGATIVE

    # -- subscripts and slices ------------------------------------------------------------

    def BINARY_SUBSCR(self, inst):
        """``BINARY_SUBSCR`` -- ``a[b]``: a tensor records a node; a container gives an item.

        3.12's ``BINARY_SLICE`` is ``a[lo:hi]`` with the bounds on the stack, [container, lo, hi]: the same
        with the slice made of them."""
        index = self.make_slice(self.popn(2)) if inst.opname == "BINARY_SLICE" else self.pop()
        self.push(self.pop().getitem(self, index))

    BINARY_SLICE = BINARY_SUBSCR

    def STORE_SUBSCR(self, inst):
        """``STORE_SUBSCR`` -- ``a[i] = v``: [v, a, i]. On a tensor, an in-place node that stays.

        3.12's ``STORE_SLICE`` is ``a[lo:hi] = v``, [v, a, lo, hi]: the same with the slice made of the bounds."""
        key = self.make_slice(self.popn(2)) if inst.opname == "STORE_SLICE" else self.pop()
        obj, value = self.pop(), self.pop()
        obj.setitem(self, key, value)

    STORE_SLICE = STORE_SUBSCR

    def DELETE_SUBSCR(self, inst):
        """``del xs[i]``, ``del d[k]`` -- for lists and dicts made while tracing (a caller's: a break)."""
        key, obj = self.pop(), self.pop()
        if not isinstance(obj, ListVariable | DictVariable):
            raise Unsupported(f"del on {obj.describe()} is not traced", "mutation")
        obj.before_change(self, "del")
        del obj.items[key.as_python()]

    def make_slice(self, parts: list[Variable]) -> ConstantVariable:
        if not all(p.is_python_constant() for p in parts):
            raise Unsupported("a slice bound that is a tensor needs its value", "item")
        return ConstantVariable(slice(*(p.as_python() for p in parts)))

    def BUILD_SLICE(self, inst):
        self.push(self.make_slice(self.popn(inst.arg)))

    # -- building containers ---------------------------------------------------------------

    def BUILD_TUPLE(self, inst):
        """``(a, b)``, ``[a, b]``, ``{a, b}`` -- the builtin :data:`BUILDERS` names, run on the items as
        ``tuple((a, b))``, ``list((a, b))``, ``set((a, b))`` do (pybuiltins)."""
        self.push(self.call_python(BUILDERS[inst.opname], [TupleVariable(self.popn(inst.arg))], {}))

    BUILD_LIST = BUILD_SET = BUILD_TUPLE

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        self.push(DictVariable({flat[i].as_python(): flat[i + 1] for i in range(0, len(flat), 2)}))

    def BUILD_CONST_KEY_MAP(self, inst):
        """``{'a': x, 'b': y}`` -- [x, y, ('a', 'b')] -> dict."""
        self.push(DictVariable(dict(zip(self.pop().as_python(), self.popn(inst.arg)))))  # the keys first

    def LIST_TO_TUPLE(self, inst):
        """``(*a,)`` (3.12: ``CALL_INTRINSIC_1 INTRINSIC_LIST_TO_TUPLE``, renamed by the table)."""
        self.push(TupleVariable(list(self.pop().items)))

    def MAP_ADD(self, inst):
        """In a dict comprehension: [dict ..., key, value]."""
        value, key = self.pop(), self.pop()
        self.state.stack[-inst.arg].items[key.as_python()] = value

    def SET_ADD(self, inst):
        """``{x for ...}``, ``{*a}``, ``{**a, **b}``, ``[*a, *b]``, ``[x for ...]`` -- call the method
        :data:`CONTAINER_METHODS` names (``add``, ``update``, ``extend``, ``append``) on the set, dict or list
        ``arg`` slots down, with the popped value. As a method call it sees whether the container came from
        outside the graph: ``[*a, print(), x]`` resumes after the break with the list built so far, which the
        method changes only with a break of its own (appended to as a plain list, the item was lost)."""
        value = self.pop()
        self.state.stack[-inst.arg].call_method(self, CONTAINER_METHODS[inst.opname], [value], {})

    # DICT_MERGE, ``f(**a, **b)``: like DICT_UPDATE, plus a duplicate-key error we don't model
    SET_UPDATE = DICT_UPDATE = LIST_EXTEND = LIST_APPEND = DICT_MERGE = SET_ADD

    # -- unpacking ---------------------------------------------------------------------------

    def UNPACK_SEQUENCE(self, inst):
        """``a, b = t`` -- push the items, first on top."""
        if len(items := self.pop().unpack(self)) != inst.arg:
            raise Unsupported(f"unpacking {len(items)} values into {inst.arg} names (ValueError)", "exception")
        self.state.stack.extend(reversed(items))

    def UNPACK_EX(self, inst):
        """``a, *rest, b = t`` -- arg = before | (after << 8)."""
        before, after = inst.arg & 0xFF, inst.arg >> 8
        if len(items := self.pop().unpack(self)) < before + after:
            raise Unsupported("not enough values to unpack (ValueError)", "exception")
        rest = ListVariable(items[before:len(items) - after])
        self.state.stack.extend(reversed([*items[:before], rest, *items[len(items) - after:]]))  # first on top

    # -- strings -------------------------------------------------------------------------------

    def FORMAT_VALUE(self, inst):
        """``f"{x!r:>4}"`` -- arg & 3: conversion, arg & 4: a format spec is on the stack."""
        spec = self.pop().as_python() if inst.arg & 0x04 else ""
        if isinstance(value := self.pop(), variables.TensorVariable):
            raise Unsupported("formatting a tensor into a string needs its values", "print")
        # arg & 3: no conversion, !s, !r or !a
        self.push(ConstantVariable(format(FORMAT_CONVERSIONS[inst.arg & 0x03](value.as_python()), spec)))

    def BUILD_STRING(self, inst):
        self.push(ConstantVariable("".join(p.as_python() for p in self.popn(inst.arg))))

    # -- jumps: the condition must be known now -----------------------------------------------
    # ``if x.shape[0] > 2`` picks one path while tracing (the shape is guarded); ``if x.sum() > 0``
    # can't, and is a graph break of kind "data-dependent-branch". ``try`` costs nothing on 3.11+
    # (the exception table is used only when something raises): the except path is never traced.

    def JUMP_FORWARD(self, inst):
        """``JUMP_FORWARD``, ``JUMP_BACKWARD`` -- continue at the target (so does a jump taken, ``self.jump``)."""
        self.state.ip = self.index_of[inst.target]

    JUMP_BACKWARD = jump = JUMP_FORWARD

    def POP_JUMP_IF_TRUE(self, inst):
        """``POP_JUMP_IF_TRUE``, ``_FALSE``, ``_NONE``, ``_NOT_NONE`` -- pop the condition; jump when
        :data:`JUMP_CONDITIONS` says so. ``if x is None`` is known for every variable: a tensor is never None."""
        if JUMP_CONDITIONS[inst.opname](self.pop()):
            self.jump(inst)

    POP_JUMP_IF_FALSE = POP_JUMP_IF_NONE = POP_JUMP_IF_NOT_NONE = POP_JUMP_IF_TRUE

    def JUMP_IF_TRUE_OR_POP(self, inst):
        """3.11 ``a or b``: jump keeping ``a`` if it is true, else pop it (``a and b``:
        ``JUMP_IF_FALSE_OR_POP``, jump keeping ``a`` if it is false)."""
        self.jump(inst) if JUMP_CONDITIONS[inst.opname](self.state.stack[-1]) else self.pop()

    JUMP_IF_FALSE_OR_POP = JUMP_IF_TRUE_OR_POP

    # -- loops: the items are known now, so loops unroll -------------------------------------

    def GET_ITER(self, inst):
        """``for v in obj`` -- the items are known now (variables), so the loop unrolls."""
        self.push(self.call_python(iter, [self.pop()], {}))  # as ``iter(obj)`` does (pybuiltins)

    GET_YIELD_FROM_ITER = GET_ITER  # ``yield from it`` (in an inlined generator)

    def FOR_ITER(self, inst, *when_done: Variable):
        """``FOR_ITER`` -- push the next item, or pop the iterator and leave the loop.

        Push the next item of the iterator on top of the stack; when it is done, replace the
        iterator by ``when_done`` (nothing, for a loop; SEND passes its return value) and jump.

        (3.12 jumps to an END_FOR; the bytecode table moves the target past it, which
        is what CPython does at run time too.)"""
        if not isinstance(iterator := self.state.stack[-1], IteratorVariable):
            # e.g. a real iterator passed to a resume function
            raise Unsupported(f"iterating over {iterator.describe()}, a real iterator, is not traced")
        if (item := iterator.next(self)) is not None:
            return self.push(item)
        self.state.stack[-1:] = when_done
        self.jump(inst)

    def SEND(self, inst):
        """``yield from``'s loop: [iterator, sent] -> [iterator, next item], or, when the
        iterator is done, [return value] and a jump (past 3.12's END_SEND, as CPython does)."""
        self.pop()  # the value sent in: always None for an inlined generator
        self.FOR_ITER(inst, ConstantVariable(None))  # the return value of a finished generator: None

    # -- with blocks -----------------------------------------------------------------------------

    def BEFORE_WITH(self, inst):
        """``with torch.no_grad():`` -- [ctx] -> [exit function, ctx.__enter__()].

        The normal exit is an ordinary call of the exit function with (None, None, None);
        the exceptional exit is only reached through the exception table, never here."""
        # the exit function, then what `as` binds: each kind of context says how (Variable.enter)
        self.state.stack.extend(self.pop().enter(self))

    # -- return and generators --------------------------------------------------------------------

    def RETURN_VALUE(self, inst):
        """``RETURN_VALUE`` -- return the top of the stack.

        3.12: ``RETURN_CONST None`` -- LOAD_CONST then RETURN_VALUE in one: the constant is its argument."""
        self.returned = wrap_constant_result(inst.argval) if inst.opname == "RETURN_CONST" else self.pop()

    RETURN_CONST = RETURN_VALUE

    def RETURN_GENERATOR(self, inst):
        """A generator's first instruction. Inlined generators run to the end at once."""
        if self.yielded is None:
            raise Unsupported("calling a generator function here is not traced", "unsupported-call")
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        """``yield v`` -- collected; ``None`` is what the generator receives back.

        (``yielded`` is a list here: code that yields starts with RETURN_GENERATOR, which stops where it is None.)"""
        self.yielded.append(self.pop())
        self.push(ConstantVariable(None))


class InliningTranslator(InstructionTranslator):
    """Traces a called Python function into the caller's graph.

    ``helper(x)`` runs a child translator over ``helper``'s bytecode. It shares the
    caller's graph, fake tensors, guards and input list, so the nodes it records join
    the same graph; its return value comes back to the caller as a variable. A graph
    break inside the child is a break of the whole call (the caller stops at its
    ``CALL``), and the reason says where in the callee it happened. A generator
    function (a generator expression) runs to the end at once; what it yielded
    becomes an iterator. (Dynamo's InliningInstructionTranslator; it leaves out
    partial graphs inside a callee: Dynamo breaks the caller too.)
    """

    def __init__(self, parent: InstructionTranslator, code: types.CodeType, globals_: dict,
                 local_vars: dict[str, Variable], closure: list[Variable]):
        self.depth = parent.depth + 1
        if self.depth > self.MAX_INLINE_DEPTH:
            raise Unsupported(f"inlining {code.co_qualname} goes {self.depth} calls deep (recursion?)",
                              "unsupported-call")
        self.config, self.source, self.wrapped = parent.config, parent.source, parent.wrapped
        # shared with the caller: one graph, one set of guards, one list of inputs
        self.output, self.guards, self.guard_objects = parent.output, parent.guards, parent.guard_objects
        self.enter_frame(code, globals_, local_vars, closure)

    def run_inline(self) -> Variable:
        """Run to ``RETURN_VALUE``; a break propagates to the caller with this frame's location."""
        while self.returned is None:
            inst = self.instructions[self.state.ip]
            try:
                self.dispatch(inst)
            except Unsupported as e:
                if not getattr(e, "located", False):
                    e.reason = f"{e.reason} (inside {self.code.co_qualname}, {self.code.co_filename}:{inst.line})"
                    e.located = True
                raise
        return IteratorVariable(self.yielded) if self.yielded is not None else self.returned


# Loops are unrolled; this bounds the work of one translation (inlined calls included).
MAX_INSTRUCTIONS = 100_000

# BINARY_OP's argrepr -> the function it applies. In-place forms ("+=") are
# separate: on a tensor they change the caller's object.
BINARY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
              "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift}
# "+=" -> operator.iadd, "&=" -> operator.iand ...: each name is the binary one's with an "i" before it.
INPLACE_BINARY_OPS = {f"{sym}=": getattr(operator, f"i{fn.__name__.rstrip('_')}") for sym, fn in BINARY_OPS.items()}
UNARY_OPS = {"UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos, "UNARY_INVERT": operator.invert}
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
               ">=": operator.ge}
BUILDERS = {"BUILD_TUPLE": tuple, "BUILD_LIST": list, "BUILD_SET": set}
CONTAINER_METHODS = {"SET_ADD": "add", "SET_UPDATE": "update", "DICT_UPDATE": "update", "DICT_MERGE": "update",
                     "LIST_EXTEND": "extend", "LIST_APPEND": "append"}
# When each conditional jump is taken, given the variable it tests.
JUMP_CONDITIONS = {"POP_JUMP_IF_TRUE": lambda v: v.truth(), "POP_JUMP_IF_FALSE": lambda v: not v.truth(),
                   "POP_JUMP_IF_NONE": lambda v: v.is_none(), "POP_JUMP_IF_NOT_NONE": lambda v: not v.is_none(),
                   "JUMP_IF_TRUE_OR_POP": lambda v: v.truth(), "JUMP_IF_FALSE_OR_POP": lambda v: not v.truth()}
FORMAT_CONVERSIONS = {0: lambda value: value, 1: str, 2: repr, 3: ascii}

# Opcodes that have no handler on purpose, with the reason a user sees.
UNSUPPORTED: dict[str, str] = {
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
    **dict.fromkeys(("MATCH_CLASS", "MATCH_MAPPING", "MATCH_SEQUENCE", "MATCH_KEYS", "GET_LEN"),
                    "(a match statement) is not traced"),
    "STORE_GLOBAL": "(assigning a global) changes state outside the function; not traced",
    "DELETE_GLOBAL": "(deleting a global) changes state outside the function; not traced",
    "DELETE_ATTR": "(deleting an attribute) changes an object the caller can see; not traced",
    "SETUP_ANNOTATIONS": "(annotations at module level) is not traced",
    **dict.fromkeys(("GET_AITER", "GET_ANEXT", "END_ASYNC_FOR"), "(async for) is not traced"),
    "BEFORE_ASYNC_WITH": "(async with) is not traced",
    "WITH_EXCEPT_START": "(leaving a `with` block on an exception) is not traced",
    **dict.fromkeys(("CHECK_EG_MATCH", "PREP_RERAISE_STAR"), "(except*) is not traced"),
    "DELETE_DEREF": "(del of a closure variable) is not traced",
    "LOAD_NAME": "(module or class body code) is not traced: only functions are compiled",
    **dict.fromkeys(("STORE_NAME", "DELETE_NAME"), "(module or class body code) is not traced"),
    **dict.fromkeys(("LOAD_CLASSDEREF", "LOAD_LOCALS", "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"),
                    "(class body code) is not traced"),
    "PRINT_EXPR": "(interactive-mode expression printing) is not traced",
    "ASYNC_GEN_WRAP": "(async generators) is not traced",
    "CLEANUP_THROW": "(generator.throw) is not traced",
    "INTERPRETER_EXIT": "(the interpreter's own exit) never appears in a function",
    # 3.12's END_FOR (pops the exhausted iterator and its last value) and END_SEND ([iterator, value] -> [value]):
    # the bytecode table moves FOR_ITER's and SEND's targets past them, as CPython skips them at run time
    **dict.fromkeys(("END_FOR", "END_SEND"), "(3.12) is never reached: FOR_ITER and SEND jump past it (bytecode.py)"),
}


def translate(fn: types.FunctionType, args: tuple, kwargs: dict, source: SourceArtifact, config: Config,
              shapes: ShapePolicy | None = None, label: str = "") -> Translation:
    """The stage: run ``fn``'s bytecode symbolically on ``args`` (``label`` names the cache entry)."""
    return InstructionTranslator(fn, args, kwargs, source, config, shapes, label).run()
