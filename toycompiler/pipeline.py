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
import functools
import time
import types
import warnings
from collections.abc import Callable
from typing import Any

import torch

from . import artifacts as A
from .backend import CompiledGraph, codecache, codegen, cudagraphs, launcher, lowering, scheduler, training
from .backends import register_backend
from .config import Config
from .config import config as default_config
from .frontend import bytecode, guards, resume, translator
from .graph_view import graph_artifact
from .passes import run_passes


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


@dataclasses.dataclass
class FrameEntry:
    """One cache entry: the check, the code to run when it passes, and its artifacts."""

    check: Callable[..., bool]
    run: Callable
    artifact: A.FrameCompilation
    guard_objects: dict[str, Any]
    input_shapes: dict[str, tuple] = dataclasses.field(default_factory=dict)  # source -> sizes when traced


def compile_frame(fn: types.FunctionType, args: tuple, kwargs: dict, backend: Callable, backend_name: str,
                  config: Config, label: str, recompile_reason: A.GuardFailure | None,
                  wrap_resume: Callable, shapes: Any) -> FrameEntry:
    """Source -> bytecode -> symbolic execution -> guards -> FX graph -> backend -> transformed code.

    ``wrap_resume`` turns each resume function into something callable (the API compiles them lazily);
    ``shapes`` (a frontend.shapes.ShapePolicy) says which sizes are symbolic.
    """
    clock = StageClock()
    source = clock("source", read_source, fn)
    code_art = clock("bytecode", bytecode.disassemble, fn.__code__)
    traced = clock("translate", translator.translate, fn, args, kwargs, source, config, shapes, label)
    guards_art = clock("guards", guards.guards_artifact, traced.guards, guards.signature_params(fn.__code__),
                       traced.tensor_check)
    graph = graph_artifact(traced.graph_module, f"{fn.__code__.co_qualname} graph")
    graph = graph if graph.op_count else None  # no op recorded: no graph to show
    run, compiled, backend_art, transformed_art, resumes = fn, None, None, None, ()
    if traced.plan is not None:  # else: a break the frame can't be split at, and the whole frame runs eagerly
        if graph is not None:  # an empty graph is not compiled (nor counted), as in TorchDynamo
            compiled, backend_art = clock("backend", call_backend, backend, backend_name, traced, source, graph, config)
        run, transformed_art, resumes = clock("resume", resume.build_transformed, fn, traced.plan,
                                              list(traced.inputs), traced.guard_objects, compiled, wrap_resume)
    check = guards.compile_check(guards_art, traced.guard_objects, fn)
    symbolic = tuple(f"{where}: {why}" for where, why in traced.shapes.why.items())
    artifact = A.FrameCompilation(label, source, code_art, traced.artifact, guards_art, graph, backend_art,
                                  transformed_art, resumes, tuple(clock.times), recompile_reason, symbolic)
    # each graph input's size when traced, with symbolic dims as None (for automatic dynamic shapes)
    sizes = {src: tuple(None if d in traced.shapes.dims.get(src, ()) else int(s) for d, s in enumerate(t.shape))
             for src, t in traced.inputs.items()}
    return FrameEntry(check, run, artifact, traced.guard_objects, sizes)


def call_backend(backend: Callable, name: str, traced: translator.Translation, source: A.SourceArtifact,
                 graph: A.GraphArtifact, config: Config = default_config) -> tuple[Callable, A.BackendArtifacts]:
    """Hand the graph to the backend; if it fails, run the graph eagerly and say why."""
    gm, example_inputs = traced.graph_module, list(traced.inputs.values())
    symbolic = [source for source, dims in traced.shapes.dims.items() if dims]  # inputs with symbolic sizes
    if symbolic and not getattr(backend, "supports_dynamic_shapes", False):
        reason = (f"backend {name!r} does not take symbolic sizes yet ({', '.join(sorted(symbolic))}): "
                  "running this graph eagerly, which works for any size")
    else:
        try:
            compiled = backend(gm, example_inputs, config=config, source=source) if isinstance(backend, ToyBackend) \
                else backend(gm, example_inputs)
            return compiled, getattr(compiled, "artifacts", None) or A.BackendArtifacts(name, graph)
        except Exception as e:  # a backend failure must never be the user's problem
            reason = f"backend {name!r} failed: {type(e).__name__}: {e}"
    return gm.forward, A.BackendArtifacts(name, graph, fallback_reason=reason)


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


class ToyBackend:
    """toycompiler's own backend for one codegen target, registered as "cpp", "triton" and "auto".

    Callable as any torch.compile backend, ``backend(gm, example_inputs)``; :func:`call_backend` also
    passes ``config`` (this compile's settings) and ``source`` (for kernel comments).
    """

    supports_dynamic_shapes = True  # symbolic sizes become kernel arguments

    def __init__(self, target: str | None):
        self.target, self.__name__ = target, f"toycompiler_{target or 'auto'}"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list, config: Config = default_config,
                 source: A.SourceArtifact | None = None) -> CompiledGraph:
        inputs = list(example_inputs)
        target = self.target or codegen.default_target(inputs)
        compile_one = functools.partial(compile_graph, target=target, config=config, source=source)
        # grad mode on and an input that requires grad: forward and backward (AOTAutograd), each through compile_graph
        if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in inputs):
            return training.compile_training(gm, inputs, compile_one)
        return compile_one(gm, inputs)


for _target in ("cpp", "triton", None):
    register_backend(_target or "auto")(ToyBackend(_target))


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list, target: str, config: Config,
                  source: A.SourceArtifact | None = None) -> CompiledGraph:
    """FX graph -> passes -> loop IR -> fusion -> kernels -> output code (or all of it from the cache).

    The one place where the toy backend's failures are caught: the graph then runs eagerly, and its
    artifacts say why.
    """
    clock = StageClock()
    try:
        codegen.check_target(target, example_inputs)
        key, bypass = clock("cache lookup", codecache.graph_key, gm, example_inputs, target, config, source)
        hit, note = codecache.load_graph(key, config) if key and config.graph_cache else (None, "")
        if hit is not None:
            return runtime_graph(*hit, example_inputs, config, clock, f"hit {key}")
        # The graph built once (build_kernels); in max-autotune, with a matmul, also with matmul template kernels,
        # and the faster of the two kept (``launcher.faster_graph`` times both and says which won).
        built = build_kernels(gm, example_inputs, target, config, source, clock)
        if launcher.matmul_race(built, target, config):  # max-autotune: also try matmuls as template kernels
            templated = build_kernels(gm, example_inputs, target, dataclasses.replace(config, matmul_template=True),
                                      source, clock)
            built = clock("autotune", launcher.faster_graph, built, templated, example_inputs)
        arts, constants, module = built
        cache = "off (config.graph_cache=False)" if not config.graph_cache else f"bypassed: {bypass}"
        if key and config.graph_cache:
            cache = "miss, " + codecache.save_graph(key, arts, constants, config)
        cache = f"{cache} ({note})" if note else cache
        return runtime_graph(arts, constants, module, example_inputs, config, clock, cache)
    except Exception as e:  # a backend failure must never be the user's problem
        reason = f"{target} backend failed: {type(e).__name__}: {e}"
        warnings.warn(f"toycompiler: {reason}; running this graph eagerly", stacklevel=2)
        return CompiledGraph(gm.forward, A.BackendArtifacts(target, graph_artifact(gm, "input graph"),
                                                            fallback_reason=reason))


def build_kernels(gm: torch.fx.GraphModule, example_inputs: list, target: str, config: Config,
                  source: A.SourceArtifact | None, clock: StageClock) -> tuple[A.BackendArtifacts, list, Any]:
    """The backend's stages, one line each.

    Each stage returns a :class:`~toycompiler.artifacts.StageResult`: ``.value`` for the next stage,
    ``.artifact`` for the report. Returns the artifacts, the constant tensors and the loaded output module.
    """
    passes = clock("passes", run_passes, gm, example_inputs, config)             # FX graph -> ATen FX graph
    ir = clock("lowering", lowering.lower, passes.value, config)                 # ATen graph -> loop IR
    plan = clock("scheduling", scheduler.schedule, ir.value, config, target)     # loop IR -> fused kernels
    code = clock("codegen", codegen.generate, plan.value, target, config, source)  # kernels -> loaded output code
    constants = [t for _, t in codecache.graph_constants(passes.value)]  # the graph's weights, after its inputs
    tuning = clock("autotune", launcher.autotune, code.value, example_inputs, target, constants) \
        if config.mode.startswith("max-autotune") else None
    arts = A.BackendArtifacts(target, graph_artifact(gm, "input graph"), passes.artifact, ir.artifact, plan.artifact,
                              code.artifact, runtime=A.RuntimeArtifact(config.mode, "", "", "", tuning))
    return arts, constants, code.value


def runtime_graph(arts: A.BackendArtifacts, constants: list, module: Any, example_inputs: list,
                  config: Config, clock: StageClock, cache: str) -> CompiledGraph:
    """How each call runs: kernel launch path, CUDA graph replay; recorded in ``arts.runtime``."""
    call = module.call if not constants else lambda *args: module.call(*args, *constants)  # weights after inputs
    launchers = [v for v in vars(module).values() if isinstance(v, launcher.TritonLauncher)]  # its kernels, in order
    launcher.apply_choices(launchers, arts.runtime.autotune)  # arts.runtime: always set by build_kernels
    launch = launchers[0].reason if launchers else "C++ through ctypes (argtypes declared once)"
    use_graphs, graphs_reason = cudagraphs.cudagraphs_decision(config.mode, example_inputs)
    call = cudagraphs.CUDAGraphRunner(call) if use_graphs else call
    runtime = A.RuntimeArtifact(config.mode, launch, graphs_reason, cache, arts.runtime.autotune)
    return CompiledGraph(call, dataclasses.replace(arts, runtime=runtime, times=tuple(clock.times)))
