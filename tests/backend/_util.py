"""Run a function through one toy backend on a captured ATen graph, and compare with eager."""

from __future__ import annotations

import copy
import warnings

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import toycompiler
from toycompiler.testing import assert_close_tree, device_for


def capture(fn, *args) -> torch.fx.GraphModule:
    """An FX graph of ``fn`` that returns a tuple, as the frontend hands it to a backend."""
    def wrapped(*a):
        out = fn(*a)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return make_fx(wrapped)(*copy.deepcopy(args))


def on_device(args: tuple, target: str) -> tuple:
    """Tensors moved to where ``target``'s kernels run (CUDA for Triton when a GPU is present)."""
    dev = torch.device(device_for(target))
    return tuple(a.to(dev) if isinstance(a, torch.Tensor) and a.device != dev else a for a in args)


def compile_fn(fn, *args, target: str = "cpp"):
    gm = capture(fn, *args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager is a failure here
        compiled = toycompiler.get_backend(target)(gm, list(args))
    assert compiled.artifacts.fallback_reason is None, compiled.artifacts.fallback_reason
    return compiled


def check(fn, *args, target: str = "cpp", rtol: float = 1e-5, atol: float = 1e-5):
    """Compiled == eager (values, dtypes, shapes, and in-place changes to the inputs); returns the artifacts."""
    args = on_device(args, target)
    compiled = compile_fn(fn, *args, target=target)
    eager_args = copy.deepcopy(args)
    expected = fn(*eager_args)
    expected = tuple(expected) if isinstance(expected, (tuple, list)) else (expected,)
    actual = compiled(*args)
    try:
        assert_close_tree(tuple(actual), expected, rtol, atol)
        for a, e in zip(actual, expected):
            assert a.dtype == e.dtype and a.shape == e.shape, (a.dtype, e.dtype, a.shape, e.shape)
        assert_close_tree(args, eager_args, rtol, atol)
    except AssertionError as e:
        raise AssertionError(f"{e}\n\n{compiled.artifacts}") from None
    return compiled.artifacts
