"""Inlining: a call to a Python function is traced *into*, not recorded.

``helper(x)`` runs a child :class:`InliningTranslator` over ``helper``'s
bytecode. It shares the caller's graph, fake tensors, guards and input list,
so the nodes it records join the same graph; its return value comes back to
the caller as a variable. A graph break inside the child is a break of the
whole call (the caller stops at its ``CALL``), and the reason says where in
the callee it happened. A generator function (a generator expression) runs to
the end at once; what it yielded becomes an iterator.

Mirrors: torch/_dynamo/symbolic_convert.py (InliningInstructionTranslator)
and torch/_dynamo/variables/functions.py (argument binding).
Leaves out: partial graphs inside a callee (Dynamo breaks the caller too).
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import TYPE_CHECKING

from . import bytecode as bc
from .containers import DictVariable, TupleVariable
from .variables import RealCellVariable, Unsupported, UserFunctionVariable, Variable

if TYPE_CHECKING:
    pass


@functools.lru_cache(maxsize=512)
def instructions_of(code: types.CodeType) -> tuple[list[bc.Inst], dict[int, int]]:
    insts = bc.normalise(code)
    return insts, {inst.offset: i for i, inst in enumerate(insts)}


class InlineMixin:
    """Mixed into the translator: entry points for calling Python functions."""

    def inline_function(
        self,
        fn: types.FunctionType,
        source: str | None,
        args: list[Variable],
        kwargs: dict[str, Variable],
    ) -> Variable:
        """Inline a real Python function (a global helper, a method, ``Module.forward``)."""
        if not self.config.inline_user_functions:
            raise Unsupported(
                f"call to {fn.__qualname__}: inlining is turned off (config.inline_user_functions)",
                "unsupported-call",
            )
        defaults = [
            self.wrap(d, f"{source}.__defaults__[{i}]" if source else None)
            for i, d in enumerate(fn.__defaults__ or ())
        ]
        kwdefaults = {
            k: self.wrap(v, f"{source}.__kwdefaults__[{k!r}]" if source else None)
            for k, v in (fn.__kwdefaults__ or {}).items()
        }
        closure = [
            self.wrap_cell(c, n) for c, n in zip(fn.__closure__ or (), fn.__code__.co_freevars)
        ]
        return self.inline_code(
            fn.__code__, fn.__globals__, args, kwargs, defaults, kwdefaults, closure
        )

    def inline_user_function(
        self, fn: UserFunctionVariable, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """Inline a function made while tracing (nested ``def``, lambda, comprehension)."""
        return self.inline_code(
            fn.code, fn.globals, args, kwargs, fn.defaults, fn.kwdefaults, fn.closure
        )

    def inline_code(self, code, globals_, args, kwargs, defaults, kwdefaults, closure) -> Variable:
        from .translator import InliningTranslator

        local_vars = bind_arguments(code, args, kwargs, defaults, kwdefaults)
        child = InliningTranslator(self, code, globals_, local_vars, closure)
        self.output.events.append(f"inlining {code.co_qualname}")
        return child.run_inline()

    def wrap_cell(self, cell: types.CellType, name: str) -> RealCellVariable:
        """A real closure cell; its contents are read through ``___obj_N.cell_contents``."""
        return RealCellVariable(cell, f"{self.register_object(cell)}.cell_contents", name=name)


def bind_arguments(
    code: types.CodeType,
    args: list[Variable],
    kwargs: dict[str, Variable],
    defaults: list[Variable],
    kwdefaults: dict[str, Variable],
) -> dict[str, Variable]:
    """Match call arguments to parameters the way CPython does (``*args`` and ``**kwargs`` too)."""
    cells = tuple(types.CellType() for _ in code.co_freevars) or None
    shape = types.FunctionType(code, {}, code.co_name, tuple(defaults) or None, cells)
    shape.__kwdefaults__ = dict(kwdefaults) or None
    signature = inspect.signature(shape)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"calling {code.co_qualname}: {e}", "exception") from None
    bound.apply_defaults()
    out: dict[str, Variable] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            value = TupleVariable(list(value))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            value = DictVariable(dict(value))
        if (
            name.startswith("implicit") and name not in code.co_varnames
        ):  # inspect renames ".0" (comprehensions)
            name = "." + name[len("implicit") :]
        out[name] = value
    return out
