"""Backends: a registry of names for anything with torch.compile's signature ``backend(gm, example_inputs)``.

- ``"cpp"`` and ``"triton"``: toycompiler's own Inductor-style backend, one per codegen target.
- ``"auto"``: Triton for CUDA tensors, C++ otherwise.
- ``"eager"``: run the captured graph as it is (to test the frontend alone).
- ``"inductor"``: hand the graph to the real TorchInductor, to compare.
- any callable you pass.

This module only keeps names. The toy backends are defined and registered by
:mod:`toycompiler.pipeline` (``ToyBackend``), which calls the backend's stages;
their failures are handled there too. They are also registered with torch's
own registry, so ``torch.compile(fn, backend="toycompiler")`` works (plus
``toycompiler_cpp`` and ``toycompiler_triton``).

Mirrors: torch/_dynamo/backends/registry.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

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
    if not callable(backend) and backend not in _REGISTRY:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(list_backends())} or pass a callable")
    return backend if callable(backend) else _REGISTRY[backend]


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
        if name not in registry._COMPILER_FNS and registry._BACKENDS.get(name) is None:
            registry.register_backend(compiler_fn=fn, name=name)
