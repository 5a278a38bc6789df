"""Decompose: re-trace the graph down to ATen ops, splitting composite ops.

``torch.sin`` and ``x.sin()`` and ``x + y`` all become ``aten.sin`` /
``aten.add.Tensor``; ``softmax``, ``layer_norm``, ``gelu``... become the
handful of pointwise and reduction ops they are made of. The backend then
only needs lowerings for those. Matmuls and convolutions are kept whole:
the backend calls torch's library kernels for them.

The re-trace also *functionalizes* the graph: an in-place ``x.add_(1)`` on an
input becomes ``add`` plus one ``copy_`` into the input at the end.

Mirrors: torch/_inductor/decomposition.py (on top of torch/_decomp) and
AOTAutograd's functionalization.
Leaves out: Inductor's own decompositions beyond the table above, and
decompositions chosen per device.
"""

from __future__ import annotations

import contextlib
import math
import threading
import unittest.mock

import numpy
import torch
from torch._decomp import core_aten_decompositions, get_decompositions, register_decomposition
from torch._dispatch.python import enable_python_dispatcher
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx import traceback as fx_traceback
from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot, make_fx, track_tensor_tree

aten = torch.ops.aten

# Composite ops torch's core table leaves whole; their torch._decomp entries are used.
FROM_TORCH = [aten._softmax, aten._log_softmax, aten.native_layer_norm, aten.gelu, aten.dropout, aten.hardtanh,
              aten.logsumexp, aten.native_batch_norm, aten._native_batch_norm_legit_no_training, aten.leaky_relu,
              aten._native_batch_norm_legit, aten._native_batch_norm_legit_functional, aten.native_group_norm,
              aten.repeat, aten.any, aten.index_select, aten.embedding, aten.linalg_vector_norm, aten.elu, aten.isinf,
              aten.logical_xor, aten.remainder, aten.diagonal, aten.unfold, aten.upsample_bilinear2d, aten.arange,
              aten.split_with_sizes]
# Kept as calls into torch's library kernels (extern kernels), as Inductor does.
KEEP = [aten.mm.default, aten.addmm.default, aten.bmm.default, aten.convolution.default, aten.index_add.default]

DECOMPOSITIONS: dict = {}

# FX's tracer patches functions process-wide while it traces (torch.fx._symbolic_trace's patcher), so two
# threads tracing at once undo each other's patches. One trace at a time; reentrant, because AOTAutograd
# (backend/training.py, which takes this lock too) traces and then compiles each graph it made.
TRACING = threading.RLock()


def register(*ops):
    """``@register(op, ...)``: the function below is the decomposition of those ops, in :data:`DECOMPOSITIONS`
    (torch's own decorator, ``torch._decomp.register_decomposition``, given this table)."""
    return register_decomposition(ops, DECOMPOSITIONS)


def _reduced_numel(x: torch.Tensor, dims) -> int:
    # no dims: all of them; a 0-d tensor's dim 0 (or -1) is the tensor itself
    return x.numel() if dims is None or len(dims) == 0 or x.dim() == 0 else math.prod(x.shape[d] for d in dims)


@register(aten.mean.dim, aten.mean.default)
def mean(x, dims=None, keepdim=False, *, dtype=None):
    """mean = sum / count (the count is known at compile time); no dims: over every element."""
    x = x.to(dtype) if dtype is not None else x
    return aten.sum.dim_IntList(x, dims or [], keepdim) / _reduced_numel(x, dims)


@register(aten.var_mean.correction)
def var_mean(x, dims=None, *, correction=None, keepdim=False):
    """One-pass statistics: variance and mean from one read of ``x``.

    With ``d = x - k``, ``k`` one element of each reduced row (its first):
    ``var = (sum(d * d) - sum(d) * sum(d) / n) / (n - correction)`` and ``mean = sum(x) / n``. The
    three sums reduce the same input over the same axes, so the scheduler puts them in one kernel and
    codegen in one loop over the row (three accumulators, one read); what follows is pointwise work on
    the row values. Batch norm, layer norm, ``var``, ``std`` and ``var_mean`` all come here.

    The numerical choice: the formula subtracts two nearly equal sums when the mean is large against the
    spread (catastrophic cancellation): the error is about 2^-24 (mean / std)^2 in float32 sums. Taken
    from ``k`` (the shifted-data algorithm), the sums see a mean of ``mean - k``, about one std from
    zero where ``k`` is a typical element, so float32 sums keep float32's accuracy (float64 input: float64
    sums). Before, sums of ``x`` itself in float64 made a layer norm over bfloat16 rows of 8192 (taken in
    float32, as torch's decomposition does) take 56.0 us instead of 42.5 on an H100: float64 conversions
    and adds, not the memory, set the pace. Inductor uses Welford's update instead (exact-ish in float32,
    but a serial recurrence with a division per element). Clamped at 0: the difference of two rounded
    sums can come out a hair below zero. Where the sums are NaN (an infinity in the row) the mean is NaN
    too, as eager's Welford pass gives it; where only ``n - correction`` is 0 (one element a row, as
    eager) the variance is NaN and the mean is not.
    """
    n = _reduced_numel(x, dims)
    c = 1 if correction is None else correction
    dims = [dim % max(x.dim(), 1) for dim in dims] if dims else list(range(x.dim()))
    k = x[tuple(slice(0, 1) if j in dims else slice(None) for j in range(x.dim()))]  # each row's first, as [.., 1, ..]
    d = (x - k).to(torch.float64 if x.dtype == torch.float64 else torch.float32)  # k: read in the sums only
    total, squares = aten.sum.dim_IntList(d, dims, keepdim), aten.sum.dim_IntList(d * d, dims, keepdim)
    spread = aten.clamp_min.default(squares - total * (total / n), 0)  # n times the population variance
    mean = torch.where(spread != spread, spread, aten.sum.dim_IntList(x.to(d.dtype), dims, keepdim) / n)
    return (spread / torch.sym_max(n - c, 0)).to(x.dtype), mean.to(x.dtype)


@register(aten.embedding_dense_backward.default)
def embedding_dense_backward(grad, indices, num_weights, padding_idx, by_freq):
    """An embedding's weight gradient: each row of ``grad`` added into the row its index names, by
    ``index_add`` (on a GPU one kernel of atomic adds, as Inductor's). torch's decomposition ends in
    ``index_put`` with ``accumulate``, which on a GPU sorts the indices and checks their bounds in kernels
    of its own: 24 launches a step for the GPT's two embeddings (H100). Sums in float32 for half precision,
    as eager's kernel does. torch's own kernel runs (``NotImplemented``) where the order of the sums must not vary
    (deterministic algorithms, which forbid index_add's atomics; it sorts the indices), with
    ``scale_grad_by_freq``, and on a CPU: there it adds into zeros of its own, where the functional ``index_add``
    copies the zeros it is given first, a second pass over the whole table (GPT-2's embeddings trained over [4,
    256] tokens, one thread: torch.compile 14.2 ms, toycompiler 29.8 with ``index_add``)."""
    if grad.is_cpu or by_freq or torch.are_deterministic_algorithms_enabled():
        return NotImplemented
    rows = torch.where((indices != padding_idx)[..., None], grad, 0).reshape(-1, grad.shape[-1])
    total = grad.new_zeros(num_weights, grad.shape[-1], dtype=torch.promote_types(grad.dtype, torch.float32))
    return aten.index_add(total, 0, indices.reshape(-1), rows.to(total.dtype)).to(grad.dtype)


@register(aten.avg_pool2d_backward.default)
def avg_pool2d_backward(grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """The input gradient of an average pool whose windows tile the input (stride the window, no padding): each
    output's gradient over its window, divided by the window's size: a nearest upsampling of ``grad / (kh * kw)``
    (:func:`upsample_nearest`, an expand and a reshape), generated kernels instead of torch's (for windows of up
    to 4 elements the division is computed where the copy writes, see ``lowering.inlined_reads``); the rows
    and columns past the last window get 0. With torch's kernel a training step of ``avg_pool2d(x, 2).square()
    .sum()`` over [16, 32, 64, 64] floats took 4.5 ms, torch.compile 2.2; so 0.96 (2.3; one thread). Other windows
    (overlapping, padded, ``ceil_mode``) keep torch's kernel: the decomposition returns ``NotImplemented``."""
    (kh, kw), (oh, ow) = (kernel_size[0], kernel_size[-1]), grad.shape[-2:]
    if list(stride or kernel_size) != list(kernel_size) or any(padding) or ceil_mode or divisor_override:
        return NotImplemented
    tiles = upsample_nearest(grad / (kh * kw), [oh * kh, ow * kw], [None, None])
    rest = [0, x.shape[-1] - ow * kw, 0, x.shape[-2] - oh * kh]  # the rows and columns past the last window
    return aten.constant_pad_nd(tiles, rest) if any(rest) else tiles


def upsample_nearest(x, output_size, scales, exact=False):
    """Nearest upsampling by whole factors: each element repeated ``k`` times along each dim, as an expand and a
    reshape, where each output size is ``k`` times the input's and eager's index is ``j // k`` (``_floor_division``).
    The gradient of an expand is a sum over each element's copies, a reduction the backend generates; torch's
    decomposition (an index whose gradient is an ``index_put`` with ``accumulate``, torch's kernel) made the training
    step of ``interpolate(x, scale_factor=2).square().sum()`` over [32, 64, 64, 64] floats take 5.5 ms on an H200,
    torch.compile 0.19. Other sizes, sizes known only when running, and ``nearest-exact``: torch's decomposition.

    It takes the place of torch's ``_upsample_nearest`` while the toy traces (:func:`nearest_as_expand`): every
    nearest upsampling op's decomposition calls that one, ``F.interpolate``'s in AOTAutograd's trace too, where
    torch's Python dispatcher runs it above autograd, which then differentiates what it makes."""
    ins = x.shape[x.dim() - len(output_size):]
    factors = [o // i if isinstance(o, int) and isinstance(i, int) and i and o % i == 0 else 0
               for i, o in zip(ins, output_size)]
    if exact or not all(factors) or not all(map(_floor_division, ins, factors, scales)):
        return TORCH_NEAREST(x, output_size, scales, exact)
    # Channels last: the channels moved last, where memory has them, so that the one copy (the reshape of the
    # expand) writes the output in that order, and moved back (a view): eager's layout. Reshaped in NCHW order and
    # then copied into channels last, [16, 64, 48, 48] upsampled 3x took 136.9 us, so 26.7 (torch.compile 26.5), its
    # training step 262.7 and 72.0 (183.2; H200).
    last = torch._prims_common.suggest_memory_format(x) != torch.contiguous_format
    t = x.movedim(1, -1) if last else x
    lead, tail = t.shape[:t.dim() - len(ins) - last], t.shape[t.dim() - last:]
    tiles = t.reshape(*lead, *(d for i in ins for d in (i, 1)), *tail)  # [N, H, 1, W, 1, C] -> [N, H, k, W, k, C]
    tiles = tiles.expand(*lead, *(d for pair in zip(ins, factors) for d in pair), *tail)
    out = tiles.reshape(*lead, *output_size, *tail)
    return out.movedim(-1, 1) if last else out


TORCH_NEAREST = torch._decomp.decompositions._upsample_nearest


def _floor_division(size: int, k: int, scale_factor: float | None) -> bool:
    """Whether eager's source index of output ``j``, ``floor(j * scale)`` in float32 with ``scale`` the float32 of
    ``1 / scale_factor`` (without one: of the input size over the output's, ``1 / k``), is ``j // k`` for every
    ``j``. Not always so: float32's ``1 / 41`` is below it, and eager's index of output 41 is 0."""
    j = numpy.arange(size * k)
    return bool((numpy.floor(j.astype(numpy.float32) * numpy.float32(1 / (scale_factor or k))) == j // k).all())


def nearest_as_expand() -> contextlib.AbstractContextManager:
    """:func:`upsample_nearest` in place of torch's ``_upsample_nearest`` (put back at the end; a new patch each
    time, so that a trace inside a trace, AOTAutograd compiling each graph it made, puts back what it found)."""
    return unittest.mock.patch.object(torch._decomp.decompositions, "_upsample_nearest", upsample_nearest)


# ``torch.max(x, dim)`` is two reductions over the same rows, the max and where it is (the first, as eager's);
# ``torch.max(x)`` the max over every dim
for _op, _value, _index in ((aten.max, aten.amax, aten.argmax), (aten.min, aten.amin, aten.argmin)):
    register(_op.dim)(lambda x, dim, keepdim=False, v=_value, i=_index: (v(x, [dim], keepdim), i(x, dim, keepdim)))
    register(_op.default)(lambda x, v=_value: v(x, []))


register(aten.var.correction)(lambda *args, **kwargs: var_mean(*args, **kwargs)[0])  # var_mean's variance


def _without_alpha(op, x, y, alpha):
    """``add(x, y, alpha=2)`` is ``x + y * 2`` (``sub`` likewise); without ``alpha`` the op stays as it is.

    In bool arithmetic ``alpha`` is a bool too (``y * 2`` would promote the result to int64), and
    ``True + True`` is ``True``: bool ``add`` is ``or`` (a 1-bit integer add would wrap to 0 in a
    GPU kernel)."""
    if (boolean := torch.result_type(x, y) == torch.bool) and op is aten.add.Tensor:
        return torch.bitwise_or(x, y if alpha else False)
    return NotImplemented if alpha == 1 else op(x, y * (bool(alpha) if boolean else alpha))


for _op in (aten.add.Tensor, aten.sub.Tensor):
    register(_op)(lambda x, y, *, alpha=1, op=_op: _without_alpha(op, x, y, alpha))


def _sign_differs(r, b):
    """A nonzero C remainder ``r`` (truncating, the dividend's sign) whose sign is not the divisor's."""
    return (r != 0) & ((r < 0) != (b < 0))


@register(aten.round.decimals)
def round_decimals(x, *, decimals=0):
    """ATen's formula: scaled by 10^decimals, rounded to the nearest (ties to even), scaled back."""
    ten = 10.0 ** abs(decimals)
    return aten.round(x * ten) / ten if decimals >= 0 else aten.round(x / ten) * ten


@register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def div_mode(a, b, *, rounding_mode=None):
    """``a // b`` (``rounding_mode='floor'``, Python's rounding toward minus infinity) and ``'trunc'``.

    Integers use integer ops only (exact for all of int64): C's truncating division, stepped down by
    one where the remainder's sign is not the divisor's. Integer ``'trunc'`` stays whole for the
    backend (its lowering is C's ``/``). Floats follow ATen's ``div_floor_floating``: dividing
    ``a - fmod(a, b)`` (so ``1.0 // 0.1`` is 9.0, as in eager, where ``floor(1.0 / 0.1)`` is 10.0).
    """
    if rounding_mode is None:
        return NotImplemented
    dtype = torch.result_type(a, b)
    a, b = (v.to(dtype) if isinstance(v, torch.Tensor) else v for v in (a, b))
    if rounding_mode == "trunc":  # a float quotient, truncated; integers stay whole (the backend divides them)
        return aten.trunc.default(a / b) if dtype.is_floating_point else NotImplemented
    if not dtype.is_floating_point:
        q = aten.div.Tensor_mode(a, b, rounding_mode="trunc")
        return torch.where(_sign_differs(a - q * b, b), q - 1, q)
    mod = torch.fmod(a, b)
    div = (a - mod) / b
    div = torch.where(_sign_differs(mod, b), div - 1, div)
    floor = aten.floor.default(div)
    floor = torch.where(div - floor > 0.5, floor + 1, floor)
    # div == 0: a zero with the sign of a / b; b == 0: IEEE's a / b (inf or nan)
    q = torch.where(div == 0, (a / b) * 0, floor)
    return torch.where(b == 0, a / b, q) if isinstance(b, torch.Tensor) else a / b if b == 0 else q


@register(aten.remainder.Tensor, aten.remainder.Scalar)
def remainder(a, b):
    """``a % b`` with Python's sign rule (the divisor's sign): C's ``fmod``, plus ``b`` where the signs differ
    (ATen's own rule, exact for integers and floats alike)."""
    mod = torch.fmod(a, b)
    return torch.where(_sign_differs(mod, b), mod + b, mod)


@register(aten.roll.default)
def roll(x, shifts, dims=()):
    """``torch.roll`` as a ``cat`` of two slices for each dim: the last ``shift`` elements, then the others.
    torch's own decomposition indexes with ``(arange - shift) % n``, a gather through ``aten.index`` with its
    index tensor computed by a kernel of its own: a roll over [8, 256, 512] ran at 0.23x torch.compile so (one
    thread). The cat's kernel reads both slices in order (masked loads, ``codegen/cpp.py``'s ``unclamped``)."""
    if not dims or not all(isinstance(v, int) for v in (*shifts, *x.shape)):
        return torch._refs.roll(x, shifts, dims)  # a roll of the flattened tensor, or symbolic sizes: torch's own
    for shift, d in zip(shifts, dims):
        if s := shift % x.shape[d]:  # (narrow, not split: torch decomposes a split of a strided tensor into as_strided)
            x = torch.cat((x.narrow(d, x.shape[d] - s, s), x.narrow(d, 0, x.shape[d] - s)), d)
    return x


@register(aten.gather.default, aten.scatter.value)
def one_per_row(x, dim, index, value=None, *, sparse_grad=False):
    """``x.gather(dim, index)`` and ``x.scatter(dim, index, value)`` where ``index`` picks one position in
    each row of ``x`` along ``dim`` (shaped as ``x``, 1 along ``dim``): cross entropy picking each
    sample's class, and its gradient putting -1 there.

    The gather is the sum along the row of ``x`` where the position is the index; the scatter is
    ``where(position == index, value, x)``. A load through the index (``ir.Load.indirect``) would need
    ``x`` written out first; the masked sum is a reduction with plain indices: it joins the kernel that
    computes ``x`` (a log_softmax's row), and ``x`` is never written out. Over long rows (on a CPU, large
    inputs too) the pick moves to what ``x`` is computed from instead (:func:`_gather_operand`). More
    indices per row would each cost a pass over the row: those stay gathers, lowered as loads through
    the index. So does a gather from a graph input (or a view of one), which then reads only the picked
    elements, where the masked sum reads every row whole (291 us against 7.6 with torch's gather for
    [4096, 50257] on an H100). A picked -0.0 comes out +0.0 (the zeros added to it)."""
    d = dim % max(x.dim(), 1)
    one_per_row = list(index.shape) == [1 if j == d else s for j, s in enumerate(x.shape)]
    if x.dim() == 0 or not x.dtype.is_floating_point or not one_per_row or value is None and _graph_input(x):
        return NotImplemented
    # On a CPU, over 2^17 elements too: a C++ kernel reads the row from L1 once more for the masked sum, about
    # 0.12 ns an element (one accumulator's adds in a chain). Cross entropy over [1000, 1037] floats took 0.70 ms
    # so, 0.60 with torch's gather (12 us a call) and the pick in the epilogue (torch.compile 0.56), over [4096,
    # 128] 0.51 and 0.35 (0.35; one thread). Smaller inputs keep the masked sum: [64, 1000] took 46 us (53).
    if value is None and isinstance(x.shape[d], int) and (x.shape[d] > PICK_MIN_ROW or not x.is_cuda and isinstance(
            n := x.numel(), int) and n >= 1 << 17) and (picked := _gather_operand(x, d, index)) is not None:
        return picked
    hit = torch.arange(x.shape[d], device=x.device).view([-1 if j == d else 1 for j in range(x.dim())]) == index
    return torch.where(hit, x, 0).sum(d, keepdim=True) if value is None else torch.where(hit, value, x)


def _graph_input(x) -> bool:
    """Whether ``x``, being traced, is a graph input or a view of one (read from the graph traced so far)."""
    node = get_proxy_slot(x, get_proxy_mode().tracer).proxy.node
    while node.op == "call_function" and getattr(node.target, "is_view", False):
        node = node.args[0]
    return node.op == "placeholder"


# Rows up to this long are held whole in a Triton program (config.max_block's default is larger still), where a
# masked sum after the row's max and sum costs no pass over the row; cross entropy over [4096, 1024] took 17.6 us
# so, 23.4 with torch's gather on the logits and one kernel more (H100)
PICK_MIN_ROW = 4096


def _gather_operand(x, d, index):
    """``f(a, b).gather(d, index)`` as ``f(a.gather(d, index), b)``, where ``f`` is elementwise and only ``a``
    varies along ``d``: a log_softmax ``(a - max) - log(sum)`` picked at the target class is ``a`` picked,
    minus the row's max and log-sum, the same arithmetic on the same values. The new gather is decomposed in
    turn: a load through the index on a graph input, a masked sum on computed logits, which needs no row value and
    joins the max's loop. Cross entropy then reads its row once (online softmax, codegen/triton.py) instead
    of once more for the pick, which needs the max and the sum: over [4096, 50257] floats 297 us instead of
    523 (torch.compile 347), over [2048, 128256] bfloat16 300 instead of 389 (362; H100, one process). A
    conversion to another dtype is elementwise too: on a CPU a bfloat16 cross entropy's log_softmax ends in
    one (``_to_copy``), and over [2048, 1000] it took 0.93 ms with the masked sum, which rounds the whole row
    to bfloat16, and 0.72 with the pick moved (torch.compile 0.70; one thread). None where the rule does not
    hold."""
    tracer = get_proxy_mode().tracer
    node = get_proxy_slot(x, tracer).proxy.node
    tags = getattr(node.target, "tags", ())
    # elementwise: a pointwise op, or a conversion to another dtype (a bfloat16 log_softmax's result)
    elementwise = torch.Tag.pointwise in tags and not node.kwargs \
        or node.target is aten._to_copy.default and node.kwargs.keys() == {"dtype"}
    if not elementwise or torch.Tag.nondeterministic_seeded in tags \
            or any(isinstance(a, torch.fx.Node) and not isinstance(a.meta.get("val"), torch.Tensor) for a in node.args):
        return None
    values = [a.meta["val"] if isinstance(a, torch.fx.Node) else a for a in node.args]
    varying = [k for k, a in enumerate(values) if isinstance(a, torch.Tensor) and a.dim() > d - x.dim() + a.dim() >= 0
               and a.shape[d - x.dim() + a.dim()] != 1]
    if len(varying) != 1 or values[varying[0]].shape != x.shape:
        return None
    args = [track_tensor_tree(v, torch.fx.Proxy(a, tracer), constant=None, tracer=tracer)  # the operands as traced
            if isinstance(a, torch.fx.Node) else a for a, v in zip(node.args, values)]  # tensors, once the rule holds
    return node.target(*[a.gather(d, index) if k == varying[0] else a for k, a in enumerate(args)], **node.kwargs)


@register(aten.native_dropout.default)
def native_dropout(x, p, train):
    """Dropout's mask drawn as ATen's CPU kernel draws it: ``bernoulli(1 - p)`` into a tensor shaped like
    ``x`` (an extern call, backend/lowering.py), so a seeded compiled run drops eager's elements.

    torch's own decomposition (``rand_like(x) > p``) draws other numbers; so does the fused CUDA kernel."""
    if not train or p == 0:
        return NotImplemented
    mask = aten.bernoulli.p(torch.empty_like(x, memory_format=torch.contiguous_format), 1 - p)
    return x * mask * (1 / (1 - p) if p < 1 else 0.0), mask.to(torch.bool)


def matmul_as_sum(a, b, bias=None, beta=1, alpha=1):
    """``a @ b`` (plus ``beta * bias``) as the reduction it is: ``out[m, n] = sum over k of a[m, k] * b[k, n]``.

    Used instead of the library call when the matmul template is on (``config.matmul_template``, tried
    in ``mode="max-autotune"``): the backend sees one sum over ``k`` that Triton codegen renders with
    ``tl.dot`` on tiles (backend/codegen/triton.py, ``dot_operands``), and the pointwise work after it
    (bias, activation, residual) fuses into that kernel as the reduction's epilogue, where the library
    call would write the product out and a second kernel read it back. Products and sum in float32 for
    every input dtype, one rounding at the end (as cuBLAS does for half-precision inputs). Only 2-d
    floating matmuls with static sizes; anything else stays a library call.
    """
    if a.dtype != b.dtype or a.dtype not in (torch.float32, torch.float16, torch.bfloat16) \
            or any(_is_symbolic(s) for s in (*a.shape, *b.shape)):
        return NotImplemented
    out = (a[:, :, None].float() * b[None, :, :].float()).sum(1)  # casts of the [m, k, n] views: inlined
    out = out * alpha if alpha != 1 else out
    if bias is not None:  # a half-precision bias is widened inside the add (type promotion)
        out = out + (bias if beta == 1 else bias.float() * beta)
    return out.to(a.dtype)


PAD_MIN_MACS = 1 << 30  # smaller products: the copies cost about what the aligned library kernel saves
PAD_K_MIN_N = 512  # padding K copies ``a``, whose elements each serve n multiply-adds: worth it for wide products


def padded_matmul(a, b, bias=None, beta=1, alpha=1):
    """A half-precision matmul whose K or N is not a multiple of 8, run on zero-padded copies of its operands.

    cuBLAS picks its fast kernels only when every matrix's rows start 16 bytes apart. Rows of 50257
    bfloat16 logits do not: ``[4096, 768] @ [768, 50257]`` took 2487 us on an H100, and 540 us as a
    copy of ``b`` padded to 50264 columns (zeros), the product into ``[4096, 50264]``, and a slice of
    its first 50257 columns; the zeros add nothing to any sum. The result is that slice, a view whose
    rows lie 50264 apart: torch.compile returns the same strides (Inductor's ``pad_mm``).
    ``[4096, 1001] @ [1001, 1024]``: 72 us unpadded, 44 padded. Not padded:

    - float32 matmuls: they gained nothing (0.85-0.97x);
    - products of fewer than ``PAD_MIN_MACS`` multiply-adds: [64, 1024] @ [1024, 1001] took 15.6 us either way;
    - K, in products narrower than ``PAD_K_MIN_N``: attention's ``att @ v``, [197, 197] @ [197, 64] per head,
      took 98.4 us with ``att`` copied padded, 90.9 without;
    - M: a transposed ``a`` with odd rows took as long padded (2154 us against 2162).
    """
    k, n = b.shape[-2:]
    pad_k, pad_n = -k % 8 if n >= PAD_K_MIN_N else 0, -n % 8
    if a.dtype not in (torch.float16, torch.bfloat16) or any(_is_symbolic(t) for t in (a, b)) \
            or not (pad_k or pad_n) or math.prod(a.shape) * n < PAD_MIN_MACS:
        return NotImplemented
    a, b = _padded(a, 0, pad_k) if pad_k else a, _padded(b, pad_k, pad_n)
    if bias is not None:  # a bias of n columns is padded too; a broadcast one ([1] or [m, 1]) is not
        bias = aten.constant_pad_nd(bias, [0, pad_n]) if bias.shape[-1] == n else bias
        return aten.addmm(bias, a, b, beta=beta, alpha=alpha)[:, :n]
    return (aten.mm(a, b) if a.dim() == 2 else aten.bmm(a, b))[..., :n]


def _padded(t, rows: int, cols: int):
    """``t`` with ``rows`` more rows and ``cols`` more columns of zeros, copied in its own memory order: a
    transposed operand (``F.linear``'s ``W.t()``) is padded as ``W`` and transposed back, so the copy reads
    and writes whole rows. Copied transposed instead, ``F.linear`` into 50257 columns took 784 us, not 540."""
    if t.stride(-2) == 1 and t.stride(-1) != 1:
        return aten.constant_pad_nd(t.mT, [0, rows, 0, cols]).mT
    return aten.constant_pad_nd(t, [0, cols, 0, rows])


def decomposition_table(matmul_template: bool = False) -> dict:
    merged = dict(core_aten_decompositions()) | get_decompositions(FROM_TORCH) | DECOMPOSITIONS
    table = {op: fn for op, fn in merged.items() if op not in KEEP}
    mm = matmul_as_sum if matmul_template else padded_matmul  # bmm is never the template's (2-d only)
    return table | {aten.mm.default: mm, aten.bmm.default: padded_matmul,
                    aten.addmm.default: lambda bias, a, b, *, beta=1, alpha=1: mm(a, b, bias, beta, alpha)}


def decompose(gm: torch.fx.GraphModule, example_inputs: list,
              matmul_template: bool = False) -> tuple[torch.fx.GraphModule, list[str]]:
    before = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    with fx_traceback.preserve_node_meta():
        # Running through an Interpreter lets FX copy each node's provenance onto the ATen nodes it becomes.
        interpret = torch.func.functionalize(torch.fx.Interpreter(gm).run, remove="mutations")
        fake_mode, fakes = fake_inputs(example_inputs, gm)
        # torch picks an attention kernel per device while tracing. On the CPU, asking for the math one makes
        # attention two bmm library calls and a fused softmax kernel, whatever the CPU's own choice. On a GPU
        # torch's fused kernel (flash, memory-efficient or cuDNN attention) stays, called as a library kernel
        # (backend/lowering.py), as Inductor does: it never writes the scores out. Over ViT-B's
        # [64, 12, 197, 64] in bfloat16 the math form took 525 us and flash attention 48 (H100); causal over
        # 1024 tokens, 2052 against 85. Training traces the math form (backend/training.py).
        cuda = any(isinstance(t, torch.Tensor) and t.is_cuda for t in fakes)
        math_attention = torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH)
        # With sizes known only when running, torch's Python dispatcher, as Dynamo traces: an in-place op's
        # decomposition (``hardswish_``, ``clamp_``) then sees symbolic sizes, which C++ asked for integers (the
        # graph ran eagerly). Not with static sizes: it also decomposes ops that are torch's kernels here
        # (bicubic upsampling became 5 kernels, 0.71x torch.compile's speed on a CPU, 0.64x eager's).
        symbolic = enable_python_dispatcher() if any(map(_is_symbolic, fakes)) else contextlib.nullcontext()
        with fake_mode, TRACING, symbolic, nearest_as_expand(), contextlib.nullcontext() if cuda else math_attention:
            new = make_fx(interpret, decomposition_table=decomposition_table(matmul_template))(*fakes)
            mutating = [n for n in new.graph.nodes if hasattr(n.target, "_schema") and n.target._schema.is_mutable]
            if any(getattr(n.args[0], "op", None) != "placeholder" for n in mutating):
                # a decomposition ran an in-place op below functionalization (cross entropy with label
                # smoothing: ``masked_fill_`` on its loss; the CPU's ``rms_norm`` with a weight: ``add_`` of
                # eps), so it or a copy_ into it is left: once more, now pure. A copy_ into a graph input
                # (a write functionalization kept, BatchNorm's running statistics) needs no second trace
                new = make_fx(torch.func.functionalize(torch.fx.Interpreter(new).run, remove="mutations"),
                              decomposition_table=decomposition_table(matmul_template))(*fakes)
    after = [n for n in new.graph.nodes if n.op == "call_function"]
    changes = [f"{len(before)} graph op(s) became {len(after)} ATen op(s)"]
    return new, changes + [f"{n.name} = {n.target}" for n in after]


def fake_inputs(example_inputs: list, gm: torch.fx.GraphModule) -> tuple[FakeTensorMode, list]:
    """Fake copies of the inputs: the graph's own (symbolic sizes stay symbolic), else static ones."""
    metas = [n.meta.get("val", n.meta.get("example_value")) for n in gm.graph.nodes if n.op == "placeholder"]
    modes = [m.fake_mode for m in metas if isinstance(m, FakeTensor)]
    if modes and len(metas) == len(example_inputs) and any(_is_symbolic(m) for m in metas):
        return modes[0], metas
    if fakes := [t for t in example_inputs if isinstance(t, FakeTensor)]:
        return fakes[0].fake_mode, list(example_inputs)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    return mode, [mode.from_tensor(t, static_shapes=True) if isinstance(t, torch.Tensor) else t for t in example_inputs]


def _is_symbolic(value: object) -> bool:
    """A SymInt, or a fake tensor with a symbolic size (dynamic shapes)."""
    # a tensor's sizes; a size (a SymInt or not): its own list
    return any(isinstance(s, torch.SymInt) for s in (value.shape if isinstance(value, FakeTensor) else [value]))
