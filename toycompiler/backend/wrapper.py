"""The output code: a small Python module that allocates buffers and calls the kernels.

For ``sin(x) + cos(y) * 2`` on the C++ backend it reads::

    def call(arg0, arg1):
        buf3 = torch.empty((1000,), dtype=torch.float32, device='cpu')
        # kernel0 computes buf0, buf1, buf2, buf3 (line 5)
        cpp_sin_cos_mul_add_0(arg0.data_ptr(), arg1.data_ptr(), buf3.data_ptr(), 1000)
        return (buf3,)

Library calls appear as ``torch.mm(buf0, arg2, out=buf1)``; a view of a
buffer (a transposed weight, say) is passed as ``torch.as_strided(...)``; a
buffer that reuses a dead one's memory is ``buf4 = buf1`` (``buf1.view(...)`` for another shape).

Outputs that alias an input or each other follow one rule, the one
``torch.compile`` documents for its outputs: an output that eager returns as a
view of an input is returned as a view of that same input, with eager's size,
strides and storage offset, so writes through it reach the input as they would
eagerly. Its offset is counted from the input's own storage offset, because a
kernel indexes an input from its data pointer::

    def f(a): return a[0, :2]          # a: [4, 8], maybe itself a slice of a bigger tensor
    ...
    return (torch.as_strided(arg0, (2,), (1,), arg0.storage_offset()),)

``x.t()``, ``x.expand(...)``, ``x.view(...)`` and slices all come back this way
(``expand`` keeps its zero strides). The same tensor returned twice is the same
Python object twice, as in eager. An output that is a view of a computed buffer
is a view of that buffer. A result that eager lays out permuted (``x.t() + 1``,
channels-last) is stored in eager's dim order and returned as a view that puts
the dims back (``lowering.GraphLowering.realize``), so it has eager's strides.

Mirrors: torch/_inductor/codegen/wrapper.py (PythonWrapperCodegen,
ReinterpretView codegen, buffer reuse lines).
Leaves out: the C++ wrapper (AOTInductor), and freeing buffers as soon as they die.
"""

from __future__ import annotations

import sympy

from ..artifacts import SourceArtifact
from .codegen.common import IndexPrinter, RenderedKernel
from .ir import ExternKernel, GraphIR, TensorRef, contiguous_strides

# A size expression as Python (``8*s0``), printed as the kernels print indices. A fake tensor's strides can
# hold sympy's ``Max`` (``Max(1, s2//2)``, the stride past a dim that may be empty): Python's ``max``.
pexpr = IndexPrinter()


def shape(values: tuple) -> str:
    """Sizes or strides as a Python tuple (``(8*s0, 1)``, ``(4,)``)."""
    return f"({', '.join(map(pexpr, values))}{',' * (len(values) == 1)})"


def tensor_arg(ir: GraphIR, ref: TensorRef) -> str:
    """A buffer, or a strided view of one, as a Python expression."""
    layout = ir.buffer(ref.buf).layout
    if ref.size == layout.size and ref.stride == layout.stride and ref.offset == 0:
        return ref.buf
    whole = sympy.expand(sympy.Mul(*ref.size) - layout.numel) == 0
    if ref.offset == 0 and whole and layout.is_contiguous and ref.stride == contiguous_strides(ref.size):
        return f"{ref.buf}.view({shape(ref.size)})"
    base = f"{ref.buf}.storage_offset() + {pexpr(ref.offset)}" if ref.offset != 0 else f"{ref.buf}.storage_offset()"
    return f"torch.as_strided({ref.buf}, {shape(ref.size)}, {shape(ref.stride)}, {base})"


def wrapper_source(ir: GraphIR, kernels: list[RenderedKernel], loads: list[str], language: str,
                   source: SourceArtifact | None = None, reuses: tuple[tuple[str, str], ...] = ()
                   ) -> tuple[str, tuple[tuple[int, str], ...]]:
    """Python source of ``call(*inputs, *constants) -> tuple of outputs``, and which lines launch which kernel.

    The second part is provenance, recorded as the lines are written: (1-based line, ``kernelN``) for
    each kernel's comment and launch line.
    """
    lines = [f"# output code: {len(kernels)} {language} kernel(s) for {len(ir.buffers)} IR node(s)",
             "import torch",
             "import triton" if language == "triton" else "",
             "from toycompiler.backend import codecache",
             "from toycompiler.backend.launcher import empty_strided  # torch.empty without its Python overhead",
             "",
             *loads,
             "",
             "",
             f"def call({', '.join([*ir.params, *ir.constants])}):"]
    lines += [f"    {name} = {expr}" for name, expr in ir.size_vars if expr != name]
    reuse = dict(reuses)
    line_map: list[tuple[int, str]] = []
    for i, k in enumerate(kernels):  # each buffer is stored by one kernel: allocated just before it
        lines += ["    " + allocation(ir, out, reuse.get(out)) for out in k.outputs]
        lines.append(f"    # kernel{i} computes {', '.join(k.nodes)}{_where(k.lines, source)}")
        lines.append("    " + launch(ir, k, language))
        line_map += [(len(lines) - 1, f"kernel{i}"), (len(lines), f"kernel{i}")]
    lines.append(f"    return ({''.join(tensor_arg(ir, r) + ', ' for r in ir.output_refs)})")
    return "\n".join(lines) + "\n", tuple(line_map)


def allocation(ir: GraphIR, name: str, reused: str | None) -> str:
    b = ir.buffer(name)
    if b.store_into:
        return f"{name} = {b.store_into}  # written in place (the graph mutates its input)"
    if isinstance(b, ExternKernel) and not any(k == "out" for k, _ in b.kwargs):
        return f"# {name} is allocated by {b.op}"
    if reused is not None:  # the same shape needs no view (a view costs a microsecond or two per call)
        view = "" if ir.buffer(reused).layout.size == b.layout.size else f".view({shape(b.layout.size)})"
        return f"{name} = {reused}{view}  # reuses {reused}'s memory"
    if all(sympy.sympify(s).is_Integer for s in b.layout.size):  # see launcher.empty_strided
        size, stride = tuple(map(int, b.layout.size)), tuple(map(int, contiguous_strides(b.layout.size)))
        return f"{name} = empty_strided[{b.layout.device!r}]({size}, {stride}, {b.layout.dtype})"
    return f"{name} = torch.empty({shape(b.layout.size)}, dtype={b.layout.dtype}, device={b.layout.device!r})"


def launch(ir: GraphIR, k: RenderedKernel, language: str) -> str:
    if k.name.startswith("extern:"):
        return extern_call(ir, ir.buffer(k.nodes[0]))
    sizes = [pexpr(v) for v in k.size_values]
    if language == "cpp":
        ptrs = [f"{b}.data_ptr()" for b in (*k.inputs, *k.outputs)]
        return _if_nonempty(sizes, f"{k.name}({', '.join(ptrs + sizes)})")
    meta, blocks = dict(k.meta), ", ".join(f"{n}={v}" for n, v in k.meta)
    # A matmul template (codegen/triton.py) runs one program per tile of the output; a kernel, per XBLOCK elements.
    grid = (f"({-(-meta['M'] // meta['BLOCK_M'])}, {-(-meta['N'] // meta['BLOCK_N'])})" if "BLOCK_M" in meta
            else f"({-(-meta['C'] // meta['XBLOCK'])}, {-(-meta['R'] // meta['YBLOCK'])})" if "YBLOCK" in meta
            else f"(max(1, triton.cdiv({sizes[0]}, {meta['XBLOCK']})),)")
    return _if_nonempty(sizes, f"{k.name}[{grid}]({', '.join([*k.inputs, *k.outputs, *sizes])}, {blocks})")


def _if_nonempty(sizes: list[str], call: str) -> str:
    """A kernel with no elements to write (``xnumel`` is 0) is not launched: its buffers may have no memory."""
    if not sizes or (sizes[0].isdigit() and int(sizes[0]) > 0):
        return call
    return f"pass  # no elements: {call}" if sizes[0] == "0" else f"if {sizes[0]} > 0: {call}"


def extern_call(ir: GraphIR, node: ExternKernel) -> str:
    """``torch.mm(buf0, arg2, out=buf1)``: tensor inputs first, then keywords.

    A keyword's text may name the inputs as ``{0}``, ``{1}``, ...: a fallback op passes every argument
    by name (``torch.ops.aten.gather.default(self={0}, dim=1, index={1})``), and its inputs then appear
    only there. ``node.item`` picks one tensor of an op that returns several.
    """
    args = [tensor_arg(ir, a) for a in node.args]
    kwargs = [f"{k}={v.format(*args)}" for k, v in node.kwargs]
    named = any("{" in v for _, v in node.kwargs)
    call = f"{node.op}({', '.join(([] if named else args) + kwargs)})"
    if any(k == "out" for k, _ in node.kwargs):
        return call
    item = f"{call}[{node.item}]" if node.item is not None else call
    # A result torch allocates goes on in the strides the kernels read it with (codecache.conform): a fallback op's,
    # and a convolution's, whose memory format torch picks from its input's strides. Its input may be stored in
    # another order than eager's (a channels-last convolution's output copied row-major for the pointwise work that
    # also reads it): a depthwise convolution after it then wrote NCHW where its fake tensor promised channels-last,
    # and ConvNeXt's blocks on a channels-last input were wrong by order one.
    return f"{node.name} = codecache.conform({item}, {shape(node.layout.stride)})"


def _where(lines: tuple[int, ...], source: SourceArtifact | None) -> str:
    text = (": " + " / ".join(source.line(ln) for ln in lines)) if source is not None else ""
    return " (line " + ", ".join(map(str, lines)) + ")" + text if lines else ""
