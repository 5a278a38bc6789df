"""What happens when traced code calls something: record, fold, inline, or refuse.

``call_python`` is the one place that decides, in this order:

1. an ``nn.Module`` instance: inline its ``forward`` (after checking for hooks);
2. a builtin the translator models (``len``, ``zip``, ``isinstance``...: :mod:`.pybuiltins`);
3. a torch function, tensor operator or custom op: record a graph node;
4. a Python function or method: inline it (:mod:`.inline`);
5. anything pure on constants (``math.sqrt(2)``, ``"a".upper()``): fold it now;
6. otherwise: a graph break that names the callee.

Mirrors: the ``call_function`` methods of torch/_dynamo/variables/
(torch.py, builtin.py, functions.py, nn_module.py). Leaves out: hooks,
``torch.autograd.Function``, user classes instantiated while tracing.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import torch

from . import pybuiltins
from .containers import DictVariable, TupleVariable
from .resume import graph_break
from .variables import (
    CONSTANT_TYPES,
    FOLDABLE,
    BoundMethodVariable,
    ConstantVariable,
    ObjectVariable,
    PartialVariable,
    TensorMethodVariable,
    TensorVariable,
    Unsupported,
    Variable,
    grad_mode_of,
    is_torch_op,
    wrap_constant_result,
)

# Tensor methods that need the tensor's data: a graph break, each with its own kind.
DATA_METHODS = {
    "item": "item",
    "tolist": "tolist",
    "numpy": "numpy",
    "__bool__": "data-dependent-branch",
    "__int__": "item",
    "__float__": "item",
    "__index__": "item",
    "cpu": None,
    "backward": "backward",
}
# Functions that are never folded or recorded, with the kind of break they cause.
REFUSED = {
    print: ("print", "print() writes output, which a graph of tensor operations cannot do"),
    breakpoint: ("explicit", "breakpoint() stops in a debugger"),
    input: ("unsupported-call", "input() reads from the user"),
}


def _contains_tensor(v: Variable) -> bool:
    if isinstance(v, TensorVariable | TensorMethodVariable):
        return True
    if isinstance(v, TupleVariable):
        return any(_contains_tensor(i) for i in v.items)
    if isinstance(v, DictVariable):
        return any(_contains_tensor(i) for i in v.items.values())
    return False


def _name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    if isinstance(name, str):
        return (
            f"{module}.{name}"
            if isinstance(module, str) and module not in ("builtins", "__main__")
            else name
        )
    return type(fn).__name__


def _is_array(v: Variable) -> bool:
    """A numpy array (after a ``.numpy()`` break, a resume function receives one)."""
    return isinstance(v, ObjectVariable) and type(v.value).__name__ == "ndarray" and type(
        v.value
    ).__module__ == "numpy"


class CallDispatch:
    """Mixed into the translator: the call machinery that handlers and variables use."""

    def call_python(
        self, fn: Any, args: list[Variable], kwargs: dict[str, Variable], source: str | None = None
    ) -> Variable:
        """Call a compile-time-known callable: record it, fold it, inline it, or refuse."""
        if fn is graph_break or fn is getattr(torch._dynamo, "graph_break", graph_break):
            raise Unsupported("toycompiler.graph_break() called", "explicit")
        if isinstance(fn, torch.nn.Module):
            return self.call_module(fn, source, args, kwargs)
        _refuse(fn)
        if getattr(fn, "__name__", None) == "clone" and grad_mode_of(getattr(fn, "__self__", None)):
            return grad_mode_of(fn.__self__)  # @torch.no_grad() makes a fresh context per call
        handler = pybuiltins.handler_for(fn)
        if handler is not None:
            result = handler(self, args, kwargs)
            if result is not NotImplemented:
                return result
        if any(_is_array(a) for a in [*args, *kwargs.values()]):
            raise Unsupported(
                f"{_name(fn)}(...) on a numpy array: arrays are not traced (their values are not "
                "known while tracing, nor constants of the graph)",
                "numpy",
            )
        has_tensor = any(_contains_tensor(a) for a in [*args, *kwargs.values()])
        if not has_tensor and _foldable(fn):
            return self.fold(fn, args, kwargs)
        if isinstance(fn, type) and issubclass(fn, torch.nn.Module):
            return self.construct_module(fn, args, kwargs)
        if isinstance(fn, torch._library.custom_ops.CustomOpDef):  # @torch.library.custom_op
            fn = fn._opoverload
        if fn is torch.cond:
            from .higher_order import trace_cond

            return trace_cond(self, args, kwargs)
        if is_torch_op(fn):
            return self.record_call("call_function", fn, args, kwargs)
        return self.call_python_function(fn, source, args, kwargs)

    def call_python_function(
        self, fn: Any, source: str | None, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """A function, method or ``functools.partial`` written in Python: inlined."""
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            self_var = self.wrap(fn.__self__, f"{source}.__self__" if source else None)
            return self.inline_function(fn.__func__, None, [self_var, *args], kwargs)
        if isinstance(fn, types.FunctionType):
            return self.inline_function(fn, source, args, kwargs)
        if isinstance(fn, functools.partial):
            inner = self.wrap(fn.func, f"{source}.func" if source else None)
            bound = [self.wrap(a, None) for a in fn.args]
            keywords = {k: self.wrap(v, None) for k, v in fn.keywords.items()}
            return PartialVariable(inner, bound, keywords).call(self, args, kwargs)
        raise Unsupported(
            f"call to {_name(fn)} cannot be traced (not a torch function, a Python function, "
            "or a builtin the translator models)",
            "unsupported-call",
        )

    def fold(self, fn: Any, args: list[Variable], kwargs: dict[str, Variable]) -> Variable:
        """Run ``fn`` now on constant arguments; the result is a constant of the trace."""
        values = [a.as_python() for a in args]
        kw = {k: v.as_python() for k, v in kwargs.items()}
        try:
            result = fn(*values, **kw)
        except Exception as e:
            raise Unsupported(
                f"{_name(fn)}(...) raised {type(e).__name__}: {e} while tracing; "
                "exceptions are not traced",
                "exception",
            ) from e
        self.output.events.append(
            f"constant folded: {getattr(fn, '__name__', fn)}(...) = {result!r}"
        )
        return wrap_constant_result(result)

    def call_method(
        self,
        tensor: TensorVariable,
        name: str,
        args: list[Variable],
        kwargs: dict[str, Variable],
        as_property: bool = False,
    ) -> Variable:
        """``x.name(*args)``: a node, a compile-time answer (``x.size()``), or a break."""
        if name in DATA_METHODS and DATA_METHODS[name]:
            raise Unsupported(
                f"Tensor.{name}() needs the tensor's data, which is unknown while tracing",
                DATA_METHODS[name],
            )
        if name in TensorVariable.STATIC_METHODS and not (name == "type" and args):
            values = [a.as_python() for a in args]
            return wrap_constant_result(
                getattr(tensor.example, name)(
                    *values, **{k: v.as_python() for k, v in kwargs.items()}
                )
            )
        if as_property:
            return self.record_call("call_function", getattr, [tensor, ConstantVariable(name)], {})
        if name.endswith("_") and not name.startswith("_"):
            return self.record_inplace("call_method", name, tensor, [tensor, *args], kwargs)
        return self.record_call("call_method", name, [tensor, *args], kwargs)

    def record_inplace(
        self,
        op: str,
        target: Any,
        tensor: TensorVariable,
        args: list[Variable],
        kwargs: dict[str, Variable],
    ) -> Variable:
        """An in-place op (``x.add_(1)``, ``x += 1``): recorded like any other; ``record_call``
        notices the change through the fake tensor's version counter and keeps the node."""
        result = self.record_call(op, target, args, kwargs)
        if not isinstance(result, TensorVariable):
            raise Unsupported(f"in-place {target} did not return a tensor", "mutation")
        return result

    def call_module(
        self,
        module: torch.nn.Module,
        source: str | None,
        args: list[Variable],
        kwargs: dict[str, Variable],
    ) -> Variable:
        """``self.fc(x)``: inline ``type(fc).forward`` with ``self`` = the module."""
        hooks = [
            name
            for name in (
                "_forward_hooks",
                "_forward_pre_hooks",
                "_backward_hooks",
                "_backward_pre_hooks",
            )
            if getattr(module, name, None)
        ]
        from torch.nn.modules import module as module_mod

        if any(
            getattr(module_mod, f"_global{n}", None)
            for n in hooks + ["_forward_hooks", "_forward_pre_hooks"]
        ):
            hooks.append("global hooks")
        if hooks:
            raise Unsupported(
                f"{type(module).__name__} has hooks registered ({', '.join(hooks)}); "
                "hooks are not traced",
                "hooks",
            )
        self_var = self.wrap(module, source) if source else ObjectVariable(module)
        forward = type(module).forward
        if not isinstance(forward, types.FunctionType):
            raise Unsupported(
                f"{type(module).__name__}.forward is not a Python function", "unsupported-call"
            )
        return BoundMethodVariable(ObjectVariable(forward), self_var).call(self, args, kwargs)

    def construct_module(
        self, cls: type, args: list[Variable], kwargs: dict[str, Variable]
    ) -> Variable:
        """``nn.ReLU()`` inside the function: built now; only modules without tensors."""
        module = self.fold(cls, args, kwargs).as_python()
        if any(True for _ in module.parameters()) or any(True for _ in module.buffers()):
            raise Unsupported(
                f"{cls.__name__}(...) made inside the function has parameters or buffers, "
                "freshly initialised on every call; make it once outside the function",
                "unsupported-call",
            )
        return ObjectVariable(module)

    def call_variable(
        self, fn: Variable, args: list[Variable], kwargs: dict[str, Variable] | None = None
    ) -> Variable:
        return fn.call(self, args, kwargs or {})


def _refuse(fn: Any) -> None:
    """print(), breakpoint(), torch._dynamo.graph_break(): always a graph break."""
    if _hashable(fn) and fn in REFUSED:
        kind, why = REFUSED[fn]
        raise Unsupported(f"call to {fn.__name__}: {why}", kind)
    if _name(fn) in ("torch._dynamo.decorators.graph_break", "torch._dynamo.graph_break"):
        raise Unsupported("torch._dynamo.graph_break() asks for a graph break here", "explicit")


def _foldable(fn: Any) -> bool:
    if _hashable(fn) and fn in FOLDABLE:
        return True
    owner = getattr(fn, "__self__", None)
    # a bound method of a constant: "a,b".split, (3).bit_length, torch.float32.is_floating_point
    if (
        isinstance(fn, types.BuiltinMethodType | types.MethodWrapperType)
        and owner is not None
        and isinstance(owner, CONSTANT_TYPES)
    ):
        return True
    return isinstance(fn, type) and issubclass(fn, CONSTANT_TYPES) and fn is not type


def _hashable(fn: Any) -> bool:
    try:
        hash(fn)
        return True
    except TypeError:
        return False
