"""Loop-level IR: buffers, and the expressions that compute one element of them.

A kernel computes every element of an output buffer. The IR says *how one
element is computed*, as a small expression tree over symbolic indices
``d0, d1, ...`` (one per output dimension): ``Load(buf, index)``, ``Const``,
``Op(name, args)``. Index expressions are sympy, so views (transpose,
broadcast, slicing) are nothing but index arithmetic inside a ``Load``.

Everything here is frozen data and prints as text; no closures.

Mirrors: torch/_inductor/ir.py (Pointwise, Reduction, ComputedBuffer, Layout).
Leaves out: Inductor's inner functions (closures), mutation, and fallback kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import sympy
import torch


def index_vars(n: int, prefix: str = "d") -> tuple[sympy.Symbol, ...]:
    """Symbols for an n-d iteration space: d0 (outermost) ... d{n-1} (innermost)."""
    return tuple(sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True) for i in range(n))


def contiguous_strides(size: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    strides, acc = [], sympy.Integer(1)
    for s in reversed(size):
        strides.append(acc)
        acc = acc * s
    return tuple(reversed(strides))


def linear_index(idx: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
    return sympy.expand(sum((i * s for i, s in zip(idx, strides)), sympy.Integer(0)))


def store_index(ranges: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Where element (d0, d1, ...) of a contiguous buffer of these sizes lives (size-1 dims index 0)."""
    dims = index_vars(len(ranges))
    return linear_index(dims, contiguous_strides(ranges)).subs({d: 0 for d, s in zip(dims, ranges) if s == 1})


# -- expressions ----------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """Read one element of buffer ``buf`` at ``index`` (a sympy expression of d0, d1, ...)."""

    buf: str
    index: sympy.Expr

    def __str__(self) -> str:
        return f"load({self.buf}, {self.index})"


@dataclass(frozen=True)
class Const:
    value: Union[int, float, bool]
    dtype: torch.dtype

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Op:
    """An elementwise operation, e.g. ``Op('sin', (x,))``; ``dtype`` is the result's."""

    op: str
    args: tuple["Expr", ...]
    dtype: torch.dtype

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(str, self.args))})"


Expr = Union[Load, Const, Op]


def loads(e: Expr) -> list[Load]:
    """Every Load in an expression, in evaluation order."""
    if isinstance(e, Load):
        return [e]
    if isinstance(e, Op):
        return [ld for a in e.args for ld in loads(a)]
    return []


# -- buffers --------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    size: tuple[sympy.Expr, ...]
    stride: tuple[sympy.Expr, ...]
    dtype: torch.dtype
    device: str

    @property
    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.size) if self.size else sympy.Integer(1)

    @property
    def nbytes(self) -> sympy.Expr:
        return self.numel * torch.empty((), dtype=self.dtype).element_size()

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.size))}]"


@dataclass(frozen=True)
class InputBuffer:
    """A graph input: memory that exists before the kernels run."""

    name: str
    layout: Layout
    kind: str = "input"


@dataclass(frozen=True)
class Reduction:
    """Combine ``body`` over the reduction indices ``r0, r1, ...`` with ``op`` (sum, max, ...)."""

    op: str
    ranges: tuple[sympy.Expr, ...]


@dataclass(frozen=True)
class ComputedBuffer:
    """A buffer whose element at index (d0, d1, ...) is ``body``.

    Pointwise when ``reduction`` is None; otherwise the body also uses r0, r1, ...
    and is combined over them. Stored contiguously in ``layout``.
    """

    name: str
    layout: Layout
    body: Expr
    reduction: Reduction | None = None
    origins: tuple[str, ...] = ()  # FX node names
    lines: tuple[int, ...] = ()  # user source lines

    @property
    def kind(self) -> str:
        return "reduction" if self.reduction else "pointwise"

    @property
    def ranges(self) -> tuple[sympy.Expr, ...]:
        return self.layout.size


@dataclass(frozen=True)
class ExternKernel:
    """A call to a library kernel (matmul, conv): ``op(*inputs)`` written into a new buffer."""

    name: str
    layout: Layout
    op: str
    inputs: tuple[str, ...]
    origins: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()
    kind: str = "extern"


Buffer = Union[InputBuffer, ComputedBuffer, ExternKernel]


@dataclass(frozen=True)
class GraphIR:
    """The lowered graph: buffers in topological order and which ones are outputs."""

    inputs: tuple[InputBuffer, ...]
    buffers: tuple[Union[ComputedBuffer, ExternKernel], ...]
    outputs: tuple[str, ...]  # buffer names, in the FX graph's output order

    def buffer(self, name: str) -> Buffer:
        for b in (*self.inputs, *self.buffers):
            if b.name == name:
                return b
        raise KeyError(name)


def verify(ir: GraphIR) -> None:
    """Check the IR's invariants: names unique, every load reads an earlier buffer within bounds."""
    seen = {b.name for b in ir.inputs}
    for b in ir.buffers:
        assert b.name not in seen, f"{b.name} defined twice"
        if isinstance(b, ComputedBuffer):
            for ld in loads(b.body):
                assert ld.buf in seen, f"{b.name} reads {ld.buf} before it is computed"
                free = {s.name for s in ld.index.free_symbols}
                allowed = {f"d{i}" for i in range(len(b.layout.size))}
                if b.reduction:
                    allowed |= {f"r{i}" for i in range(len(b.reduction.ranges))}
                assert free <= allowed | _size_symbol_names(ir), f"{b.name}: index {ld.index} uses {free - allowed}"
        seen.add(b.name)
    for out in ir.outputs:
        assert out in seen, f"output {out} is not a buffer"


def _size_symbol_names(ir: GraphIR) -> set[str]:
    return {s.name for b in ir.inputs for e in b.layout.size for s in sympy.sympify(e).free_symbols}
