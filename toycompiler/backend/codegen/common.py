"""The renderer shared by every codegen target.

A kernel is rendered the same way for Triton and C++: loop over ``x`` (rows,
or all elements of a pointwise kernel); for a reduction kernel, run one loop
over ``r`` per reduction, accumulating; then one last loop over ``r`` for the
element-wise results that must be stored. Inside, each node's expression
becomes numbered temporaries (``tmp0``, ``tmp1``, ... common subexpressions
reused), loads of buffers computed in the same kernel are inlined, and the
buffers the scheduler said must reach memory are stored. The loop nest of a
softmax row kernel::

    for each row x:                      # parallel
        acc0 = -inf; for r: acc0 = max(acc0, in[x, r])         # amax
        acc1 = 0;    for r: acc1 += exp(in[x, r] - acc0)        # sum
        for r: out[x, r] = exp(in[x, r] - acc0) / acc1          # div

Reductions that need no row value still to come share one loop over r
(``sum(x)`` and ``sum(x * x)`` of a variance read the row once), and
neighbouring loops that every index walks as one are merged into one loop
(``H*W`` of a contiguous NCHW tensor).

Targets differ only in spelling, so each is a small subclass that fills in
:attr:`KernelRenderer.ops` and a few hooks (loops, loads, stores, reductions).

Mirrors: torch/_inductor/codegen/common.py (Kernel, CSE, OpOverrides),
torch/_inductor/codegen/simd.py (the x/r split) and tinygrad's
renderer/cstyle.py (``code_for_op``).
Leaves out: tiling in more than x and r (but for C++'s tiles of a transposed
read), vectorized loads beyond what the C++ compiler does itself, and
Inductor's value-range analysis.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import sympy
import torch

from ...artifacts import LineOrigin
from .. import ir
from ..ir import ComputedBuffer, Const, Expr, GraphIR, IndexValue, Load, Op, index_vars, loads, op_names, store_index
from ..scheduler import Kernel, node_vars, placement

HALF = (torch.float16, torch.bfloat16)
SCALAR_FMOD = "fmod of doubles"  # how a C++ kernel computes a double's fmod: one element at a time (cpp.FMOD_PRELUDE)
# The binary ops that C and Triton both write as an operator between the operands (a target's ops: ``{0} + {1}``)
INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==",
         "ne": "!=", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}


@dataclass(frozen=True)
class RenderedKernel:
    """Source of one kernel and how the wrapper must call it."""

    name: str
    source: str
    inputs: tuple[str, ...]  # buffer names passed as input pointers, in order
    outputs: tuple[str, ...]  # buffer names passed as output pointers, in order
    sizes: tuple[str, ...]  # size arguments ("xnumel", "rnumel", "s0") ...
    size_values: tuple[sympy.Expr, ...]  # ... and the expressions that give them
    nodes: tuple[str, ...]
    lines: tuple[int, ...]
    kind: str = "pointwise"  # pointwise or reduction
    meta: tuple[tuple[str, int], ...] = ()  # Triton: block sizes (XBLOCK, RBLOCK), then num_warps if set
    line_map: tuple[LineOrigin, ...] = ()  # which buffer each line of ``source`` computes
    ops: frozenset[str] = frozenset()  # the ops it renders (C++: which vector math its library defines)


@dataclass(frozen=True)
class IndexPrinter:
    """sympy index -> target text (indices are non-negative integers), in a language's spelling."""

    floordiv: str = "//"
    minmax: str = "{which}({args})"  # the text of min(args) or max(args), which each language spells its own way

    def __call__(self, e: sympy.Expr) -> str:
        e = sympy.sympify(e)
        if e.is_Integer or e.is_Symbol or e.is_Float:  # (a float: a size as a value, ``std``'s ``s1 - 1.0``)
            return str(e)
        # a product after // or % is bracketed: ``x // (s1*s2)``, not ``(x // s1)*s2``
        right = lambda a: f"({self(a)})" if isinstance(a, (sympy.Mul, sympy.Pow)) else self(a)  # noqa: E731
        if isinstance(e, (ir.FloorDiv, sympy.Mod)):  # ``a // b``, ``a % b``
            return f"({self(e.args[0])} {'%' if isinstance(e, sympy.Mod) else self.floordiv} {right(e.args[1])})"
        if isinstance(e, ir.ModularIndexing):
            a, b, c = e.args
            inner = self(a) if b == 1 else f"({self(a)} {self.floordiv} {right(b)})"
            return f"({inner} % {right(c)})"
        if isinstance(e, (sympy.Min, sympy.Max)):
            return self.minmax.format(which=type(e).__name__.lower(), args=", ".join(self(a) for a in e.args))
        if isinstance(e, sympy.Add):
            terms = [self(a) for a in sorted(e.args, key=sympy.default_sort_key)]
            return "(" + " + ".join(terms).replace("+ -", "- ") + ")"
        if isinstance(e, sympy.Mul):
            coeff, rest = e.as_coeff_Mul()
            factors = [self(a) for a in sympy.Mul.make_args(rest)]
            return ("-" if coeff == -1 else "" if coeff == 1 else f"{self(coeff)}*") + "*".join(factors)
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
            return "*".join([self(e.base)] * int(e.exp))
        raise NotImplementedError(f"cannot print index expression {e}")


def unclamped(e: sympy.Expr) -> sympy.Expr | None:
    """``Min(Max(x1 - 64, 0), 63)`` -> ``x1 - 64``: the argument of an index's clamp that holds a loop variable.

    A Min or Max in a load's index is a guard: it keeps a load whose value the kernel discards (the other
    inputs' columns of a ``torch.cat``, a pad's border, the tail of a split reduction) inside its buffer. But
    a clamped index is no longer affine, so GCC gathers the loop's loads one element at a time: a cat along
    the last dim ran at 0.69x torch.compile, a rotary embedding at 0.53x, ``F.pad`` at 0.36x. So a C++
    kernel reads ``x1 - 64 == clamp ? in_ptr1[... x1 - 64] : 0``: the address affine, the read skipped
    where the clamp would have moved it, which GCC vectorises as a masked load (as Inductor's masked loads).
    Triton's ``setup`` sets clamps aside the same way to find the stride of a read along x."""
    while isinstance(e, (sympy.Min, sympy.Max)):
        inner = [a for a in e.args if any(s.name[0] in "xr" for s in a.free_symbols)]  # loop variables x0, r0...
        if len(inner) != 1:
            return None
        e = inner[0]
    return e


class KernelRenderer:
    """Base class: everything but the target's spelling.

    A target subclass fills in :attr:`ops` and these hooks, each returning target text (lines or an
    expression):

    - ``setup()``: choose the loop order and block sizes for ``self.kernel``;
    - ``header()``, ``signature(sizes)``, ``footer()``: the text around the body;
    - ``x_loop_open()`` / ``x_loop_close()``, ``r_loop_open(purpose)`` / ``r_loop_close()``,
      ``row_loop_open()`` / ``row_loop_close()``: the loops;
    - ``reductions(nodes)``: one loop over r accumulating every node, returning each row value;
    - ``assign(tmp, value, dtype)`` (a temporary, or a loop variable), ``load(ptr, index, dtype)``,
      ``store(buf, index, value, where)``, ``constant(value, dtype)``, ``cast(value, dtype)``,
      ``index_value(index, dtype)``: one statement or expression each;
    - ``types``: the target's name of each dtype it supports.
    """

    language = "?"  # also the first word of its kernels' names
    types: dict[torch.dtype, str] = {}
    ops: dict[str, str] = {}  # op name -> format string over its operands {0}, {1}, ...
    printer = IndexPrinter()

    def __init__(self, graph: GraphIR, config):
        self.ir, self.config = graph, config  # (``ir`` alone is the module of the IR's helpers)
        self.dtypes = {b.name: b.layout.dtype for b in (*graph.inputs, *graph.buffers)}

    # -- naming ----------------------------------------------------------------------
    def kernel_name(self, kernel: Kernel, index: int) -> str:
        names = [op for n in kernel.nodes for op in op_names(n.body) + ([n.reduction.op] if n.reduction else [])]
        # each op once, in order of first use (dict keys keep it); casts and copies name nothing
        ops = _name_patterns([op for op in dict.fromkeys(names) if op not in ("to_dtype", "identity")])
        core = "_".join(ops[:5]) + ("_etc" if len(ops) > 5 else "")
        return f"{self.language}_{core or 'copy'}_{index}"

    def type_name(self, dtype: torch.dtype) -> str:
        if dtype not in self.types:
            raise NotImplementedError(f"the {self.language} backend does not support {dtype}")
        return self.types[dtype]

    # -- the driver ------------------------------------------------------------------
    def render(self, kernel: Kernel, index: int) -> RenderedKernel:
        self.kernel = kernel
        self.name = self.kernel_name(kernel, index)
        # the inputs: every buffer the kernel loads and does not compute itself
        self.inputs = sorted(kernel.reads() - kernel.names(), key=_order)
        self.outputs = list(kernel.stores)
        self.ptr = {b: f"in_ptr{i}" for i, b in enumerate(self.inputs)} | \
                   {b: f"out_ptr{i}" for i, b in enumerate(self.outputs)}
        self.xnumel, self.rnumel = sympy.Mul(*kernel.xranges), sympy.Mul(*kernel.rranges)  # (no loops: 1)
        self.lines: list[tuple[str, ComputedBuffer | None]] = []  # each line, and the IR buffer it was written for
        self.owner: ComputedBuffer | None = None
        # one scope of temporaries per level of indentation (code -> its tmp, see tmp); the first: the kernel function.
        # A loop's scope also holds where its ``for`` is, under "@FOR@" (C++ computes what it need not redo before it)
        self.scopes: list[dict[str, str | int]] = [{}]
        self.counter = itertools.count()  # numbers the names fresh makes: tmp0, tmp1, acc2...
        self.row_values: dict[str, str] = {}
        self.spilled: dict[str, str] = {}  # element node -> the stored node whose memory holds its values
        self.used_ops: set[str] = set()  # which ops the kernel renders, and how (the C++ kernel comment says)
        self.kernel_ops = {op for n in kernel.nodes for op in op_names(n.body)}  # the ops its nodes compute
        self.indirect_loops: dict[str, set[str]] = {}  # see index_tmp
        self.guard = ""  # Triton: `` & tmp3 & tmp7``, the conditions of the where branches being rendered (see expr)
        self.where = {n.name: placement(n, kernel) for n in kernel.nodes}  # element, row or reduction
        # each node's reads, and those of the element nodes it inlines (a cast's operand's operands), in node
        # order; and of those, the row values (reductions, and work on them) it reads
        self.element_reads, self.row_inputs = {}, {}  # name -> set of names
        for n in kernel.nodes:
            reads = self.element_reads[n.name] = n.reads.union(*(self.element_reads[b] for b in n.reads
                                                                 if self.where.get(b) == "element"))
            self.row_inputs[n.name] = {b for b in reads if self.where.get(b, "element") != "element"}
        self.merge_loops()
        self.column = self.column_order()  # reads along x, not r (both targets ask); may reorder the x loops
        self.setup()
        # the loop over x (its variables defined by finish, where @XVARS@ stands), the body inside it
        self.emit(*self.x_loop_open(), "@XVARS@")
        if self.xnumel != 0:  # (an empty output has nothing to compute: its reduction's loops would index nothing)
            (self.body_pointwise if kernel.kind == "pointwise" else self.body_reduction)()
        self.emit(*self.x_loop_close())
        body = self.finish()
        sizes, values = self.size_args()
        head = self.header() + self.signature(sizes)
        src_lines = tuple(sorted({ln for n in kernel.nodes for ln in n.lines}))
        line_map = tuple(LineOrigin(len(head) + i, n.name, n.origins, n.lines)
                         for i, (_, n) in enumerate(body, start=1) if n is not None)
        source = "\n".join(head + [text for text, _ in body] + self.footer()) + "\n"
        return RenderedKernel(self.name, source, tuple(self.inputs), tuple(self.outputs), tuple(sizes),
                              tuple(values), tuple(n.name for n in kernel.nodes), src_lines, kernel.kind,
                              self.blocks, line_map, frozenset(self.used_ops))

    def size_args(self) -> tuple[list[str], list[sympy.Expr]]:
        text = "\n".join(line for line, _ in self.lines)
        # (argument, value): xnumel, rnumel for a reduction, then each size symbol the body uses
        args = [("xnumel", self.xnumel)] + ([("rnumel", self.rnumel)] if self.kernel.kind == "reduction" else [])
        args += [(name, sympy.Symbol(name)) for name, _ in self.ir.size_vars if re.search(rf"\b{name}\b", text)]
        return [name for name, _ in args], [value for _, value in args]

    def body_pointwise(self) -> None:
        for n in [n for n in self.kernel.nodes if n.name in self.kernel.stores]:
            self.store_element(n)

    def store_element(self, n: ComputedBuffer) -> None:
        """A value cast from float to half precision is stored uncast: the store rounds it (once, not twice)."""
        body = n.body
        while isinstance(body, Op) and (body.op == "identity" or body.op == "to_dtype" and body.dtype == n.layout.dtype
                                        and body.dtype in HALF and self.expr_dtype(body.args[0]) == torch.float32):
            body = body.args[0]
        with self.owning(n):
            value = self.expr(body, self.vars(n), n)
            self.comment(n, value)
            self.emit(self.store(n.name, self.store_index(n), value, "element"))

    def body_reduction(self) -> None:
        for n in self.kernel.nodes:
            where = self.where[n.name]
            # element nodes: stored in the last loop over r (below); a row value already there: a reduction
            # computed in an earlier node's loop
            if where == "element" or n.name in self.row_values:
                continue
            group = self.reduction_group(n) if where == "reduction" else [n]
            for m, value in zip(group, self.reductions(group) if where == "reduction" else [self.row_value(n)]):
                with self.owning(m):
                    self.comment(m, value)
                    self.row_values[m.name] = value
                    if m.name in self.kernel.stores:
                        self.emit(*self.row_loop_open(), self.store(m.name, self.store_index(m), value, "row"),
                                  *self.row_loop_close())
        if elements := self.stored_elements():
            self.emit(*self.r_loop_open("store"))
            for n in elements:
                self.store_element(n)
            self.emit(*self.r_loop_close())

    def stored_elements(self) -> list[ComputedBuffer]:
        """The element nodes that reach memory, and are not there yet (in C++'s column order some are stored
        first: ``CppRenderer.x_loop_open``)."""
        return [n for n in self.kernel.nodes if n.name in self.kernel.stores and self.where[n.name] == "element"
                and n.name not in self.spilled]

    def reduction_group(self, first: ComputedBuffer) -> list[ComputedBuffer]:
        """``first`` and every later reduction of the kernel that needs no row value still to come: they
        share one loop over r, one accumulator each, so the row is read once (``sum(x)`` and
        ``sum(x * x)`` of a variance; the ``max`` and the ``sum`` of a softmax cannot share: the sum
        needs the max)."""
        return [m for m in self.kernel.nodes[self.kernel.nodes.index(first):] if m.reduction
                and m.name not in self.row_values and self.row_inputs[m.name] <= self.row_values.keys()]

    def costly(self, e: ComputedBuffer) -> bool:
        """Whether ``e`` is an element value worth keeping between loops rather than computed again (an exp)."""
        return not e.reduction and bool(set(op_names(e.body)) & self.spill_ops)

    def spill_outputs(self, e: ComputedBuffer) -> list[ComputedBuffer]:
        """The outputs of ``e``'s size that read its values, directly or through element nodes (``spill``)."""
        return [out for out in self.kernel.nodes if out.name in self.kernel.stores
                and e.name in self.element_reads[out.name] and out.layout.size == e.layout.size]

    def spill(self, kept: dict[str, str]) -> None:
        """Inside a loop over r: write each costly element value (an ``exp``) that this loop can compute
        into the output the last loop computes from it (``out = exp(x - max) / sum``), so that loop reads
        it back instead of computing it again, as eager's softmax does. A value the loop computes
        already (the sum's own ``exp``) costs no new work; the output must have its size and dtype, and may read
        the value through element nodes (a bfloat16 softmax's ``out = to_bf16(exp(x - max) / sum)``).

        ``kept``: values (their temporaries) that this loop also writes into a local array, element of the
        row by element (C++'s staged sums, ``CppRenderer.lanes``). Such a value is read from the array
        instead, and not written out: a softmax over the channels of a channels-last [16, 64, 56, 56]
        tensor, whose NCHW output is written with a stride of 3136 along the row, took 4.66 ms instead of
        5.09 (torch.compile 3.90; one thread); over rows of 100 and 200 floats, within 5% either way.

        A costly value that is itself an output (a softmax's ``exp``, saved for the backward) is written where this
        loop computes it, and read back: written in the last loop, it was computed there again. The training
        step of ``(s.softmax(-1) * v).sum()`` over [8, 8, 128, 128] took 2.02 ms so, torch.compile 1.77; then 1.59
        (1.66; one thread). So is any output that needs no row value, cheap or not: an embedding's forward saved
        ``2 * row`` for the backward in a pass of its own over the gathered rows after the sum of their squares, and
        a residual sum beside a layer norm's statistics is read back where the norm needs it."""
        for e in self.kernel.nodes:
            if e.reduction or e.name in self.spilled or not (self.costly(e) or e.name in self.kernel.stores) \
                    or not self.row_inputs[e.name] <= self.row_values.keys():
                continue
            for out in [e] if e.name in self.kernel.stores else self.spill_outputs(e):
                if out.name not in self.spilled.values() and (kept or out.layout.dtype == e.layout.dtype):
                    with self.owning(e):
                        value = self.expr(e.body, self.vars(e), e)
                        if value in kept and out is not e:  # the loop keeps it in an array already: read it there
                            self.row_values[e.name] = kept[value]
                        elif out.layout.dtype == e.layout.dtype:
                            self.emit(self.store(out.name, self.store_index(out), value, "element"))
                            self.spilled[e.name] = out.name
                    break

    def finish(self) -> list[tuple[str, ComputedBuffer | None]]:
        """The body's lines, each with the buffer it was written for; loop variables defined where used."""
        loops = {"@XVARS@": ("x", self.xr, "xindex"), "@RVARS@": ("r", self.rr, "rindex")}  # placeholder -> its loop
        out: list[tuple[str, ComputedBuffer | None]] = []
        for line, owner in self.lines:
            stripped, pad = line.strip(), line[: len(line) - len(line.lstrip())]
            if stripped in loops:
                out += [(pad + d, None) for d in self.var_defs(*loops[stripped], "\n".join(t for t, _ in self.lines))]
            else:
                out.append((line, owner))
        return out

    def var_defs(self, prefix: str, ranges: tuple, flat: str, text: str) -> list[str]:
        """``x0 = xindex // 64``-style definitions of the loop variables the body uses."""
        flat_index = sympy.Symbol(flat, integer=True, nonnegative=True)
        # x0 = xindex // 64, ...: a loop variable is assigned as a temporary is
        digits = zip(index_vars(len(ranges), prefix), map(self.printer, ir.unravel(flat_index, ranges)))
        return [self.assign(v.name, e, torch.int64) for v, e in digits if re.search(rf"\b{v.name}\b", text)]

    # -- loop variables --------------------------------------------------------------
    def vars(self, n: ComputedBuffer) -> dict[sympy.Symbol, sympy.Expr]:
        """The node's indices (d0.., r0..) as the kernel's loop variables, once loops are merged."""
        return {k: v.xreplace(self.merge) for k, v in node_vars(n, self.kernel).items()}

    def merge_loops(self) -> None:
        """Merge neighbouring loops that every index walks as one loop: ``29*x2 + x3`` with x3 < 29 is one
        index over 841 elements, so the inner (vector) loop runs 841 times instead of 29, with no loop
        overhead between rows. Sets ``self.xr`` and ``self.rr`` (the loops rendered) and ``self.merge``
        (each scheduler loop variable -> its rendered form). Inductor: ``_simplify_loops`` in
        torch/_inductor/codegen/simd.py."""
        self.merge: dict[sympy.Symbol, sympy.Expr] = {}
        indices = [self.store_index(n) for n in self.kernel.nodes]
        indices += [sympy.expand(i.xreplace(self.vars(n))) for n in self.kernel.nodes for i in ir.index_exprs(n.body)]
        self.xr, xmerge = ir.merge_ranges("x", self.kernel.xranges, indices)
        self.rr, rmerge = ir.merge_ranges("r", self.kernel.rranges, indices)
        self.merge = {**xmerge, **rmerge}

    def column_order(self) -> bool:
        """Whether a reduction kernel reads memory along x rather than along r (``x.sum(0)`` of a matrix).

        True when no load is contiguous in the innermost reduced index but some load is in a kept one: then
        the loops must run over r outside and over a block of x inside to read contiguously. That kept loop
        moves innermost if it is not (a sum over W of a channels-last [N, C, H, W] tensor keeps n, c, h, and
        reads along c): the x loops run in any order, as each node's loads and stores take the same one.
        Over W of a channels-last [128, 64, 56, 56] float tensor, read along w with a stride of 64 the sum
        took 174 us on an H200 (torch.compile 44), 30 us in column order. Only loads from memory count: a
        split softmax's partial sum reads its chunk's max at ``x`` from the registers of the same kernel,
        which computed it (``ir._online_softmax``); and only loads that vary along x (``ir.streamed``).
        """
        xs, rs = index_vars(len(self.xr), "x"), index_vars(len(self.rr), "r")  # (a pointwise kernel has no r)
        indices = ir.streamed([i for _, i in self.load_indices(self.inputs)], rs, xs[:-1]) if rs else []
        along = [k for k, x in enumerate(xs) if any(i.coeff(x) == 1 for i in indices)]
        if not along or any(i.coeff(rs[-1]) == 1 for i in indices):
            return False
        order = [k for k in range(len(xs)) if k != along[-1]] + along[-1:]  # the loops, outermost first
        self.xr = tuple(self.xr[k] for k in order)
        self.merge = {v: e.xreplace({xs[k]: xs[p] for p, k in enumerate(order)}) for v, e in self.merge.items()}
        return True

    # -- emitting --------------------------------------------------------------------
    def emit(self, *lines: str) -> None:
        for line in lines:
            if line == "@INDENT@":  # a loop opens: one level deeper, its temporaries in a scope of their own
                self.scopes.append({"@FOR@": len(self.lines) - 1})
            elif line == "@DEDENT@":
                self.scopes.pop()
            else:
                self.lines.append(("    " * len(self.scopes) + line if line else "", self.owner))

    @contextmanager
    def owning(self, n: ComputedBuffer) -> Iterator[None]:
        """Lines emitted inside are recorded as computing ``n`` (the kernel's provenance, kept as data)."""
        outer, self.owner = self.owner, n  # (an error inside ends the render: render starts from no owner)
        yield
        self.owner = outer

    def comment(self, n: ComputedBuffer, value: str) -> None:
        """``# buf2 = tmp5 (exp, line 4)``: which temporary holds which IR node, from which FX node and line."""
        where = f", line {n.lines[0]}" if n.lines else ""
        self.emit(f"{self.comment_mark} {n.name} = {value} ({', '.join(n.origins)}{where})")

    def zero(self, dtype: torch.dtype) -> str:
        """A 0 of ``dtype``: what a kernel reads from a buffer with no elements (typed, as an operand's must be:
        C++'s ``toy_maximum(tmp0, 0)`` of a float does not compile)."""
        return self.constant(0, dtype)

    def tmp(self, code: str, dtype: torch.dtype) -> str:
        if (name := next((scope[code] for scope in reversed(self.scopes) if code in scope), None)) is None:
            name = self.scopes[-1][code] = self.fresh("tmp")  # computed here first: a new temporary
            self.emit(self.assign(name, code, dtype))
        return name

    def fresh(self, stem: str) -> str:
        return f"{stem}{next(self.counter)}"

    # -- expressions -----------------------------------------------------------------
    def expr(self, e: Expr, mapping: dict, node: ComputedBuffer) -> str:
        """Text of ``e`` for the current loop, with node-local indices mapped to loop variables."""
        if isinstance(e, Load):
            local = {n.name: n for n in self.kernel.nodes}
            if e.buf in self.row_values:
                return self.row_values[e.buf]
            if out := self.spilled.get(e.buf):  # written to an output by an earlier loop over r: read back
                return self.load_tmp(out, self.store_index(local[out]))
            # Computed in this kernel, element by element: inlined, once for each loop and each where branch's
            # mask (self.guard) it is read in, so a value read many times (a diamond) is walked once: codegen's
            # work is linear in the kernel's ops.
            if e.buf in local:
                if (value := next((s[e.buf + self.guard] for s in reversed(self.scopes) if e.buf + self.guard in s),
                                  None)) is None:
                    with self.owning(producer := local[e.buf]):
                        value = self.expr(producer.body, self.vars(producer), producer)
                        self.scopes[-1][e.buf + self.guard] = value
                        self.comment(producer, value)
                return value
            if self.ir.buffer(e.buf).layout.numel == 0:  # never read (masked off), may have no memory
                return self.tmp(self.zero(dtype := self.compute_dtype(self.dtypes[e.buf])), dtype)
            read_through = {s: self.index_tmp(v, n, mapping, node, e.buf) for s, v, n in e.indirect}  # (indirect)
            return self.load_tmp(e.buf, sympy.expand(e.index.xreplace(mapping)).xreplace(read_through))
        if isinstance(e, Const):
            return self.constant(e.value, e.dtype)
        if isinstance(e, IndexValue):
            return self.tmp(self.index_value(sympy.expand(e.index.xreplace(mapping)), e.dtype), e.dtype)
        if e.op == "pow" and isinstance(e.args[1], Const) and self.expr_dtype(e.args[0]) == e.dtype:
            y = float(e.args[1].value)
            if y in POW_AS_MUL:
                self.used_ops.add(f"pow as {abs(int(y))} multiplications")
                return self.expr(pow_as_mul(e.args[0], int(y), e.dtype), mapping, node)
            if y in (POW_AS_SQRT if self.language == "cpp" else (-0.5, 0.5)):
                self.used_ops.add("pow as multiplications and a square root")
                return self.expr(pow_as_sqrt(e.args[0], y, e.dtype), mapping, node)
        # Triton: a ``where`` whose condition is computed from indices alone, a cat's choice of input or a pad's border
        # (Inductor's ``ops.masked``), masks the loads of each branch by it, so a lane reads only the input it takes.
        # Such a load's text differs from the same load's without the condition: it is a temporary of its own, and
        # nothing computed from it is taken for the value outside the branch. A ``torch.stack`` of four computed box
        # corners [4194304, 4] took 43 us on an H200 with each element loading all four inputs' values, 37 with them
        # masked (torch.compile 36). A condition read from memory (``torch.where(x > 0, x, y)``) masks nothing: Triton
        # loads contiguous elements together only under a mask it can prove the same across them.
        conds = [""] * len(e.args)
        if e.op == "where" and self.language == "triton" and not loads(e.args[0]):
            c = self.expr(e.args[0], mapping, node)
            conds = ["", f" & {c}", f" & {self.tmp(self.ops['logical_not'].format(c), torch.bool)}"]
        outer, args = self.guard, []
        for a, c in zip(e.args, conds):  # each load inside takes self.guard into its mask
            self.guard = outer + c
            args.append(self.expr(a, mapping, node))
        self.guard = outer
        if e.op == "to_dtype":
            # to half precision through float32, as torch converts (c10's BFloat16 and Half take a float).
            # Triton's CPU interpreter narrows float64 wrongly and an int64 16 to bfloat16 0.0
            if e.dtype in HALF and self.expr_dtype(e.args[0]) not in (torch.float32, *HALF):
                args[0] = self.tmp(self.cast(args[0], torch.float32), torch.float32)
            return self.tmp(self.cast(args[0], e.dtype, self.expr_dtype(e.args[0])), self.compute_dtype(e.dtype))
        if e.op == "identity":
            return args[0]
        if e.op not in self.ops:
            raise NotImplementedError(f"{self.language} codegen has no rendering for op {e.op!r}")
        self.used_ops.add(SCALAR_FMOD if e.op == "fmod" and e.dtype == torch.float64 else e.op)
        text = self.ops[e.op].format(*args, dtype=self.type_name(self.compute_dtype(e.dtype)))
        return self.tmp(text, self.compute_dtype(e.dtype))

    def index_tmp(self, v: Expr, size: sympy.Expr, mapping: dict, node: ComputedBuffer, buf: str) -> sympy.Symbol:
        """The temporary holding an indirect load's index value (``ir.in_range``), as a symbol of its index.
        ``indirect_loops`` keeps which loops it varies along (Triton's masks need them). Triton computes it
        in int32 where the buffer it reads has fewer than 2^31 elements: a GPU's int64 arithmetic takes
        several instructions an operation (2x bilinear upsampling [128, 64, 56, 56] took 0.71 ms in int64
        on an H200, torch.compile 0.25)."""
        small = self.language == "triton" and (self.ir.buffer(buf).layout.numel < 2**31) is sympy.true
        name = self.expr(ir.in_range(v, size, torch.int32 if small else torch.int64), mapping, node)
        self.indirect_loops[name] = {str(s)[0] for i in ir.index_exprs(v) for s in i.xreplace(mapping).free_symbols}
        return sympy.Symbol(name, integer=True, nonnegative=True)

    def load_tmp(self, buf: str, index: sympy.Expr) -> str:
        """A load of ``buf`` (an input, or an output this kernel wrote) at ``index``, into a temporary."""
        return self.tmp(self.load(self.ptr[buf], index, self.dtypes[buf]), self.compute_dtype(self.dtypes[buf]))

    def load_indices(self, bufs) -> list[tuple[Load, sympy.Expr]]:
        """Each load of a buffer in ``bufs`` with its index, in the loops' variables as rendered."""
        return [(ld, sympy.expand(ld.index.xreplace(self.vars(n))))
                for n in self.kernel.nodes for ld in loads(n.body) if ld.buf in bufs]

    def transposed_loads(self) -> list[tuple[str, sympy.Expr]]:
        """(pointer, index) of each load from memory of a pointwise kernel that walks memory along its
        second-last loop and not its last (``x.t() + x``, a permute, NHWC to NCHW): no one loop order reads
        both it and the other loads in order. The targets block such kernels in two dimensions instead
        (C++: tiles, see ``CppRenderer.setup``; Triton: ``YBLOCK`` rows by ``XBLOCK`` columns)."""
        if self.kernel.kind != "pointwise" or len(self.xr) < 2:
            return []
        a, b = index_vars(len(self.xr), "x")[-2:]
        reads = dict.fromkeys((self.ptr[ld.buf], i) for ld, i in self.load_indices(self.inputs)
                              if self.ir.buffer(ld.buf).layout.numel and not ld.indirect)
        return [(p, i) for p, i in reads if i.coeff(a) == 1 and i.coeff(b) not in (0, 1)]  # (0: a broadcast)

    def store_index(self, n: ComputedBuffer) -> sympy.Expr:
        size = n.layout.size
        # a write into a graph input goes through the input's strides (a size-1 dim's index is 0 in both)
        index = ir.linear_index(index_vars(len(size)), n.layout.stride) if n.store_into else store_index(size)
        return sympy.expand(index.xreplace(self.vars(n)))

    def compute_dtype(self, dtype: torch.dtype) -> torch.dtype:
        """Half precision is computed in float32 and rounded only where a value is stored or the program casts
        it (not where an op's decomposition casts its float32 result back: lowering's ``_to_copy``), as Inductor
        does (its emulate_precision_casts is off; it rounds not even a program's casts); eager rounds after every
        op. So a kernel's result is nearer the exact one, and can differ from eager's by more than an ulp where
        eager's rounding decides a branch: a bfloat16 ``where(sigmoid(x*y) - |y|**1.5 > 0, ...)`` took the other
        arm at 75 of 100037 elements in Triton (eager's rounded difference was exactly 0)."""
        return torch.float32 if dtype in HALF else dtype

    def expr_dtype(self, e: Expr) -> torch.dtype:
        return self.dtypes[e.buf] if isinstance(e, Load) else e.dtype

    # -- hooks a target fills in ---------------------------------------------------
    comment_mark = "#"
    # The block sizes (a Triton kernel's constexpr arguments), then the warps to launch it with if not Triton's
    # default 4; set by a target's ``setup``, handed to the wrapper as RenderedKernel.meta
    blocks: tuple[tuple[str, int], ...] = ()
    spill_ops: set[str] = set()  # element values with these ops are kept in an output between loops (:meth:`spill`)
    def row_value(self, n: ComputedBuffer) -> str:
        """A row node's value (``log(sum)`` in a log_softmax), computed once per row."""
        return self.expr(n.body, self.vars(n), n)

    def row_loop_open(self) -> list[str]:
        return []
    def row_loop_close(self) -> list[str]:
        return []
    def footer(self) -> list[str]:
        return []


POW_AS_MUL = (-4, -3, -2, -1, 1, 2, 3, 4)  # constant exponents written as multiplications


def pow_as_mul(base: Expr, n: int, dtype: torch.dtype) -> Expr:
    """``x ** 3`` as ``x * x * x`` and ``x ** -2`` as ``1 / (x * x)``: exact for integers, within an ulp
    or two of ``pow`` for floats, and several times faster (``pow`` has slow paths for negative bases)."""
    product = base
    for _ in range(abs(n) - 1):
        product = Op("mul", (product, base), dtype)
    return product if n > 0 else Op("reciprocal", (product,), dtype)


POW_AS_SQRT = (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5)  # C++: half-integer exponents through std::sqrt (Triton: +-0.5)


def pow_as_sqrt(base: Expr, y: float, dtype: torch.dtype) -> Expr:
    """``x ** 1.5`` as ``|x| * sqrt(|x|)`` (``x ** -0.5`` as ``1 / sqrt(|x|)``): a vector square root
    instruction and a multiplication, where a vector ``pow`` is a long libm call (half the time of a
    transcendental chain on a CPU). Within two ulps of ``pow``, and with its special values: the magnitude
    is taken so that ``-0.0`` and ``-inf`` give ``pow``'s ``+0.0`` and ``+inf`` (``sqrt(-0.0)`` is
    ``-0.0``), and any other negative base gives NaN, as a non-integer power of it does. Exponents
    0.5 and -0.5 are eager's own special case: ``sqrt(x)`` and ``rsqrt(x)`` exactly (``-0.0 ** 0.5`` is
    ``-0.0`` in torch), on every backend."""
    if abs(y) == 0.5:
        return Op("sqrt" if y > 0 else "rsqrt", (base,), dtype)
    a = Op("abs", (base,), dtype)
    root = Op("sqrt", (a,), dtype)
    root = Op("mul", (pow_as_mul(a, int(abs(y)), dtype), root), dtype) if abs(y) > 1 else root
    value = root if y > 0 else Op("reciprocal", (root,), dtype)
    real = Op("bitwise_or", (Op("ge", (base, Const(0, dtype)), torch.bool),
                             Op("eq", (base, Const(float("-inf"), dtype)), torch.bool)), torch.bool)
    return Op("where", (real, value, Const(float("nan"), dtype)), dtype)


# Well-known op groups a kernel is named after (``triton_softmax_0`` rather than ``triton_max_sub_exp_sum_div_0``).
PATTERNS = (
    ("log_softmax", {"max", "sub", "exp", "sum", "log"}),
    ("softmax", {"max", "sub", "exp", "sum", "div"}),
    ("layer_norm", {"sum", "div", "sub", "mul", "rsqrt"}),
    ("rms_norm", {"mul", "sum", "div", "rsqrt"}),
)


def _name_patterns(ops: list[str]) -> list[str]:
    for name, members in PATTERNS:
        if members <= set(ops):
            first = min(ops.index(m) for m in members)
            ops = [o for o in ops[:first] if o not in members] + [name] + [o for o in ops[first:] if o not in members]
    return ops


def _order(name: str) -> tuple[int, int]:
    """arg0 < arg1 < const0 < buf0 < buf1 ... (inputs first, then buffers by number)."""
    rank = 0 if name.startswith("arg") else 1 if name.startswith("const") else 2
    return (rank, int("".join(c for c in name if c.isdigit()) or 0))
