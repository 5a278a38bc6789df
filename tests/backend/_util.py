"""Backend tests: one toy backend on a captured ATen graph, checked against eager by ``assert_same``."""

from __future__ import annotations

import copy

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import toycompiler
from toycompiler.testing import assert_same, device_for


def capture(fn, *args) -> torch.fx.GraphModule:
    """An FX graph of ``fn`` that returns a tuple, as the frontend hands it to a backend."""
    return make_fx(as_tuple(fn))(*copy.deepcopy(args))


def as_tuple(fn):
    """``fn`` returning a tuple, as graphs do."""
    def wrapped(*a):
        out = fn(*a)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return wrapped


def on_device(args: tuple, target: str) -> tuple:
    """Tensors moved to where ``target``'s kernels run (CUDA for Triton when a GPU is present)."""
    dev = torch.device(device_for(target))
    return tuple(a.to(dev) if isinstance(a, torch.Tensor) and a.device != dev else a for a in args)


def check(fn, *args, target: str = "cpp", rtol: float = 1e-5, atol: float = 1e-5, allow_fallback: str | None = None):
    """The backend's kernels for ``fn``'s graph == eager (``assert_same``: values, dtypes, shapes, in-place
    changes to the inputs, and no fallback to eager); returns the backend's artifacts."""
    args = on_device(args, target)
    compiled = toycompiler.get_backend(target)(capture(fn, *args), list(args))
    assert_same(as_tuple(fn), *args, compiled=compiled, rtol=rtol, atol=atol, allow_fallback=allow_fallback)
    return compiled.artifacts
