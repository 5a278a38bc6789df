"""The entry points: ``compile``, ``explain``, ``reset``; the cache per code object.

``compile(fn)`` returns a wrapper. Its call is the hot path: try each cache
entry's guard check in order, run the first that passes; otherwise compile a
new entry (a recompile, with the failing guard recorded) up to
``config.recompile_limit``, then run eagerly.

Settings: each compile reads ``toycompiler.config`` when it happens, with the
``compile(mode=..., options=...)`` of this function applied to a copy
(checked when ``compile`` is called), and passes that copy down explicitly.

Unlike TorchDynamo, toycompiler enters through this wrapper rather than
CPython's frame-evaluation hook (PEP 523): simpler to read, same idea.

Mirrors: torch/_dynamo/eval_frame.py and torch/_dynamo/convert_frame.py.
"""

from __future__ import annotations

import functools
import types
import unittest.mock
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from . import artifacts as A
from . import logs
from .backends import get_backend
from .config import check_options, config
from .frontend import guards as G
from .frontend.shapes import ShapePolicy
from .pipeline import FrameEntry, compile_frame


class CompileError(Exception):
    """Raised with ``fullgraph=True`` when the function can't be traced in one graph."""


@dataclass
class FrameCache:
    """Cache entries of one code object (compiled for one backend)."""

    frame_id: int
    entries: list[FrameEntry] = field(default_factory=list)
    failures: list[A.GuardFailure] = field(default_factory=list)  # every entry tried on every miss
    gave_up: bool = False
    misses: list[A.RecompileRecord] = field(default_factory=list)
    seen_shapes: dict[str, tuple] = field(default_factory=dict)  # input sizes so far (None: varied)


_frame_ids: dict[types.CodeType, int] = {}  # the N of "[N/entry]", one per code object
_all_caches: list[FrameCache] = []


class CompiledFunction:
    """A function compiled lazily on first call; see the module docstring."""

    def __init__(self, fn: Callable, backend: str | Callable = "auto", fullgraph: bool = False,
                 dynamic: bool | None = None, mode: str | None = None, options: dict | None = None,
                 parent: CompiledFunction | None = None):
        # A bound method (model.forward) is its function, called with its self first.
        self.fn, self._bound_args = (fn.__func__, (fn.__self__,)) if isinstance(fn, types.MethodType) else (fn, ())
        # torch.relu, F.gelu: C code, with no bytecode to translate. Compiled instead: a Python function that calls
        # ``op``; its bytecode is what the frontend translates (one call, one graph).
        if isinstance(op := self.fn, types.BuiltinFunctionType):
            self.fn = lambda *args, **kwargs: op(*args, **kwargs)
        if not isinstance(self.fn, types.FunctionType):
            raise TypeError(f"toycompiler.compile needs a Python function or nn.Module, got {type(fn).__name__}")
        self.backend_name = backend if isinstance(backend, str) else getattr(backend, "__name__", "custom")
        self.backend = get_backend(backend)
        check_options(mode, options or {})  # a typo in a mode or option name is an error now, not never
        self.fullgraph, self.dynamic, self.mode, self.options = fullgraph, dynamic, mode, options or {}
        # compile()'s arguments as given: resume functions and explain() compile with them again.
        self.compile_options = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)
        self.cache = FrameCache(_frame_ids.setdefault(self.fn.__code__, len(_frame_ids)))
        _all_caches.append(self.cache)
        # Every compile, in order, including resume functions' (shared with them, for explain).
        self.compiled_frames: list[A.FrameCompilation] = parent.compiled_frames if parent else []
        self.all_misses: list[A.RecompileRecord] = parent.all_misses if parent else []
        self.resume_functions: dict[types.CodeType, CompiledFunction] = parent.resume_functions if parent else {}
        functools.update_wrapper(self, self.fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args = (*self._bound_args, *args)
        for entry in self.cache.entries:
            if entry.check(*args, **kwargs):
                return entry.run(*args, **kwargs)
        return self._miss(args, kwargs)

    def _miss(self, args: tuple, kwargs: dict) -> Any:
        """No entry's guards passed: say why for each entry, then compile a new one (or give up)."""
        cache = self.cache
        if cache.gave_up:
            return self.fn(*args, **kwargs)
        params = G.signature_params(self.fn.__code__)
        failures = tuple(G.first_failure(e.artifact.guards, e.guard_objects, params, self.fn, args, kwargs,
                                         e.artifact.label) for e in cache.entries)
        cache.failures.extend(failures)
        failure = failures[-1] if failures else None
        cfg = config.with_options(self.mode, self.options)  # this compile's settings, passed down explicitly
        if len(cache.entries) >= cfg.recompile_limit:
            return self._give_up(args, kwargs, failures, f"recompile limit ({cfg.recompile_limit}) reached",
                                 f"{self.fn.__qualname__} hit config.recompile_limit ({cfg.recompile_limit}); "
                                 f"last miss: {failure}. Running eagerly from now on.")
        label = f"[{cache.frame_id}/{len(cache.entries)}]"
        shapes = ShapePolicy(self.dynamic, cache.seen_shapes, cfg.automatic_dynamic_shapes, cfg.specialize_zero_one)
        try:  # translation catches what user code does; this catches a compiler bug after it
            entry = compile_frame(self.fn, args, kwargs, self.backend, self.backend_name, cfg, label, failure,
                                  self._wrap_resume, shapes)
        except Exception as e:  # it costs the user speed (the frame runs eagerly), never their call
            error = f"{type(e).__name__}: {e}"
            return self._give_up(args, kwargs, failures, f"compiling failed ({error})",
                                 f"compiling {self.fn.__qualname__} failed: {error}; running it eagerly")
        if shapes.symbols and not _passes(entry, args, kwargs):  # a symbolic guard we can't evaluate: go static
            entry = compile_frame(self.fn, args, kwargs, self.backend, self.backend_name, cfg, label, failure,
                                  self._wrap_resume, ShapePolicy(dynamic=False))
        if self.fullgraph and (brk := entry.artifact.translation.graph_break):
            raise CompileError(f"{brk.filename}:{brk.line}: {brk.reason} (fullgraph=True)\n    {brk.source}")
        cache.entries.append(entry)
        for source, shape in entry.input_shapes.items():  # a dim seen with two sizes: None (automatic dynamic next)
            old = cache.seen_shapes.get(source, shape)
            cache.seen_shapes[source] = shape if len(old) != len(shape) else tuple(
                o if o == n else None for o, n in zip(old, shape))
        self.compiled_frames.append(entry.artifact)
        logs.frame_compiled(entry.artifact, self._record_miss(failures, f"compiled {label}") if failures else None)
        return entry.run(*args, **kwargs)

    def _give_up(self, args: tuple, kwargs: dict, failures: tuple[A.GuardFailure, ...], why: str, warning: str) -> Any:
        """Stop compiling this function: record why, warn once, and run it (and every later call) eagerly."""
        self.cache.gave_up = True
        miss = self._record_miss(failures, f"{why}: runs eagerly from now on")
        logs.log("recompiles", lambda: str(miss))
        warnings.warn(f"toycompiler: {warning}", stacklevel=4)
        return self.fn(*args, **kwargs)

    def _record_miss(self, failures: tuple[A.GuardFailure, ...], outcome: str) -> A.RecompileRecord:
        miss = A.RecompileRecord(self.fn.__code__.co_qualname, len(self.cache.misses) + 1, failures, outcome)
        self.cache.misses.append(miss)
        self.all_misses.append(miss)
        return miss

    def _wrap_resume(self, resume_fn: types.FunctionType) -> CompiledFunction:
        """Resume functions are compiled lazily like any function, with their own guards and cache."""
        if resume_fn.__code__ not in self.resume_functions:
            self.resume_functions[resume_fn.__code__] = CompiledFunction(resume_fn, **self.compile_options, parent=self)
        return self.resume_functions[resume_fn.__code__]

    def fallback_reasons(self) -> list[str]:
        """Why parts of this function ran eagerly: a backend that gave up on a graph (the forward, or the
        backward AOTAutograd made), a frame that could not resume after its graph break, a frame given up on
        (the recompile limit, a failed compile). ``explain()``'s report and ``assert_same`` both list these."""
        backends = [b for f in self.compiled_frames for b in (f.backend, f.backend and f.backend.backward) if b]
        reasons = [b.fallback_reason for b in backends if b.fallback_reason]
        reasons += [f"{b.frame} {b.filename}:{b.line}: frame ran eagerly: {b.no_resume_reason}"
                    for f in self.compiled_frames if (b := f.translation.graph_break) and b.no_resume_reason]
        return reasons + [f"{m.frame}: {m.outcome}" for m in self.all_misses if not m.outcome.startswith("compiled")]

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # so it works as a method too
        return self if obj is None else functools.partial(self, obj)


class CompiledModule(torch.nn.Module):
    """``compile(module)``: the same module, with its ``forward`` compiled.

    ``compile(DistributedDataParallel(model))`` is the one exception: DDP's own
    ``forward`` is not traced. TorchDynamo skips it too: DDP runs the wrapped
    module inside ``_inside_ddp_forward``, marked ``torch._disable_dynamo(
    recursive=False)``, so Dynamo compiles only the frame of ``model.forward``
    underneath (torch/nn/parallel/distributed.py, ``_run_ddp_forward``).
    Without a frame-evaluation hook, toycompiler does the same explicitly: for
    the length of one call, ``model.forward`` is the compiled forward (the same
    cache and guards as ``compile(model)``), and DDP's ``forward`` runs eagerly
    around it: ``_pre_forward`` (buffer sync, the reducer's bookkeeping), the
    call of ``model``, ``_post_forward``. The one graph is ``model``'s.

    What toycompiler leaves out: Dynamo's DDPOptimizer then splits that graph
    at DDP's bucket boundaries, so that each bucket's gradients come out of
    their own backward graph and its all-reduce overlaps the backward of the
    layers before it. Here AOTAutograd's backward is one graph, run by
    autograd as one node: every gradient comes out at its end, DDP's hooks all
    fire after it, and the buckets all-reduce one after another then: correct,
    but without overlap (tests/distributed/test_ddp.py records the buckets).
    """

    def __init__(self, module: torch.nn.Module, **options: Any):
        super().__init__()
        self._orig_mod = module
        traced = module.module if isinstance(module, torch.nn.parallel.DistributedDataParallel) else module
        self._compiled_forward = CompiledFunction(traced.forward, **options)  # bound to the module traced

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self._orig_mod, torch.nn.parallel.DistributedDataParallel):
            return self._compiled_forward(*args, **kwargs)
        # DDP calls inner(...), which calls inner.forward: for this call, the compiled one. On the way out, also
        # after an exception, the patch puts back the class's forward, or a forward set on the instance (rare).
        with unittest.mock.patch.object(self._orig_mod.module, "forward", self._compiled_forward):
            return self._orig_mod(*args, **kwargs)  # DDP's forward, eagerly


def compile(fn: Callable | None = None, *, backend: str | Callable = "auto", fullgraph: bool = False,
            dynamic: bool | None = None, mode: str | None = None, options: dict | None = None) -> Any:
    """Compile ``fn`` (a function or ``nn.Module``); usable as ``@compile`` or ``@compile(backend=...)``."""
    kw = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)
    if fn is None:
        return lambda f: compile(f, **kw)
    return (CompiledModule if isinstance(fn, torch.nn.Module) else CompiledFunction)(fn, **kw)


def explain(fn: Callable, *args: Any, **compile_options: Any) -> Callable[..., A.Report]:
    """``explain(fn)(*args)``: compile ``fn`` afresh, call it once, and report every stage."""
    if args:  # explain(fn, x): torch._dynamo.explain once took the arguments so
        raise TypeError("explain(fn) returns a function to call with the arguments: explain(fn)(*args)")
    # Given compile(fn) or compile(module) (its compiled forward), compile afresh with the options it was given.
    if isinstance(target := getattr(fn, "_compiled_forward", fn), CompiledFunction):
        compile_options = target.compile_options | compile_options
        bound = types.MethodType(target.fn, *target._bound_args) if target._bound_args else target.fn  # (its self)
        fn = getattr(fn, "_orig_mod", bound)

    def run(*args: Any, **kwargs: Any) -> A.Report:
        compiled = compile(fn, **compile_options)
        target = getattr(compiled, "_compiled_forward", compiled)
        compiled(*args, **kwargs)
        return A.Report(tuple(target.compiled_frames), tuple(target.fallback_reasons()),
                        tuple(f for m in target.all_misses for f in m.failures), tuple(target.all_misses))
    return run


def reset() -> None:
    """Forget every compiled entry (like ``torch._dynamo.reset()``)."""
    for cache in _all_caches:
        cache.__init__(cache.frame_id)  # every field back to its default: no entry, no miss, no size seen
    _frame_ids.clear()


def _passes(entry: FrameEntry, args: tuple, kwargs: dict) -> bool:
    """A new entry's guards must accept the very inputs it was traced with."""
    try:
        return bool(entry.check(*args, **kwargs))
    except Exception:
        return False
