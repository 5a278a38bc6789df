"""Loop-level IR: buffers, and the expressions that compute one element of them.

A kernel computes every element of an output buffer. The IR says *how one
element is computed*, as a small expression tree over symbolic indices
``d0, d1, ...`` (one per output dimension) and, for reductions, ``r0, r1, ...``
(one per reduced dimension): ``Load(buf, index)``, ``Const``, ``IndexValue``,
``Op(name, args)``. Index expressions are sympy, so views (transpose,
broadcast, slicing, reshape) are nothing but index arithmetic inside a ``Load``.

Everything here is frozen data and prints as text; no closures.

Mirrors: torch/_inductor/ir.py (Pointwise, Reduction, ComputedBuffer, Layout,
ExternKernel, ReinterpretView); indices divide with torch's own sympy functions
(``FloorDiv``, ``ModularIndexing`` of torch/utils/_sympy/functions.py).
Two rewrites of the IR live here too: :func:`inline_pointwise` (a reduction
reads its pointwise inputs' expressions, not their buffers) and
:func:`split_reductions` (Triton: a long reduction as partials plus a final one; a split
softmax's max and sum in one pass over the row).

Leaves out: Inductor's inner functions (closures), templates, and most mutation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy
import torch
from torch.utils._sympy.functions import FloorDiv, ModularIndexing  # (a // b) and (a // b) % c, in sympy


def index_vars(n: int, prefix: str = "d") -> tuple[sympy.Symbol, ...]:
    """Symbols for an n-d iteration space: d0 (outermost) ... d{n-1} (innermost)."""
    return tuple(sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True) for i in range(n))


def contiguous_strides(size: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """Row-major strides: each dim's is the product of the sizes after it (``[2, 3, 4]`` -> ``(12, 4, 1)``)."""
    return tuple(sympy.Mul(*size[k + 1:]) for k in range(len(size)))


def row_major(size: tuple[sympy.Expr, ...], stride: tuple[sympy.Expr, ...]) -> bool:
    """Whether ``stride`` are the contiguous strides of ``size`` (a size-1 dim's stride does not matter)."""
    return all(sympy.expand(st - c) == 0 for s, st, c in zip(size, stride, contiguous_strides(size)) if s != 1)


def linear_index(idx: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
    return sympy.expand(sum((i * s for i, s in zip(idx, strides)), sympy.Integer(0)))


def store_index(ranges: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Where element (d0, d1, ...) of a contiguous buffer of these sizes lives (size-1 dims index 0)."""
    dims = index_vars(len(ranges))
    return linear_index(dims, contiguous_strides(ranges)).subs({d: 0 for d, s in zip(dims, ranges) if s == 1})


def unravel(flat: sympy.Expr, size: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """Where element ``flat`` of a contiguous tensor of ``size`` sits: the digits of a mixed-radix number,
    ``(flat // 12, flat // 4 % 3, flat % 4)`` for a ``[2, 3, 4]`` tensor. Leading dims of size 1 are 0 (the
    first other dim takes ``flat // stride`` whole: ``[1, 6]`` gives ``(0, flat)``)."""
    if size and size[0] == 1:
        return (sympy.Integer(0), *unravel(flat, size[1:]))
    if 0 in size:  # no element to find (a [2, 0] tensor's strides are (0, 1): no division by them)
        return (sympy.Integer(0),) * len(size)
    return tuple(FloorDiv(flat, st) if k == 0 else ModularIndexing(flat, st, s)
                 for k, (s, st) in enumerate(zip(size, contiguous_strides(size))))


def reshape_runs(a: tuple, b: tuple) -> list[tuple[range, range]]:
    """The shortest runs of dims of ``a`` and of ``b`` with equal element counts, in order: ``[B, T, 768]`` to
    ``[B, T, 12, 64]`` is B to B, T to T, 768 to (12, 64). Each run is indexed on its own, so splitting a dim gives
    ``64*d2 + d3`` and no division (a flat index over all dims would give ``(393216*d0 + ...) // 768 % 512``, which
    no simplification without the dims' ranges undoes; Inductor: ``View._dynamic_reshape_indexer``). A run ends
    where both shapes' element counts so far are equal; sizes known only when running end runs where they are
    the same expression (``[s0, 6]`` and ``[6, s0]``: one run)."""
    ends = {sympy.Mul(*a[:i]): i for i in range(len(a) + 1)}  # elements before a dim of a -> that dim (the last)
    runs, i, j = [], 0, 0
    for j1 in range(1, len(b) + 1):
        if (i1 := ends.get(sympy.Mul(*b[:j1]))) is not None:
            runs.append((range(i, i1), range(j, j1)))
            i, j = i1, j1
    # the dims left, one run: a's last dims of size 1 (into none of b), or sizes it cannot tell equal
    return runs + [(range(i, len(a)), range(j, len(b)))] * ((i, j) != (len(a), len(b)))


def merge_ranges(prefix: str, ranges: tuple, indices: list[sympy.Expr]) -> tuple[tuple, dict]:
    """Merge neighbouring loops that every index walks as one loop: ``29*x2 + x3`` with x3 < 29 is one
    index over 841 elements. Returns the merged sizes and each loop variable's merged form (an outer
    loop merged away becomes 0, its inner partner the merged variable). Inductor: ``_simplify_loops``
    in torch/_inductor/codegen/simd.py."""
    names, sizes, merge = list(index_vars(len(ranges), prefix)), list(ranges), {}
    for k in range(len(names) - 2, -1, -1):  # innermost pair first
        outer, inner = names[k], names[k + 1]
        # each index must be c * (outer * inner_size + inner) + rest, with rest free of both
        rests = [sympy.expand(i - i.coeff(outer) * outer - i.coeff(inner) * inner) for i in indices]
        if all(sympy.expand(i.coeff(outer) - i.coeff(inner) * sizes[k + 1]) == 0 and not r.free_symbols & {outer, inner}
               for i, r in zip(indices, rests)):
            indices = [i.xreplace({outer: 0}) for i in indices]
            merge[outer] = sympy.Integer(0)
            sizes[k + 1] = sizes[k] * sizes[k + 1]
            del names[k], sizes[k]
    merge.update(zip(names, index_vars(len(names), prefix)))
    return tuple(sizes), merge


def sym(value: object) -> sympy.Expr:
    """An int, a torch.SymInt (or SymFloat) or a sympy expression, as sympy. A size known only when running may
    hold torch's own functions: a floor division (a pooled or strided size, ``(s2 - 1)//2 + 1``) stays
    ``FloorDiv`` (indices use it too), torch's ``Max``, ``Min``, modulo and true division become sympy's, and a
    size as a float (``std``'s count, ``ToFloat(s1) - 1.0``) the size: the expressions the kernels' printers
    know."""
    expr = value.node.expr if isinstance(value, torch.SymInt | torch.SymFloat) else sympy.sympify(value)
    f = torch.utils._sympy.functions
    return expr.replace(f.Max, sympy.Max).replace(f.Min, sympy.Min) \
        .replace(f.PythonMod, sympy.Mod).replace(f.Mod, sympy.Mod).replace(f.ToFloat, lambda a: a) \
        .replace(f.FloatTrueDiv, lambda a, b: a / b)  # (nearest upsampling's scale, s2 / (2.0*s2): 0.5)


# What a reduction starts from (and returns for an empty range).
IDENTITY = {"sum": 0, "prod": 1, "max": float("-inf"), "min": float("inf"),
            "argmax": float("-inf"), "argmin": float("inf")}  # arg*: the value compared against


# -- expressions ----------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """Read one element of buffer ``buf`` at ``index`` (a sympy expression of d0, d1, ... r0, ...).

    Indirect indexing (``w[idx]``, ``torch.gather``): ``index`` may also use symbols ``i0, i1, ...``, each
    standing for a value read from memory. ``indirect`` binds each to the expression computing it and the
    size of the dim it indexes: ``load(w, 32*i0 + d2, i0 = load(idx, 16*d0 + d1))`` is an embedding's
    element. Kernels count a negative value from the end of the dim, as torch does, and clamp it into
    the dim (:func:`in_range`), so no read strays. Inductor: ``ops.indirect_indexing``.
    """

    buf: str
    index: sympy.Expr
    indirect: tuple[tuple[sympy.Symbol, Expr, sympy.Expr], ...] = field(default=(), repr=False)  # (symbol, its
    # value, the dim's size); str() shows them

    def __str__(self) -> str:
        return f"load({self.buf}, {self.index}{''.join(f', {s} = {v}' for s, v, _ in self.indirect)})"


@dataclass(frozen=True)
class Const:
    value: int | float | bool
    dtype: torch.dtype

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class IndexValue:
    """An index expression used as a value (``arange``, ``iota``): element d0 of arange is d0."""

    index: sympy.Expr
    dtype: torch.dtype

    def __str__(self) -> str:
        return f"index({self.index})"


# Math functions every backend has under one name (C's <cmath>, CUDA's libdevice; numpy's under Triton's CPU
# interpreter): each is an IR op, lowered from the ATen op of that name. These take one argument...
MATH_OPS = ("tan", "tanh", "trunc", "log1p", "expm1", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
            "atanh", "log2", "log10", "exp2", "erfc")
MATH_OPS2 = ("pow", "atan2", "hypot", "copysign")  # ...and these, of two operands


@dataclass(frozen=True)
class Op:
    """An elementwise operation, e.g. ``Op('sin', (x,))``; ``dtype`` is the result's."""

    op: str
    args: tuple[Expr, ...]
    dtype: torch.dtype

    def __str__(self) -> str:
        return f"{self.op}({', '.join(map(str, self.args))})"


Expr = Load | Const | IndexValue | Op


def leaves(e: Expr) -> list[Load | Const | IndexValue]:
    """The leaves of an expression (loads, constants, index values), in evaluation order: an indirect load's
    index values come before it."""
    if isinstance(e, Op):
        return [leaf for a in e.args for leaf in leaves(a)]
    return [leaf for _, v, _ in getattr(e, "indirect", ()) for leaf in leaves(v)] + [e]


def loads(e: Expr) -> list[Load]:
    """Every Load in an expression, in evaluation order."""
    return [leaf for leaf in leaves(e) if isinstance(leaf, Load)]


def index_exprs(e: Expr) -> list[sympy.Expr]:
    """Every index an expression reads at (its loads' and its ``IndexValue``s')."""
    return [leaf.index for leaf in leaves(e) if isinstance(leaf, (Load, IndexValue))]


def op_names(e: Expr) -> list[str]:
    """The ops of an expression, innermost first (used to name kernels)."""
    return [n for a in e.args for n in op_names(a)] + [e.op] if isinstance(e, Op) else []


def exp_of_difference(e: Expr, v: Expr, name: str) -> Load | None:
    """The load of ``name`` if ``e`` is ``exp(v - load(name))``: a softmax's terms, ``v`` less the max of ``v``."""
    d = e.args[0] if isinstance(e, Op) and e.op == "exp" else None
    ok = isinstance(d, Op) and d.op == "sub" and d.args[0] == v and getattr(d.args[1], "buf", None) == name
    return d.args[1] if ok else None


def substitute(e: Expr, mapping: dict) -> Expr:
    """``e`` with its index symbols replaced (``d0 -> r1``...)."""
    if isinstance(e, (Load, IndexValue)):  # a load's indirect indices too
        kw = dict(indirect=tuple((s, substitute(v, mapping), n) for s, v, n in e.indirect)) if type(e) is Load else {}
        return replace(e, index=sympy.expand(e.index.xreplace(mapping)), **kw)
    return Op(e.op, tuple(substitute(a, mapping) for a in e.args), e.dtype) if isinstance(e, Op) else e


def in_range(v: Expr, size: sympy.Expr, dtype: torch.dtype = torch.int64) -> Expr:
    """Index value ``v`` into a dim of ``size`` as kernels read it, in ``dtype``: a negative one counts from
    the end, as in torch, and the result is clamped into ``[0, size)``. Eager raises IndexError for an
    index out of range; the clamp keeps the kernel's read inside the tensor, and a check in the output
    code raises eager's error (``codecache.check_index``)."""
    v = Op("to_dtype", (v,), dtype) if dtype != torch.int64 else v  # (v: int64, from the lowering)
    if not nonnegative(v):
        negative = Op("lt", (v, Const(0, dtype)), torch.bool)
        v = Op("where", (negative, Op("add", (v, IndexValue(size, dtype)), dtype), v), dtype)
    # clamped at 0 even so: a NaN made an integer (int(max(nan, 0.0))) is negative
    return Op("minimum", (Op("maximum", (v, Const(0, dtype)), dtype), IndexValue(size - 1, dtype)), dtype)


def nonnegative(e: Expr) -> bool:
    """Whether ``e`` is never negative by its form: upsampling's index ``int(max(y, 0.0))`` needs no wrap
    (though NaN makes it negative: :func:`in_range` clamps it anyway)."""
    if isinstance(e, (Const, IndexValue)):
        return bool(e.value >= 0) if isinstance(e, Const) else e.index.is_nonnegative is True
    ops = {"maximum": any, "minimum": all, "add": all, "to_dtype": all, "identity": all}
    return isinstance(e, Op) and e.op in ops and ops[e.op](map(nonnegative, e.args))


MAX_INLINED_OPS = 32  # a longer pointwise chain is read from memory: recomputing it would cost more
# On a CPU, a value with one of these is read from memory where it is broadcast (computed once an element of its
# own, not once an element read): ``(x.relu() * w.sigmoid()).sum()`` over [2048, 1531] computed 2048 sigmoids a
# weight in 0.90 ms, torch.compile 0.3 reading them (one thread). Inductor's ``should_realize_on_reuse``: its CPU's.
COSTLY = {"exp", "log", "sigmoid", "tanh", "erf", "sin", "cos", *MATH_OPS}


def inline_pointwise(e: Expr, ranges: dict[sympy.Symbol, sympy.Expr], buffers: dict[str, ComputedBuffer],
                     done: dict, reused: set[str] = frozenset()) -> Expr:
    """``e`` with every load of a pointwise buffer replaced by the buffer's expression at that element.

    A reduction's body built this way reads its inputs straight from memory: ``sum(x.double() ** 2)``
    over axes (0, 2, 3) becomes ``sum over r of double(x[r0, d0, r1, r2]) ** 2`` with no buffer for
    the square. Inductor does the same (a Pointwise's inner function is inlined into its readers).
    ``ranges``: each loop variable of ``e`` and its size. The buffer itself stays in the graph; the
    scheduler drops it if nobody else reads it.

    A buffer whose expression, inlined, would hold more than ``MAX_INLINED_OPS`` ops is read from
    memory (and on a CPU a ``COSTLY`` value read where it is broadcast): the count is of the tree as written, so
    a value used twice counts twice. Without that cap
    a chain whose every step reads the step before twice,
    ``b, c = a.sin(), a.cos(); a = b * c + b - c``, doubles the tree at each step, and the compile time
    with it: 6 s for 6 steps before a softmax, minutes for 8. ``done`` holds each load already inlined
    (``{}`` at the start), so each is worked out once (Inductor: ``realize_opcount_threshold``, a buffer
    read twice is computed once when its inlined body is large). On a CPU, a buffer in ``reused`` whose inlined
    body holds a ``COSTLY`` op is read from memory too (see ``GraphLowering.read``).
    """
    if isinstance(e, Op):
        return Op(e.op, tuple(inline_pointwise(a, ranges, buffers, done, reused) for a in e.args), e.dtype)
    p = buffers.get(e.buf) if isinstance(e, Load) else None
    # (a pointwise buffer that writes into no input is stored contiguous, as _element reads it: see verify)
    if not isinstance(p, ComputedBuffer) or p.reduction or p.store_into \
            or (element := _element(e.index, p.layout.size, ranges)) is None \
            or p.layout.device == "cpu" and set(op_names(p.body)) & COSTLY \
            and (sympy.Mul(*ranges.values()) - p.layout.numel).is_positive:
        return e  # left as a load
    if e not in done:
        body = inline_pointwise(substitute(p.body, dict(zip(index_vars(len(element)), element))), ranges, buffers, done,
                                reused)
        shared = e.buf in reused and p.layout.device == "cpu" and set(op_names(body)) & COSTLY
        done[e] = e if len(op_names(body)) > MAX_INLINED_OPS or shared else body
    return done[e]


def _element(index: sympy.Expr, size: tuple, ranges: dict) -> tuple | None:
    """Which element of a contiguous buffer of ``size`` ``index`` reads, as the buffer's own indices: its
    own element, or a view's where each term of the index falls in one dim (the first element of each
    row, ``1024*d0`` of a [64, 1024] buffer, is ``(d0, 0)``; a transpose; a slice). None where finding it
    would take a division (a reshape) or where symbolic sizes leave it unproven."""
    if len(ranges) == len(size) and sympy.expand(index - store_index(size).xreplace(dict(zip(index_vars(len(size)),
                                                                                            ranges)))) == 0:
        return tuple(ranges)
    digits, strides = [sympy.Integer(0)] * len(size), contiguous_strides(size)
    for term in sympy.Add.make_args(sympy.expand(index)):  # c * v: into the dim of the largest stride dividing c
        c, v = term.as_coeff_Mul()
        k = next((k for k, st in enumerate(strides) if st.is_Integer and c >= 0 and c % st == 0), None)
        if k is None or not (v == 1 or v in ranges):  # only c * (one loop variable): a digit grows with it
            return None
        digits[k] += (c // strides[k]) * v
    last = {v: r - 1 for v, r in ranges.items()}  # each digit at its largest must stay inside its dim
    return None if any((s - 1 - d.xreplace(last)).is_nonnegative is not True for d, s in zip(digits, size)) \
        else tuple(digits)


# -- buffers --------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    size: tuple[sympy.Expr, ...]
    stride: tuple[sympy.Expr, ...]
    dtype: torch.dtype
    device: str
    offset: sympy.Expr = sympy.Integer(0)

    @property
    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.size)  # (of no sizes: 1)

    @property
    def is_contiguous(self) -> bool:
        return self.offset == 0 and row_major(self.size, self.stride)

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.size))}]"


@dataclass(frozen=True)
class TensorRef:
    """A strided view of a buffer's memory: what ``torch.as_strided(buf, size, stride, offset)`` gives."""

    buf: str
    size: tuple[sympy.Expr, ...]
    stride: tuple[sympy.Expr, ...]
    offset: sympy.Expr = sympy.Integer(0)

    def __str__(self) -> str:
        return f"{self.buf}[size={list(self.size)}, stride={list(self.stride)}, offset={self.offset}]"


@dataclass(frozen=True)
class InputBuffer:
    """A graph input (``kind="input"``) or a constant tensor of the graph (``kind="constant"``)."""

    name: str
    layout: Layout
    kind: str = "input"
    origins = lines = ()  # not fields: an input comes from no FX node

    def describe(self) -> str:
        return f"stride {list(self.layout.stride)}"


@dataclass(frozen=True)
class Reduction:
    """Combine ``body`` over the reduction indices ``r0, r1, ...`` with ``op`` (sum, max, ...)."""

    op: str  # sum, prod, max, min, argmax, argmin
    ranges: tuple[sympy.Expr, ...]
    dims: tuple[int, ...] = ()  # the dims of its input it reduces (scheduler.element_order); (): the last ones

    def __str__(self) -> str:
        return f"{self.op} over {', '.join(f'r{i} < {s}' for i, s in enumerate(self.ranges))}"


@dataclass(frozen=True)
class ComputedBuffer:
    """A buffer whose element at index (d0, d1, ...) is ``body``.

    Pointwise when ``reduction`` is None; otherwise the body also uses r0, r1, ...
    and is combined over them. Stored at ``layout`` (contiguous unless it writes
    into an input: ``store_into`` names that input, for ``copy_`` / in-place ops).
    """

    name: str
    layout: Layout
    body: Expr
    reduction: Reduction | None = None
    origins: tuple[str, ...] = ()  # FX node names
    lines: tuple[int, ...] = ()  # user source lines
    store_into: str | None = None

    @property
    def kind(self) -> str:
        return "reduction" if self.reduction else "pointwise"

    @property
    def reads(self) -> set[str]:
        """The buffers its body loads from."""
        return {ld.buf for ld in loads(self.body)}

    def describe(self) -> str:
        """``buf1[d0] = sum over r0 < 8 of load(buf0, 8*d0 + r0)``, and the input it is written into, if any."""
        text = f"{self.name}[{', '.join(f'd{i}' for i in range(len(self.layout.size)))}] = "
        text += f"{self.reduction} of {self.body}" if self.reduction else str(self.body)
        return text + (f"  (written into {self.store_into})" if self.store_into else "")


@dataclass(frozen=True)
class ExternKernel:
    """A call to a library kernel (matmul, conv): ``torch.op(*inputs, **kwargs, out=buf)``."""

    name: str
    layout: Layout
    op: str  # the torch function the wrapper calls, e.g. "torch.mm"
    args: tuple[TensorRef, ...]
    kwargs: tuple[tuple[str, str], ...] = ()  # name -> Python literal text
    origins: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()
    kind: str = "extern"
    item: int | None = None  # the op returns several tensors: this buffer is ``result[item]``
    why: str = ""  # a fallback to torch's kernel: why the loop IR cannot express the op
    store_into = None  # not a field: a library call never writes into a graph input (see ComputedBuffer)

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(a.buf for a in self.args)

    @property
    def reads(self) -> set[str]:
        return set(self.inputs)

    def describe(self) -> str:
        text = f"{self.name} = {self.op}({', '.join(self.inputs)})" + ("" if self.item is None else f"[{self.item}]")
        return text + (f"  (torch's kernel: {self.why})" if self.why else "")


@dataclass(frozen=True)
class GraphIR:
    """The lowered graph: buffers in topological order and which ones are outputs."""

    inputs: tuple[InputBuffer, ...]
    buffers: tuple[ComputedBuffer | ExternKernel, ...]
    outputs: tuple[str, ...]  # buffer names, in the FX graph's output order
    output_refs: tuple[TensorRef, ...] = ()  # each output as a view of its buffer (strides eager would give)
    params: tuple[str, ...] = ()  # the wrapper's parameters, in placeholder order (tensors and sizes)
    size_vars: tuple[tuple[str, str], ...] = ()  # size symbol -> Python expression giving it at run time
    constants: tuple[str, ...] = ()  # names of constant inputs (FX get_attr), passed after params

    def buffer(self, name: str) -> InputBuffer | ComputedBuffer | ExternKernel:
        return {b.name: b for b in (*self.inputs, *self.buffers)}[name]

    def live_buffers(self) -> set[str]:
        """The buffers an output, an input write or a library call needs, directly or through other buffers."""
        needed = set(self.outputs) | {ref.buf for ref in self.output_refs}
        for b in reversed(self.buffers):
            if b.name in needed or isinstance(b, ExternKernel) or b.store_into:
                needed |= {b.name} | b.reads
        return needed


def verify(ir: GraphIR) -> None:
    """Check the IR's invariants: names unique, every load reads an earlier buffer with known index symbols."""
    seen = {b.name for b in ir.inputs}
    for b in ir.buffers:
        assert b.name not in seen, f"{b.name} defined twice"
        assert len(b.layout.size) == len(b.layout.stride), f"{b.name}: size and stride ranks differ"
        assert b.reads <= seen, f"{b.name} reads {', '.join(sorted(b.reads - seen))} before it is computed"
        if isinstance(b, ComputedBuffer):
            rvars = index_vars(len(b.reduction.ranges), "r") if b.reduction else ()
            allowed = {s.name for s in (*index_vars(len(b.layout.size)), *rvars)} | {name for name, _ in ir.size_vars}
            for ld in loads(b.body):
                free = {s.name for s in ld.index.free_symbols} - {s.name for s, _, _ in ld.indirect}
                assert free <= allowed, f"{b.name}: index {ld.index} uses {free - allowed}"
            assert b.store_into in (None, *(i.name for i in ir.inputs)), f"{b.name} stores into unknown {b.store_into}"
            # (a pointwise buffer is contiguous unless it writes into an input)
            assert b.store_into or b.reduction or b.layout.is_contiguous, f"{b.name}: computed buffers are contiguous"
        seen.add(b.name)
    assert set(ir.outputs) <= seen, f"outputs {sorted(set(ir.outputs) - seen)} are not buffers"
    for ref in ir.output_refs:
        assert ref.buf in seen and len(ref.size) == len(ref.stride), f"bad output view {ref}"


# -- split reductions (the scheduler applies them for Triton) ---------------------------------


COLUMN_WIDTH = 64  # columns per program of a column reduction (``KernelRenderer.column_order``), at most
SPLIT_MIN_RNUMEL = 4096  # elements a program reads (a row, or 64 columns): fewer, and it is quick enough
SPLIT_PROGRAMS = 6144  # 1.5 x the 4096 programs to aim for (30 per SM of an H100, to hide memory latency):
# rounded down to a power of two, it gives the count nearest to 4096
SPLIT_MIN_CHUNK = 1024  # elements a program reads: fewer, and the partials cost more than they save
SPLIT_MIN_ROWS = 64  # the same for a column reduction's rows: with chunks of 16 rows, a column sum [8192, 768]
# took 18.0 us, with 64 rows 15.9; [4096, 256] 10.3 and 8.7 (H100)
SPLIT_MAX_PARTIALS = 65536  # partials one program of the final reduction reads (64 columns x 1024 chunks)
SPLIT_MIN_COUNT = 8  # fewer chunks: a second kernel (and no fusion across it) for too little gain
SPLIT_MAX_COLUMNS = 8192  # a column reduction over more columns runs unsplit: 512 programs of 16 columns
# (codegen's narrow tile) keep an H100 busy, as Inductor's rule (no split past 2 x 32 x SMs outputs) says. Split
# into 16 chunks with 64 columns a program, a column sum [500, 12000] took 15.5 us, unsplit with 16 columns 13.4;
# [1000, 20000] 34.3 and 32.0, [250, 40000] 21.7 and 20.1 (torch.compile 12.5, 30.2, 26.2). With fewer
# columns the split still wins: [2048, 4096] 18.4 split, 22.1 unsplit.
# Measured on an H100 (toy vs torch.compile, GPU time): 512 programs and chunks of 256 gave a column sum
# [8189, 1037] 0.65x and mean over (0, 2, 3) of [32, 64, 56, 56] 1.26x; 4096 programs 0.81x and 1.90x.
# Later the column sum with 64 chunks (at least 64 rows each, 1088 programs) took 28.7 us, with 256
# chunks of 32 rows (4352 programs) 25.8 us; a copy of the same bytes took 19.2 us. A column sum
# [2048, 4096] was not split while rows under 4096 kept one program per 64 columns (64 programs): 0.39x.


def streamed(indices: list[sympy.Expr], reduced: tuple[sympy.Symbol, ...], outer: tuple = ()) -> list[sympy.Expr]:
    """Of a reduction's load indices, those that set its loop order: the loads that vary along something other
    than the ``reduced`` indices and the ``outer`` kept ones (the innermost kept index, or an index read from
    memory: a gather's ``i0``).

    A load that varies along the reduced indices only is one vector, read again for every output, from
    cache. A layer norm's backward reads each row's mean and rstd so in the column sum of its weight's
    gradient; contiguous along the reduced rows, they made that kernel a row reduction, which read the
    gradient a column at a time (0.54x torch.compile on an H200, 1.2x after). A gather is not such a vector:
    counted as one, GPT-2's embeddings and their layer norm (``wte[idx] + wpe[arange(T)]``, rows of 768 read
    through the token ids) were taken for a column reduction along the ids, and stored their sum with a stride
    of 768 along the vector loop: 0.15x torch.compile over [8, 1024] tokens (one thread).

    A load that varies along outer kept indices only is one vector for each of them, read again for every
    inner output: the token ids of ``F.embedding(idx, wte).mean(1)``, contiguous along the tokens it sums,
    made it a row reduction that gathered each embedding a column at a time (0.75x torch.compile over [8, 512]
    tokens of 768, one thread)."""
    return [i for i in indices if i.free_symbols - set(reduced) - set(outer)] or indices


def split_count(b: ComputedBuffer, programs: int = SPLIT_PROGRAMS) -> int:
    """How many chunks to split each row of reduction ``b`` into (1: not split).

    The power of two nearest to 4096 programs, or less where SPLIT_MIN_CHUNK (SPLIT_MIN_ROWS) and
    SPLIT_MAX_PARTIALS say so. A program takes one row when rows are contiguous, 64 outputs when the
    reduction reads along the kept axis (a column sum: see ``KernelRenderer.column_order``), whose chunks
    are counted in rows; a column reduction over more than SPLIT_MAX_COLUMNS columns is not split."""
    # an integer sum splits too (cross entropy's count of targets); an integer max has no -inf to start from
    if not b.reduction or b.reduction.op not in ("sum", "prod", "max", "min") \
            or not (b.layout.dtype.is_floating_point or b.reduction.op == "sum"):
        return 1
    try:
        xnumel, rnumel = int(b.layout.numel), int(sympy.Mul(*b.reduction.ranges))
    except TypeError:  # symbolic sizes
        return 1
    rs = index_vars(len(b.reduction.ranges), "r")
    indices = streamed([ld.index for ld in loads(b.body)], rs, index_vars(len(b.layout.size))[:-1])
    width = 1 if any(i.coeff(rs[-1]) == 1 for i in indices) else COLUMN_WIDTH  # outputs per program
    if rnumel * width < SPLIT_MIN_RNUMEL or width > 1 and xnumel > SPLIT_MAX_COLUMNS:  # quick enough unsplit
        return 1
    most = SPLIT_MAX_PARTIALS // width
    count = min(programs // -(-xnumel // width), rnumel // (SPLIT_MIN_ROWS if width > 1 else SPLIT_MIN_CHUNK),
                most)
    # within a factor of two of the outermost reduced loop (a batch of images), split between its steps:
    # split_reductions then finds each element with no division and needs no mask
    # Or at each of its steps, if more, where a value per step is read (a row's rstd in the sum of an RMS norm's
    # outputs) and a step is long: each partial is a row, which the row reduction computing that value computes too
    outer, *inner = b.reduction.ranges
    per_row = any(i.free_symbols == {rs[0]} for i in index_exprs(b.body)) and sympy.Mul(*inner) >= SPLIT_MIN_CHUNK
    if inner and SPLIT_MIN_COUNT <= count // 2 <= outer <= (most if per_row else min(2 * count, most)):
        return int(outer)
    return 1 << (count.bit_length() - 1) if count >= SPLIT_MIN_COUNT else 1


def split_reductions(ir: GraphIR, target: str = "triton") -> tuple[GraphIR, list[tuple[str, str, str]]]:
    """Split each long reduction with few outputs into a partial and a final reduction .

    ``out[d] = sum over r < R of body(d, r)`` becomes ``partial[s, d] = sum over r < C of
    body(d, min(s*C + r, R - 1))`` (masked past R) for s < S chunks of C = ceil(R / S) elements, run
    by S times more programs, then ``out[d] = sum over r < S of partial[r, d]``. The chunk index
    comes first, so a column sum's partials still read whole rows (coalesced). The final reduction
    keeps the buffer's name: its readers are unchanged. Inductor: ``Reduction.create`` with
    ``num_splits`` (torch/_inductor/ir.py), which picks the split from the sizes the same way.
    Returns the new IR and, per split, (buffer, its partial, the reason) for the schedule's decisions.

    Two rewrites follow a split. A softmax's sum of ``exp(v - max)`` sums each chunk under the chunk's
    own max (:func:`_online_softmax`), so its partials join the max's; and pointwise work read after a
    split reduction is recomputed where it is read rather than stored (:func:`_reinline`).

    Triton aims at SPLIT_PROGRAMS programs. C++ runs a row a thread (a block of columns, in column order), so a
    sum of everything (a loss) ran on one: with more than one thread it aims at 8 programs. With two threads,
    ``torch.sigmoid(x).sum()`` over [4096, 1024] floats took 3.4 ms so, 2.6 split in 8 chunks (torch.compile
    1.4-1.7), ``(x * x).mean()`` 0.88 and 0.54 (0.58). (More programs split more: 8 a thread on 16 threads split
    a softmax over 3 rows; 16 split ``(s.softmax(-1) * v).sum()`` a row a chunk, each computing the row's exp again.)
    """
    programs = SPLIT_PROGRAMS if target == "triton" else 8 * (torch.get_num_threads() > 1)
    buffers, decisions, maxes = [], [], []  # maxes: (a split max, its partial)
    for b in ir.buffers:
        count = split_count(b, programs) if isinstance(b, ComputedBuffer) else 1
        if count == 1:
            buffers.append(b)
            continue
        rnumel = int(sympy.Mul(*b.reduction.ranges))
        chunk = sympy.Integer(-(-rnumel // count))  # sympy, like every other range
        n = len(b.layout.size)
        # merged first, so [32, 56, 56] unravels as [32, 3136]: one division fewer per element
        ranges, merge = merge_ranges("r", b.reduction.ranges, [sympy.expand(i) for i in index_exprs(b.body)])
        d, r = index_vars(n + 1), index_vars(len(ranges), "r")  # d0: the chunk; d1...: the buffer's own indices
        # q: where the chunks split the outer loop, each takes q of its steps and all of the inner loops,
        # so no division finds an element and no mask is needed past the end
        # (dims: those of the input each partial reduces; (): the last ones)
        if count == ranges[0] == b.reduction.ranges[0] and len(ranges) > 1:  # a row a chunk: the row's loops, dims
            rranges, digits, inside, dims = ranges[1:], (d[0], *r[:-1]), None, b.reduction.dims[1:]
        elif q := (ranges[0] // count if ranges[0] % count == 0 else 0):
            rranges, digits, inside, dims = (q, *ranges[1:]), (d[0] * q + r[0], *r[1:]), None, ()
        else:  # chunk s is elements s*C ... s*C + C - 1 of the (merged) row, masked past its end
            rranges, flat, dims = (chunk,), d[0] * chunk + r[0], ()
            digits = unravel(sympy.Min(flat, rnumel - 1), ranges)
            inside = Op("lt", (IndexValue(flat, torch.int64), Const(rnumel, torch.int64)), torch.bool)
        body = substitute(substitute(b.body, merge), {**dict(zip(r, digits)), **dict(zip(index_vars(n), d[1:]))})
        dtype = torch.float32 if b.layout.dtype in (torch.float16, torch.bfloat16) else b.layout.dtype
        body, identity = Op("to_dtype", (body,), dtype), Const(IDENTITY[b.reduction.op], dtype)
        size = (sympy.Integer(count), *b.layout.size)
        partial = ComputedBuffer(f"{b.name}_partial", Layout(size, contiguous_strides(size), dtype, b.layout.device),
                                 body if inside is None else Op("where", (inside, body, identity), dtype),
                                 Reduction(b.reduction.op, rranges, dims), b.origins, b.lines)
        final = Load(partial.name, store_index(size).xreplace({d[0]: r[0], **dict(zip(d[1:], index_vars(n)))}))
        if b.reduction.op == "sum" and (m := next((m for m in maxes if _sums_exp_under(b, *m, size)), None)):
            partial, final = _online_softmax(partial, final, *m, b)
        maxes += [(b, partial)] if b.reduction.op == "max" else []
        buffers += [partial, replace(b, body=final, reduction=Reduction(b.reduction.op, (sympy.Integer(count),)))]
        decisions.append((b.name, partial.name, f"split reduction: {rnumel} elements per output in {count} chunks "
                                                 f"of {chunk}, then a reduction of the {count} partials"))
    if decisions and not any(b.store_into for b in buffers):  # (an input written in place: read it in order)
        later = {f for f, _, _ in decisions}  # the split reductions and what reads them
        for i, b in enumerate(buffers):
            if b.reads & later:
                later.add(b.name)
                buffers[i] = _reinline(b, ir, buffers) if isinstance(b, ComputedBuffer) and not b.reduction else b
    return replace(ir, buffers=tuple(buffers)), decisions


def _sums_exp_under(b: ComputedBuffer, m: ComputedBuffer, partial: ComputedBuffer, size: tuple) -> bool:
    """Whether ``b`` sums ``exp(v - m)`` over the elements whose max ``m`` is, split into the same chunks."""
    return getattr(exp_of_difference(b.body, m.body, m.name), "index", None) == store_index(b.layout.size) \
        and partial.layout.size == size and m.reduction.ranges == b.reduction.ranges


def _online_softmax(partial: ComputedBuffer, final: Expr, m: ComputedBuffer, m_partial: ComputedBuffer,
                    b: ComputedBuffer) -> tuple[ComputedBuffer, Expr]:
    """A split softmax's sum of ``exp(v - max)`` as each chunk's sum under the chunk's own max, rescaled.

    ``sum over the row of exp(v - M)`` is ``sum over chunks c of exp(m_c - M) * s_c`` with ``m_c`` the
    chunk's max and ``s_c = sum over the chunk of exp(v - m_c)``. Each ``s_c`` needs only its chunk's
    max, so it joins the max's partial kernel: the row is read once for both (online softmax, Triton
    codegen's ``reduction_group``, when the chunk is looped; from the tile already loaded when it is
    held whole), where the plain split reads it once for the max and again for the sum. A chunk with
    no finite value (``m_c = -inf``: past the row's end, or a masked run) adds 0. Inductor:
    ``prepare_softmax_online`` (torch/_inductor/lowering.py), which splits the same way.
    H100, plain split vs this (torch.compile in brackets): a softmax written with amax/exp/sum over
    [300, 250000] floats 417 vs 304 us (361), F.softmax over [64, 1e6] 356 vs 259 (405), a masked
    softmax over [128, 300001] 283 vs 227 (255); 65% of a copy's speed, of the 67% that three passes
    over the row allow."""
    dt, m_c = partial.layout.dtype, Load(m_partial.name, final.index)
    terms = Op("exp", (Op("sub", (m_partial.body, Load(m_partial.name, store_index(partial.layout.size))), dt),), dt)
    # s_c * exp(m_c - M), the row's max M loaded as b's body loads it (at b's own element)
    rescaled = Op("mul", (final, Op("exp", (Op("sub", (m_c, exp_of_difference(b.body, m.body, m.name)), dt),), dt)), dt)
    empty = Op("eq", (m_c, Const(float("-inf"), dt)), torch.bool)
    return replace(partial, body=terms), Op("where", (empty, Const(0, dt), rescaled), dt)


def _reinline(b: ComputedBuffer, ir: GraphIR, buffers: list) -> ComputedBuffer:
    """A pointwise buffer that reads a split reduction, with the pointwise work it reads recomputed in place.

    A masked softmax's scores ``s = x * scale + mask`` are computed before the max, in a kernel of their
    own (the split reduction's partials, which inline ``s``, iterate over chunks, not over ``s``); the
    division ``exp(s - max) / sum`` comes after the split's final kernels and reads ``s`` back. Stored,
    ``s`` costs a kernel that reads ``x`` and ``mask`` and writes ``s``, then a full read; inlined into
    the division (which then reads ``x`` and ``mask``), it is never computed. Not where it is computed
    anyway (an output, or read elsewhere): reading it back costs no more than reading what it is
    computed from, and recomputing ``x * w`` would read both."""
    new = replace(b, body=inline_pointwise(b.body, dict(zip(index_vars(len(b.layout.size)), b.layout.size)),
                                           {p.name: p for p in buffers if isinstance(p, ComputedBuffer)}, {}))
    gone = {ld.buf for ld in loads(b.body)} - {ld.buf for ld in loads(new.body)}
    return b if gone & replace(ir, buffers=tuple(new if p is b else p for p in buffers)).live_buffers() else new

