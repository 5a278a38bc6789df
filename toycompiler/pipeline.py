"""The compiler's table of contents: every stage, in order, one line each.

Two pipelines, as in PyTorch 2:

- :func:`compile_frame` is the frontend (TorchDynamo): a Python function and
  its arguments in, a guarded cache entry out.
- :func:`compile_graph` is the backend (TorchInductor): an FX graph in, a
  callable that runs generated kernels out. It has the signature of any
  ``torch.compile`` backend, so real ``torch.compile`` can call it too.

Each stage is a function from one artifact to the next; :class:`StageClock`
records how long each took.
"""

from __future__ import annotations

import dataclasses
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from . import artifacts as A
from .config import Config
from .graph_view import graph_artifact


class StageClock:
    """Times each stage; the times end up in the artifacts (compile time per stage)."""

    def __init__(self) -> None:
        self.times: list[A.StageTime] = []

    def __call__(self, name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.times.append(A.StageTime(name, time.perf_counter() - start))


# -- the frontend: Python function -> guarded entry ----------------------------------


@dataclass
class FrameEntry:
    """One cache entry: the check, the code to run when it passes, and its artifacts."""

    check: Callable[..., bool]
    run: Callable
    artifact: A.FrameCompilation
    guard_objects: dict[str, Any]
    input_shapes: dict[str, tuple] = dataclasses.field(default_factory=dict)  # source -> sizes when traced


def compile_frame(fn: types.FunctionType, args: tuple, kwargs: dict, backend: Callable, backend_name: str,
                  config: Config, label: str, recompile_reason: A.GuardFailure | None,
                  wrap_resume: Callable | None = None, shapes: Any = None) -> FrameEntry:
    """Source -> bytecode -> symbolic execution -> guards -> FX graph -> backend -> transformed code.

    ``wrap_resume`` turns each resume function into something callable (the API compiles them lazily);
    ``shapes`` (a frontend.shapes.ShapePolicy) says which sizes are symbolic.
    """
    from .frontend import bytecode, translator
    from .frontend import guards as G

    clock = StageClock()
    source = clock("source", read_source, fn)
    code_art = clock("bytecode", bytecode.disassemble, fn.__code__)
    tracer = translator.InstructionTranslator(fn, args, kwargs, source, config, shapes)
    result = clock("translate", tracer.run)
    params = G.signature_params(fn.__code__)
    if result.shapes is not None:
        result.guards.shapes(result.shapes)
    guards = clock("guards", result.guards.artifact, params, result.guard_objects)
    check = G.compile_check(guards, result.guard_objects, fn)
    graph, backend_art, transformed, transformed_art, resumes = None, None, fn, None, ()
    if result.ops:  # an empty graph is not compiled (nor counted), as in TorchDynamo
        graph = graph_artifact(result.graph_module, f"{fn.__code__.co_qualname} graph")
    if result.artifact.graph_break is None or result.break_plan is not None:  # else: the frame runs eagerly
        compiled, backend_art = None, None
        if result.ops:
            compiled, backend_art = clock("backend", call_backend, backend, backend_name, result, source, graph)
        transformed, transformed_art, resumes = clock("resume", build_transformed, fn, params, result, compiled,
                                                      wrap_resume)
    translation = _with_break_details(result, label)
    symbolic = tuple(f"{where}: {why}" for where, why in (result.shapes.why.items() if result.shapes else ()))
    artifact = A.FrameCompilation(label, source, code_art, translation, guards, graph, backend_art,
                                  transformed_art, resumes, tuple(clock.times), recompile_reason, symbolic)
    return FrameEntry(check, transformed, artifact, result.guard_objects, _input_shapes(result))


def build_transformed(fn: types.FunctionType, params: str, result: Any, compiled: Callable | None,
                      wrap_resume: Callable | None) -> tuple[Callable, A.BytecodeArtifact, tuple]:
    """The code that replaces ``fn``: graph call + return value, or graph call + break + resume call."""
    from .frontend import resume

    if result.break_plan is not None:
        return resume.build_break(fn, result.break_plan, compiled, result.input_sources,
                                  wrap_resume or (lambda f: f))
    compiled = compiled or _eager_graph(result.graph_module)
    transformed, art = resume.build_transformed_function(fn, params, compiled, result.input_sources,
                                                         result.return_expr, result.constants)
    return transformed, art, ()


def _with_break_details(result: Any, label: str) -> A.TranslationArtifact:
    """The translator's log, its break (if any) labelled with the entry and where it resumes."""
    brk = result.artifact.graph_break
    if brk is None:
        return result.artifact
    resumes_at = tuple(p.offset for p in result.break_plan.resumes) if result.break_plan else ()
    brk = dataclasses.replace(brk, frame=label, no_resume_reason=result.no_resume_reason, resumes_at=resumes_at)
    return dataclasses.replace(result.artifact, graph_break=brk)


def _input_shapes(result: Any) -> dict[str, tuple]:
    """Each graph input's size when traced, with symbolic dims as None (for automatic dynamic shapes)."""
    dims = result.shapes.dims if result.shapes is not None else {}
    return {src: tuple(None if d in dims.get(src, ()) else int(s) for d, s in enumerate(t.shape))
            for src, t in zip(result.input_sources, result.example_inputs)}


def call_backend(backend: Callable, name: str, result: Any, source: A.SourceArtifact,
                 graph: A.GraphArtifact) -> tuple[Callable, A.BackendArtifacts]:
    """Hand the graph to the backend; if it fails, run the graph eagerly and say why."""
    gm = result.graph_module
    symbolic = result.shapes.symbolic_inputs() if result.shapes is not None else {}
    if symbolic and not getattr(backend, "supports_dynamic_shapes", False):
        reason = (f"backend {name!r} does not take symbolic sizes yet ({', '.join(sorted(symbolic))}): "
                  "running this graph eagerly, which works for any size")
        return _eager_graph(gm), A.BackendArtifacts(name, graph, fallback_reason=reason)
    try:
        compiled = backend(gm, result.example_inputs, source=source) if getattr(backend, "toy", False) \
            else backend(gm, result.example_inputs)
    except Exception as e:  # a backend failure must never be the user's problem
        reason = f"backend {name!r} failed: {type(e).__name__}: {e}"
        return _eager_graph(gm), A.BackendArtifacts(name, graph, fallback_reason=reason)
    arts = getattr(compiled, "artifacts", None) or A.BackendArtifacts(name, graph)
    return compiled, arts


def _eager_graph(gm: torch.fx.GraphModule) -> Callable:
    return lambda *args: gm(*args)


def read_source(fn: types.FunctionType) -> A.SourceArtifact:
    import inspect
    import linecache

    code = fn.__code__
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        lines, first = linecache.getlines(code.co_filename)[code.co_firstlineno - 1:], code.co_firstlineno
    return A.SourceArtifact(code.co_qualname, code.co_filename, first, tuple(line.rstrip("\n") for line in lines))


# -- the backend: FX graph -> kernels ----------------------------------------------


class CompiledGraph:
    """What a toy backend returns: callable like the graph, carrying its artifacts."""

    def __init__(self, call: Callable, artifacts: A.BackendArtifacts):
        self.call, self.artifacts = call, artifacts

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list, target: str, config: Config,
                  source: A.SourceArtifact | None = None) -> CompiledGraph:
    """FX graph -> passes -> loop IR -> fusion -> kernels -> output code (or all of it from the cache)."""
    from .backend import codecache, codegen, launcher, lowering, scheduler
    from .passes import run_passes

    clock = StageClock()
    key, bypass = clock("cache lookup", codecache.graph_key, gm, example_inputs, target, config, source)
    hit = codecache.load_graph(key, config) if key and config.graph_cache else None
    if hit is not None:
        arts, constants = hit
        return runtime_graph(arts, constants, example_inputs, config, clock, f"hit {key}")
    graph = graph_artifact(gm, "input graph")
    aten_gm, passes = clock("passes", run_passes, gm, example_inputs, config)
    ir = clock("lowering", lowering.lower, aten_gm)
    if config.verify_ir:
        from .backend.ir import verify
        verify(ir)
    plan = clock("scheduling", scheduler.schedule, ir, config)
    constants = lowering.constant_tensors(ir, aten_gm)
    # the callable codegen returns is not needed: runtime_graph loads the output module itself
    _, kernels, output = clock("codegen", codegen.generate, ir, plan, target, config, source, constants)
    tuning = None
    if config.mode == "max-autotune":
        tuning = clock("autotune", launcher.autotune, codecache.output_module(output.path), example_inputs,
                       target, constants)
    arts = A.BackendArtifacts(target, graph, passes, lowering.ir_artifact(ir), plan.artifact, kernels, output,
                              runtime=A.RuntimeArtifact(config.mode, "", "", "", tuning))
    cache = "off (config.graph_cache=False)" if not config.graph_cache else f"bypassed: {bypass}"
    if key and config.graph_cache:
        stored, why_not = codecache.save_graph(key, arts, constants, config)
        cache = f"miss, stored as {key}" if stored else f"miss, not stored: {why_not}"
    return runtime_graph(arts, constants, example_inputs, config, clock, cache)


def runtime_graph(arts: A.BackendArtifacts, constants: list, example_inputs: list, config: Config,
                  clock: StageClock, cache: str) -> CompiledGraph:
    """How each call runs: kernel launch path, CUDA graph replay; recorded in ``arts.runtime``."""
    from .backend import codecache, cudagraphs, launcher

    module = codecache.output_module(arts.output_code.path)
    call = codecache.with_constants(module.call, constants)  # call(*inputs) -> module.call(*inputs, *constants)
    launchers = launcher.launchers_of(vars(module))
    tuning = arts.runtime.autotune if arts.runtime else None
    launcher.apply_choices(launchers, tuning)
    launch = launchers[0].reason if launchers else "C++ through ctypes (argtypes declared once)"
    use_graphs, graphs_reason = cudagraphs.cudagraphs_decision(config.mode, example_inputs)
    if use_graphs:
        call = cudagraphs.CUDAGraphRunner(call)
    runtime = A.RuntimeArtifact(config.mode, launch, graphs_reason, cache, tuning)
    return CompiledGraph(call, dataclasses.replace(arts, runtime=runtime, times=tuple(clock.times)))
