"""The contenders: eager PyTorch, real torch.compile (Inductor), and toycompiler.

Each becomes a callable over the workload's inputs. A training workload's
callable returns the loss's gradients, so forward and backward are timed.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .workloads import Workload

COMPILERS = {
    "eager": "eager PyTorch",
    "inductor": "torch.compile (Inductor)",
    "toy": "toycompiler",
    "inductor-reduce-overhead": "torch.compile, mode='reduce-overhead'",
    "toy-reduce-overhead": "toycompiler, mode='reduce-overhead'",
}


def toy_target(device: str) -> str:
    return "triton" if device == "cuda" else "cpp"


TOY_MODE: list[str | None] = [None]  # --toy-mode: toycompiler's mode for the "toy" contender


def make_compiled(w: Workload, compiler: str, device: str) -> Callable:
    import toycompiler

    mode = "reduce-overhead" if compiler.endswith("reduce-overhead") else None
    if compiler == "toy":
        mode = TOY_MODE[0]
    if compiler == "eager":
        fn = w.fn
    elif compiler.startswith("inductor"):
        fn = torch.compile(w.fn, mode=mode)
    elif compiler.startswith("toy"):
        fn = toycompiler.compile(w.fn, backend=toy_target(device), mode=mode)
    else:
        raise ValueError(f"unknown compiler {compiler!r}; choose one of {', '.join(COMPILERS)}")
    return _training_step(fn) if w.training else fn


def _training_step(fn: Callable) -> Callable:
    def step(*inputs: torch.Tensor) -> tuple:
        loss = fn(*inputs)
        return torch.autograd.grad(loss, [t for t in inputs if t.requires_grad])
    step.compiled = fn
    return step


def toy_status(compiled: Callable) -> str:
    """"ok", or why toycompiler ran (part of) the workload eagerly: graph breaks and fallbacks."""
    fn = getattr(compiled, "compiled", compiled)
    reasons = []
    for frame in getattr(fn, "compiled_frames", ()):
        brk = frame.translation.graph_break
        if brk is not None:
            reasons.append(f"graph break: {brk.reason}")
        backend = frame.backend
        for part in (backend, backend and backend.backward):
            if part is not None and part.fallback_reason:
                reasons.append(part.fallback_reason)
    return "ok" if not reasons else "fallback: " + "; ".join(dict.fromkeys(reasons))


def outputs_match(got: object, want: object, rtol: float = 1e-3, atol: float = 1e-3) -> bool:
    if isinstance(want, (tuple, list)):
        return len(got) == len(want) and all(outputs_match(g, w, rtol, atol) for g, w in zip(got, want))
    if want.dtype in (torch.float16, torch.bfloat16):  # both round to half precision: a few ulps apart
        rtol, atol = max(rtol, 2e-2), max(atol, 2e-2)
    return torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol, equal_nan=True)
