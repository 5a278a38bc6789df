"""Codegen driver: render each scheduled kernel, build it, and write the output code.

``generate`` returns the callable that runs the graph, plus the kernel and
output-code artifacts. The per-target spelling lives in :mod:`.cpp` and
:mod:`.triton`, the shared rendering in :mod:`.common`; library calls
(extern kernels) are written straight into the output code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

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
    for i, kernel in enumerate(plan.kernels):
        if kernel.kind == "extern":
            node = kernel.nodes[0]
            rendered.append(RenderedKernel(f"extern:{node.op}", "", node.inputs, (node.name,), (), (),
                                           (node.name,), node.lines, "extern"))
        else:
            rendered.append(renderer.render(kernel, i))
    generated = [k for k in rendered if k.kind != "extern"]
    if target == "cpp":
        paths, loads = _build_cpp(generated, "\n".join(renderer.header()), config)
    else:
        paths, loads = _build_triton(generated, config)
    kernel_arts = [KernelArtifact(k.name, target, k.source, p, k.nodes, k.lines,
                                  owners_by_line(k.source, renderer.comment_mark)) for k, p in zip(generated, paths)]
    src = wrapper_source(ir, rendered, loads, target, source, plan.reuses)
    module, path = codecache.python_module(src, config, "output_code")
    call = module.call
    if constants:
        def call(*args, _call=module.call, _constants=tuple(constants)):
            return _call(*args, *_constants)
    return call, tuple(kernel_arts), OutputCodeArtifact(src, path)


def owners_by_line(source: str, comment_mark: str) -> tuple[tuple[int, str], ...]:
    """(1-based line, IR buffer) for each kernel line that computes part of a buffer.

    The renderer closes each node's code with a ``# buf3 = tmp5 (add, line 5)``
    comment, so the ``tmpN = ...`` lines since the previous comment compute that buffer.
    """
    out, pending = [], []
    for i, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(comment_mark + " buf"):
            owner = text[len(comment_mark):].split("=")[0].strip()
            out += [(n, owner) for n in pending]
            pending = []
        elif re.search(r"\btmp\d+ = ", text):
            pending.append(i)
    return tuple(out)


def _build_cpp(kernels: list[RenderedKernel], header: str, config: Config) -> tuple[list[str], list[str]]:
    """All C++ kernels of a graph go into one shared library: one compiler run per graph.

    Each kernel's source starts with the same header (includes, helpers); it is kept once.
    """
    if not kernels:
        return [], []
    assert all(k.source.startswith(header) for k in kernels)
    source = header + "".join(k.source[len(header):] for k in kernels)
    path, _ = codecache.cpp_library(source, config)
    loads = [f"{k.name} = codecache.load_cpp_kernel({path!r}, {k.name!r}, "
             f"{len(k.inputs) + len(k.outputs) + len(k.sizes)}, {len(k.sizes)})" for k in kernels]
    return [path] * len(kernels), loads


def _build_triton(kernels: list[RenderedKernel], config: Config) -> tuple[list[str], list[str]]:
    paths, loads = [], []
    for k in kernels:
        _ensure_triton_can_run()
        _, path = codecache.python_module(k.source, config, k.name)
        paths.append(path)
        loads.append(f"{k.name} = codecache.load_triton_kernel({path!r}, {k.name!r})")
    return paths, loads


def _ensure_triton_can_run() -> None:
    """Without a GPU, Triton kernels run in its interpreter, which must be chosen before triton is imported."""
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("no CUDA GPU, and Triton's CPU interpreter is off: set TRITON_INTERPRET=1 "
                           "before anything imports triton (importing toycompiler first does it)")
