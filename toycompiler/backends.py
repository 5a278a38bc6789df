"""Backends: anything with torch.compile's signature ``backend(gm, example_inputs) -> callable``.

- ``"cpp"`` and ``"triton"``: toycompiler's own Inductor-style backend.
- ``"auto"``: Triton when a CUDA GPU is present, C++ otherwise.
- ``"eager"``: run the captured graph as it is (to test the frontend alone).
- ``"inductor"``: hand the graph to the real TorchInductor, to compare.
- any callable you pass.

The toy backends are also registered with torch's own registry, so
``torch.compile(fn, backend="toycompiler")`` works (plus ``toycompiler_cpp``
and ``toycompiler_triton``).

Mirrors: torch/_dynamo/backends/registry.py.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from . import artifacts as A
from .config import config
from .graph_view import graph_artifact

Backend = Callable[[torch.fx.GraphModule, list], Callable]
_REGISTRY: dict[str, Backend] = {}


def register_backend(name: str) -> Callable[[Backend], Backend]:
    def wrap(fn: Backend) -> Backend:
        _REGISTRY[name] = fn
        return fn
    return wrap


def list_backends() -> list[str]:
    return sorted(_REGISTRY)


def get_backend(backend: str | Backend) -> Backend:
    if callable(backend):
        return backend
    if backend not in _REGISTRY:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(list_backends())} or pass a callable")
    return _REGISTRY[backend]


def default_target(example_inputs: list = ()) -> str:
    """Triton for CUDA tensors, C++ for CPU tensors (with no tensors: by what the machine has)."""
    devices = {t.device.type for t in example_inputs if isinstance(t, torch.Tensor)}
    if devices:
        return "triton" if "cuda" in devices else "cpp"
    return "triton" if torch.cuda.is_available() else "cpp"


def check_devices(target: str, example_inputs: list) -> None:
    """Triton kernels need CUDA tensors, unless they run in Triton's CPU interpreter."""
    import os

    on_cpu = any(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in example_inputs)
    if target == "triton" and on_cpu and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("the Triton backend needs CUDA tensors here (the inputs are on the CPU and "
                           "Triton's CPU interpreter is off); move them with .cuda() or use backend='cpp'")


def _toy(target: str | None) -> Backend:
    """A toy backend for one codegen target (None: chosen per call by :func:`default_target`)."""

    def backend(gm: torch.fx.GraphModule, example_inputs: list, source: A.SourceArtifact | None = None) -> Callable:
        from .backend import training
        from .pipeline import CompiledGraph, compile_graph

        chosen = target or default_target(list(example_inputs))
        if training.needs_autograd(list(example_inputs)):  # forward and backward, through AOTAutograd
            return training.compile_training(gm, list(example_inputs), chosen, config, source)
        try:
            check_devices(chosen, list(example_inputs))
            return compile_graph(gm, list(example_inputs), chosen, config, source)
        except Exception as e:  # fall back to eager, with the compiler's message
            reason = f"{chosen} backend failed: {type(e).__name__}: {e}"
            warnings.warn(f"toycompiler: {reason}; running this graph eagerly", stacklevel=2)
            arts = A.BackendArtifacts(chosen, graph_artifact(gm, "input graph"), fallback_reason=reason)
            return CompiledGraph(gm.forward, arts)

    backend.toy = True  # takes the ``source`` keyword, for kernel comments
    backend.supports_dynamic_shapes = True  # symbolic sizes become kernel arguments
    backend.__name__ = f"toycompiler_{target or 'auto'}"
    return backend


register_backend("cpp")(_toy("cpp"))
register_backend("triton")(_toy("triton"))
register_backend("auto")(_toy(None))


@register_backend("eager")
def eager(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    return gm.forward


eager.supports_dynamic_shapes = True  # the FX graph runs for any size


@register_backend("inductor")
def inductor(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def toycompiler_backend(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    """The entry point torch.compile finds as ``backend="toycompiler"``."""
    return _REGISTRY["auto"](gm, example_inputs)


def register_with_torch() -> None:
    """Make ``torch.compile(fn, backend="toycompiler")`` (and ``_cpp``, ``_triton``) work."""
    from torch._dynamo.backends import registry

    for name, fn in (("toycompiler", toycompiler_backend), ("toycompiler_cpp", _REGISTRY["cpp"]),
                     ("toycompiler_triton", _REGISTRY["triton"])):
        # Skip names torch is loading through our entry point right now (it registers them itself).
        from_entry_point = registry._BACKENDS.get(name) is not None
        if name not in registry._COMPILER_FNS and not from_entry_point:
            registry.register_backend(compiler_fn=_plain(fn), name=name)


def _plain(fn: Backend) -> Backend:
    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> Any:
        return fn(gm, example_inputs)
    backend.__name__ = fn.__name__
    return backend
