"""Opcode handlers: jumps on compile-time values, loops, return, generators.

Part of :class:`~.translator.InstructionTranslator` (mixed in). A jump's
condition must be known now: ``if x.shape[0] > 2`` picks one path while
tracing (the shape is guarded); ``if x.sum() > 0`` can't, and is a graph break
of kind "data-dependent-branch". Loops over ranges, lists, dicts, modules
and zips are unrolled. ``try`` costs nothing on 3.11+ (the exception table is
used only when something raises), so a try body that doesn't raise traces as
straight-line code; the ``except`` path is never reached while tracing.

Mirrors: the jump and iteration handlers of torch/_dynamo/symbolic_convert.py.
"""

from __future__ import annotations

from .containers import IteratorVariable
from .variables import (
    ConstantVariable,
    GradModeVariable,
    ObjectVariable,
    Unsupported,
    Variable,
    grad_mode_of,
    wrap_constant_result,
)


class ControlHandlers:
    # -- jumps ---------------------------------------------------------------------

    def jump(self, inst) -> None:
        self.state.ip = self.index_of[inst.target]

    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    JUMP_BACKWARD = JUMP_FORWARD

    def POP_JUMP_IF_FALSE(self, inst):
        if not self.pop().truth():
            self.jump(inst)

    def POP_JUMP_IF_TRUE(self, inst):
        if self.pop().truth():
            self.jump(inst)

    def POP_JUMP_IF_NONE(self, inst):
        """``if x is None`` -- a tensor is never None, so this is known for every variable."""
        if self.is_none(self.pop()):
            self.jump(inst)

    def POP_JUMP_IF_NOT_NONE(self, inst):
        if not self.is_none(self.pop()):
            self.jump(inst)

    def is_none(self, v: Variable) -> bool:
        return isinstance(v, ConstantVariable) and v.value is None

    def JUMP_IF_FALSE_OR_POP(self, inst):
        """3.11 ``a and b``: jump keeping ``a`` if it is false, else pop it."""
        if not self.state.stack[-1].truth():
            self.jump(inst)
        else:
            self.pop()

    def JUMP_IF_TRUE_OR_POP(self, inst):
        """3.11 ``a or b``: jump keeping ``a`` if it is true, else pop it."""
        if self.state.stack[-1].truth():
            self.jump(inst)
        else:
            self.pop()

    # -- loops -------------------------------------------------------------------------

    def GET_ITER(self, inst):
        """``for v in obj`` -- the items are known now (variables), so the loop unrolls."""
        obj = self.pop()
        self.push(obj if isinstance(obj, IteratorVariable) else IteratorVariable(obj.unpack(self)))

    def FOR_ITER(self, inst):
        """``FOR_ITER`` -- push the next item, or pop the iterator and leave the loop.

        (3.12 jumps to an END_FOR; the bytecode table moves the target past it, which
        is what CPython does at run time too.)"""
        iterator = self.state.stack[-1]
        if not isinstance(iterator, IteratorVariable):  # e.g. a real iterator passed to a resume function
            raise Unsupported(f"iterating over {iterator.describe()}, a real iterator, is not traced")
        item = iterator.next(self)
        if item is None:
            self.pop()
            self.jump(inst)
        else:
            self.push(item)

    def END_FOR(self, inst):
        """3.12: pops the exhausted iterator and its last value (not reached: FOR_ITER skips it)."""
        self.popn(2)

    def GET_YIELD_FROM_ITER(self, inst):
        """``yield from it`` (in an inlined generator) -- the items are known now."""
        self.GET_ITER(inst)

    def SEND(self, inst):
        """``yield from``'s loop: [iterator, sent] -> [iterator, next item], or, when the
        iterator is done, [return value] and a jump (past 3.12's END_SEND, as CPython does)."""
        self.pop()  # the value sent in: always None for an inlined generator
        iterator = self.state.stack[-1]
        if not isinstance(iterator, IteratorVariable):  # e.g. a real iterator passed to a resume function
            raise Unsupported(f"iterating over {iterator.describe()}, a real iterator, is not traced")
        item = iterator.next(self)
        if item is None:
            self.pop()
            self.push(ConstantVariable(None))
            self.jump(inst)
        else:
            self.push(item)

    def END_SEND(self, inst):
        """3.12: [iterator, value] -> [value] (not reached: SEND skips it)."""
        del self.state.stack[-2]

    # -- with blocks -------------------------------------------------------------------

    def BEFORE_WITH(self, inst):
        """``with torch.no_grad():`` -- [ctx] -> [exit function, ctx.__enter__()].

        The normal exit is an ordinary call of the exit function with (None, None, None);
        the exceptional exit is only reached through the exception table, never here."""
        ctx = self.pop()
        if isinstance(ctx, ObjectVariable):
            ctx = grad_mode_of(ctx.value) or ctx
        if not isinstance(ctx, GradModeVariable):
            raise Unsupported(
                f"`with {ctx.describe()}:` is not traced: only torch.no_grad(), "
                "torch.enable_grad() and torch.set_grad_enabled() blocks are",
                "unsupported-opcode",
            )
        self.push(ctx.enter(self))
        self.push(ConstantVariable(None))

    # -- return and generators ------------------------------------------------------------

    def RETURN_VALUE(self, inst):
        self.returned = self.pop()

    def RETURN_CONST(self, inst):
        """3.12: ``RETURN_CONST None`` -- LOAD_CONST then RETURN_VALUE in one."""
        self.returned = wrap_constant_result(inst.argval)

    def RETURN_GENERATOR(self, inst):
        """A generator's first instruction. Inlined generators run to the end at once."""
        if self.yielded is None:
            raise Unsupported("calling a generator function here is not traced", "unsupported-call")
        self.push(ConstantVariable(None))

    def YIELD_VALUE(self, inst):
        """``yield v`` -- collected; ``None`` is what the generator receives back."""
        value = self.pop()
        if self.yielded is None:
            raise Unsupported("yield outside an inlined generator", "unsupported-opcode")
        self.yielded.append(value)
        self.push(ConstantVariable(None))
