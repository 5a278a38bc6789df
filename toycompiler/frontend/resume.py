"""The code that runs instead of the user's function once it is compiled.

One mechanism builds it in every case: bytecode assembled with the ``bytecode``
package (which computes stack sizes, jump offsets, line and exception tables),
following a :class:`~.reconstruct.TransformPlan`. For a function traced
without a break, the transformed code is small: call the compiled graph with
the graph inputs, then rebuild the return value::

    transformed f(x):
        ___graph_out = __compiled_graph(x)
        return ___graph_out[0]

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
cache, and may break again. What to rebuild, and how each kind of symbolic
value is rebuilt as a real one: :mod:`.reconstruct`.

Mirrors: torch/_dynamo/resume_execution.py (ContinueExecutionCache,
generate_based_on_original_code_object), torch/_dynamo/codegen.py (PyCodegen)
and torch/_dynamo/symbolic_convert.py (create_call_resume_at).
Leaves out: breaks inside ``try``/``with`` blocks and in functions with cell
variables (those entries run eagerly), generators, and output aliasing
(a graph output is a new tensor even if eager would return a view).
"""

from __future__ import annotations

import builtins
import dis
import functools
import types
from collections.abc import Callable
from inspect import CO_NEWLOCALS, CO_OPTIMIZED, CO_VARARGS, CO_VARKEYWORDS
from typing import Any

import bytecode as pybc

from ..artifacts import BytecodeArtifact
from .bytecode import disassemble, index_by_offset, instruction_at
from .reconstruct import ORIGINS, Codegen, ResumePoint, TransformPlan, origin_of
from .variables import NullVariable


def build_transformed(fn: types.FunctionType, plan: TransformPlan, input_sources: list[str], objects: dict[str, Any],
                      compiled_graph: Callable | None, wrap_resume: Callable[[types.FunctionType], Callable]
                      ) -> tuple[Callable, BytecodeArtifact, tuple[BytecodeArtifact, ...]]:
    """The transformed function, its bytecode, and the bytecode of each resume function it calls.

    ``objects`` are the objects the graph inputs' sources name (``G``, ``___obj_0``);
    ``wrap_resume`` makes each resume function callable (the API compiles them lazily).
    """
    code = fn.__code__
    original = index_by_offset(code)[0]
    namespace: dict[str, Any] = {"__builtins__": builtins, **objects}
    cg = Codegen(set(original.argnames), namespace, plan.graph_outputs, code.co_firstlineno)
    cg.emit("RESUME", 0)
    if compiled_graph is not None:
        namespace["__compiled_graph"] = compiled_graph
        cg.load_global("__compiled_graph", push_null=True)
        for source in input_sources:
            cg.load_source(source)
        cg.call(len(input_sources))
        cg.emit("STORE_FAST", "___graph_out")
    resumes = [resume_code(origin_of(code)[0], point) for point in plan.resumes]
    for r in resumes:  # each a function of its own, in the user's globals and with the user's closure cells
        namespace[r.co_name] = wrap_resume(types.FunctionType(r, fn.__globals__, r.co_name, None, fn.__closure__))
    if plan.kind == "return":
        cg.reconstruct(plan.operands[0])
        cg.emit("RETURN_VALUE")
    elif plan.kind == "jump":
        _branch(cg, plan, instruction_at(code, plan.offset), resumes)
    else:
        _return_resume(cg, plan, 0, resumes, instruction_at(code, plan.offset))
    assembled = original.copy()  # the instructions, with the original's signature, names and place
    assembled[:] = cg.instrs
    assembled.flags = CO_OPTIMIZED | CO_NEWLOCALS | (original.flags & (CO_VARARGS | CO_VARKEYWORDS))
    assembled.docstring, assembled.freevars, assembled.cellvars = pybc.UNSET, [], []  # no docstring, no cells
    transformed = assembled.to_code()
    func = types.FunctionType(transformed, namespace, code.co_name, fn.__defaults__)
    func.__kwdefaults__ = fn.__kwdefaults__
    return func, disassemble(transformed, f"{code.co_qualname} (transformed)"), tuple(map(disassemble, resumes))


@functools.cache
def resume_code(code: types.CodeType, point: ResumePoint) -> types.CodeType:
    """A copy of ``code`` that takes the stack and live locals as arguments and continues at ``point.offset``.

    Cached (by ``code`` and ``point``), so each recompile of the caller finds the same resume function (and its
    cache entries).
    """
    original, index = index_by_offset(code)
    items = original.copy()  # with the code's names and place: the new signature is set below
    target = pybc.Label()
    items.insert(index[point.offset], target)  # where the code continues: the prologue's jump lands there
    prologue = Codegen(set(), {}, (), original[index[point.offset]].location.lineno)  # on the line it continues on
    for i, null in enumerate(point.stack_nulls):
        prologue.emit("PUSH_NULL") if null else prologue.emit("LOAD_FAST", f"___stack{i}")
    prologue.emit("JUMP_FORWARD", target)
    # RESUME's index is also its index among the instructions: before it are only instructions (MAKE_CELL,
    # COPY_FREE_VARS), no label (nothing jumps there) and no try block
    first_resume = next(k for k, item in enumerate(items) if isinstance(item, pybc.Instr) and item.name == "RESUME")
    items[first_resume + 1:first_resume + 1] = prologue.instrs
    n = sum(1 for origin, _ in ORIGINS.values() if origin is code)  # resume functions made from it so far
    items.argnames = [f"___stack{i}" for i, null in enumerate(point.stack_nulls) if not null] + list(point.locals)
    items.argcount, items.posonlyargcount, items.kwonlyargcount = len(items.argnames), 0, 0
    items.flags = original.flags & ~(CO_VARARGS | CO_VARKEYWORDS)
    items.name, items.qualname = f"__resume_at_{point.offset}_{n}", f"{code.co_qualname}.<resume at {point.offset}>"
    items.docstring = pybc.UNSET  # constants numbered by first use, as in every code this module makes
    new = items.to_code()
    # ``new``'s offsets -> the original's: the k-th instruction of ``code`` is the k-th of ``new`` up to RESUME,
    # and as many as the prologue has further on after it
    a, b = ([i for i in dis.get_instructions(c) if i.opname != "EXTENDED_ARG"] for c in (code, new))
    ORIGINS[new] = (code, {b[k if k <= first_resume else k + len(prologue.instrs)].offset: ins.offset
                           for k, ins in enumerate(a)})
    return new


def _return_resume(cg: Codegen, plan: TransformPlan, k: int, resumes: list[types.CodeType],
                   the_inst: pybc.Instr | None = None) -> None:
    """``return resume(*stack_below, <the instruction run for real>, *live_locals)``, for the ``k``-th
    resume point (no instruction for a branch: the jump already ran)."""
    point = plan.resumes[k]
    cg.load_global(resumes[k].co_name, push_null=True)
    cg.reconstruct(*(v for v in plan.below if not isinstance(v, NullVariable)))  # NULLs: pushed by the prologue
    if the_inst is not None:
        cg.reconstruct(*plan.operands)
        if plan.kind == "call":
            if plan.kw_names:
                cg.emit("KW_NAMES", plan.kw_names, the_inst.location)
            cg.call(len(plan.operands) - 2, the_inst.location)
        else:
            cg.emit(the_inst.name, the_inst.arg, the_inst.location)
    for local in point.locals:
        cg.load_local(plan, local)
    cg.call(sum(not null for null in point.stack_nulls) + len(point.locals))
    cg.emit("RETURN_VALUE")


def _branch(cg: Codegen, plan: TransformPlan, the_inst: pybc.Instr, resumes: list[types.CodeType]) -> None:
    """``if <tensor>: return resume_fallthrough(...) else: return resume_target(...)`` (same jump opcode)."""
    cg.reconstruct(plan.operands[0])
    taken = pybc.Label()
    # the original's opcode, forward: 3.11's POP_JUMP_BACKWARD_IF_TRUE (a while loop's test) jumps forward here
    cg.emit(the_inst.name.replace("_BACKWARD", "_FORWARD"), taken, the_inst.location)
    built = dict(cg.built)  # containers built before the jump; each branch builds its own after it
    _return_resume(cg, plan, 0, resumes)
    cg.instrs.append(taken)
    cg.built = built
    _return_resume(cg, plan, 1, resumes)
