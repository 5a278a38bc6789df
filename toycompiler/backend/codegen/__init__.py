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
    kernel_arts = [KernelArtifact(k.name, target, k.source, p, k.nodes, k.lines) for k, p in zip(generated, paths)]
    src = wrapper_source(ir, rendered, loads, target, source, plan.reuses)
    module, path = codecache.python_module(src, config, "output_code")
    call = module.call
    if constants:
        def call(*args, _call=module.call, _constants=tuple(constants)):
            return _call(*args, *_constants)
    return call, tuple(kernel_arts), OutputCodeArtifact(src, path)


def _build_cpp(kernels: list[RenderedKernel], header: str, config: Config) -> tuple[list[str], list[str]]:
    """All C++ kernels of a graph go into one shared library: one compiler run per graph.

    Each kernel's source starts with the same header (includes, helpers); it is kept once.
    """
    if not kernels:
        return [], []
    assert all(k.source.startswith(header) for k in kernels)
    source = header + "".join(k.source[len(header):] for k in kernels)
    path, _ = codecache.cpp_library(source, config)
    loads = [f"{k.name} = codecache.load_cpp_kernel({path!r}, {k.name!r}, {len(k.inputs) + len(k.outputs) + len(k.sizes)})"
             for k in kernels]
    return [path] * len(kernels), loads


def _build_triton(kernels: list[RenderedKernel], config: Config) -> tuple[list[str], list[str]]:
    paths, loads = [], []
    for k in kernels:
        _ensure_triton_can_run()
        _, path = codecache.python_module(k.source, config, k.name)
        paths.append(path)
        loads.append(f"{k.name} = codecache.python_module_at({path!r}).{k.name}")
    return paths, loads


def _ensure_triton_can_run() -> None:
    """Without a GPU, Triton kernels run in its interpreter, which must be chosen before triton is imported."""
    import torch

    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("no CUDA GPU, and Triton's CPU interpreter is off: set TRITON_INTERPRET=1 "
                           "before anything imports triton (importing toycompiler first does it)")
