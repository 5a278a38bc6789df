"""Codegen driver: render each scheduled kernel, build it, and write the output code.

``generate`` returns the callable that runs the graph, plus the kernel and
output-code artifacts. The per-target spelling lives in :mod:`.cpp` and
:mod:`.triton`, the shared rendering in :mod:`.common`; library calls
(extern kernels) are written straight into the output code.
"""

from __future__ import annotations

import os
from typing import Callable

from ...artifacts import KernelArtifact, OutputCodeArtifact, SourceArtifact
from ...config import Config
from .. import codecache
from ..ir import GraphIR
from ..scheduler import Schedule
from ..wrapper import wrapper_source
from .common import RenderedKernel
from .cpp import CppRenderer
from .triton import TritonRenderer

RENDERERS = {"cpp": CppRenderer, "triton": TritonRenderer}


def generate(ir: GraphIR, plan: Schedule, target: str, config: Config, source: SourceArtifact | None,
             constants: list | None = None) -> tuple[Callable, tuple[KernelArtifact, ...], OutputCodeArtifact]:
    renderer = RENDERERS[target](ir, config)
    rendered: list[RenderedKernel] = []
    kernel_arts, loads = [], []
    for i, kernel in enumerate(plan.kernels):
        if kernel.kind == "extern":
            node = kernel.nodes[0]
            rendered.append(RenderedKernel(f"extern:{node.op}", "", node.inputs, (node.name,), (), (),
                                           (node.name,), node.lines, "extern"))
            continue
        k = renderer.render(kernel, i)
        rendered.append(k)
        if target == "cpp":
            path, _ = codecache.cpp_library(k.source, config)
            nargs = len(k.inputs) + len(k.outputs) + len(k.sizes)
            loads.append(f"{k.name} = codecache.load_cpp_kernel({path!r}, {k.name!r}, {nargs}, {len(k.sizes)})")
        else:
            _ensure_triton_can_run()
            module, path = codecache.python_module(k.source, config, k.name)
            loads.append(f"{k.name} = codecache.load_triton_kernel({path!r}, {k.name!r})")
        line_map = owners_by_line(k.source, renderer.comment_mark)
        kernel_arts.append(KernelArtifact(k.name, target, k.source, path, k.nodes, k.lines, line_map))
    src = wrapper_source(ir, rendered, loads, target, source, plan.reuses)
    module, path = codecache.python_module(src, config, "output_code")
    call = module.call
    if constants:
        def call(*args, _call=module.call, _constants=tuple(constants)):
            return _call(*args, *_constants)
    return call, tuple(kernel_arts), OutputCodeArtifact(src, path)


def owners_by_line(source: str, comment_mark: str) -> tuple[tuple[int, str], ...]:
    """(1-based line, IR buffer) for each kernel line after a ``# buf3: add, line 5`` comment.

    The renderer opens each node's code with such a comment, so every line up to
    the next comment (or the end of that loop) computes that buffer.
    """
    out, owner = [], None
    for i, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(comment_mark + " buf"):
            owner = text[len(comment_mark):].split(":")[0].strip()
        elif text in ("}", ""):
            owner = None
        elif owner and not text.startswith(("for ", "for(", "#pragma")):
            out.append((i, owner))
    return tuple(out)


def _ensure_triton_can_run() -> None:
    """Without a GPU, Triton kernels run in its interpreter, which must be chosen before triton is imported."""
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("no CUDA GPU, and Triton's CPU interpreter is off: set TRITON_INTERPRET=1 "
                           "before anything imports triton (importing toycompiler first does it)")
