"""Opcode handlers: calls and making functions.

Part of :class:`~.translator.InstructionTranslator` (mixed in). What a call
*does* (record, fold, inline) is decided in :mod:`.calls`; these handlers only
take the callable and its arguments off the stack.

Mirrors: CALL, CALL_FUNCTION_EX and MAKE_FUNCTION in torch/_dynamo/symbolic_convert.py.
"""

from __future__ import annotations

from . import bytecode as bc
from .containers import DictVariable
from .variables import NullVariable, Unsupported, UserFunctionVariable


class CallHandlers:
    def KW_NAMES(self, inst):
        """``KW_NAMES ('dim',)`` -- names of the keyword arguments of the next CALL."""
        self.state.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        """``CALL 2`` -- [NULL|callable, callable|self, *args] -> result."""
        args = self.popn(inst.arg)
        kw_names, self.state.kw_names = self.state.kw_names, ()
        kwargs = dict(zip(kw_names, args[len(args) - len(kw_names) :])) if kw_names else {}
        args = args[: len(args) - len(kw_names)]
        if bc.CALL_LAYOUT == "null_or_callable_first":
            second, first = self.pop(), self.pop()
            fn, args = (
                (second, args) if isinstance(first, NullVariable) else (first, [second, *args])
            )
        else:
            self_or_null, fn = self.pop(), self.pop()
            if not isinstance(self_or_null, NullVariable):
                args = [self_or_null, *args]
        self.push(fn.call(self, args, kwargs))

    def CALL_FUNCTION_EX(self, inst):
        """``f(*args, **kw)`` -- [NULL, callable, args tuple, kwargs dict if arg & 1] -> result."""
        kwargs = self.pop() if inst.arg & 1 else DictVariable({})
        args, fn = self.pop(), self.pop()
        if self.state.stack and isinstance(self.state.stack[-1], NullVariable):
            self.pop()
        if not isinstance(kwargs, DictVariable):
            kwargs = DictVariable(
                {k.as_python(): kwargs.getitem(self, k) for k in kwargs.unpack(self)}
            )
        keys = list(kwargs.items)
        if not all(isinstance(k, str) for k in keys):
            raise Unsupported("**kwargs with non-string keys", "exception")
        self.push(fn.call(self, args.unpack(self), dict(kwargs.items)))

    def MAKE_FUNCTION(self, inst):
        """``MAKE_FUNCTION 8 (closure)`` -- a nested def or lambda:
        [defaults?, kwdefaults?, annotations?,
        closure?, code] -> function. It is inlined when called."""
        code = self.pop().as_python()
        closure = self.pop().unpack(self) if inst.arg & 0x08 else []
        if inst.arg & 0x04:
            self.pop()  # annotations: not needed to run the function
        kwdefaults = dict(self.pop().items) if inst.arg & 0x02 else {}
        defaults = self.pop().unpack(self) if inst.arg & 0x01 else []
        self.push(UserFunctionVariable(code, self.globals, defaults, kwdefaults, closure))
