"""``libdevice`` for generated Triton kernels, also under ``TRITON_INTERPRET=1``.

On a GPU this is Triton's own ``libdevice`` (CUDA's math library). Triton's
CPU interpreter does not implement libdevice, so there the few functions our
kernels use are written with ``tl`` operations, carefully enough to match
torch in float32. ``prod_combine``, ``max_combine`` and ``min_combine`` are the combine functions of ``tl.reduce``
(max and min propagate NaN, as torch does).
"""

from __future__ import annotations

import os
import types

import triton
import triton.language as tl


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

    @triton.jit
    def tanh(x):
        # tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); a Taylor series near 0 avoids cancellation
        ax = tl.abs(x)
        e = tl.exp(-2.0 * ax)
        t = (1.0 - e) / (1.0 + e)
        x2 = x * x
        small = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))))
        return tl.where(ax < 0.125, small, tl.where(x < 0, -t, t))

    @triton.jit
    def tan(x):
        return tl.sin(x) / tl.cos(x)

    @triton.jit
    def trunc(x):
        return tl.where(x < 0, tl.ceil(x), tl.floor(x))

    @triton.jit
    def log1p(x):
        # log(1 + x) without losing x's low bits when x is tiny: log(u) * x / (u - 1), u = 1 + x
        u = 1.0 + x
        return tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))

    @triton.jit
    def expm1(x):
        # exp(x) - 1 for tiny x: (u - 1) * x / log(u), u = exp(x)
        u = tl.exp(x)
        return tl.where(u == 1.0, x, tl.where(u - 1.0 == -1.0, -1.0, (u - 1.0) * (x / tl.log(u))))

    @triton.jit
    def pow(x, y):
        # x ** y for x >= 0, and for x < 0 with integer y (as torch.pow does); y may be a constant
        y = y + tl.zeros_like(x)
        mag = tl.exp(y * tl.log(tl.abs(x)))
        y_int = y == tl.floor(y)
        odd = y_int & ((tl.abs(y) % 2.0) == 1.0)
        signed = tl.where((x < 0) & odd, -mag, mag)
        nan = signed * float("nan")
        return tl.where(x == 0, tl.where(y == 0, 1.0, tl.where(y < 0, float("inf"), 0.0)),
                        tl.where((x < 0) & ~y_int, nan, signed))

    @triton.jit
    def fmod(x, y):
        return x % y  # the interpreter computes float % with numpy's fmod: exact, the dividend's sign

    libdevice = types.SimpleNamespace(tanh=tanh, tan=tan, pow=pow, trunc=trunc, log1p=log1p, expm1=expm1, fmod=fmod)
