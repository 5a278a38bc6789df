"""The entry points: ``compile``, ``explain``, ``reset``; the cache per code object.

``compile(fn)`` returns a wrapper. Its call is the hot path: try each cache
entry's guard check in order, run the first that passes; otherwise compile a
new entry (a recompile, with the failing guard recorded) up to
``config.recompile_limit``, then run eagerly.

Unlike TorchDynamo, toycompiler enters through this wrapper rather than
CPython's frame-evaluation hook (PEP 523): simpler to read, same idea.

Mirrors: torch/_dynamo/eval_frame.py and torch/_dynamo/convert_frame.py.
"""

from __future__ import annotations

import functools
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from . import artifacts as A
from .backends import get_backend
from .config import config
from .frontend import guards as G
from .pipeline import FrameEntry, compile_frame


class CompileError(Exception):
    """Raised with ``fullgraph=True`` when the function can't be traced in one graph."""


@dataclass
class FrameCache:
    """Cache entries of one code object (compiled for one backend)."""

    frame_id: int
    entries: list[FrameEntry] = field(default_factory=list)
    failures: list[A.GuardFailure] = field(default_factory=list)
    gave_up: bool = False


_frame_ids: dict[Any, int] = {}
_all_caches: list[FrameCache] = []


def _frame_id(key: Any) -> int:
    return _frame_ids.setdefault(key, len(_frame_ids))


class CompiledFunction:
    """A function compiled lazily on first call; see the module docstring."""

    def __init__(self, fn: Callable, backend: str | Callable = "auto", fullgraph: bool = False,
                 dynamic: bool | None = None, mode: str | None = None, options: dict | None = None):
        self._bound_self = getattr(fn, "__self__", None) if isinstance(fn, types.MethodType) else None
        self.fn = fn.__func__ if isinstance(fn, types.MethodType) else fn
        if not isinstance(self.fn, types.FunctionType):
            raise TypeError(f"toycompiler.compile needs a Python function or nn.Module, got {type(fn).__name__}")
        self.backend_name = backend if isinstance(backend, str) else getattr(backend, "__name__", "custom")
        self.backend = get_backend(backend)
        self.fullgraph, self.dynamic, self.mode, self.options = fullgraph, dynamic, mode, options or {}
        self.cache = FrameCache(_frame_id(self.fn.__code__))
        _all_caches.append(self.cache)
        self.compiled_frames: list[A.FrameCompilation] = []  # every compile, in order (for explain)
        functools.update_wrapper(self, self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._bound_self is not None:
            args = (self._bound_self, *args)
        for entry in self.cache.entries:
            if entry.check(*args, **kwargs):
                return entry.run(*args, **kwargs)
        return self._miss(args, kwargs)

    def _miss(self, args: tuple, kwargs: dict) -> Any:
        cache = self.cache
        if cache.gave_up:
            return self.fn(*args, **kwargs)
        failure = None
        if cache.entries:
            last = cache.entries[-1]
            failure = G.first_failure(last.artifact.guards, last.guard_objects, G.signature_params(self.fn.__code__),
                                      self.fn, args, kwargs, last.artifact.label)
            cache.failures.append(failure)
        if len(cache.entries) >= config.recompile_limit:
            cache.gave_up = True
            warnings.warn(f"toycompiler: {self.fn.__qualname__} hit config.recompile_limit "
                          f"({config.recompile_limit}); last miss: {failure}. Running eagerly from now on.",
                          stacklevel=3)
            return self.fn(*args, **kwargs)
        label = f"[{cache.frame_id}/{len(cache.entries)}]"
        with config.patch(**({"mode": self.mode} if self.mode else {})):  # the backend reads config.mode
            entry = compile_frame(self.fn, args, kwargs, self.backend, self.backend_name, config, label, failure)
        brk = entry.artifact.translation.graph_break
        if brk is not None and self.fullgraph:
            raise CompileError(f"{brk.filename}:{brk.line}: {brk.reason} (fullgraph=True)\n    {brk.source}")
        cache.entries.append(entry)
        self.compiled_frames.append(entry.artifact)
        return entry.run(*args, **kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # so it works as a method too
        return self if obj is None else functools.partial(self, obj)


class CompiledModule(torch.nn.Module):
    """``compile(module)``: the same module, with its ``forward`` compiled."""

    def __init__(self, module: torch.nn.Module, **options: Any):
        super().__init__()
        self._orig_mod = module
        self._compiled_forward = CompiledFunction(type(module).forward, **options)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_forward(self._orig_mod, *args, **kwargs)


def compile(fn: Callable | None = None, *, backend: str | Callable = "auto", fullgraph: bool = False,
            dynamic: bool | None = None, mode: str | None = None, options: dict | None = None) -> Any:
    """Compile ``fn`` (a function or ``nn.Module``); usable as ``@compile`` or ``@compile(backend=...)``."""
    kw = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)
    if fn is None:
        return lambda f: compile(f, **kw)
    if isinstance(fn, torch.nn.Module):
        return CompiledModule(fn, **kw)
    return CompiledFunction(fn, **kw)


def explain(fn: Callable, **compile_options: Any) -> Callable[..., A.Report]:
    """``explain(fn)(*args)``: compile ``fn`` afresh, call it once, and report every stage."""
    if isinstance(fn, CompiledFunction):
        compile_options = dict(backend=fn.backend, fullgraph=fn.fullgraph, dynamic=fn.dynamic, mode=fn.mode) | compile_options
        fn = fn.fn
    elif isinstance(fn, CompiledModule):
        fn = fn._orig_mod

    def run(*args: Any, **kwargs: Any) -> A.Report:
        compiled = compile(fn, **compile_options)
        target = compiled._compiled_forward if isinstance(compiled, CompiledModule) else compiled
        compiled(*args, **kwargs)
        frames = tuple(target.compiled_frames)
        fallbacks = tuple(f.backend.fallback_reason for f in frames if f.backend and f.backend.fallback_reason)
        return A.Report(frames, fallbacks, tuple(target.cache.failures))
    return run


def reset() -> None:
    """Forget every compiled entry (like ``torch._dynamo.reset()``)."""
    for cache in _all_caches:
        cache.entries.clear()
        cache.failures.clear()
        cache.gave_up = False
    _frame_ids.clear()
