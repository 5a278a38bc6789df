"""Codegen driver: render each scheduled kernel, build it, write the output code and load it.

``generate`` is the last compile stage: it returns the loaded output module
(what runs) and the output-code artifact, which holds every kernel's source
and the provenance each renderer recorded as it wrote the lines. The
per-target spelling lives in :mod:`.cpp` and :mod:`.triton`, the shared
rendering in :mod:`.common`; library calls (extern kernels) are written
straight into the output code.

Mirrors: torch/_inductor/graph.py (GraphLowering.codegen, compile_to_module)
and torch/_inductor/codegen/simd.py (codegen_node per fused group).
Leaves out: kernel-level caching across graphs and async compilation in workers.
"""

from __future__ import annotations

import os
import types

import torch

from ...artifacts import KernelArtifact, OutputCodeArtifact, SourceArtifact, StageResult
from ...config import Config
from .. import codecache
from ..ir import ExternKernel
from ..scheduler import Schedule
from ..wrapper import wrapper_source
from . import cpp
from .common import RenderedKernel
from .triton import TritonRenderer

RENDERERS = {"cpp": cpp.CppRenderer, "triton": TritonRenderer}


def default_target(example_inputs: list) -> str:
    """Triton for CUDA tensors, C++ for CPU tensors (with no tensors: by what the machine has)."""
    devices = {t.device.type for t in example_inputs if isinstance(t, torch.Tensor)}
    return "triton" if "cuda" in devices or (not devices and torch.cuda.is_available()) else "cpp"


def check_target(target: str, example_inputs: list) -> None:
    """Triton kernels need CUDA tensors, unless they run in Triton's CPU interpreter.

    The interpreter must be chosen before triton is first imported (importing toycompiler does it).
    """
    on_cpu = any(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in example_inputs)
    if target == "triton" and (on_cpu or not torch.cuda.is_available()) and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("the Triton backend needs CUDA tensors here (the inputs are on the CPU and "
                           "Triton's CPU interpreter is off); move them with .cuda() or use backend='cpp'")


def generate(plan: Schedule, target: str, config: Config,
             source: SourceArtifact | None) -> StageResult[types.ModuleType]:
    """Kernels -> source files on disk -> the output module, imported (the one place it is loaded)."""
    renderer = RENDERERS[target](plan.ir, config)
    rendered = [_extern(k.nodes[0]) if k.kind == "extern" else renderer.render(k, i)
                for i, k in enumerate(plan.kernels)]
    generated = [k for k in rendered if k.kind != "extern"]
    # one library per graph (C++), or one module per kernel (Triton)
    paths, loads = (_build_cpp if target == "cpp" else _build_triton)(generated, config)
    kernels = tuple(KernelArtifact(k.name, target, k.source, p, k.nodes, k.lines, k.line_map)
                    for k, p in zip(generated, paths))
    src, line_map = wrapper_source(plan.ir, rendered, loads, target, source, plan.reuses)
    path = codecache.write_python(src, config, "output_code")
    return StageResult(codecache.python_module_at(path), OutputCodeArtifact(src, path, kernels, line_map))


def _extern(node: ExternKernel) -> RenderedKernel:
    """A library call is no generated kernel: the output code calls it (see ``wrapper.extern_call``)."""
    return RenderedKernel(f"extern:{node.op}", "", node.inputs, (node.name,), (), (), (node.name,), node.lines,
                          "extern")


def _build_cpp(kernels: list[RenderedKernel], config: Config) -> tuple[list[str], list[str]]:
    """All C++ kernels of a graph go into one shared library: one compiler run per graph.

    Each kernel's source starts with a header: the vector functions it calls, the includes and helpers. The
    library has one: the vector functions any of them calls, then the includes and helpers, then each kernel
    from its signature on. It is linked with libtorch_cpu where they call vector math (SLEEF is in it).
    """
    if not kernels:
        return [], []
    used = frozenset().union(*(k.ops for k in kernels))
    header = "\n".join(cpp.header(used, tiles=True))  # (the tile helper whether or not a kernel uses it)
    source = header + "".join(k.source[k.source.index('extern "C" void'):] for k in kernels)
    path, _ = codecache.cpp_library(source, config, link_torch=bool(used & cpp.SLEEF_OPS))
    loads = [f"{k.name} = codecache.load_cpp_kernel({path!r}, {k.name!r}, "
             f"{len(k.inputs) + len(k.outputs) + len(k.sizes)}, {len(k.sizes)})" for k in kernels]
    return [path] * len(kernels), loads


def _build_triton(kernels: list[RenderedKernel], config: Config) -> tuple[list[str], list[str]]:
    """Each Triton kernel is a Python module of its own (Triton's JIT reads its source), header included."""
    paths = [codecache.write_python(k.source, config, k.name) for k in kernels]
    return paths, [f"{k.name} = codecache.load_triton_kernel({p!r}, {k.name!r})" for k, p in zip(kernels, paths)]
