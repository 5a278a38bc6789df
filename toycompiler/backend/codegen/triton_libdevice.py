"""``libdevice`` for generated Triton kernels, also under ``TRITON_INTERPRET=1``.

On a GPU this is Triton's own ``libdevice`` (CUDA's math library). Triton's
CPU interpreter does not implement libdevice; it runs a kernel as Python on
numpy arrays, so there each libdevice function our kernels call is numpy's
function of the same meaning, applied to the arrays the interpreter's tensors
hold (the interpreter's own internals, ``TensorHandle``: a test-only path).
``prod_combine``, ``max_combine`` and ``min_combine`` are the combine functions of ``tl.reduce``
(max and min propagate NaN, as torch does).
"""

from __future__ import annotations

import math
import os
import types

import triton
import triton.language as tl

from ..ir import MATH_OPS, MATH_OPS2


@triton.jit
def prod_combine(a, b):
    return a * b


@triton.jit
def max_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def min_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


if os.environ.get("TRITON_INTERPRET", "0") != "1":
    from triton.language.extra import libdevice  # noqa: F401
else:
    import numpy as np
    from triton.runtime.interpreter import TensorHandle

    def _numpy(fn):
        """``fn`` on the interpreter's arrays; the result takes the dtype and shape of the largest operand."""

        def call(*args):
            like = max((a for a in args if isinstance(a, tl.core.tensor)), key=lambda a: a.handle.data.size)
            with np.errstate(all="ignore"):  # NaN and inf as in C: no warnings
                data = fn(*[a.handle.data if isinstance(a, tl.core.tensor) else a for a in args])
            return tl.core.tensor(TensorHandle(np.asarray(data, like.handle.data.dtype), like.handle.dtype), like.type)
        return call

    NUMPY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
             "atanh": np.arctanh, "atan2": np.arctan2, "pow": np.power, "nearbyint": np.rint,
             "erfc": np.vectorize(math.erfc)}  # where numpy's name is not libdevice's
    libdevice = types.SimpleNamespace(**{name: _numpy(NUMPY.get(name) or getattr(np, name))
                                         for name in (*MATH_OPS, *MATH_OPS2, "fmod", "nearbyint", "signbit")})
