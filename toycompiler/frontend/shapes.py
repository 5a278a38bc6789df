"""Dynamic shapes: which tensor sizes are symbols, and the guards that keep them honest.

Sizes are static by default: the graph is specialised to ``x.shape == (4, 3)``
and a new size recompiles. A dimension becomes a *symbol* (``s0``) when

- ``compile(..., dynamic=True)`` asks for every dimension,
- ``toycompiler.mark_dynamic(x, 0)`` asks for one, or
- a recompile was caused by that dimension changing (automatic dynamic shapes,
  ``config.automatic_dynamic_shapes``): the second size seen makes it symbolic.

Symbols live in torch's ``ShapeEnv``, shared with the ``FakeTensorMode`` the
translator runs ops in, so a graph input's fake tensor has sizes like
``(s0, 3)`` and every op's output size is an expression in them. Sizes 0 and 1
are never made symbolic (broadcasting depends on them). What the trace assumed
about the symbols (``s0 >= 2``, ``Eq(s0, s1)`` from an ``x + y``) becomes
guards rendered over the user's names: ``x.shape[0] >= 2``,
``x.shape[0] == y.shape[0]``.

Mirrors: torch/_dynamo/variables/builder.py (wrap_to_fake_tensor_and_record,
automatic_dynamic) and torch/fx/experimental/symbolic_shapes.py (ShapeEnv,
produce_guards). Leaves out: unbacked symbols (``.item()`` sizes), constraint
solving and ``maybe_mark_dynamic``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
from torch.utils._sympy.printers import PythonPrinter

# Tensor attribute where mark_dynamic records its dims (torch's own mark_dynamic uses the second one).
MARK_ATTRIBUTE = "_toycompiler_dynamic_dims"
TORCH_MARK_ATTRIBUTE = "_dynamo_dynamic_indices"


class CountingShapeEnv(ShapeEnv):
    """A ShapeEnv naming symbols s0, s1, ... in order (newer torch hashes the source name: s77)."""

    def _generate_unique_id(self, source_name: str) -> int:
        attempt = next(i for i in itertools.count(len(self.unique_ids)) if i not in self.unique_ids)
        self.unique_ids.add(attempt)
        return attempt


def mark_dynamic(t: torch.Tensor, dim: int | list[int] | tuple[int, ...]) -> torch.Tensor:
    """Ask for ``t``'s dimension(s) ``dim`` to be symbolic from the first compile."""
    dims = {d % t.dim() for d in ([dim] if isinstance(dim, int) else dim)}  # -1: the last dim
    setattr(t, MARK_ATTRIBUTE, getattr(t, MARK_ATTRIBUTE, set()) | dims)
    return t


class ShapePolicy:
    """Decides per graph input which dims are symbolic; renders what the ShapeEnv learned as guards."""

    def __init__(self, dynamic: bool | None = None, previous: dict[str, tuple] | None = None,
                 automatic: bool = True, specialize_zero_one: bool = True) -> None:
        self.dynamic, self.previous, self.automatic = dynamic, previous or {}, automatic
        # No unbacked symbols: an op whose output size depends on the data (``x[x > 0]``,
        # ``nonzero``) raises on fake tensors, and the translator breaks there.
        self.shape_env = CountingShapeEnv(specialize_zero_one=specialize_zero_one, allow_scalar_outputs=False,
                                          allow_dynamic_output_shape_ops=False)
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env)
        self.symbols: dict[sympy.Symbol, str] = {}  # s0 -> "x.shape[0]", where it was first seen
        self.aliases: list[tuple[str, str]] = []  # ("y.shape[0]", "x.shape[0]"): same symbol
        self.dims: dict[str, frozenset[int]] = {}  # graph input source -> its symbolic dims
        self.why: dict[str, str] = {}  # "x.shape[0]" -> why it is symbolic

    def wanted(self, source: str, t: torch.Tensor) -> dict[int, str]:
        """Dims of ``t`` that should be symbolic, each with the reason. None of a parameter's or a module
        buffer's, even under ``dynamic=True``: their sizes are fixed by the model (Dynamo's
        ``force_parameter_static_shapes``), and symbolic, every size after a convolution was an expression
        in the weights' sizes too."""
        if self.dynamic is False or not t.is_contiguous() or isinstance(t, torch.nn.Parameter) or "_buffers[" in source:
            return {}
        if self.dynamic:
            return {d: "dynamic=True" for d in range(t.dim())}
        out = {d: "mark_dynamic" for d in [*getattr(t, MARK_ATTRIBUTE, ()), *getattr(t, TORCH_MARK_ATTRIBUTE, ())]}
        # a dim whose size changed (None: varied)
        if self.automatic and (seen := self.previous.get(source)) is not None and len(seen) == t.dim():
            out = {d: f"automatic dynamic: size changed ({'several sizes' if old is None else old} -> {new})"
                   for d, (old, new) in enumerate(zip(seen, t.shape)) if old != new} | out  # mark_dynamic's kept
        return out

    def fake(self, source: str, t: torch.Tensor) -> torch.Tensor:
        """The fake tensor standing for graph input ``t`` (symbolic sizes where wanted)."""
        if not (wanted := self.wanted(source, t)):
            return self.fake_mode.from_tensor(t, static_shapes=True)
        from torch._dynamo.source import LocalSource

        context = StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC if d in wanted else DimDynamic.STATIC for d in range(t.dim())])
        fake = self.fake_mode.from_tensor(t, symbolic_context=context, source=LocalSource(source))
        # the dims whose size is a symbol, and that symbol
        symbolic = {d: size.node.expr for d, size in enumerate(fake.shape)
                    if isinstance(size, torch.SymInt) and isinstance(size.node.expr, sympy.Symbol)}
        for d, expr in symbolic.items():
            where = f"{source}.shape[{d}]"
            self.why[where] = wanted[d]
            if (first := self.symbols.setdefault(expr, where)) != where:  # the same symbol as a size seen before
                self.aliases.append((where, first))
        self.dims[source] = frozenset(symbolic)
        return fake

    # -- guards --------------------------------------------------------------------

    def guards(self) -> Iterator[tuple[str, str, str, str]]:
        """(expression, reason, actual, expected) for every fact about the symbols."""
        for sym, where in self.symbols.items():
            lower = int(self.shape_env.var_to_range[sym].lower)  # every size symbol has a range, finite below
            yield (f"{where} >= {lower}", f"{where} is symbolic ({self.why[where]}); sizes below {lower} "
                   "are specialised", where, f">= {lower}")
        for where, first in self.aliases:
            yield f"{where} == {first}", "both sizes were equal when traced (the same symbol)", where, first
        for guard in self.shape_env.guards:
            if (text := self.render(guard.expr)) != "True":  # actual: the left-hand side
                lhs = self.render(guard.expr.lhs) if guard.expr.is_Relational else text  # (x.shape[3] - 1) // 32
                yield text, "the trace relied on it (a shape computation)", lhs, text

    def render(self, expr: Any) -> str:
        """A sympy condition over symbols as Python over the user's names: ``x.shape[0] == y.shape[0]``."""
        names = {sym: sympy.Symbol(where, integer=True) for sym, where in self.symbols.items()}
        for sym, value in self.shape_env.replacements.items():  # s1 -> s0 when the trace learned they are equal
            if sym not in names and isinstance(sym, sympy.Symbol):
                names[sym] = value.xreplace(names)
        # torch's printer knows its own functions (FloorDiv, PythonMod, ...): ``x.shape[0] // 2``
        return PythonPrinter().doprint(expr.xreplace(names))
