"""Triton kernels: each program instance computes one block of XBLOCK elements.

What a pointwise kernel looks like::

    @triton.jit
    def triton_sin_cos_mul_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)   # this block's elements
        xmask = xindex < xnumel                                     # the last block is partial
        tmp0 = tl.load(in_ptr0 + xindex, mask=xmask)
        tmp1 = tl.sin(tmp0)
        ...
        tl.store(out_ptr0 + xindex, tmp5, mask=xmask)

Mirrors: torch/_inductor/codegen/triton.py (TritonKernel, TritonOverrides).
"""

from __future__ import annotations

import math
import re

import torch

from .common import KernelRenderer

TL_TYPES = {
    torch.float32: "tl.float32", torch.float64: "tl.float64", torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16", torch.int64: "tl.int64", torch.int32: "tl.int32", torch.int16: "tl.int16",
    torch.int8: "tl.int8", torch.uint8: "tl.uint8", torch.bool: "tl.int1",
}


class TritonRenderer(KernelRenderer):
    language = "triton"
    prefix = "triton"
    ops = {
        "sin": "tl.sin({0})", "cos": "tl.cos({0})", "tan": "libdevice.tan({0})", "exp": "tl.exp({0})",
        "log": "tl.log({0})", "tanh": "libdevice.tanh({0})", "sqrt": "tl.sqrt({0})", "erf": "tl.erf({0})",
        "rsqrt": "tl.rsqrt({0})", "reciprocal": "1 / {0}", "abs": "tl.abs({0})", "neg": "-{0}",
        "relu": "tl.where({0} != {0}, {0}, tl.maximum({0}, 0))", "sigmoid": "tl.sigmoid({0})",
        "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
        "maximum": "tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
        "minimum": "tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
        "pow": "libdevice.pow({0}, {1})",
        "gt": "{0} > {1}", "lt": "{0} < {1}", "ge": "{0} >= {1}", "le": "{0} <= {1}",
        "eq": "{0} == {1}", "ne": "{0} != {1}", "where": "tl.where({0}, {1}, {2})",
    }

    def type_name(self, dtype: torch.dtype) -> str:
        if dtype not in TL_TYPES:
            raise NotImplementedError(f"the Triton backend does not support {dtype}")
        return TL_TYPES[dtype]

    def header(self):
        return [
            "import triton",
            "import triton.language as tl",
            "from toycompiler.backend.codegen.triton_libdevice import libdevice",
            "",
            "",
            "@triton.jit",
        ]

    def signature(self, name, inputs, outputs, sizes):
        return [f"def {name}({', '.join(inputs + outputs + sizes)}, XBLOCK: tl.constexpr):"]

    def loop_open(self):
        return [
            "    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)",
            "    xmask = xindex < xnumel",
        ]

    def loop_close(self):
        return []

    body_indent = 1

    def dim_var(self, name, expr):
        return f"{name} = {expr}"

    def assign(self, tmp, value, dtype):
        return f"{tmp} = {value}"

    def load(self, ptr, index, dtype):
        if not re.search(r"xindex|\bd\d+\b", index):  # same element for the whole block: broadcast it
            return f"tl.load({ptr} + ({index}) + tl.zeros_like(xindex), mask=xmask)"
        return f"tl.load({ptr} + ({index}), mask=xmask)"

    def store(self, ptr, index, value):
        return f"tl.store({ptr} + ({index}), {value}, mask=xmask)"

    def constant(self, value, dtype):
        if dtype.is_floating_point:
            value = float(value)
            if math.isinf(value) or math.isnan(value):
                return f'float("{value}")'
            return repr(value)
        if dtype == torch.bool:
            return "True" if value else "False"
        return str(int(value))

    def cast(self, value, dtype):
        return f"{value}.to({self.type_name(dtype)})"
