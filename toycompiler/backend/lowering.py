"""FX node -> IR: a registry of lowerings keyed by ATen op.

Each FX node becomes one IR buffer whose body says how one element is
computed. Views (``view``, ``permute``, ``expand``, ...) create no buffer: they
change the index a consumer loads with (see :mod:`.lowering_views`).
Reductions and library calls live in :mod:`.lowering_reductions`. Whether
buffers end up in the same kernel is not decided here but in :mod:`.scheduler`.

During lowering a tensor is a :class:`TensorValue`: its size and a function
from indices to an IR expression. Those functions exist only while lowering;
what comes out (:class:`~toycompiler.backend.ir.GraphIR`) is plain data.

Mirrors: torch/_inductor/lowering.py (``register_lowering``, ``make_pointwise``)
and torch/_inductor/graph.py (GraphLowering.run_node).
Ops with no lowering here either decompose first (:mod:`toycompiler.passes.decompose`,
torch's tables) or, when the loop IR cannot express them (indexing by loaded
values, scans, sorting), run torch's own kernel: ``FALLBACKS`` lists them, each
with its reason, as Inductor's ``make_fallback`` does. Any other ATen or custom
operator with tensor results (``torch.library.custom_op``, a pooling or special
function no table decomposes) runs torch's kernel as well, the generated kernels
around it, as Inductor's ``implicit_fallbacks``: only an operator that returns no
tensor, writes to an input or returns a view of one (and ``torch.cond``) sends the
graph to eager.

Leaves out: layouts other than contiguous for buffers that are not graph outputs.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import sympy
import torch
import torch.fx
from torch._prims_common import canonicalize_dim, reduction_dims

from .. import provenance
from ..artifacts import BufferRow, IRArtifact, StageResult
from ..config import Config
from . import ir, scheduler

aten = torch.ops.aten


class LoweringError(Exception):
    """An op the backend cannot lower; the caller falls back to eager with this message."""


@dataclass
class TensorValue:
    """A tensor while lowering: size, dtype, and how to load element ``idx``.

    ``ref`` is set when the value is a strided view of a stored buffer (an
    input, or a realized result): then library calls and graph outputs can use
    that memory directly.
    """

    size: tuple[sympy.Expr, ...]
    dtype: torch.dtype
    device: str
    loader: Callable[[tuple[sympy.Expr, ...]], ir.Expr]
    ref: ir.TensorRef | None = None


def inlined_reads(node: torch.fx.Node, depth: int = 4, moved: bool = False) -> int:
    """How many times ``node``'s value would be read where it is used, by ops that iterate in another order than its
    own, so that no kernel fuses them with it; 0 if anything else reads it (see ``LoweringGraph.call_function``):

    - a cat: ``w / 2`` in ``torch.stack((cx - w / 2, cx + w / 2), -1)`` is read twice;
    - a pointwise op through a view whose dims the value's own loops do not walk (the scheduler's ``refine``):
      a permute, a slice, a select (``(x * 2).view(B, T, H, D).transpose(1, 2).contiguous()``), or a reshape
      into finer dims: group norm's ``(x - mean) * rstd`` over [N, G, C/G, H*W], read as [N, C, H, W] by
      ``* weight + bias``. Stored, that was the statistics kernel's output, read back by a second kernel: 4
      passes over the data where 3 will do (H200, [32, 256, 56, 56] floats: 108 us, torch.compile 87). A
      reshape into coarser dims (``softmax(x).view(-1) + 1``) or one that adds a size-1 dim is walked by the
      value's loops: the reader joins the kernel that computes the value;
    - an expand, read as many times as it repeats each value: the gradient of a 2x2 average pool, ``grad / 4``
      expanded over each window, is computed where the window's elements are written (H200, [32, 64, 128, 128]
      floats: a kernel of its own, 13.5 us before the 41 us of the copy). A broadcast over more (a bias added to
      every row) is stored, and read so many times,

    through views and pointwise ops that are read so too. Looked for at most ``depth`` ops away, through 5 users
    a node at most (5 users are 5 reads or more, too many): a chain of a thousand ops is no thousand-deep
    recursion, and no walk of each op's chain to its end. Inductor leaves any value with one reader unrealized."""
    def reads(user: torch.fx.Node) -> int:
        packet = getattr(user.target, "overloadpacket", user.target)
        pointwise = torch.Tag.pointwise in getattr(user.target, "tags", ())
        if packet is aten.cat or moved and pointwise:
            return 1
        if packet is aten.expand and depth:  # each value read as many times as the expand repeats it
            copies = user.meta["val"].numel() // max(node.meta["val"].numel(), 1)
            return inlined_reads(user, depth - 1, True) * copies if isinstance(copies, int) else 0
        if not depth or not (pointwise or packet in VIEW_OPS):
            return 0
        # (the sizes of a view and what it views, only where they decide: sympy's arithmetic is slow)
        dims = not moved and packet in VIEW_OPS and [scheduler.squeeze(tuple(map(ir.sym, n.meta["val"].shape)))
                                                     for n in (node, user)]
        return inlined_reads(user, depth - 1, moved or dims and scheduler.refine(*dims) != dims[0])
    counts = [reads(u) for u in list(node.users)[:5]]
    return sum(counts) if counts and all(counts) else 0


def reduced_dims(node: torch.fx.Node, depth: int = 4) -> set[tuple[int, ...]]:
    """The dims reduced by each reduction that reads ``node``'s value, directly or through pointwise ops (``depth``
    at most, 5 users a node): ``{(0,), (1,)}`` where a row sum and a column sum read it. See ``GraphLowering.read``."""
    dims = set()
    for user in list(node.users)[:5]:
        tags = getattr(user.target, "tags", ())
        if torch.Tag.reduction in tags and isinstance(val := user.args[0].meta.get("val"), torch.Tensor):
            d = user.args[1] if len(user.args) > 1 and isinstance(user.args[1], (int, list, tuple)) else None
            dims.add(tuple(sorted(reduction_dims(val.shape, [d] if isinstance(d, int) else d or None))))  # ([]: all)
        elif torch.Tag.pointwise in tags and depth:
            dims |= reduced_dims(user, depth - 1)
    return dims


def strided_value(ref: ir.TensorRef, dtype: torch.dtype, device: str) -> TensorValue:
    """A strided view of a stored buffer: element ``idx`` is ``buf[offset + sum(idx[i] * stride[i])]``."""
    def load(idx: tuple) -> ir.Expr:
        terms = [i * st for i, s, st in zip(idx, ref.size, ref.stride) if s != 1]
        return ir.Load(ref.buf, sympy.expand(ref.offset + sum(terms, sympy.Integer(0))))
    return TensorValue(ref.size, dtype, device, load, ref)


LOWERINGS: dict[Any, Callable[..., Any]] = {}
VIEW_OPS: set[Any] = set()  # lowerings that make no buffer of their own


def register_lowering(*ops: Any, view: bool = False, needs_graph: bool = False) -> Callable:
    """``@register_lowering(aten.sin)``; ``view``: makes no buffer; ``needs_graph``: called with the
    :class:`GraphLowering` first (to add buffers itself)."""
    def wrap(fn: Callable) -> Callable:
        fn.needs_graph = needs_graph or getattr(fn, "needs_graph", False)
        LOWERINGS.update(dict.fromkeys(ops, fn))
        VIEW_OPS.update(ops if view else ())
        return fn
    return wrap


# -- pointwise ------------------------------------------------------------------


def layout_of(val: torch.Tensor) -> ir.Layout:
    """The layout of a tensor (a fake one: a node's ``meta["val"]``), its sizes as sympy; offset 0."""
    return ir.Layout(tuple(map(ir.sym, val.shape)), tuple(map(ir.sym, val.stride())), val.dtype, str(val.device))


def broadcast_shapes(*sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """Sizes aligned from the last dim (missing leading dims count as 1); each dim is the one not 1."""
    columns = itertools.zip_longest(*(reversed(s) for s in sizes), fillvalue=sympy.Integer(1))  # last dim first
    return tuple(reversed([next((d for d in reversed(column) if d != 1), sympy.Integer(1)) for column in columns]))


def broadcast_index(src: tuple, size: tuple) -> Callable[[tuple], tuple]:
    """Where element ``idx`` of a tensor of ``src`` sizes broadcast to ``size`` is read: leading dims dropped,
    size-1 dims pinned to index 0 (the ``expand`` view, too)."""
    return lambda idx: tuple(sympy.Integer(0) if s == 1 else idx[len(size) - len(src) + k] for k, s in enumerate(src))


def broadcast_loader(v: TensorValue, size: tuple[sympy.Expr, ...]) -> Callable[[tuple], ir.Expr]:
    """Load ``v`` as if it had ``size`` (see :func:`broadcast_index`)."""
    return lambda idx: v.loader(broadcast_index(v.size, size)(idx))


def cast(e: ir.Expr, src: torch.dtype, dst: torch.dtype) -> ir.Expr:
    """``e`` (of dtype ``src``) converted to ``dst``; no-op when they match."""
    # a constant is converted now
    return e if src == dst else ir.Const(e.value, dst) if isinstance(e, ir.Const) else ir.Op("to_dtype", (e,), dst)


def operand(a: TensorValue | float | sympy.Expr, size: tuple, dtype: torch.dtype, idx: tuple) -> ir.Expr:
    """Element ``idx`` of ``a`` broadcast to ``size`` and cast to ``dtype``; a number is a constant, a size
    known only when running (a mean's count, ``H * W``) the value of its expression."""
    return cast(broadcast_loader(a, size)(idx), a.dtype, dtype) if isinstance(a, TensorValue) \
        else ir.IndexValue(a, dtype) if isinstance(a, sympy.Expr) and not a.is_Integer else ir.Const(a, dtype)


def pointwise(node: torch.fx.Node, op: str, args: list[Any],
              compute: torch.dtype | tuple[torch.dtype, ...] | None = None) -> TensorValue:
    """``op`` applied element by element to ``args`` (tensors broadcast, scalars become constants).

    Each operand is cast to ``compute`` first: the result's dtype unless given, or one dtype per operand.
    """
    out = node.meta["val"]
    size = broadcast_shapes(*(a.size for a in args if isinstance(a, TensorValue)))
    computes = compute if isinstance(compute, tuple) else (compute or out.dtype,) * len(args)
    if bad := [a for a in args if not isinstance(a, (TensorValue, bool, int, float, sympy.Expr))]:
        raise LoweringError(f"{node.target}: operand {bad[0]!r} is not a tensor or a number")

    def loader(idx: tuple) -> ir.Expr:
        return ir.Op(op, tuple(operand(a, size, dt, idx) for a, dt in zip(args, computes)), out.dtype)
    return TensorValue(size, out.dtype, str(out.device), loader)


def make_pointwise(op: str, compute_from_inputs: bool = False) -> Callable[..., TensorValue]:
    """Lowering for an elementwise op: broadcast the inputs, cast them, apply ``op``.

    ``compute_from_inputs``: compute in the dtype the inputs promote to (a comparison's result is bool)."""

    def lower(node: torch.fx.Node, *args: Any, **kwargs: Any) -> TensorValue:
        if not compute_from_inputs:
            return pointwise(node, op, list(args))
        vals = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in node.args[:2]]
        return pointwise(node, op, list(args), torch.result_type(*vals) if len(vals) == 2 else vals[0].dtype)
    return lower


# Each ATen op here becomes the kernel op of the same name (``aten.sin`` -> ``sin``).
POINTWISE_OPS = ("sin", "cos", "exp", "log", "sigmoid", "neg", "abs", "sqrt", "rsqrt", "relu", "erf", "add", "sub",
                 "mul", "maximum", "minimum", "reciprocal", "floor", "ceil", "logical_not", "logical_and", "logical_or",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "sign", "round", *ir.MATH_OPS, *ir.MATH_OPS2)
# Computed in the inputs' dtype, whatever the result's (bool).
COMPARISON_OPS = ("gt", "lt", "ge", "le", "eq", "ne", "isnan", "signbit")

for _name in POINTWISE_OPS + COMPARISON_OPS:
    register_lowering(getattr(aten, _name))(make_pointwise(_name, compute_from_inputs=_name in COMPARISON_OPS))
register_lowering(aten.clone, aten.lift_fresh_copy)(make_pointwise("identity"))  # memory_format: by name only


@register_lowering(aten.where)
def _where(node, cond, a, b):
    """``where(cond, a, b)``: the condition stays bool, the two values take the result's dtype."""
    out = node.meta["val"].dtype
    return pointwise(node, "where", [cond, a, b], compute=(torch.bool, out, out))


@register_lowering(aten.div)
def _div(node, a, b, rounding_mode=None):
    """True division; ``rounding_mode='trunc'`` arrives only for integers (passes/decompose.py): C's ``/``."""
    return pointwise(node, "truncdiv" if rounding_mode == "trunc" else "div", [a, b])


@register_lowering(aten.fmod)
def _fmod(node, a, b):
    """C's remainder (the dividend's sign): ``std::fmod`` for floats, ``%`` for integers."""
    return pointwise(node, "fmod" if node.meta["val"].dtype.is_floating_point else "imod", [a, b])


@register_lowering(aten.bitwise_not)
def _bitwise_not(node, x):
    """``~x`` flips every bit of an integer, but means ``not x`` for bool."""
    return pointwise(node, "logical_not" if x.dtype == torch.bool else "bitwise_not", [x])


@register_lowering(aten.clamp)
def _clamp(node, x, min=None, max=None):
    """``clamp(x, lo, hi)`` is ``minimum(maximum(x, lo), hi)``, each bound applied only when given."""
    for op, bound in (("maximum", min), ("minimum", max)):  # a number or a tensor (broadcast, as any operand)
        x = x if bound is None else pointwise(node, op, [x, bound])
    return x


@register_lowering(aten._to_copy)
def _to_copy(node, x, device=None, **_: Any):  # dtype, layout...: keyword-only; the dtype is the node's
    if device is not None and str(torch.device(device)) != x.device:
        raise LoweringError(f"_to_copy to another device ({device}) is not supported")
    # An op's decomposition that computes half precision in float32 (``F.silu`` on bfloat16) casts its result
    # back: that cast is not rounded, as no op's result is until it is stored (codegen's compute_dtype); the
    # program's own ``.to(torch.bfloat16)`` is. Rounding silu(x) before ``* y`` took a fifth of a bfloat16 SwiGLU
    # gate's time on the CPU (1.95 ms, 1.60 without, over 4M elements; torch.compile's 1.56 rounds at neither).
    program_cast = node.meta.get("original_aten") in (None, aten._to_copy.default)
    narrowing = x.dtype == torch.float32 and node.meta["val"].dtype in (torch.float16, torch.bfloat16)
    return pointwise(node, "identity", [x], None if program_cast or not narrowing else x.dtype)  # the cast


@register_lowering(aten.copy)
def _copy(node, dst, src):
    return pointwise(node, "identity", [TensorValue(dst.size, src.dtype, src.device, broadcast_loader(src, dst.size))])


@register_lowering(aten.copy_, needs_graph=True)
def _copy_into_input(graph: GraphLowering, node: torch.fx.Node, dst: TensorValue, src: Any) -> TensorValue:
    """``copy_(input, value)``, which functionalization leaves for mutated inputs: a store into the input."""
    if dst.ref is None or dst.ref.buf not in {b.name for b in graph.inputs if b.kind == "input"}:
        raise LoweringError(f"{node.name}: copy_ into something other than a graph input is not supported")
    body = operand(src, dst.size, dst.dtype, ir.index_vars(len(dst.size)))
    layout = ir.Layout(dst.size, dst.ref.stride, dst.dtype, dst.device, dst.ref.offset)
    graph.add_buffer(ir.ComputedBuffer, layout, body, node=node, store_into=dst.ref.buf)
    return dst


# -- indexing with loaded values ---------------------------------------------------


def indirect(x: TensorValue, idx: list) -> ir.Load:
    """Element ``idx`` of ``x``, where each entry is a loop index (sympy) or an index value read from
    memory (an IR expression), which becomes a symbol ``i0, i1, ...`` of the load's index."""
    symbols = iter(ir.index_vars(len(idx), "i"))
    bound = {d: (next(symbols), v, x.size[d]) for d, v in enumerate(idx) if not isinstance(v, sympy.Basic)}
    ld = x.loader(tuple(bound[d][0] if d in bound else v for d, v in enumerate(idx)))  # (x is stored: one load)
    return ir.Load(ld.buf, ld.index, tuple(bound.values()))


def index_tensor(graph, node, t: TensorValue, size: sympy.Expr, dim: int, negative: bool = True) -> TensorValue:
    """An index tensor, as int64 values. On the CPU it is stored, and checked where the output code runs
    (eager's IndexError for an index out of range, ``codecache.check_index``); the kernel clamps its reads
    anyway (``ir.in_range``). On the GPU the kernel only clamps: a check would wait for the GPU on every
    call, which a CUDA graph cannot do."""
    if t.device == "cpu" and (id(t), size) not in graph.checked:  # once per tensor (upsampling reads each twice)
        stored = graph.realize(t, node)
        empty = ir.Layout((sympy.Integer(0),), (sympy.Integer(1),), torch.bool, t.device)
        graph.add_buffer(ir.ExternKernel, empty, "codecache.check_index", (stored.ref,),
                         (("size", str(size)), ("dim", str(dim)), ("negative", str(negative))), node=node)
        # an index that loads nothing (upsampling's, from the output's position) is still computed where it is
        # used: read from its buffer, the kernel would wait for the check's
        computed = t.ref is None and not ir.loads(t.loader(ir.index_vars(len(t.size))))
        graph.checked[id(t), size] = t if computed else stored
    t = graph.checked.get((id(t), size), t)
    return TensorValue(t.size, torch.int64, t.device, lambda idx: cast(t.loader(idx), t.dtype, torch.int64))


@register_lowering(aten.index, needs_graph=True)
def index(graph, node, x, indices) -> TensorValue:
    """``x[i, :, j]`` with integer tensors ``i`` and ``j`` (and, through torch's decompositions, ``embedding``,
    ``index_select``, nearest and bilinear upsampling). The index tensors broadcast together; their dims
    take the place of the dims they index when those are neighbours, and come first when a slice parts
    them (numpy's rule). A bool mask never gets here: how many elements it keeps is data, which the passes'
    fake tensors cannot size (the graph runs eagerly, with that reason). An embedding's or index_select's index
    has no negative values (eager raises), where ``x[i]``'s counts from the end."""
    x = x if x.ref is not None else graph.realize(x, node)
    lookup = getattr(node.meta.get("original_aten"), "overloadpacket", None) in (aten.embedding, aten.index_select)
    tensors = {d: index_tensor(graph, node, t, x.size[d], d, negative=not lookup)
               for d, t in enumerate(indices) if t is not None}
    shape = broadcast_shapes(*(t.size for t in tensors.values()))
    first = min(tensors) if max(tensors) - min(tensors) == len(tensors) - 1 else 0  # where their dims go

    def loader(idx: tuple):
        picked, rest = idx[first:first + len(shape)], iter(idx[:first] + idx[first + len(shape):])
        return indirect(x, [t.loader(broadcast_index(t.size, shape)(picked)) if (t := tensors.get(d)) else next(rest)
                            for d in range(len(x.size))])
    return TensorValue(layout_of(node.meta["val"]).size, x.dtype, x.device, loader)


@register_lowering(aten.gather, needs_graph=True)
def gather(graph, node, x, dim, index, sparse_grad=False) -> TensorValue:
    """``out[i][j] = x[i][index[i][j]]`` for ``dim=1``: the output has the index's size."""
    dim = canonicalize_dim(len(x.size), dim)
    x = x if x.ref is not None else graph.realize(x, node)
    index = index_tensor(graph, node, index, x.size[dim] if x.size else sympy.Integer(1), dim, negative=False)
    return TensorValue(index.size, x.dtype, x.device,
                       lambda idx: indirect(x, [*idx[:dim], index.loader(idx), *idx[dim + 1:]]))


# -- fallback kernels: torch's own kernel, called from the output code ------------------

INDIRECT = "it writes through loaded indices (the loop IR reads through them: ir.Load.indirect)"
RANDOM = "random numbers come from torch's own generator: on the CPU the same draws as eager's, in its order"
# Ops that torch's own kernel computes, each with its reason. Others with no lowering fall back implicitly
# (implicit_fallback): convolution_backward (a library kernel, like convolution itself), nn.MultiheadAttention's
# fused inference kernel (no decomposition in torch), torch's fused attention kernels on the GPU (flash,
# memory-efficient, cuDNN: they never write the scores out, which the loop IR's math form, two matmuls and a
# softmax, would), a custom operator.
FALLBACKS = {
    "aten.index_put": INDIRECT, "aten.scatter": INDIRECT,
    "aten.scatter_add": INDIRECT, "aten.scatter_reduce": INDIRECT, "aten.index_add": INDIRECT,
    "aten.cumsum": "a scan: the loop IR has pointwise and reduction bodies only (torch's decomposition, a masked "
                   "sum over a triangle, costs the square of the length)",
    "aten.cumprod": "a scan (see cumsum)",
    **dict.fromkeys(["aten.sort", "aten.topk", "aten.median"], "sorting is no loop nest of this IR"),
    **dict.fromkeys(["aten.avg_pool2d", "aten.max_pool2d_with_indices"], "a window of more than 25 elements "
                    "(others: lowering_reductions.pool2d)"),
    "aten.avg_pool2d_backward": "a window reduction (the IR's reduce dims)",
    "aten.max_pool2d_with_indices_backward": "it writes through those indices (indirect indexing)",
    "aten.bernoulli": RANDOM,
}


def fallback_kernel(graph: GraphLowering, node: torch.fx.Node, *args: Any, **kwargs: Any) -> Any:
    """``buf3 = torch.ops.aten.gather.default(self=arg0, dim=1, index=arg1)``, every argument by name.

    One call per tensor the op returns that the graph reads (``[i]`` picks it): fused attention also returns
    statistics for its backward, which a forward graph never reads. An op with an ``output_mask``
    (convolution_backward) computes only the gradient each call keeps.
    """
    refs: list[ir.TensorRef] = []

    def text(a: Any) -> str:
        if isinstance(a, TensorValue):
            refs.append((a if a.ref is not None else graph.realize(a, node)).ref)
            return f"{{{len(refs) - 1}}}"
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(map(text, a)) + "]"
        return repr(str(a)) if isinstance(a, torch.device) else str(a) if isinstance(a, sympy.Expr) else repr(a)
    why = FALLBACKS.get(str(node.target).rsplit(".", 1)[0], "no lowering: torch's kernel (implicit fallback)")
    named = {**{arg.name: a for arg, a in zip(node.target._schema.arguments, args)}, **kwargs}
    texts = [(name, text(a)) for name, a in named.items()]
    vals, multiple = node.meta["val"], isinstance(node.meta["val"], (tuple, list))

    def call(i: int, val: torch.Tensor) -> TensorValue:  # the call that gives the op's result i
        mine = [(k, str([j == i for j in range(len(vals))]) if k == "output_mask" else v) for k, v in texts]
        return graph.add_buffer(ir.ExternKernel, layout_of(val), f"torch.ops.{node.target}", tuple(refs), tuple(mine),
                                node=node, item=i if multiple else None, why=why)
    used = {u.args[1] for u in node.users} if multiple else {0}  # the indices of the graph's getitems
    outs = [call(i, val) if i in used and isinstance(val, torch.Tensor) else None
            for i, val in enumerate(vals if multiple else [vals])]
    return outs if multiple else outs[0]


register_lowering(*(getattr(aten, name.split(".")[1]) for name in FALLBACKS), needs_graph=True)(fallback_kernel)


def implicit_fallback(node: torch.fx.Node) -> Callable | None:
    """:func:`fallback_kernel` for an operator with no lowering that returns a tensor (with others, or None for
    an output it was asked not to compute, or integers: flash attention's sizes) and whose schema annotates
    none of its arguments: it neither writes to one (``Tensor(a!)``) nor returns a view of one (``Tensor(a)``:
    the scheduler would take the view for a new buffer, and might reuse the memory it views). None (the graph
    runs eagerly) for any other: one that returns only a size, or nothing."""
    schema = getattr(node.target, "_schema", None)  # an ATen or custom operator's (torch.cond has none)
    tensors = any(isinstance(v, torch.Tensor) for v in torch.utils._pytree.tree_leaves(node.meta.get("val")))
    return fallback_kernel if schema and tensors and not any(a.alias_info for a in schema.arguments) else None


# -- the driver -----------------------------------------------------------------


class GraphLowering:
    """Walks an ATen-level FX graph and builds a :class:`GraphIR`."""

    def __init__(self, gm: torch.fx.GraphModule):
        self.gm = gm
        self.inputs: list[ir.InputBuffer] = []
        self.buffers: list[Any] = []
        self.values: dict[torch.fx.Node, Any] = {}
        self.params: list[str] = []
        self.size_vars: dict[str, str] = {}
        self.checked: dict[tuple, TensorValue] = {}  # index tensors, stored and checked (see index_tensor)
        self.stored: dict[tuple, tuple] = {}  # (id of a value, order) -> (the value, kept alive; where it is stored)
        self.written = {n.args[0] for n in gm.graph.nodes if n.target is aten.copy_.default}  # inputs written to
        self.output_names = {n.name for n in gm.graph.find_nodes(op="output")[0].all_input_nodes}  # (see read)
        self.shared = {n.name for n in gm.graph.nodes if len(n.users) > 1 and len(reduced_dims(n)) > 1}  # (see read)
        # Nodes stored in eager's dim order (see realize): graph outputs whose eager layout is permuted, and the
        # nodes whose every user is one of them (a chain of pointwise ops on a channels-last input). Any other
        # node stays row-major, so that it fuses with consumers that index it in its logical order.
        self.orders: dict[torch.fx.Node, list[int]] = {}
        for n in reversed(gm.graph.nodes):  # users first
            val = n.meta.get("val")  # eager's value: its dims by stride, outermost first, if dense and not in order
            if isinstance(val, torch.Tensor) and all(isinstance(s, int) for s in (*val.shape, *val.stride())):
                order = sorted(range(val.dim()), key=lambda d: -val.stride(d))
                if order != sorted(order) and val.permute(order).is_contiguous() \
                        and all(u.op == "output" or u in self.orders for u in n.users):
                    self.orders[n] = order

    def run(self) -> ir.GraphIR:
        """One method per FX op kind, named after it: ``placeholder``, ``get_attr``, ``call_function``, ``output``."""
        for node in self.gm.graph.nodes:
            if node.op not in ("placeholder", "get_attr", "call_function", "output"):
                raise LoweringError(f"FX op {node.op} ({node.target}) is not supported by the lowering")
            self.values[node] = getattr(self, node.op)(node)
        outputs = self.values[node]  # the output node comes last
        return ir.GraphIR(tuple(self.inputs), tuple(self.buffers), tuple(r.buf for r in outputs), tuple(outputs),
                       tuple(self.params), tuple(self.size_vars.items()),
                       tuple(b.name for b in self.inputs if b.kind == "constant"))

    def placeholder(self, node: torch.fx.Node) -> Any:
        name = f"arg{len(self.params)}"
        self.params.append(name)
        if isinstance(val := node.meta.get("val"), torch.SymInt):
            if isinstance(expr := ir.sym(val), sympy.Symbol):
                self.size_vars.setdefault(expr.name, name)
            return expr
        return self.add_input(name, val, "input", f"graph input {node.name}")

    def get_attr(self, node: torch.fx.Node) -> TensorValue:
        name = f"const{sum(b.kind == 'constant' for b in self.inputs)}"
        return self.add_input(name, getattr(self.gm, node.target), "constant", f"graph attribute {node.target}")

    def add_input(self, name: str, val: Any, kind: str, what: str) -> TensorValue:
        """``val``, the graph's input or constant ``what``, as a buffer the kernels read (it must be a tensor)."""
        if not isinstance(val, torch.Tensor):
            raise LoweringError(f"{what} is a {type(val).__name__}, not a tensor")
        layout = replace(layout_of(val), offset=ir.sym(val.storage_offset()))
        for d, s in enumerate(layout.size):
            if isinstance(s, sympy.Symbol):
                self.size_vars.setdefault(s.name, f"{name}.size({d})")
        self.inputs.append(ir.InputBuffer(name, layout, kind))
        # An input's storage offset is applied by passing the tensor itself: loads index from its data pointer.
        return strided_value(ir.TensorRef(name, layout.size, layout.stride), layout.dtype, layout.device)

    def call_function(self, node: torch.fx.Node) -> Any:
        target, packet = node.target, getattr(node.target, "overloadpacket", None)
        if isinstance(val := node.meta.get("val"), torch.SymInt | torch.SymFloat):  # a size (``x.size(1) // 2``)
            return ir.sym(val)
        if target is operator.getitem:
            # one of an op's results: a library call's is stored already; max pooling's values are a computed value,
            # stored or not by the rule below, as any op's result
            if (value := self.values[node.args[0]][node.args[1]]).ref is not None:
                return value
        elif (lower := LOWERINGS.get(target) or LOWERINGS.get(packet) or implicit_fallback(node)) is None:
            raise LoweringError(f"no lowering for {target} (node {node.name})")
        else:
            args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: self.values[n])
            value = lower(self, node, *args, **kwargs) if lower.needs_graph else lower(node, *args, **kwargs)
        if not isinstance(value, TensorValue) or target in VIEW_OPS or packet in VIEW_OPS:
            return value
        # Constants and index ramps (``full``, ``arange``) load nothing, and in a value of many elements whose every
        # load reads one element (a mean's gradient, ``expand(g) / N``) all are alike: consumers recompute them inline
        # (a buffer of its own was a kernel writing the gradient full-size, which others read back). So is a pointwise
        # value read only by a cat (``torch.cat((-x2, x1), -1)``), through views (a ``torch.stack`` is a cat of
        # unsqueezed values) or pointwise ops that are read so too: the cat's kernel computes it where it takes it,
        # where a buffer of its own (another iteration space, which no kernel fuses) was written and read; so is a
        # value a pointwise op reads through a permute or a slice (splitting attention's heads). See inlined_reads.
        # A lookup (one load through an index: a position embedding [T, C] added to [B, T, C]) is read the same way.
        # And a cast of stored data: a reader in another kernel reads the source where a stored copy would be
        # written and read (a bfloat16 layer norm's backward read x and the gradient cast to float32 from copies).
        # Not a value that reads an input the graph writes to later: read where it is used, it would see the new data.
        element = value.loader(ir.index_vars(len(value.size)))
        read = ir.loads(element)  # (a cast's one load: ``identity(to_dtype(load))``, an op's own: ``identity(load)``)
        # (Such reads: at most 4, so that a chain of such values stays small.)
        broadcast = all(ld.index.is_number for ld in read) and sympy.Mul(*value.size) != 1  # (of one element: as any)
        inline = value.ref is None and (not read or broadcast or isinstance(element, ir.Load) and bool(element.indirect)
                                        or ir.op_names(element) == ["to_dtype", "identity"]
                                        or target is aten._to_copy.default and ir.op_names(element) == ["identity"]
                                        or 0 < inlined_reads(node) <= 4)
        stale = {ld.buf for ld in read} & {self.values[n].ref.buf for n in self.written if n in self.values}
        return value if inline and not stale else self.realize(value, node, self.orders.get(node))

    def realize(self, value: TensorValue, node: torch.fx.Node, order: list | None = None) -> TensorValue:
        """Store ``value`` in a new buffer (unless it already is a whole one), returned as a view of it.

        The buffer holds the value's dims in ``order``, outermost first (default: as they are, row-major), and
        the view gives them back in the value's order: a graph output is stored in eager's order (``orders``),
        so the caller gets eager's strides, as from torch.compile, and pointwise ops on a channels-last tensor
        are one loop that reads and writes memory in order (a row-major result would read it with a stride of
        C). Inductor's ``ComputedBuffer.get_fill_order`` similarly takes the order of a buffer's reads."""
        r, n = value.ref, len(value.size)
        if r is not None and r == ir.TensorRef(r.buf, value.size, ir.contiguous_strides(value.size)):  # a whole buffer
            return value
        # stored once for all its readers (library calls)
        if (key := (id(value), tuple(order or ()))) not in self.stored:
            dims = order or list(range(n))  # the buffer's dims, outermost first, as dims of the value
            inverse = [dims.index(d) for d in range(n)]  # where each dim of the value sits in the buffer
            stored = self.add_computed(tuple(value.size[d] for d in dims), value.dtype, value.device,
                                       value.loader(tuple(ir.index_vars(n)[k] for k in inverse)), node)
            # (the view of it in the value's order)
            self.stored[key] = value, lowering_views.permute(node, stored, inverse) if order else stored
        return self.stored[key][1]

    def read(self, value: TensorValue, idx: tuple) -> ir.Expr:
        """``value`` at ``idx`` (loop variables), with the pointwise buffers it reads computed in place
        (``ir.inline_pointwise``): what a reduction or a pooling window reads, straight from memory. But for graph
        outputs, written to memory anyway: a C++ column reduction reads them back (``CppRenderer.x_loop_open``), where
        a bias's gradient, the column sum of a GELU's backward over [2048, 1531], computed GELU's derivative twice.
        Nor, on a CPU, a value with a ``COSTLY`` op (``ir.inline_pointwise``) that two or more ops read and that
        reductions over different dims read (``reduced_dims``): it is computed once and read back. The backward of
        ``gelu(rms_norm(x, w)).sum()`` over [4096, 768] computed GELU's derivative (an erf and an exp) three times
        an element so, once for the input gradient's row sums, once for the input gradient, once for the weight
        gradient's column sums: 17.8 ms a training step, torch.compile 12.5; then 10.1 (10.4; one thread). Where
        every reduction reduces the same dims, one kernel computes the value where they read it (a softmax's exp,
        the mean and variance of ``x.exp()`` over dim 0): stored, ``torch.var_mean(x.exp(), 0)`` over [300, 50000]
        took 17.6 ms, inlined 7.2 (torch.compile 16.7). Inductor realizes every such value read twice on a CPU."""
        return ir.inline_pointwise(value.loader(idx), dict(zip(idx, value.size)),
                                   {b.name: b for b in self.buffers if not self.output_names & set(b.origins)}, {},
                                   {b.name for b in self.buffers if self.shared & set(b.origins)})

    def add_computed(self, size: tuple, dtype: torch.dtype, device: str, body: ir.Expr, node: torch.fx.Node,
                     reduction: Any = None) -> TensorValue:
        """A contiguous buffer whose element ``(d0, d1, ...)`` is ``body`` (reduced over r0... if ``reduction``)."""
        layout = ir.Layout(size, ir.contiguous_strides(size), dtype, device)
        return self.add_buffer(ir.ComputedBuffer, layout, body, reduction, node=node)

    def add_buffer(self, kind: type, layout: ir.Layout, *fields: Any, node: torch.fx.Node, **more: Any) -> TensorValue:
        """Append ``kind(buf<n>, layout, *fields, **more)``, lowered from ``node`` (its provenance);
        returns its value, read from memory."""
        name = f"buf{len(self.buffers)}"
        lines = () if (line := provenance.line_of(node)) is None else (line,)  # the user's source line, if known
        self.buffers.append(kind(name, layout, *fields, origins=(node.name,), lines=lines, **more))
        return strided_value(ir.TensorRef(name, layout.size, layout.stride), layout.dtype, layout.device)

    def output(self, node: torch.fx.Node) -> list[ir.TensorRef]:
        if not isinstance(node.args[0], (tuple, list)):
            raise LoweringError("the graph must return a tuple of tensors")
        return [self.output_ref(n) for n in node.args[0]]

    def output_ref(self, n: Any) -> ir.TensorRef:
        """``n``'s value as a view of a stored buffer (realized if need be), with eager's stride for size-1 dims."""
        value = self.values.get(n) if isinstance(n, torch.fx.Node) else None
        if not isinstance(value, TensorValue):
            raise LoweringError(f"graph output {n} is not a tensor")
        ref, val = (value.ref or self.realize(value, n, self.orders.get(n)).ref), n.meta.get("val")
        if isinstance(val, torch.Tensor) and val.dim() == len(ref.size):
            return replace(ref, stride=tuple(ir.sym(s) if size == 1 else st
                                             for size, st, s in zip(ref.size, ref.stride, val.stride())))
        return ref


def lower(gm: torch.fx.GraphModule, config: Config) -> StageResult[ir.GraphIR]:
    """ATen FX graph -> loop IR (checked by :func:`~toycompiler.backend.ir.verify` when ``config.verify_ir``)."""
    graph_ir = GraphLowering(gm).run()
    if config.verify_ir:
        ir.verify(graph_ir)
    return StageResult(graph_ir, ir_artifact(graph_ir))


def ir_artifact(graph_ir: ir.GraphIR) -> IRArtifact:
    """One row per buffer, inputs first: each buffer describes itself."""
    rows = [BufferRow(b.name, b.kind, str(b.layout), str(b.layout.dtype).replace("torch.", ""), b.describe(),
                      b.origins, b.lines) for b in (*graph_ir.inputs, *graph_ir.buffers)]
    return IRArtifact(tuple(rows), graph_ir.outputs)


from . import lowering_reductions, lowering_views  # noqa: E402,F401  (register their lowerings)
