"""Lowerings that make a buffer of a new shape: reductions, and library (extern) calls.

A reduction's element ``out[d0, ...]`` combines ``body`` over the reduced
indices ``r0, ...``: ``sum(x, dim=1)`` of a ``[N, C]`` tensor is
``out[d0] = sum over r0 < C of x[d0, r0]``. Matmuls and convolutions are not
generated: the output code calls torch's own kernels (``torch.mm(a, b, out=buf)``),
as Inductor does for ``aten.mm`` when it does not autotune a template.

Mirrors: torch/_inductor/lowering.py (make_reduction, sum_, amax, argmax) and
torch/_inductor/ir.py (ExternKernelOut, FallbackKernel).
Leaves out: Welford variance (passes/decompose.py's var_mean says why), scans
(cumsum), and matmul templates that Inductor can fuse.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import sympy
import torch

from .ir import Const, ExternKernel, Reduction, TensorRef, contiguous_strides, index_vars, inline_pointwise
from .lowering import TensorValue, cast, layout_of, register_lowering, strided_value

aten = torch.ops.aten


def _dims(dims: Any, ndim: int) -> list[int]:
    dims = [dims] if isinstance(dims, int) else list(dims or range(ndim))  # None or []: every dim
    return sorted({d + ndim if d < 0 else d for d in dims})


def make_reduction(op: str):
    """Lowering for ``op`` over ``dims``: kept dims become d0.., reduced dims r0.."""

    def lower(graph, node, x: TensorValue, dims=None, keepdim=False, *, dtype=None, **_: Any) -> TensorValue:
        out = node.meta["val"]
        if len(x.size) == 0:  # a 0-d tensor: every reduction of one element is (a cast of) the element
            value = Const(0, out.dtype) if op in ("argmax", "argmin") else cast(x.loader(()), x.dtype, out.dtype)
            return graph.add_computed((), out.dtype, str(out.device), value, node)
        reduced = _dims(dims, len(x.size))
        kept = [d for d in range(len(x.size)) if d not in reduced]
        var = dict(zip(kept + reduced, index_vars(len(kept)) + index_vars(len(reduced), "r")))
        idx = tuple(var[d] for d in range(len(x.size)))  # x[d0, r0, d1] for a reduction over dim 1 of a 3-d x
        acc_dtype = x.dtype if op in ("max", "min", "argmax", "argmin") else out.dtype
        body = cast(inline_pointwise(x.loader(idx), dict(zip(idx, x.size)), {b.name: b for b in graph.buffers}),
                    x.dtype, acc_dtype)
        result = graph.add_computed(tuple(x.size[d] for d in kept), out.dtype, str(out.device), body, node,
                                    Reduction(op, tuple(x.size[d] for d in reduced), tuple(reduced)))
        if not keepdim:
            return result
        keep_size = tuple(sympy.Integer(1) if d in reduced else x.size[d] for d in range(len(x.size)))
        ref = TensorRef(result.ref.buf, keep_size, contiguous_strides(keep_size))
        return strided_value(ref, out.dtype, result.device)
    return lower


for _packet, _op in ((aten.sum, "sum"), (aten.prod, "prod"), (aten.amax, "max"), (aten.amin, "min"),
                     (aten.argmax, "argmax"), (aten.argmin, "argmin")):
    register_lowering(_packet, needs_graph=True)(make_reduction(_op))


# -- extern kernels ----------------------------------------------------------------


def make_extern(fn: str, out_arg: bool = True, ntensors: int = 2, kw: tuple[str, ...] = ()):
    """A library call: its tensor inputs must be strided buffers (realized if they are not).

    The first ``ntensors`` arguments are tensors; ``kw`` names the ones after them, passed by name. An
    optional tensor (convolution's ``bias``) is named in ``kw`` too: passed as a tensor when given, as
    ``bias=None`` when not."""

    def lower(graph, node, *args: Any, **kwargs: Any) -> TensorValue:
        tensors = [a if a.ref is not None else graph.realize(a, node) for a in args if isinstance(a, TensorValue)]
        layout = layout_of(node.meta["val"])
        texts = [(k, repr(v)) for k, v in zip(kw, args[ntensors:]) if not isinstance(v, TensorValue)]
        texts += [(k, repr(v)) for k, v in kwargs.items()]
        if out_arg:  # torch writes into a contiguous buffer the output code allocates
            layout = replace(layout, stride=contiguous_strides(layout.size))
            texts.append(("out", f"buf{len(graph.buffers)}"))  # the name add_buffer gives it
        return graph.add_buffer(ExternKernel, layout, fn, tuple(t.ref for t in tensors), tuple(texts), node=node)
    return lower


register_lowering(aten.mm, needs_graph=True)(make_extern("torch.mm"))
register_lowering(aten.bmm, needs_graph=True)(make_extern("torch.bmm"))
register_lowering(aten.addmm, needs_graph=True)(make_extern("torch.addmm", ntensors=3, kw=("beta", "alpha")))
register_lowering(aten.convolution, needs_graph=True)(make_extern(
    "torch.convolution", out_arg=False,
    kw=("bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")))
