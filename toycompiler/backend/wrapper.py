"""The output code: a small Python module that allocates buffers and calls the kernels.

For ``sin(x) + cos(y) * 2`` on the C++ backend it reads::

    def call(arg0, arg1):
        buf3 = torch.empty((1000,), dtype=torch.float32, device='cpu')
        # kernel0 computes buf0, buf1, buf2, buf3 (line 5)
        cpp_sin_cos_mul_add_0(arg0.data_ptr(), arg1.data_ptr(), buf3.data_ptr(), 1000)
        return (buf3,)

Mirrors: torch/_inductor/codegen/wrapper.py (PythonWrapperCodegen).
"""

from __future__ import annotations

import sympy

from ..artifacts import SourceArtifact
from .codegen.common import RenderedKernel
from .ir import GraphIR


def wrapper_source(ir: GraphIR, kernels: list[RenderedKernel], loads: list[str], language: str,
                   source: SourceArtifact | None = None) -> str:
    """Python source of ``call(*inputs) -> tuple of outputs``."""
    args = [b.name for b in ir.inputs]
    lines = [
        f"# output code: {len(kernels)} {language} kernel(s) for {len(ir.buffers)} IR node(s)",
        "import torch",
        "import triton" if language == "triton" else "",
        "from toycompiler.backend import codecache",
        "from toycompiler.backend.launcher import empty_strided  # torch.empty without its Python overhead",
        "",
        *loads,
        "",
        "",
        f"def call({', '.join(args)}):",
    ]
    allocated: set[str] = set()
    for i, k in enumerate(kernels):
        for out in k.outputs:
            if out not in allocated:
                layout = ir.buffer(out).layout
                size = tuple(int(s) for s in layout.size)
                lines.append(f"    {out} = {_alloc(size, layout.dtype, layout.device)}")
                allocated.add(out)
        where = ""
        if k.lines:
            where = " (line " + ", ".join(map(str, k.lines)) + ")"
            if source is not None:
                where += ": " + " / ".join(source.line(ln) for ln in k.lines)
        lines.append(f"    # kernel{i} computes {', '.join(k.nodes)}{where}")
        sizes = [str(sympy.sympify(v)) for v in k.size_values]
        if language == "cpp":
            ptrs = [f"{b}.data_ptr()" for b in (*k.inputs, *k.outputs)]
            lines.append(f"    {k.name}({', '.join(ptrs + sizes)})")
        else:
            numel = sizes[0]
            block = _block_size(k.size_values[0])
            lines.append(f"    {k.name}[(triton.cdiv({numel}, {block}),)]({', '.join([*k.inputs, *k.outputs, *sizes])}, XBLOCK={block})")
    lines.append(f"    return ({''.join(o + ', ' for o in ir.outputs)})")
    return "\n".join(lines) + "\n"


def _alloc(size: tuple[int, ...], dtype: object, device: str) -> str:
    """A contiguous output buffer; see :func:`toycompiler.backend.launcher.empty_strided`."""
    stride, acc = [], 1
    for s in reversed(size):
        stride.append(acc)
        acc *= s
    return f"empty_strided[{device!r}]({size}, {tuple(reversed(stride))}, {dtype})"


def _block_size(numel: sympy.Expr) -> int:
    """Smallest power of two covering ``numel``, between 16 and 1024."""
    try:
        n = int(numel)
    except TypeError:
        return 1024
    block = 16
    while block < n and block < 1024:
        block *= 2
    return block
