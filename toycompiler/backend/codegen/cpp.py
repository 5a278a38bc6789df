"""C++ kernels: one OpenMP-parallel loop over the iteration space.

What a pointwise kernel looks like::

    extern "C" void cpp_sin_cos_mul_add_0(const float* in_ptr0, const float* in_ptr1,
                                          float* out_ptr0, int64_t xnumel) {
        #pragma omp parallel for simd if(xnumel > 16384)
        for (int64_t xindex = 0; xindex < xnumel; ++xindex) {
            float tmp0 = in_ptr0[xindex];
            float tmp1 = std::sin(tmp0);
            ...
            out_ptr0[xindex] = tmp5;
        }
    }

Mirrors: torch/_inductor/codegen/cpp.py (CppKernel, CppOverrides), without
its explicit vector classes: the loop is written so the compiler can vectorise.
"""

from __future__ import annotations

import math

import torch

from .common import KernelRenderer

CTYPES = {
    torch.float32: "float", torch.float64: "double", torch.int64: "int64_t", torch.int32: "int32_t",
    torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "bool",
}

# Helpers with torch's semantics where the C library's differ (NaN propagation).
PRELUDE = """\
#include <cmath>
#include <cstdint>
#include <limits>
template <typename T> static inline T toy_maximum(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <typename T> static inline T toy_minimum(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <typename T> static inline T toy_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <typename T> static inline T toy_sigmoid(T a) { return T(1) / (T(1) + std::exp(-a)); }
"""


def vector_math_declarations() -> str:
    """Declare glibc's vector math (libmvec) so ``#pragma omp simd`` loops call ``sin`` 8 lanes at a time.

    glibc only declares these under ``-ffast-math``, which would also break
    NaN handling; declaring them ourselves gets the vector calls alone. They
    must come before ``<cmath>``. x86-64 Linux only; tanh, erf and log1p
    need glibc 2.35.
    """
    import os
    import platform

    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return ""
    names = ["sin", "cos", "exp", "log", "pow"]
    try:
        glibc = tuple(int(p) for p in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
    except (ValueError, OSError, IndexError, AttributeError):
        glibc = (0, 0)
    if glibc < (2, 22):
        return ""
    if glibc >= (2, 35):
        names += ["tanh", "erf", "log1p"]
    lines = ['extern "C" {']
    for name in names:
        args = "float, float" if name == "pow" else "float"
        dargs = "double, double" if name == "pow" else "double"
        lines.append(f'__attribute__((simd("notinbranch"))) float {name}f({args}) noexcept;')
        lines.append(f'__attribute__((simd("notinbranch"))) double {name}({dargs}) noexcept;')
    return "\n".join(lines + ["}"]) + "\n"


class CppRenderer(KernelRenderer):
    language = "cpp"
    prefix = "cpp"
    ops = {
        "sin": "std::sin({0})", "cos": "std::cos({0})", "tan": "std::tan({0})", "exp": "std::exp({0})",
        "log": "std::log({0})", "tanh": "std::tanh({0})", "sqrt": "std::sqrt({0})", "erf": "std::erf({0})",
        "rsqrt": "{dtype}(1) / std::sqrt({0})", "reciprocal": "{dtype}(1) / {0}", "abs": "std::abs({0})",
        "neg": "-{0}", "relu": "toy_relu({0})", "sigmoid": "toy_sigmoid({0})",
        "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
        "maximum": "toy_maximum({0}, {1})", "minimum": "toy_minimum({0}, {1})", "pow": "std::pow({0}, {1})",
        "gt": "{0} > {1}", "lt": "{0} < {1}", "ge": "{0} >= {1}", "le": "{0} <= {1}",
        "eq": "{0} == {1}", "ne": "{0} != {1}", "where": "{0} ? {1} : {2}",
    }
    body_indent = 2

    def type_name(self, dtype: torch.dtype) -> str:
        if dtype not in CTYPES:
            raise NotImplementedError(f"the C++ backend does not support {dtype}")
        return CTYPES[dtype]

    def header(self) -> list[str]:
        return vector_math_declarations().splitlines() + PRELUDE.splitlines() + [""]

    def signature(self, name, inputs, outputs, sizes):
        in_types = [f"const {self.type_name(self._dtypes[b])}* {p}" for b, p in self._ptr.items() if p in inputs]
        out_types = [f"{self.type_name(self._dtypes[b])}* {p}" for b, p in self._ptr.items() if p in outputs]
        in_types.sort(key=lambda s: inputs.index(s.split()[-1]))
        out_types.sort(key=lambda s: outputs.index(s.split()[-1]))
        params = ", ".join(in_types + out_types + [f"int64_t {s}" for s in sizes])
        return [f'extern "C" void {name}({params}) {{']

    def loop_open(self):
        return [
            "    #pragma omp parallel for simd if(xnumel > 16384)",
            "    for (int64_t xindex = 0; xindex < xnumel; ++xindex) {",
        ]

    def loop_close(self):
        return ["    }", "}"]

    def dim_var(self, name, expr):
        return f"const int64_t {name} = {expr.replace('//', '/')};"

    def assign(self, tmp, value, dtype):
        return f"{self.type_name(dtype)} {tmp} = {value};"

    def load(self, ptr, index, dtype):
        return f"{ptr}[{index}]"

    def store(self, ptr, index, value):
        return f"{ptr}[{index}] = {value};"

    def constant(self, value, dtype):
        if dtype == torch.bool:
            return "true" if value else "false"
        if dtype.is_floating_point:
            value = float(value)
            t = self.type_name(dtype)
            if math.isinf(value):
                return f"{'-' if value < 0 else ''}std::numeric_limits<{t}>::infinity()"
            if math.isnan(value):
                return f"std::numeric_limits<{t}>::quiet_NaN()"
            return f"{value!r}f" if dtype == torch.float32 else repr(value)
        return f"{self.type_name(dtype)}({int(value)})"

    def cast(self, value, dtype):
        return f"static_cast<{self.type_name(dtype)}>({value})"
