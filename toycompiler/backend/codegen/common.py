"""The renderer shared by every codegen target.

A kernel is rendered the same way for Triton and C++: load what it reads,
compute each node's expression into numbered temporaries (``tmp0``, ``tmp1``,
... with common subexpressions reused), and store the buffers the scheduler
said must reach memory. Targets differ only in spelling, so each is a small
subclass that fills in :attr:`KernelRenderer.ops` and a few hooks.

Mirrors: torch/_inductor/codegen/common.py (Kernel, CSE, OpOverrides) and
tinygrad's renderer/cstyle.py (``code_for_op``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
import torch

from ..ir import Const, ComputedBuffer, Expr, GraphIR, Load, Op, contiguous_strides, index_vars
from ..ir import store_index as contiguous_store_index
from ..scheduler import Kernel


@dataclass(frozen=True)
class RenderedKernel:
    """Source of one kernel and how the wrapper must call it."""

    name: str
    source: str
    inputs: tuple[str, ...]  # buffer names passed as input pointers, in order
    outputs: tuple[str, ...]  # buffer names passed as output pointers, in order
    sizes: tuple[str, ...]  # size arguments (e.g. "xnumel") and the expressions that give them
    size_values: tuple[sympy.Expr, ...]
    nodes: tuple[str, ...]
    lines: tuple[int, ...]
    line_map: tuple[tuple[int, str], ...] = ()  # (1-based source line, IR buffer it computes)


class KernelRenderer:
    """Base class: everything but the target's spelling."""

    language = "?"
    prefix = "kernel"
    ops: dict[str, str] = {}  # op name -> format string over its operands {0}, {1}, ...

    def __init__(self, ir: GraphIR):
        self.ir = ir

    # -- hooks a target fills in ---------------------------------------------------
    def header(self) -> list[str]: ...
    def signature(self, name: str, inputs: list[str], outputs: list[str], sizes: list[str]) -> list[str]: ...
    def loop_open(self) -> list[str]: ...
    def loop_close(self) -> list[str]: ...
    def dim_var(self, name: str, expr: str) -> str: ...
    def assign(self, tmp: str, value: str, dtype: torch.dtype) -> str: ...
    def load(self, ptr: str, index: str, dtype: torch.dtype) -> str: ...
    def store(self, ptr: str, index: str, value: str) -> str: ...
    def constant(self, value: object, dtype: torch.dtype) -> str: ...
    def cast(self, value: str, dtype: torch.dtype) -> str: ...

    # -- shared ----------------------------------------------------------------------
    def kernel_name(self, kernel: Kernel, index: int) -> str:
        ops: list[str] = []
        for n in kernel.nodes:
            for op in _op_names(n.body) if isinstance(n, ComputedBuffer) else [n.op]:
                if op not in ops and op != "to_dtype":
                    ops.append(op)
        core = "_".join(ops[:5]) + ("_etc" if len(ops) > 5 else "")
        return f"{self.prefix}_{core or 'copy'}_{index}"

    def render(self, kernel: Kernel, index: int) -> RenderedKernel:
        name = self.kernel_name(kernel, index)
        inside = kernel.names()
        inputs = sorted({ld.buf for n in kernel.nodes for ld in _loads(n.body)} - inside, key=_order)
        outputs = list(kernel.stores)
        ptr = {b: f"in_ptr{i}" for i, b in enumerate(inputs)} | {b: f"out_ptr{i}" for i, b in enumerate(outputs)}
        ranges = kernel.ranges
        dims = index_vars(len(ranges))
        store_index = contiguous_store_index(ranges)
        self._lines: list[str] = []
        self._cse: dict[str, str] = {}
        self._dtypes = {b.name: b.layout.dtype for b in (*self.ir.inputs, *self.ir.buffers)}
        self._local: dict[str, str] = {}  # buffer computed in this kernel -> its temporary
        self._store_index = store_index
        self._ptr = ptr
        body: list[str] = []
        owners: list[str] = []  # parallel to self._lines: the buffer each line computes
        for n in kernel.nodes:
            value = self._expr(n.body)
            self._local[n.name] = value
            if n.name in kernel.stores:
                self._lines.append(self.store(ptr[n.name], "xindex", value))
            owners += [n.name] * (len(self._lines) - len(owners))
        used = {s for line in self._lines for s in _symbols_in(line, dims)}
        strides = contiguous_strides(ranges)
        for d, size, stride in zip(dims, ranges, strides):
            if d.name in used:
                expr = f"xindex // {stride}" if d is dims[0] else f"(xindex // {stride}) % {size}"
                if stride == 1:
                    expr = "xindex" if d is dims[0] else f"xindex % {size}"
                body.append(self.dim_var(d.name, expr))
        body += self._lines
        numel = sympy.Mul(*ranges) if ranges else sympy.Integer(1)
        lines = self.header() + self.signature(name, [ptr[b] for b in inputs], [ptr[b] for b in outputs], ["xnumel"])
        lines += self.loop_open() + ["    " * self.body_indent + line for line in body] + self.loop_close()
        src_lines = tuple(sorted({ln for n in kernel.nodes for ln in n.lines}))
        first = len(lines) - len(self.loop_close()) - len(self._lines) + 1  # source line of self._lines[0]
        line_map = tuple((first + i, owner) for i, owner in enumerate(owners))
        return RenderedKernel(name, "\n".join(lines) + "\n", tuple(inputs), tuple(outputs), ("xnumel",), (numel,),
                              tuple(n.name for n in kernel.nodes), src_lines, line_map)

    body_indent = 1

    def _tmp(self, code: str, dtype: torch.dtype) -> str:
        if code in self._cse:
            return self._cse[code]
        tmp = f"tmp{len(self._cse)}"
        self._cse[code] = tmp
        self._lines.append(self.assign(tmp, code, dtype))
        return tmp

    def _expr(self, e: Expr) -> str:
        if isinstance(e, Load):
            if e.buf in self._local:
                return self._local[e.buf]
            index = "xindex" if sympy.expand(e.index - self._store_index) == 0 else _index_str(e.index)
            return self._tmp(self.load(self._ptr[e.buf], index, self._dtypes[e.buf]), self._dtypes[e.buf])
        if isinstance(e, Const):
            return self.constant(e.value, e.dtype)
        args = [self._expr(a) for a in e.args]
        if e.op == "to_dtype":
            return self._tmp(self.cast(args[0], e.dtype), e.dtype)
        if e.op not in self.ops:
            raise NotImplementedError(f"{self.language} codegen has no rendering for op {e.op!r}")
        return self._tmp(self.ops[e.op].format(*args, dtype=self.type_name(e.dtype)), e.dtype)

    def type_name(self, dtype: torch.dtype) -> str:
        return str(dtype)


def _loads(e: Expr) -> list[Load]:
    if isinstance(e, Load):
        return [e]
    if isinstance(e, Op):
        return [ld for a in e.args for ld in _loads(a)]
    return []


def _op_names(e: Expr) -> list[str]:
    if isinstance(e, Op):
        return [n for a in e.args for n in _op_names(a)] + [e.op]
    return []


def _order(name: str) -> tuple[int, int]:
    """arg0 < arg1 < buf0 < buf1 ... (inputs first, then buffers by number)."""
    return (0 if name.startswith("arg") else 1, int("".join(c for c in name if c.isdigit()) or 0))


def _index_str(index: sympy.Expr) -> str:
    return str(index)


def _symbols_in(line: str, dims: tuple[sympy.Symbol, ...]) -> set[str]:
    import re

    words = set(re.findall(r"\bd\d+\b", line))
    return {d.name for d in dims if d.name in words}
