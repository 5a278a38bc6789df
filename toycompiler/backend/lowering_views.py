"""Lowerings that move no data: views as index arithmetic, plus cat and constants.

A view changes *which element* a consumer loads, never the memory: for
``y = x.permute(1, 0)``, element ``y[d0, d1]`` is ``x[d1, d0]``. Each view
lowering is an index map ``out index -> input index``; when the input is a
strided buffer, the map is affine and the view is again a strided buffer
(:func:`derive_ref`), which library calls and graph outputs use directly.

Mirrors: torch/_inductor/lowering.py (view, permute, expand, slice_, select,
cat, full, iota) and torch/_inductor/ir.py (View, ReinterpretView).
Also here: ``constant_pad_nd`` and ``slice_scatter``, a choice per element
between two loads or a constant, like ``cat``.
Leaves out: ``as_strided`` of anything but contiguous memory, ``unfold``, and
``cat`` along a dimension of symbolic size.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from typing import Any

import sympy
import torch
from torch._prims_common import canonicalize_dim

from . import ir
from .lowering import LoweringError, TensorValue, broadcast_index, cast, operand, register_lowering, strided_value

aten = torch.ops.aten
IndexMap = Callable[[tuple], tuple]


def out_size(node) -> tuple[sympy.Expr, ...]:
    return tuple(ir.sym(s) for s in node.meta["val"].shape)


def derive_ref(x: TensorValue, size: tuple, index_map: IndexMap) -> ir.TensorRef | None:
    """For ``x`` a strided buffer (``x.ref`` set): if the map is affine, the view's own strides and offset."""
    v = ir.index_vars(len(size), "v")
    e = x.loader(index_map(v))  # (x is stored: one load, its index expanded, see strided_value)
    strides = tuple(e.index.coeff(var) for var in v)
    offset = e.index.subs({var: 0 for var in v})
    # not affine: a floor division, a modulo or a clamp anywhere in the index (of sizes too), or not the offset
    # plus each index times its stride (a product of indices)
    if e.index.has(ir.FloorDiv, ir.ModularIndexing, sympy.Min, sympy.Max) \
            or sympy.expand(offset + sum(s * var for s, var in zip(strides, v)) - e.index) != 0:
        return None
    # A dim of size 1 read at index 0 (a stride of 0 above) gets the view's element count, the stride torch
    # gives such a dim outermost: torch infers a memory format from strides. A convolution of a [1, C, H, W]
    # view of channels-last values (ConvNeXt's permuted layer norm) with a 0 there wrote NCHW, where its fake
    # tensor promised channels-last, and the kernels after it read wrong values.
    strides = tuple(sympy.Mul(*size) if n == 1 and st == 0 else st for n, st in zip(size, strides))
    return ir.TensorRef(e.buf, size, strides, offset)


def view_of(x: TensorValue, size: tuple, index_map: IndexMap) -> TensorValue:
    if x.ref is not None and (ref := derive_ref(x, size, index_map)) is not None:
        return strided_value(ref, x.dtype, x.device)
    return TensorValue(size, x.dtype, x.device, lambda idx: x.loader(index_map(idx)))


# -- views ----------------------------------------------------------------------


@register_lowering(aten.view, aten._unsafe_view, aten.reshape, aten.squeeze, aten.unsqueeze, aten.alias,
                   aten.lift_fresh, view=True)
def view(node, x, *_: Any) -> TensorValue:
    """Same elements in row-major order, new shape: contiguous memory just gets new strides. Dropping or inserting
    size-1 dims (``squeeze``, ``unsqueeze``) is such a reshape; ``alias`` and ``lift_fresh`` keep the shape."""
    size = out_size(node)
    if x.ref is not None and ir.row_major(x.ref.size, x.ref.stride):
        ref = ir.TensorRef(x.ref.buf, size, ir.contiguous_strides(size), x.ref.offset)
        return strided_value(ref, x.dtype, x.device)
    if x.ref is not None and all(s.is_Integer for s in (*x.ref.size, *x.ref.stride, *size)):
        with contextlib.suppress(RuntimeError):  # torch's own rule says which strides a view keeps (a slice's rows)
            meta = torch.empty_strided(tuple(map(int, x.ref.size)), tuple(map(int, x.ref.stride)), device="meta")
            stride = tuple(map(sympy.Integer, meta.view(tuple(map(int, size))).stride()))
            return strided_value(ir.TensorRef(x.ref.buf, size, stride, x.ref.offset), x.dtype, x.device)
    # out index -> flat position -> input index, within each run of dims that the reshape splits or merges
    runs = ir.reshape_runs(x.size, size)
    return view_of(x, size, lambda idx: tuple(i for a, b in runs for i in ir.unravel(
        ir.linear_index(idx[b.start:b.stop], ir.contiguous_strides(size[b.start:b.stop])), x.size[a.start:a.stop])))


@register_lowering(aten.permute, view=True)
def permute(node, x, dims) -> TensorValue:
    dims = [canonicalize_dim(len(x.size), d) for d in dims]
    # out dim k reads input dim dims[k], so the input's index is the out index sorted by dims
    return view_of(x, tuple(x.size[d] for d in dims), lambda idx: tuple(i for _, i in sorted(zip(dims, idx))))


@register_lowering(aten.expand, view=True)
def expand(node, x, *_: Any) -> TensorValue:
    """Broadcast to a bigger size: size-1 (and new leading) dims read index 0 (stride 0)."""
    size = out_size(node)
    return view_of(x, size, broadcast_index(x.size, size))


@register_lowering(aten.flip)
def flip(node, x, dims) -> TensorValue:
    """Element i of a flipped dim is element size - 1 - i of ``x``; a new tensor, as in torch (not a view)."""
    dims = {canonicalize_dim(len(x.size), d) for d in dims}
    return TensorValue(x.size, x.dtype, x.device,
                       lambda idx: x.loader(tuple(x.size[k] - 1 - i if k in dims else i for k, i in enumerate(idx))))


@register_lowering(aten.slice, view=True)
def slice_(node, x, dim=0, start=None, end=None, step=1) -> TensorValue:
    dim, start = slice_start(x, dim, start)
    return view_of(x, out_size(node), lambda idx: (*idx[:dim], ir.sym(start) + idx[dim] * step, *idx[dim + 1:]))


def slice_start(x: TensorValue, dim: int, start: Any) -> tuple[int, Any]:
    """The dim a slice of ``x`` runs along (``-1``: the last), and its first index as Python takes it: counted
    from the end if negative, clamped into the dim (``x[-100:]`` of 10 rows starts at 0)."""
    dim = canonicalize_dim(len(x.size), dim)
    known = isinstance(start, int) and (start < 0 or x.size[dim].is_Integer)
    return dim, slice(start, None).indices(int(x.size[dim]))[0] if known else 0 if start is None else start


@register_lowering(aten.select, view=True)
def select(node, x, dim, index) -> TensorValue:
    dim, index = slice_start(x, dim, index)  # a negative index counts from the end, as a slice's start does
    return view_of(x, out_size(node), lambda idx: (*idx[:dim], ir.sym(index), *idx[dim:]))


@register_lowering(aten.as_strided, view=True, needs_graph=True)
def as_strided(graph, node, x, size, stride, storage_offset=None) -> TensorValue:
    """A view by explicit strides (decompositions such as group_norm's use it), over contiguous memory only:
    of anything else, the strides would name eager's memory layout, not this IR's."""
    base = node.args[0].meta["val"]
    if not base.is_contiguous() or (x.ref is not None and not ir.row_major(x.ref.size, x.ref.stride)):
        raise LoweringError(f"{node.name}: as_strided of a non-contiguous tensor")
    x = x if x.ref is not None else graph.realize(x, node)
    offset = x.ref.offset + (0 if storage_offset is None else ir.sym(storage_offset) - ir.sym(base.storage_offset()))
    ref = ir.TensorRef(x.ref.buf, tuple(map(ir.sym, size)), tuple(map(ir.sym, stride)), offset)
    return strided_value(ref, x.dtype, x.device)


# -- cat: a pointwise choice between inputs --------------------------------------


@register_lowering(aten.cat)
def cat(node, tensors, dim=0) -> TensorValue:
    """``out[..., i, ...]`` is input k's element ``i - start_k``; the index is clamped so no load strays."""
    tensors = [t for t in tensors if not (len(t.size) == 1 and t.size[0] == 0)]  # cat ignores empty 1-d
    size = out_size(node)
    dim = canonicalize_dim(len(size), dim)
    dtype = node.meta["val"].dtype
    starts = list(itertools.accumulate((t_.size[dim] for t_ in tensors[:-1]), initial=sympy.Integer(0)))

    def loader(idx: tuple):
        i, value = idx[dim], None
        for t_, start in reversed(list(zip(tensors, starts))):
            local = i - start if len(tensors) == 1 else sympy.Min(sympy.Max(i - start, 0), t_.size[dim] - 1)
            own = cast(t_.loader((*idx[:dim], local, *idx[dim + 1:])), t_.dtype, dtype)
            # rows before this input's end come from it, the rest from later inputs
            end = operand(start + t_.size[dim], (), torch.int64, ())  # a number, or a size known when running
            before = ir.Op("lt", (ir.IndexValue(i, torch.int64), end), torch.bool)
            value = own if value is None else ir.Op("where", (before, own, value), dtype)
        return value
    return TensorValue(size, dtype, str(node.meta["val"].device), loader)


def within(i: sympy.Expr, lo: Any, hi: Any) -> ir.Op:
    """``lo <= i < hi`` as a bool value of the kernel (bounds may be size symbols)."""
    i, lo, hi = (ir.IndexValue(sympy.sympify(e), torch.int64) for e in (i, lo, hi))
    return ir.Op("logical_and", (ir.Op("ge", (i, lo), torch.bool), ir.Op("lt", (i, hi), torch.bool)), torch.bool)


def both(a: ir.Op | None, b: ir.Op | None) -> ir.Op | None:
    """``a and b`` as a bool value of the kernel; one alone where the other is None (no condition)."""
    return b if a is None else a if b is None else ir.Op("logical_and", (a, b), torch.bool)


@register_lowering(aten.constant_pad_nd)
def constant_pad_nd(node, x, pad, value=0) -> TensorValue:
    """``F.pad(x, (left, right))``: ``out[..., i] = x[..., i - left]`` inside, ``value`` in the border.

    ``pad`` lists (left, right) pairs from the last dimension backwards; a negative pad crops. The load
    index is clamped, so the border reads a real element and then discards it.
    """
    val = node.meta["val"]
    lows = {len(x.size) - 1 - k: ir.sym(pad[2 * k]) for k in range(len(pad) // 2)}

    def loader(idx: tuple):
        inside, src = None, list(idx)
        for d, lo in lows.items():
            src[d] = sympy.Min(sympy.Max(idx[d] - lo, 0), x.size[d] - 1)
            inside = both(within(idx[d], lo, lo + x.size[d]), inside)
        return ir.Op("where", (inside, x.loader(tuple(src)), ir.Const(value, val.dtype)), val.dtype)
    return TensorValue(out_size(node), val.dtype, str(val.device), loader)


@register_lowering(aten.slice_scatter)
def slice_scatter(node, x, src, dim=0, start=None, end=None, step=1) -> TensorValue:
    """``x[:, 1:] = y`` once functionalized: ``out[.., i] = src[.., (i - start) // step]`` for ``i`` in the
    slice, ``x[.., i]`` elsewhere. The slice's end follows from ``src``'s length."""
    dim, start = slice_start(x, dim, start)
    dtype = node.meta["val"].dtype

    def loader(idx: tuple):
        offset = sympy.Max(idx[dim] - start, 0)
        j = sympy.Min(ir.FloorDiv(offset, step), src.size[dim] - 1)
        inside = within(idx[dim], start, start + step * src.size[dim])
        if step != 1:
            on_step = ir.IndexValue(ir.ModularIndexing(offset, 1, step), torch.int64)
            inside = both(ir.Op("eq", (on_step, ir.Const(0, torch.int64)), torch.bool), inside)
        own = cast(src.loader((*idx[:dim], j, *idx[dim + 1:])), src.dtype, dtype)
        return ir.Op("where", (inside, own, cast(x.loader(idx), x.dtype, dtype)), dtype)
    return TensorValue(x.size, dtype, x.device, loader)


# -- constants and ranges --------------------------------------------------------


# zeros and ones (an empty tensor's values are unspecified: zeros will do).
FILLS = {aten.zeros: 0, aten.empty: 0, aten.empty_permuted: 0, aten.ones: 1}  # the _like and new_ forms become these


@register_lowering(aten.full, aten.full_like, aten.scalar_tensor, *FILLS)
def full(node, *args: Any, **_: Any) -> TensorValue:
    """Every element is one number: ``full(size, value)``, ``full_like(x, value)``, ``scalar_tensor(value)``,
    or a value from ``FILLS``."""
    val, packet = node.meta["val"], node.target.overloadpacket
    value = FILLS[packet] if packet in FILLS else args[-1]
    if not isinstance(value, (bool, int, float)):
        raise LoweringError(f"{node.target} with a non-number fill value {value!r}")
    return TensorValue(out_size(node), val.dtype, str(val.device), lambda idx: ir.Const(value, val.dtype))


@register_lowering(torch.ops.prims.iota)
def iota(node, length, *, start=0, step=1, **_: Any) -> TensorValue:
    """Element d0 is ``start + d0 * step`` (the length is the node's size). An integer: ``prims.iota`` takes no
    other dtype (a float ``arange`` is this, converted, then scaled and shifted in torch's decomposition)."""
    val = node.meta["val"]
    return TensorValue(out_size(node), val.dtype, str(val.device), lambda idx: cast(
        ir.IndexValue(sympy.Integer(start) + idx[0] * step, torch.int64), torch.int64, val.dtype))
