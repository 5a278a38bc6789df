"""Guards: the checks that decide whether a compiled entry can be reused.

While tracing, every fact the graph depends on (a tensor's dtype and shape, the
value of a global constant, which module object was called) becomes a
:class:`~toycompiler.artifacts.Guard`: a Python expression over the function's
arguments. The expressions are joined into one generated function with the
*same signature as the user's function*, so CPython binds the arguments for
free and the check costs one call.

A model brings hundreds of tensors (every parameter is a graph input), each
with six TENSOR_MATCH guards. Evaluated as Python, they would cost more than
the model: so the check function hands every tensor of static size to one C++
call, ``___check_tensors(x, ...)`` (torch's ``TensorGuards``, what TorchDynamo's
generated ``___check`` used before its guard manager). It checks what the
guards listed for each tensor say (type, dtype, device, sizes, strides,
requires_grad; the exact type and dispatch keys too), and the list still says
it guard by guard: :func:`first_failure` reads the list to explain a miss.
The paths themselves are cheap: ``self._modules['0']._parameters['weight']``,
dict lookups (see ``variables.attribute_source``).

This is the one place the frontend compiles generated *source* (``exec``): a
guard is an expression a reader can check by eye, and the check function is
that expression joined with ``and``. The code that replaces the user's
function is never generated as source: :mod:`.resume` assembles bytecode.

Mirrors: torch/_dynamo/guards.py (GuardBuilder, the generated ``___check``
function). Leaves out: the C++ guard manager tree (only tensors are checked in C++),
dict-version tags, and weakref-based ID guards.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._C._dynamo.guards import TensorGuards

from ..artifacts import Guard, GuardFailure, GuardsArtifact


@dataclass
class GuardBuilder:
    """Collects guards while the translator runs (one per cache entry)."""

    guards: dict[str, Guard] = field(default_factory=dict)  # by expression, in the order they were added
    checked: dict[str, torch.Tensor] = field(default_factory=dict)  # static tensors: source -> value
    covered: set[str] = field(default_factory=set)  # the guards ``___check_tensors`` stands for

    def add(self, expr: str, kind: str, reason: str, line: int | None = None,
            actual: str | None = None, expected: str | None = None) -> None:
        # each fact once, where it was first relied on
        self.guards.setdefault(expr, Guard(expr, kind, reason, line, actual, expected))

    def tensor(self, source: str, t: torch.Tensor, line: int | None, dynamic_dims: frozenset[int]) -> None:
        """TENSOR_MATCH: type, dtype, device, sizes, strides, requires_grad.

        With static sizes, the check function checks them all in one call (see the module docstring);
        with symbolic sizes, each stays a Python expression: the dim, the static sizes, contiguity
        (strides follow the sizes then)."""
        grad = f"{source}.requires_grad"
        checks = [(f"isinstance({source}, Tensor)", f"type({source}).__name__", "Tensor"),
                  (f"{source}.dtype == {t.dtype}", f"{source}.dtype", str(t.dtype)),
                  (device_guard(source, t.device), f"{source}.device", repr(t.device))]
        if dynamic_dims:
            checks += [(f"{source}.dim() == {t.dim()}", f"{source}.dim()", str(t.dim())),
                       (f"{source}.is_contiguous()", f"{source}.is_contiguous()", "True")]
            checks += [(f"{source}.shape[{d}] == {size}", f"{source}.shape[{d}]", str(size))
                       for d, size in enumerate(t.shape) if d not in dynamic_dims]
        else:
            shape, stride = tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride())
            checks += [(f"{source}.shape == {shape}", f"tuple({source}.shape)", str(shape)),
                       (f"{source}.stride() == {stride}", f"{source}.stride()", str(stride))]
            self.checked[source] = t
        checks.append((grad if t.requires_grad else f"not {grad}", grad, str(t.requires_grad)))
        for expr, actual, expected in checks:
            kind = "TYPE_MATCH" if expr.startswith("isinstance") else "TENSOR_MATCH"
            self.add(expr, kind, f"{source} is a graph input", line, actual, expected)
            if not dynamic_dims:
                self.covered.add(expr)

    def same_object(self, source: str, other: str, kind: str, line: int | None) -> None:
        """DUPLICATE_INPUT: ``source`` reached the object ``other`` did (``f(x, x)``): one variable for both."""
        self.add(f"{source} is {other}", "DUPLICATE_INPUT", f"{source} was the same {kind} as {other}", line)

    def constant(self, source: str, value: Any, line: int | None) -> None:
        """CONSTANT_MATCH: a Python value that was baked into the graph, also one whose repr isn't
        Python (``inf``, a ``torch.device``)."""
        why = f"{source} was read as a constant"
        if isinstance(value, float) and not math.isfinite(value):
            self.add(f"type({source}) is float", "TYPE_MATCH", why, line)
            self.add(f"str({source}) == {str(value)!r}", "CONSTANT_MATCH", why, line, source, repr(value))
            return
        literal = f"torch.device({str(value)!r})" if isinstance(value, torch.device) else repr(value)
        self.add(f"{source} == {literal}", "CONSTANT_MATCH", why, line, source, repr(value))
        if isinstance(value, bool | int | float):  # True == 1 == 1.0: also pin the type
            self.add(f"type({source}) is {type(value).__name__}", "TYPE_MATCH", why, line, f"type({source}).__name__",
                     type(value).__name__)

    def identity(self, source: str, value: Any, line: int | None, name: str) -> None:
        """ID_MATCH: an object (module, function) whose identity the trace relied on.

        A bound method is a new object on every attribute read, so it is matched by its ``__self__``
        (identity) and its function instead.
        """
        if isinstance(value, slice):  # immutable and rebuilt on every call: compare by value
            return self.constant(source, value, line)
        # A method bound to an object: its __self__ is neither missing nor a module (as for a module's function).
        if not isinstance(getattr(value, "__self__", None), types.ModuleType | None) and hasattr(value, "__name__"):
            why = f"{source} is a method of an object the trace relied on"
            bound_to, method_name = f"{source}.__self__", f"{source}.__name__"  # what each guard reads
            self.add(f"{bound_to} is {name}.__self__", "ID_MATCH", why, line, bound_to, f"{name}.__self__")
            self.add(f"{method_name} == {value.__name__!r}", "ID_MATCH", why, line, method_name, repr(value.__name__))
            return
        self.add(f"{source} is {name}", "ID_MATCH", f"{source} was called or read as an object", line, source, name)

    def tensor_check(self, objects: dict[str, Any]) -> TensorCheck:
        """The static tensors' guards as one C++ check, registered as ``___check_tensors``."""
        if self.checked:
            objects["___check_tensors"] = TensorGuards(*self.checked.values(), dynamic_dims_sizes=None,
                                                       dynamic_dims_strides=None).check
        return TensorCheck(tuple(self.checked), frozenset(self.covered))


@dataclass(frozen=True)
class TensorCheck:
    """Which tensors ``___check_tensors`` checks, and which guards of the list it stands for."""

    sources: tuple[str, ...] = ()
    covers: frozenset[str] = frozenset()


def device_guard(source: str, device: torch.device) -> str:
    """The cheapest readable device check: ``x.is_cpu`` reads a flag; ``x.device == ...`` builds an object."""
    if device.type == "cpu":
        return f"{source}.is_cpu"
    if device.type == "cuda" and device.index is not None:
        return f"{source}.get_device() == {device.index}"  # -1 on CPU, so this checks the type too
    return f"{source}.device == torch.device({str(device)!r})"


def signature_params(code: types.CodeType) -> str:
    """The parameter list of ``code`` as source, without defaults: ``x, y, /, z, *args, k, **kw``.

    ``inspect`` reads it from a function made of the bare code (no defaults, no annotations)."""
    cells = tuple(types.CellType() for _ in code.co_freevars) or None
    return str(inspect.signature(types.FunctionType(code, {}, None, None, cells)))[1:-1]


def guards_artifact(guards: tuple[Guard, ...], params: str, tensors: TensorCheck = TensorCheck()) -> GuardsArtifact:
    """The guards and the source of the check function: ``def check(<params>): return (g1 and g2 ...)``.

    The tensor check comes last: the guards before it (``self._modules['0'] is ___obj_1``) make sure
    the paths it reads lead somewhere.
    """
    exprs = [g.expr for g in guards if g.expr not in tensors.covers]
    exprs += [f"___check_tensors({', '.join(tensors.sources)})"] if tensors.sources else []
    body = "\n        and ".join(exprs) or "True"
    return GuardsArtifact(guards, f"def check({params}):\n    return (\n        {body}\n    )\n")


def compile_check(artifact: GuardsArtifact, objects: dict[str, Any], like: Callable) -> Callable[..., bool]:
    """Turn the guard source into a function with the same signature (and defaults) as ``like``."""
    return _define(artifact.code, "check", objects, like)[0]


def _define(source: str, name: str, objects: dict[str, Any], like: Callable) -> tuple[Callable, dict[str, Any]]:
    """The function ``name`` defined by ``source``, with ``like``'s defaults, and the namespace it runs in
    (the guards' names: ``torch``, ``G``, ``___obj_0``...)."""
    # The names guard expressions may use; the user's argument names, local to the function, come first.
    namespace = {"torch": torch, "Tensor": torch.Tensor, "G": like.__globals__, **objects}
    exec(compile(source, "<guards>", "exec"), namespace)
    fn = namespace[name]
    fn.__defaults__, fn.__kwdefaults__ = getattr(like, "__defaults__", None), getattr(like, "__kwdefaults__", None)
    return fn, namespace


def first_failure(artifact: GuardsArtifact, objects: dict[str, Any], params: str, like: Callable,
                  args: tuple, kwargs: dict, entry: str) -> GuardFailure:
    """Evaluate guards one by one to say which failed and what the value was (only on a miss)."""
    bind, namespace = _define(f"def frame_locals({params}):\n    return locals()\n", "frame_locals", objects, like)
    scope = dict(namespace, **bind(*args, **kwargs))
    for g in artifact.guards:
        ok, actual = _evaluate(g.expr, scope)
        if not ok:
            if actual is None:  # no exception: show what the guard read
                value, error = _evaluate(g.actual or "False", scope)
                actual = error or repr(value)
            return GuardFailure(entry, g.expr, g.expected or "True", actual)
    return GuardFailure(entry, "(check function failed though each guard passed alone)", "True", "False")


def _evaluate(expr: str, scope: dict[str, Any]) -> tuple[Any, str | None]:
    """``expr``'s value, or the exception it raised as text (a failing guard may raise: ``.shape`` of a
    non-tensor)."""
    try:
        return eval(expr, scope), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
