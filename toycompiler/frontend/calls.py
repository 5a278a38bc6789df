"""What happens when traced code calls something: record, fold, inline, or refuse.

:func:`call_python` is the one place that decides, in this order:

1. an ``nn.Module`` instance: inline its ``forward`` (after checking for hooks);
2. a builtin the translator models (``len``, ``zip``, ``isinstance``, ``record_function``...: :mod:`.pybuiltins`;
   ``torch.cond``: :mod:`.higher_order`);
3. a torch function, tensor operator or custom op: record a graph node;
4. a Python function or method: inline it (:func:`inline_function`; the child
   translator is made by ``tx.inline_code``);
5. anything pure on constants (``math.sqrt(2)``, ``"a".upper()``): fold it now;
6. otherwise: a graph break that names the callee.

Each function takes the translator ``tx`` first; the translator offers
``call_python`` and ``call_method`` to variables (``x.sin`` calls back through it).

Mirrors: the ``call_function`` methods of torch/_dynamo/variables/
(torch.py, builtin.py, functions.py, nn_module.py) and argument binding in
functions.py. Leaves out: hooks, ``torch.autograd.Function``, user classes
instantiated while tracing.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import types
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import torch

from .builder import wrap_cell
from .containers import wrap_constant_result
from .pybuiltins import HANDLERS, callable_name, fold
from .variables import CONSTANT_TYPES, ObjectVariable, TensorVariable, Unsupported, Variable, grad_mode_of

if TYPE_CHECKING:
    from .translator import InstructionTranslator as Tx


def graph_break() -> None:
    """Break the graph here on purpose (like ``torch._dynamo.graph_break()``); does nothing when run."""


# Tensor methods that need the tensor's data: a graph break, each with its own kind.
DATA_METHODS = {"item": "item", "tolist": "tolist", "numpy": "numpy", "__bool__": "data-dependent-branch",
                "__int__": "item", "__float__": "item", "__index__": "item", "cpu": None, "backward": "backward"}
# Functions that are never folded or recorded, with the kind of break they cause.
REFUSED = {
    print: ("print", "print() writes output, which a graph of tensor operations cannot do"),
    breakpoint: ("explicit", "breakpoint() stops in a debugger"),
    input: ("unsupported-call", "input() reads from the user"),
    setattr: ("mutation", "setattr() changes an object the caller can see; not traced"),
    id: ("unsupported-call", "id() of a traced value has no meaning at run time"),
    **dict.fromkeys((graph_break, torch._dynamo.graph_break), ("explicit", "a graph break asked for on purpose")),
}
OPERATOR_FUNCTIONS = {v for v in vars(operator).values() if callable(v)}
# Python functions that are pure on constant arguments, so a call can be folded.
FOLDABLE = {abs, len, min, max, int, float, bool, str, round, pow, tuple, list, dict, set, frozenset, isinstance,
            issubclass, range, divmod, sum, any, all, sorted, repr, format, hash, chr, ord, slice, type, callable,
            hasattr, complex, bin, hex, *(v for v in vars(math).values() if callable(v)), *OPERATOR_FUNCTIONS,
            # torch.Size, and torch's answers about dtypes and modes: constant while tracing
            torch.Size, torch.finfo, torch.iinfo, torch.device, torch.jit.is_scripting, torch.jit.is_tracing,
            torch.compiler.is_compiling}


def call_python(tx: Tx, fn: Any, args: list[Variable], kwargs: dict[str, Variable],
                source: str | None = None) -> Variable:
    """Call a compile-time-known callable: record it, fold it, inline it, or refuse."""
    if isinstance(fn, torch.nn.Module):
        return call_module(tx, fn, source, args, kwargs)
    # (a table lookup needs a hashable ``fn``: a list's bound ``append`` is, by identity; an instance of a dataclass
    # with ``eq=True`` is not)
    if isinstance(fn, Hashable) and fn in REFUSED:  # print(), breakpoint(), graph_break()...: always a graph break
        kind, why = REFUSED[fn]
        raise Unsupported(f"call to {fn.__name__}: {why}", kind)
    if getattr(fn, "__name__", None) == "clone" and grad_mode_of(getattr(fn, "__self__", None)):
        return grad_mode_of(fn.__self__)  # @torch.no_grad() makes a fresh context per call
    handler = HANDLERS.get(fn) if isinstance(fn, Hashable) else None  # the builtins pybuiltins models
    if handler and (result := handler(tx, *args, **kwargs)) is not NotImplemented:
        return result
    if any(_is_array(a) for a in [*args, *kwargs.values()]):
        raise Unsupported(f"{callable_name(fn)}(...) on a numpy array: arrays are not traced (their values are not "
                          "known while tracing, nor constants of the graph)", "numpy")
    if _foldable(fn) and not any(a.tensors() for a in [*args, *kwargs.values()]):
        return fold(tx, fn, args, kwargs)
    if isinstance(fn, type) and issubclass(fn, torch.nn.Module):  # ``nn.ReLU()`` inside the function: built now
        module = fold(tx, fn, args, kwargs).as_python()
        if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
            raise Unsupported(f"{fn.__name__}(...) made inside the function has parameters or buffers, freshly "
                              "initialised on every call; make it once outside the function", "unsupported-call")
        return ObjectVariable(module)  # (only modules without tensors)
    if isinstance(fn, torch._library.custom_ops.CustomOpDef):  # @torch.library.custom_op
        fn = fn._opoverload
    if is_torch_op(fn):
        return tx.output.record_call("call_function", fn, args, kwargs)
    return call_python_function(tx, fn, source, args, kwargs)


def call_python_function(tx: Tx, fn: Any, source: str | None, args: list[Variable],
                         kwargs: dict[str, Variable]) -> Variable:
    """A function, method or ``functools.partial`` written in Python: inlined."""
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        self_var = tx.wrap(fn.__self__, f"{source}.__self__" if source else None)
        return inline_function(tx, fn.__func__, None, [self_var, *args], kwargs)
    if isinstance(fn, types.FunctionType):
        return inline_function(tx, fn, source, args, kwargs)
    if isinstance(fn, functools.partial):
        inner = tx.wrap(fn.func, f"{source}.func" if source else None)
        keywords = {k: tx.wrap(v, None) for k, v in fn.keywords.items()}
        return inner.call(tx, [*(tx.wrap(a, None) for a in fn.args), *args], {**keywords, **kwargs})  # bound ones first
    if isinstance(getattr(type(fn), "__call__", None), types.FunctionType):  # an object of a class with __call__
        return call_python_function(tx, fn.__call__, source and f"{source}.__call__", args, kwargs)
    if isinstance(fn, type) and issubclass(fn, BaseException):
        raise Unsupported(f"{callable_name(fn)}(...) makes an exception to raise: raising is not traced (the graph "
                          "can't raise; the code around it runs as Python)", "exception")
    raise Unsupported(f"call to {callable_name(fn)} cannot be traced (not a torch function, a Python function, "
                      "or a builtin the translator models)", "unsupported-call")


def call_method(tx: Tx, x: TensorVariable, name: str, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
    """``x.name(*args)``: a node, a compile-time answer (``x.size()``), or a break."""
    if kind := DATA_METHODS.get(name):
        raise Unsupported(f"Tensor.{name}() needs the tensor's data, which is unknown while tracing", kind)
    if name in TensorVariable.STATIC_METHODS and not (name == "type" and args):
        return fold(tx, getattr(x.example, name), args, kwargs)
    # an in-place method (``x.add_(1)``) too: ``record_call`` sees the change in the fake tensor's version
    return tx.output.record_call("call_method", name, [x, *args], kwargs)


def call_module(tx: Tx, module: torch.nn.Module, source: str | None, args: list[Variable],
                kwargs: dict[str, Variable]) -> Variable:
    """``self.fc(x)``: inline ``type(fc).forward`` with ``self`` = the module."""
    hook_kinds = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    hooks = [name for name in hook_kinds if getattr(module, name, None)]
    # global hooks (nn.modules.module._global_forward_hooks...): the forward ones, and those of the kinds it has
    if any(getattr(torch.nn.modules.module, f"_global{n}", None) for n in {*hook_kinds[:2], *hooks}):
        hooks.append("global hooks")
    if hooks:
        raise Unsupported(f"{type(module).__name__} has hooks registered ({', '.join(hooks)}); "
                          "hooks are not traced", "hooks")
    if not isinstance(forward := type(module).forward, types.FunctionType):
        raise Unsupported(f"{type(module).__name__}.forward is not a Python function", "unsupported-call")
    # ``forward`` with the module first, as ``self`` (the variable already made for its source, if it has one)
    return call_python(tx, forward, [tx.wrap(module, source), *args], kwargs)


# -- inlining ---------------------------------------------------------------------------


def inline_function(tx: Tx, fn: types.FunctionType, source: str | None, args: list[Variable],
                    kwargs: dict[str, Variable]) -> Variable:
    """Inline a real Python function (a global helper, a method, ``Module.forward``)."""
    if not tx.config.inline_user_functions:
        raise Unsupported(f"call to {fn.__qualname__}: inlining is turned off (config.inline_user_functions)",
                          "unsupported-call")
    defaults = [tx.wrap(d, f"{source}.__defaults__[{i}]" if source else None)
                for i, d in enumerate(fn.__defaults__ or ())]
    kwdefaults = {k: tx.wrap(v, f"{source}.__kwdefaults__[{k!r}]" if source else None)
                  for k, v in (fn.__kwdefaults__ or {}).items()}
    closure = [wrap_cell(tx, c, n) for c, n in zip(fn.__closure__ or (), fn.__code__.co_freevars)]
    return tx.inline_code(fn.__code__, fn.__globals__, args, kwargs, defaults, kwdefaults, closure)


def bind_arguments(code: types.CodeType, args: list[Variable], kwargs: dict[str, Variable],
                   defaults: list[Variable], kwdefaults: dict[str, Variable]) -> dict[str, Variable]:
    """Match call arguments to parameters the way CPython does (``*args`` and ``**kwargs`` too)."""
    cells = tuple(types.CellType() for _ in code.co_freevars) or None
    shape = types.FunctionType(code, {}, code.co_name, tuple(defaults) or None, cells)
    shape.__kwdefaults__ = dict(kwdefaults) or None
    bound = Unsupported.if_raises(f"calling {code.co_qualname}", lambda: inspect.signature(shape).bind(*args, **kwargs))
    bound.apply_defaults()
    renamed = {f"implicit{n[1:]}": n for n in code.co_varnames if n.startswith(".")}  # inspect's name for ".0"
    # ``*args`` (a tuple) becomes a TupleVariable, ``**kwargs`` (a dict) a DictVariable
    return {renamed.get(name, name): wrap_constant_result(value) for name, value in bound.arguments.items()}


# -- the tables' questions -----------------------------------------------------------------


def is_torch_op(fn: Any) -> bool:
    """Functions recorded into the graph when called with tensors."""
    # an op, torch.Size, or a function marked by torch.compiler.allow_in_graph(fn)
    if isinstance(fn, torch._ops.OpOverload | torch._ops.OpOverloadPacket) or fn is torch.Size \
            or torch._dynamo.trace_rules.is_callable_allowed(fn):
        return True
    module = getattr(fn, "__module__", None) or ""
    # a class; a function of nn.Module's (forward, _conv_forward...): inlined, not recorded
    if isinstance(fn, type) or not isinstance(module, str) \
            or (module.startswith(("torch.nn.modules", "torch.nn.utils")) and isinstance(fn, types.FunctionType)):
        return False
    # in torch: "torch" or "torch.*", not torchvision, torchaudio ... (user code); or an operator function
    return module.split(".")[0] == "torch" and not module.startswith(("torch._dynamo", "torch.fx", "torch.compiler")) \
        or isinstance(fn, Hashable) and fn in OPERATOR_FUNCTIONS


def _foldable(fn: Any) -> bool:
    if isinstance(fn, Hashable) and fn in FOLDABLE:
        return True
    # a bound method of a constant: "a,b".split, (3).bit_length, torch.float32.is_floating_point (not None, the
    # __self__ of some builtin functions)
    if isinstance(fn, types.BuiltinMethodType | types.MethodWrapperType) and fn.__self__ is not None:
        return isinstance(fn.__self__, CONSTANT_TYPES)
    # a constant type (int, str, torch.dtype...), not type itself
    return isinstance(fn, type) and issubclass(fn, CONSTANT_TYPES) and fn is not type


def _is_array(v: Variable) -> bool:
    """A numpy array (after a ``.numpy()`` break, a resume function receives one)."""
    return isinstance(v, ObjectVariable) and f"{type(v.value).__module__}.{type(v.value).__name__}" == "numpy.ndarray"
