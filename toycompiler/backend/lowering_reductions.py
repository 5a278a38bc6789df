"""Lowerings that make a buffer of a new shape: reductions, pooling, and library (extern) calls.

A reduction's element ``out[d0, ...]`` combines ``body`` over the reduced
indices ``r0, ...``: ``sum(x, dim=1)`` of a ``[N, C]`` tensor is
``out[d0] = sum over r0 < C of x[d0, r0]``. Pooling combines a small window
instead, each output element's own: its loads are written out one by one
(``pool2d``). Matmuls and convolutions are not generated: the output code calls
torch's own kernels (``torch.mm(a, b, out=buf)``), as Inductor does for
``aten.mm`` when it does not autotune a template.

Mirrors: torch/_inductor/lowering.py (make_reduction, sum_, amax, argmax,
max_pool2d_with_indices, avg_pool2d) and torch/_inductor/ir.py (ExternKernelOut,
FallbackKernel).
Leaves out: Welford variance (passes/decompose.py's var_mean says why), scans
(cumsum), adaptive pooling (torch's kernel; Inductor makes an even split an
avg_pool2d), pooling backward, and matmul templates that Inductor can fuse.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from typing import Any

import sympy
import torch

from . import ir
from .lowering import TensorValue, cast, fallback_kernel, layout_of, register_lowering
from .lowering_views import both, view, within

aten = torch.ops.aten


def make_reduction(op: str):
    """Lowering for ``op`` over ``dims``: kept dims become d0.., reduced dims r0.."""

    def lower(graph, node, x: TensorValue, dims=None, keepdim=False, *, dtype=None, **_: Any) -> TensorValue:
        out = node.meta["val"]
        if len(x.size) == 0:  # a 0-d tensor: every reduction of one element is (a cast of) the element
            value = ir.Const(0, out.dtype) if op in ("argmax", "argmin") else cast(x.loader(()), x.dtype, out.dtype)
            return graph.add_computed((), out.dtype, str(out.device), value, node)
        reduced = sorted({d % len(x.size) for d in ([dims] if isinstance(dims, int) else dims or range(len(x.size)))})
        # The reduced dims in the order of memory (the input's strides in eager), the one read contiguously innermost
        # (not for an index: it counts in the dims' own order). A sum over every dim of a channels-last tensor read
        # its channels with a stride of 64 at every element: 2.5 ms over [16, 64, 28, 28] floats, 0.16 in order
        # (torch.compile 0.1; one thread).
        stride = node.args[0].meta["val"].stride()
        if op not in ("argmax", "argmin") and all(isinstance(s, int) for s in stride):
            reduced.sort(key=lambda d: -stride[d])
        kept = [d for d in range(len(x.size)) if d not in reduced]  # (dims None or []: every dim is reduced)
        var = dict(zip(kept + reduced, ir.index_vars(len(kept)) + ir.index_vars(len(reduced), "r")))
        idx = tuple(var[d] for d in range(len(x.size)))  # x[d0, r0, d1] for a reduction over dim 1 of a 3-d x
        body = cast(graph.read(x, idx), x.dtype, x.dtype if op in ("max", "min", "argmax", "argmin") else out.dtype)
        result = graph.add_computed(tuple(x.size[d] for d in kept), out.dtype, str(out.device), body, node,
                                    ir.Reduction(op, tuple(x.size[d] for d in reduced), tuple(reduced)))
        return view(node, result) if keepdim else result  # keepdim: reduced dims of size 1, the same memory
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
        opts = [(k, repr(v)) for k, v in [*zip(kw, args[ntensors:]), *kwargs.items()] if not isinstance(v, TensorValue)]
        if out_arg:  # torch writes into a contiguous buffer the output code allocates
            layout = replace(layout, stride=ir.contiguous_strides(layout.size))
            opts.append(("out", f"buf{len(graph.buffers)}"))  # the name add_buffer gives it
        return graph.add_buffer(ir.ExternKernel, layout, fn, tuple(t.ref for t in tensors), tuple(opts), node=node)
    return lower


register_lowering(aten.mm, needs_graph=True)(make_extern("torch.mm"))
register_lowering(aten.bmm, needs_graph=True)(make_extern("torch.bmm"))
register_lowering(aten.addmm, needs_graph=True)(make_extern("torch.addmm", ntensors=3, kw=("beta", "alpha")))
register_lowering(aten.convolution, needs_graph=True)(make_extern(
    "torch.convolution", out_arg=False,
    kw=("bias", "stride", "padding", "dilation", "transposed", "output_padding", "groups")))


# -- pooling: each output element's window, its loads unrolled -----------------------------


@register_lowering(aten.max_pool2d_with_indices, aten.avg_pool2d, needs_graph=True)
def pool2d(graph, node, *args: Any, **kwargs: Any) -> Any:
    """``max_pool2d`` (with each max's position in its plane, ``h * W + w``) and ``avg_pool2d`` as pointwise
    values over the output: element ``[..., oh, ow]`` combines the loads of its window, in eager's order
    (row by row). The loads are unrolled, so the window is the kernel's arithmetic, not a loop, and the
    pooling fuses with what reads it. A window position in the padding, or past the input's end under
    ``ceil_mode``, reads a clamped element and leaves it out (on a CPU: reads a padded copy, see below);
    where every window fits inside the input (no padding), the loads are plain strided reads. Eager's rules:
    the first position of the max wins, a NaN wins (the last one); the average divides by the window's size
    (padding included, clipped to the padded input) or by its elements inside the input
    (``count_include_pad=False``), or by ``divisor_override``. Torch's kernels took 78 us (avg) and 80 us
    (max) for 2x2 windows over [64, 128, 56, 56] floats, where torch.compile's generated ones took 32 (H200)."""
    a = {s.name: args[i] if i < len(args) else kwargs.get(s.name, s.default_value)
         for i, s in enumerate(node.target._schema.arguments)}
    x, out, is_max = a["self"], node.meta["val"], len(node.target._schema.returns) == 2  # max: values, positions
    pair = lambda v, default: (v, v) if isinstance(v, int) else (v[0], v[-1]) if v else default  # noqa: E731
    (kh, kw), (ph, pw) = pair(a["kernel_size"], None), pair(a["padding"], (0, 0))
    (sh, sw), (dh, dw) = pair(a["stride"], (kh, kw)), pair(a.get("dilation"), (1, 1))
    # A larger window stays torch's kernel, as in Inductor. Sizes known only when running (dynamic shapes) make an
    # output size a floor division, which the kernels print.
    (h_in, w_in), (h_out, w_out) = x.size[-2:], layout_of(out[0] if is_max else out).size[-2:]
    if kh * kw > 25 or not x.dtype.is_floating_point:
        return fallback_kernel(graph, node, *args, **kwargs)
    fits = [p == 0 and (size - 1 - (n - 1) * s - (k - 1) * d).is_nonnegative is True
            for p, size, n, s, k, d in ((ph, h_in, h_out, sh, kh, dh), (pw, w_in, w_out, sw, kw, dw))]
    v_dtype = x.dtype if is_max or x.dtype not in (torch.float16, torch.bfloat16) else torch.float32  # avg: sum in fp32
    hs, ws = sympy.symbols("hs ws", integer=True, nonnegative=True)
    fill = float("-inf") if is_max else 0.0  # what a position outside the input counts as

    def bordered(lead: tuple, h: sympy.Expr, w: sympy.Expr) -> tuple:
        """(whether ``x[*lead, h, w]`` is inside the input, None where every window fits; its value, ``fill``
        outside, read from a clamped element there). A pointwise producer of ``x`` (the ReLU before a max pool)
        is computed where its elements are loaded (``graph.read``), so it is not written out and read
        back: a ReLU and a 2x2 max pool over [32, 256, 56, 56] floats took 90.1 us in two kernels
        (torch.compile 32.2; H200)."""
        v = ir.substitute(graph.read(x, (*lead, hs, ws)), {hs: h if fits[0] else sympy.Min(sympy.Max(h, 0), h_in - 1),
                                                           ws: w if fits[1] else sympy.Min(sympy.Max(w, 0), w_in - 1)})
        inside = both(None if fits[0] else within(h, 0, h_in), None if fits[1] else within(w, 0, w_in))
        return inside, v if inside is None else ir.Op("where", (inside, v, ir.Const(fill, x.dtype)), x.dtype)

    # On a CPU, windows that do not fit (padding, or ceil_mode's last ones) read a copy of the input with a
    # border of ``fill``, stored in the input's memory order, in which every window fits: GCC vectorises a loop
    # of a padded window's guarded loads in neither layout (-fopt-info-vec: "no vectype" for the masked loads of
    # a stride-2 window; this AMD CPU's GCC tuning makes no gathers, so clamped indices do not vectorise either).
    # One thread, a 3x3 max pool, stride 2, padding 1, over [16, 32, 57, 57] floats: 11.8 ms with guarded loads,
    # 2.8 with the copy (torch's kernel 22.5, torch.compile 6.9); channels-last 11.3 and 2.3 (2.3; 3.2); over
    # [8, 64, 112, 112] 13.8 with the copy (83.8; 26.8), channels-last 8.1 (7.3; 9.9). A 3x3 average, stride 1,
    # padding 1, over [16, 32, 57, 57]: 8.1 (36.8; 20.7). The copy holds what the windows read. (With sizes known
    # only when running, its size is a formula of them.)
    if padded := x.device == "cpu" and not all(fits):
        size = (*x.size[:-2], (h_out - 1) * sh + (kh - 1) * dh + 1, (w_out - 1) * sw + (kw - 1) * dw + 1)
        copy = TensorValue(size, x.dtype, x.device, lambda idx: bordered(idx[:-2], idx[-2] - ph, idx[-1] - pw)[1])
        copy = graph.realize(copy, node, list(node.args[0].meta["val"].dim_order()))

    def window(idx: tuple):
        """Each window position's (inside the input, or None where every window fits; its value; h * W + w)."""
        *lead, oh, ow = idx
        for i, j in itertools.product(range(kh), range(kw)):
            h, w = oh * sh - ph + i * dh, ow * sw - pw + j * dw
            inside, v = bordered(lead, h, w)
            v = copy.loader((*lead, h + ph, w + pw)) if padded else v
            yield inside, cast(v, x.dtype, v_dtype), ir.IndexValue(h * w_in + w, torch.int64)

    if is_max:
        values = lambda idx: functools.reduce(lambda m, v: ir.Op("maximum", (m, v), x.dtype),  # noqa: E731
                                              [v for _, v, _ in window(idx)])

        def indices(idx):  # eager's: the first position of the max, unless a NaN is there (then the last NaN's)
            spots, m = list(window(idx)), values(idx)  # (each hit below overrides those before it)
            hits = [(both(ir.Op("eq", (v, m), torch.bool), inside), spot) for inside, v, spot in reversed(spots)]
            hits += [(both(ir.Op("isnan", (v,), torch.bool), inside), spot) for inside, v, spot in spots]
            return functools.reduce(lambda p, h: ir.Op("where", (*h, p), torch.int64), hits, ir.Const(0, torch.int64))
        return TensorValue(layout_of(out[0]).size, x.dtype, x.device, values), \
            TensorValue(layout_of(out[1]).size, torch.int64, x.device, indices)

    def average(idx):
        total = functools.reduce(lambda s, v: ir.Op("add", (s, v), v_dtype), [v for _, v, _ in window(idx)])
        count = sympy.Integer(a["divisor_override"] or 1)
        dims = zip(idx[-2:], (sh, sw), (ph, pw), (kh, kw), (h_in, w_in), fits)
        for o, s, p, k, n, fit in () if a["divisor_override"] else dims:
            start, end = o * s - p, sympy.Min(o * s - p + k, n + p)  # eager's window, padding included
            count *= k if fit else end - start if a["count_include_pad"] else sympy.Min(end, n) - sympy.Max(start, 0)
        return cast(ir.Op("div", (total, ir.IndexValue(count, v_dtype)), v_dtype), v_dtype, x.dtype)
    return TensorValue(layout_of(out).size, x.dtype, x.device, average)
