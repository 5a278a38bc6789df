"""FX node -> IR: a registry of lowerings keyed by ATen op.

Each FX node becomes one IR buffer whose body says how one element is
computed. Views (``view``, ``permute``, ``expand``, ...) create no buffer: they
change the index a consumer loads with. Whether buffers end up in the same
kernel is not decided here but in :mod:`.scheduler`.

During lowering a tensor is a :class:`TensorValue`: its size and a function
from indices to an IR expression. Those functions exist only while lowering;
what comes out (:class:`~toycompiler.backend.ir.GraphIR`) is plain data.

Mirrors: torch/_inductor/lowering.py (``register_lowering``, ``make_pointwise``)
and torch/_inductor/graph.py (GraphLowering.run_node).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import sympy
import torch
import torch.fx

from .. import provenance
from ..artifacts import BufferRow, IRArtifact
from .ir import (
    ComputedBuffer,
    Const,
    Expr,
    GraphIR,
    InputBuffer,
    Layout,
    Load,
    Op,
    contiguous_strides,
    index_vars,
    linear_index,
)

aten = torch.ops.aten


class LoweringError(Exception):
    """An op the backend cannot lower; the caller falls back to eager with this message."""


@dataclass
class TensorValue:
    """A tensor while lowering: size, dtype, and how to load element ``idx``."""

    size: tuple[sympy.Expr, ...]
    dtype: torch.dtype
    device: str
    loader: Callable[[tuple[sympy.Expr, ...]], Expr]
    buffer: str | None = None  # set when this value is exactly a stored buffer, contiguous


LOWERINGS: dict[Any, Callable[..., TensorValue]] = {}


def register_lowering(*ops: Any) -> Callable:
    def wrap(fn: Callable) -> Callable:
        for op in ops:
            LOWERINGS[op] = fn
        return fn
    return wrap


# -- pointwise ------------------------------------------------------------------


def broadcast_shapes(*sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    ndim = max((len(s) for s in sizes), default=0)
    out: list[sympy.Expr] = []
    for d in range(ndim):
        dim = sympy.Integer(1)
        for s in sizes:
            k = d - (ndim - len(s))
            if k >= 0 and s[k] != 1:
                dim = s[k]
        out.append(dim)
    return tuple(out)


def broadcast_loader(v: TensorValue, size: tuple[sympy.Expr, ...]) -> Callable[[tuple], Expr]:
    """Load ``v`` as if it had ``size``: leading dims dropped, size-1 dims pinned to index 0."""
    offset = len(size) - len(v.size)

    def load(idx: tuple) -> Expr:
        own = tuple(sympy.Integer(0) if s == 1 else idx[offset + k] for k, s in enumerate(v.size))
        return v.loader(own)
    return load


def cast(e: Expr, src: torch.dtype, dst: torch.dtype) -> Expr:
    """``e`` (of dtype ``src``) converted to ``dst``; no-op when they match."""
    return e if src == dst else Op("to_dtype", (e,), dst)


def make_pointwise(op: str, compute_from_inputs: bool = False) -> Callable[..., TensorValue]:
    """Lowering for an elementwise op: broadcast the inputs, cast them, apply ``op``."""

    def lower(node: torch.fx.Node, *args: Any, **kwargs: Any) -> TensorValue:
        if kwargs.get("alpha", 1) != 1:
            raise LoweringError(f"{node.target} with alpha={kwargs['alpha']} (decompose it first)")
        out = node.meta["val"]
        size = broadcast_shapes(*(a.size for a in args if isinstance(a, TensorValue)))
        compute = _compute_dtype(node) if compute_from_inputs else out.dtype

        def operand(a: Any) -> Callable[[tuple], Expr]:
            if isinstance(a, TensorValue):
                load = broadcast_loader(a, size)
                return lambda idx: cast(load(idx), a.dtype, compute)
            return lambda idx: Const(a, compute)

        operands = [operand(a) for a in args]

        def loader(idx: tuple) -> Expr:
            return Op(op, tuple(o(idx) for o in operands), out.dtype)
        return TensorValue(size, out.dtype, str(out.device), loader)
    return lower


def _compute_dtype(node: torch.fx.Node) -> torch.dtype:
    vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in node.args[:2]]
    return torch.result_type(*vals) if len(vals) == 2 else vals[0].dtype


POINTWISE_OPS = {
    aten.sin: "sin", aten.cos: "cos", aten.tan: "tan", aten.exp: "exp", aten.log: "log",
    aten.tanh: "tanh", aten.sigmoid: "sigmoid", aten.neg: "neg", aten.abs: "abs",
    aten.sqrt: "sqrt", aten.rsqrt: "rsqrt", aten.relu: "relu", aten.erf: "erf",
    aten.add: "add", aten.sub: "sub", aten.mul: "mul", aten.div: "div",
    aten.maximum: "maximum", aten.minimum: "minimum", aten.pow: "pow", aten.reciprocal: "reciprocal",
}
COMPARISON_OPS = {aten.gt: "gt", aten.lt: "lt", aten.ge: "ge", aten.le: "le", aten.eq: "eq", aten.ne: "ne"}

for _packet, _name in POINTWISE_OPS.items():
    register_lowering(_packet)(make_pointwise(_name))
for _packet, _name in COMPARISON_OPS.items():
    register_lowering(_packet)(make_pointwise(_name, compute_from_inputs=True))


# -- the driver -----------------------------------------------------------------


class GraphLowering:
    """Walks an ATen-level FX graph and builds a :class:`GraphIR`."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.inputs: list[InputBuffer] = []
        self.buffers: list[ComputedBuffer] = []
        self.values: dict[torch.fx.Node, Any] = {}

    def run(self) -> GraphIR:
        outputs: tuple[str, ...] = ()
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.values[node] = self.placeholder(node)
            elif node.op == "call_function":
                self.values[node] = self.call_function(node)
            elif node.op == "output":
                outputs = tuple(self.realize(self.values[n], n).buffer for n in node.args[0])
            else:
                raise LoweringError(f"FX op {node.op} ({node.target}) is not supported by the lowering")
        return GraphIR(tuple(self.inputs), tuple(self.buffers), outputs)

    def placeholder(self, node: torch.fx.Node) -> TensorValue:
        val = node.meta["val"]
        if not isinstance(val, torch.Tensor):
            raise LoweringError(f"graph input {node.name} is a {type(val).__name__}, not a tensor")
        size = tuple(sympy.sympify(s) for s in val.shape)
        stride = tuple(sympy.sympify(s) for s in val.stride())
        name = f"arg{len(self.inputs)}"
        self.inputs.append(InputBuffer(name, Layout(size, stride, val.dtype, str(val.device))))
        contiguous = stride == contiguous_strides(size)
        return TensorValue(size, val.dtype, str(val.device),
                           lambda idx: Load(name, linear_index(idx, stride)), name if contiguous else None)

    def call_function(self, node: torch.fx.Node) -> Any:
        target = node.target
        packet = getattr(target, "overloadpacket", None)
        lower = LOWERINGS.get(target) or LOWERINGS.get(packet)
        if lower is None:
            raise LoweringError(f"no lowering for {target} (node {node.name})")
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: self.values[n])
        value = lower(node, *args, **kwargs)
        if isinstance(value, TensorValue) and target not in VIEW_OPS:
            value = self.realize(value, node)
        return value

    def realize(self, value: TensorValue, node: torch.fx.Node) -> TensorValue:
        """Store ``value`` in a new contiguous buffer (unless it already is one)."""
        if value.buffer is not None:
            return value
        name = f"buf{len(self.buffers)}"
        stride = contiguous_strides(value.size)
        body = value.loader(index_vars(len(value.size)))
        line = provenance.line_of(node)
        self.buffers.append(ComputedBuffer(
            name, Layout(value.size, stride, value.dtype, value.device), body,
            origins=(node.name,), lines=(line,) if line else (),
        ))
        return TensorValue(value.size, value.dtype, value.device,
                           lambda idx: Load(name, linear_index(idx, stride)), name)


VIEW_OPS: set[Any] = set()


def lower(gm: torch.fx.GraphModule) -> GraphIR:
    return GraphLowering(gm).run()


def ir_artifact(ir: GraphIR) -> IRArtifact:
    rows = [BufferRow(b.name, "input", str(b.layout), str(b.layout.dtype).replace("torch.", ""),
                      f"stride {list(b.layout.stride)}", ()) for b in ir.inputs]
    for b in ir.buffers:
        if isinstance(b, ComputedBuffer):
            idx = ", ".join(f"d{i}" for i in range(len(b.layout.size)))
            body = f"{b.name}[{idx}] = {b.body}"
            if b.reduction:
                r = ", ".join(f"r{i} < {s}" for i, s in enumerate(b.reduction.ranges))
                body = f"{b.name}[{idx}] = {b.reduction.op} over {r} of {b.body}"
        else:
            body = f"{b.name} = {b.op}({', '.join(b.inputs)})"
        rows.append(BufferRow(b.name, b.kind, str(b.layout), str(b.layout.dtype).replace("torch.", ""),
                              body, b.origins, b.lines))
    return IRArtifact(tuple(rows), ir.outputs)

