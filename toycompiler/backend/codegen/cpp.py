"""C++ kernels: an OpenMP-parallel loop over x, with per-row loops over r for reductions.

What a pointwise kernel looks like::

    extern "C" void cpp_sin_cos_mul_add_0(const float* in_ptr0, const float* in_ptr1,
                                          float* out_ptr0, int64_t xnumel) {
        #pragma omp parallel for simd if(parallel: xnumel > 16384)
        for (int64_t xindex = 0; xindex < xnumel; ++xindex) {
            float tmp0 = in_ptr0[xindex];
            float tmp1 = std::sin(tmp0);
            ...
            out_ptr0[xindex] = tmp5;
        }
    }

A reduction kernel keeps one accumulator per reduction in a register and
loops over the row (``for (rindex ...) acc0 += ...``), then writes the row's
element-wise results in a last, vectorisable ``#pragma omp simd`` loop.

bfloat16 elements are loaded as their 16 bits, computed in float, and rounded
where stored (``PRELUDE``).

A pointwise kernel that reads one input across its rows (``x.t() + x``) runs
in tiles of 16 x 16 elements: each tile copies that input's block in memory
order, transposes it in registers (``toy_tile``), and reads the copy along the
row like every other input (``CppRenderer.setup``).

Mirrors: torch/_inductor/codegen/cpp.py (CppKernel, CppOverrides, and
CppTile2DKernel for the tiles), without its explicit vector classes: loops are
written so the compiler can vectorise.
Leaves out: blocking for cache beyond those tiles, and the C++ wrapper.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import sympy
import torch

from ..ir import IDENTITY, MATH_OPS, MATH_OPS2, contiguous_strides, index_exprs, index_vars, linear_index, loads
from .common import INFIX, SCALAR_FMOD, IndexPrinter, KernelRenderer, unclamped

CTYPES = {
    torch.float32: "float", torch.float64: "double", torch.int64: "int64_t", torch.int32: "int32_t",
    torch.int16: "int16_t", torch.int8: "int8_t", torch.uint8: "uint8_t", torch.bool: "bool",
    torch.bfloat16: "uint16_t",  # its bits in memory; computed in float (PRELUDE)
}

# Helpers with torch's semantics where the C library's differ (NaN propagation). toy_maximum takes b when it is
# larger or NaN, else keeps a, which stays when it is NaN (nothing compares larger than NaN): two compares and
# a blend a vector. Written with a NaN test for each side first, the max loop over [256, 50257] floats took 4.0 ms
# instead of 2.5 (the loop alone, built with the kernels' flags, one thread, this project's 2-core x86-64
# machine); toycompiler's amax over them went from 3.1 to 2.1 ms, torch.compile's taking 2.1.
#
# bfloat16: an element is held in memory as its 16 bits (``uint16_t``), widened to float where it is loaded, computed
# in float, and rounded to nearest-even where it is stored or the program casts it (CppRenderer.load, store, cast; not
# where an op's decomposition casts its float result back: lowering's ``_to_copy``), as c10::BFloat16 rounds.
# bfloat16 is float's top 16 bits: widening shifts them back; rounding adds 0x7fff plus the lowest kept bit (ties to
# even) and drops the low 16. NaN stays NaN (the add could carry it into an infinity).
# Integer arithmetic without branches, so a loop of them vectorises; the bits are read through a union (GCC and Clang
# define reading its other member; std::bit_cast needs C++20, __builtin_bit_cast GCC 11). Both give torch's bits for
# all 65536 bfloat16 values and every float tried (tests/backend/test_half_cpp.py). float16 is not here: without
# AVX512-FP16 GCC vectorises no hardware conversion, and the same kind of arithmetic for float16 (its exponent
# rebiased by a multiply, its rounding by a float add; exact too) ran a float16 layer norm over [4096, 1024] at a
# third of eager's speed (two threads; eager ran at 1.5x torch.compile there): float16 graphs run eagerly, with that
# reason. AVX512-BF16's conversion in one instruction (vcvtneps2bf16: ``toy_to_bfloat16`` declared ``simd``, its vector
# clones defined as that instruction, the way SLEEF's are below) ran silu(x) * y over 2M bfloat16 values in 0.72 ms
# instead of 0.93 (torch.compile 0.74; one thread), a layer norm 1.4 times as fast; but the instruction flushes a
# result below float's smallest normal to zero, where torch keeps bfloat16's subnormals (2004 of the test's values
# came out 0): not used.
PRELUDE = """\
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
template <typename T> static inline T toy_maximum(T a, T b) { return b > a || b != b ? b : a; }
template <typename T> static inline T toy_minimum(T a, T b) { return b < a || b != b ? b : a; }
template <typename T> static inline T toy_relu(T a) { return a != a ? a : (a > T(0) ? a : T(0)); }
template <typename T, int N> struct toy_vector { typedef T type __attribute__((vector_size(N * sizeof(T)))); };
template <typename T, int N> using toy_lanes = typename toy_vector<T, N>::type;  // N values in vector registers
template <int N, typename T> static inline T toy_sum_lanes(T* a) {  // the halves added lane by lane, then theirs
    _Pragma("omp simd") for (int l = 0; l < N / 2; ++l) a[l] += a[l + N / 2];
    if constexpr (N > 2) return toy_sum_lanes<N / 2>(a); else return a[0];
}
template <int N, typename V> static inline auto toy_sum_lanes(V v) {  // a vector's lanes, as an array's
    decltype(v[0] + v[0]) a[N]; __builtin_memcpy(a, &v, sizeof a); return toy_sum_lanes<N>(a);
}
static inline float toy_from_bfloat16(uint16_t h) { union { uint32_t u; float f; } v{uint32_t(h) << 16}; return v.f; }
static inline uint16_t toy_to_bfloat16(float f) {
    union { float f; uint32_t u; } v{f};
    return f != f ? 0x7fc0 : (v.u + 0x7fffu + (v.u >> 16 & 1u)) >> 16;
}
"""

# erf of a float, in a kernel that computes one (CppRenderer.header): Abramowitz and Stegun's 7.1.26, as torch's
# at::vec computes it for torch.compile's kernels (its error below 1.5e-7: over 2M normal floats at most 5.3e-7 from
# eager's, as torch.compile's), its exp SLEEF's; near 0, where its 1 - ... cancels (erf(1e-30) would be 0), two
# terms of erf's series. glibc's erff (libmvec) took 0.76 ms over 2M floats, this 0.68, without the series 0.59
# (torch.compile 0.65; one thread, AVX-512). A double keeps glibc's erf (libmvec): the polynomial's 1.5e-7 is a
# float's precision, not a double's.
ERF_PRELUDE = """\
static inline float toy_erf(float x) {
    float a = std::abs(x), t = 1.0f / (0.3275911f * a + 1.0f);
    float r = (((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t + 0.254829592f;
    return a < 0.02f ? x * (1.1283791f - 0.37612638f * x * x) : std::copysign(1.0f - r * t * std::exp(-x * x), x);
}
static inline double toy_erf(double x) { return std::erf(x); }
"""

# The helper of a kernel with transposed reads (CppRenderer.setup says how it is used), in its header only: an
# N x N tile of what ``read(a, b)`` gives, read along a (memory order), returned transposed (along b)
TILE_PRELUDE = """\
#include <array>
template <int N, typename F> static inline auto toy_tile(int64_t a0, int64_t b0, F read) {
    std::array<decltype(read(0, 0)), N * N> rows, tile;  // rows[N * b + a] = read(a0 + a, b0 + b); tile: transposed
    for (int b = 0; b < N; ++b) for (int a = 0; a < N; ++a) rows[N * b + a] = read(a0 + a, b0 + b);
    for (int b = 0; b < N; ++b) _Pragma("GCC unroll 16") for (int a = 0; a < N; ++a) tile[N * a + b] = rows[N * b + a];
    return tile;
}
"""

# The binary op (in `CppRenderer.ops`) that folds one more value into a reduction's accumulator; an argmax
# is a max, then a search (`reductions`).
COMBINE = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}
# The OpenMP reduction clause that lets a row loop vectorise: OpenMP's own. GCC combines a max's lanes in vector steps,
# a sum's one after another (see CppRenderer.lanes; a sum over whole vectors adds into lanes of its own instead). A max
# or min folds with std::max or std::min (a vector max, not NaN-aware) and, over floats, a NaN flag of its own,
# ``acc0_nan |= v != v``, as its row is NaN if one element is (CppRenderer.reductions).
REDUCE_CLAUSE = {"sum": "+", "prod": "*", "max": "max", "min": "min"}
# The functions with vector clones (see vector_math): glibc's libmvec has these since glibc 2.35 (sin, cos, exp, log
# and pow since 2.22; an older glibc gets scalar calls). sigmoid: its exp.
LIBMVEC = {"sin", "cos", "exp", "log", "erf", "sigmoid", *MATH_OPS, *MATH_OPS2} - {"trunc", "copysign"}
# The functions whose float clones for AVX2 and AVX-512 are SLEEF's (see vector_math), with the error bound in the
# name of the SLEEF function that torch's at::vec::Vectorized calls: 1.0 ulp (u10), 3.5 (u35) for sin and cos.
# These are the ones whose special lanes are ordinary: the -inf of a mask and overflow (exp), a zero (log), a
# large argument (sin of a position), x < -1 (log1p). Timed over 10^6 floats, one thread: exp of x * 200 took
# 11.0 ms with libmvec and 0.65 with SLEEF (torch.compile 0.66), log with a tenth of its inputs NaN or infinite
# 1.98 and 0.60 (2.19), sin of x * 10^4 6.95 and 0.39 (0.38), log1p of randn 2.69 and 0.90 (0.96); over plain
# inputs each is within 0.25 ms of the other but log1p (0.49 and 0.90). The others stay libmvec's, as fast or
# faster on ordinary inputs (tanh 0.49 ms, SLEEF 1.69, torch.compile 1.73; erf 0.63, 2.65, 2.12; expm1 0.37,
# 1.32, 0.41; a pow of two tensors 2.0, 2.6, 2.7) and slow only on NaN, infinite or extreme inputs. (A float's erf
# has since become a polynomial around SLEEF's exp, ERF_PRELUDE, which timed faster than libmvec's on AVX-512.)
SLEEF = {"sin": "u35", "cos": "u35"} | dict.fromkeys(("exp", "exp2", "log", "log2", "log10", "log1p"), "u10")
SLEEF_OPS = {*SLEEF, "sigmoid", "erf", "fmod"}  # (sigmoid's exp; toy_erf's, in float; FMOD_PRELUDE)
# The float vectors of the vector ABI's AVX2 (d) and AVX-512 (e) clones, and a clone (``_ZGVdN8v_expf``) defined as
# a call of SLEEF's function (``Sleef_expf8_u10``): hidden, so that the kernel's calls bind to it, not to libmvec.
SLEEF_PRELUDE = """typedef float toy_vec8 __attribute__((vector_size(32)));
typedef float toy_vec16 __attribute__((vector_size(64)));
#define TOY_SLEEF(isa, n, f, s) toy_vec##n Sleef_##s(toy_vec##n); \\
    __attribute__((visibility("hidden"))) toy_vec##n _ZGV##isa##N##n##v_##f(toy_vec##n a) { return Sleef_##s(a); }"""
# A float's fmod (and so Python's %, passes/decompose.py) is SLEEF's too, as torch's at::vec::fmod: std::fmod's
# scalar call held its whole loop to one element at a time (a triangle wave through %, ``|(10x + 1) % 2 - 1|``
# over 4M floats, ran at 0.09x torch.compile, one thread; 1.03x so). glibc has no fmod clone to fall back on, so
# the declaration promises clones of 8 floats only (``simdlen(8)``), and they are defined for each ISA whose code
# can call SLEEF's ``fmodf8`` (AVX: c, AVX2: d, AVX-512: e; without AVX, nothing is declared: scalar calls, where a
# declared clone would be a symbol no library defines); a loop's last few elements are scalar calls. SLEEF's
# fmodf is exact, as C's, but NaN where the quotient passes about 2^126 (3e38 % 0.3): so are eager's, whose
# vector loop calls it (its scalar tail does not). A double's fmod stays the scalar call (SCALAR_FMOD).
FMOD_PRELUDE = """#ifdef __AVX__
#pragma omp declare simd notinbranch simdlen(8)
float fmodf(float, float) noexcept;
toy_vec8 Sleef_fmodf8(toy_vec8, toy_vec8);
#define TOY_FMOD(isa) __attribute__((visibility("hidden"))) \\
    toy_vec8 _ZGV##isa##N8vv_fmodf(toy_vec8 a, toy_vec8 b) { return Sleef_fmodf8(a, b); }
TOY_FMOD(c) TOY_FMOD(d) TOY_FMOD(e)
#endif"""
VECTOR_BYTES = 64 if torch.backends.cpu.get_cpu_capability() == "AVX512" else 32  # a vector register (see setup)
# Columns per block of a column reduction: its accumulators stay in L1, its reads are 1 KiB runs. The threads
# share out the blocks, so where there are fewer than 4 a thread, blocks of 64 columns instead (CppRenderer.setup).
XBLOCK = 256


def vector_math(used: set[str]) -> list[str]:
    """Vector math lets a ``#pragma omp simd`` loop call sin, exp, tanh... on 8 or 16 floats at once.

    GCC vectorises a call to a function declared ``simd`` by calling its vector clone, named by the x86-64
    vector ABI: ``_ZGVdN8v_expf`` takes 8 floats in an AVX2 register. glibc declares its functions so only
    under -ffast-math, which would also change NaN handling, so a kernel declares the ones it calls itself
    (before <cmath>). glibc's own clones (libmvec, all of these since glibc 2.35) compute a lane that holds a
    special value (NaN, an infinity, an overflow, a large argument) by a scalar call: ``exp`` of a masked
    softmax's -inf took ten times longer. So for the functions in ``SLEEF`` the float clones for AVX2 and
    AVX-512 are defined here, as calls of SLEEF: the vector math library inside libtorch_cpu that torch's own
    ``at::vec`` kernels (and so Inductor's) call, which computes every lane alike. The kernel's library is
    then linked with libtorch_cpu (``codecache.cpp_library``). The preprocessor picks what this machine has,
    so the kernel text is the same everywhere. ``used``: the kernel's ops (a sigmoid calls exp)."""
    used = used | ({"exp"} if used & {"sigmoid", "erf"} else set())  # (sigmoid's and toy_erf's exp)

    def clones(isa, n):  # TOY_SLEEF(d, 8, expf, expf8_u10): in AVX2 code, expf of 8 floats is SLEEF's expf8_u10
        return [f"TOY_SLEEF({isa}, {n}, {op}f, {op}f{n}_{SLEEF[op]})" for op in sorted(used & SLEEF.keys())]
    if not used & (LIBMVEC | SLEEF_OPS):
        return []
    declarations = [f'__attribute__((simd("notinbranch"))) {t} {name}{suffix}({t}{f", {t}" * (name in MATH_OPS2)})'
                    " noexcept;" for name in sorted(used & LIBMVEC) for t, suffix in (("float", "f"), ("double", ""))]
    sleef = [*SLEEF_PRELUDE.splitlines(), "#ifdef __AVX2__", *clones("d", 8), "#endif", "#ifdef __AVX512F__",
             *clones("e", 16), "#endif", *FMOD_PRELUDE.splitlines() * ("fmod" in used)]
    return ["#include <features.h>", "#if defined(__x86_64__) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)",
            'extern "C" {', *declarations, *sleef * bool(used & SLEEF_OPS), "}", "#endif"]


def header(used: set[str], tiles: bool) -> list[str]:
    """The lines before a kernel (or a graph's library of them, ``codegen._build_cpp``): the vector functions the
    ``used`` ops call, the includes and helpers, the erf helper where an erf is computed, the tile helper if asked."""
    return vector_math(used) + PRELUDE.splitlines() + ERF_PRELUDE.splitlines() * ("erf" in used) \
        + TILE_PRELUDE.splitlines() * tiles + [""]


class CppRenderer(KernelRenderer):
    language = "cpp"
    types = CTYPES
    comment_mark = "//"
    # min and max of an index by value (toy_minimum's NaN test is no code for an integer). std::min returns a
    # reference, which GCC selects as a branch: a loop reading a clamped index (torch.cat, F.pad) did not vectorise (a
    # pad of [16, 64, 56, 56] ran at 0.27x torch.compile so, one thread).
    printer = IndexPrinter(floordiv="/", minmax="toy_{which}imum<int64_t>({args})")
    spill_ops = LIBMVEC
    masks: list[str] = []  # the conditions every load waits on: a tree sum's rest, past the row (see row_loops)
    width = 16  # a tree sum's lanes: 32 where it reads 2-byte values (see lanes)
    ops = {  # C's <cmath> has most ops under their own name: std::sin(x)...
        **{op: f"std::{op}({{0}})" for op in ("sin", "cos", "exp", "log", "sqrt", "abs", "floor", "ceil",
                                              "isnan", "signbit", *MATH_OPS)},
        **{op: f"std::{op}({{0}}, {{1}})" for op in ("fmod", *MATH_OPS2)},
        **{op: f"{{0}} {operator} {{1}}" for op, operator in INFIX.items()},  # add: {0} + {1}...
        "logical_and": "{0} && {1}", "logical_or": "{0} || {1}", "logical_not": "!{0}",  # (C's own spelling)
        "round": "std::nearbyint({0})",  # to the nearest, ties to even: torch.round's rounding
        "rsqrt": "{dtype}(1) / std::sqrt({0})", "reciprocal": "{dtype}(1) / {0}",
        "neg": "-{0}", "relu": "toy_relu({0})", "sigmoid": "{dtype}(1) / ({dtype}(1) + std::exp(-{0}))",
        "sign": "{dtype}(({0} > {dtype}(0)) - ({0} < {dtype}(0)))",
        "erf": "toy_erf({0})",
        # integers: C's % and /, a zero divisor giving 0 instead of a crash
        "imod": "({1} == 0 ? {dtype}(0) : {dtype}({0} % {1}))",
        "truncdiv": "({1} == 0 ? {dtype}(0) : {dtype}({0} / {1}))",
        "maximum": "toy_maximum({0}, {1})", "minimum": "toy_minimum({0}, {1})",
        "where": "{0} ? {1} : {2}", "bitwise_not": "static_cast<{dtype}>(~{0})",
    }

    def header(self) -> list[str]:
        return header(self.used_ops, bool(self.tiles))

    def signature(self, sizes):
        """Bool tensors are passed as bytes (``uint8_t*``; a load converts to bool): GCC vectorises no loop that
        loads a C++ ``bool`` ("no vectype"). A causal softmax's mask held its kernel to scalar code so."""
        ctype = {b: "uint8_t" if self.dtypes[b] == torch.bool else self.type_name(self.dtypes[b]) for b in self.ptr}
        # the pointers (inputs, then outputs: ``self.ptr``'s order), then the sizes
        params = [f"{'const ' * (b in self.inputs)}{ctype[b]}* {p}" for b, p in self.ptr.items()]
        params += [f"int64_t {s}" for s in sizes]
        return [f'extern "C" void {self.name}({", ".join(params)}) {{', self.vector_note()]

    def vector_note(self) -> str:
        """Which vector path each op took: SLEEF, glibc's libmvec, multiplications, or vector instructions."""
        parts = {"sleef": self.used_ops & SLEEF_OPS, "libmvec": self.used_ops & LIBMVEC - SLEEF_OPS,
                 "scalar calls": self.used_ops & {SCALAR_FMOD}, "instructions": self.used_ops - LIBMVEC - SLEEF_OPS,
                 "simd reductions": {n.reduction.op for n in self.kernel.nodes if n.reduction}}
        notes = [f"{what}: {', '.join(sorted(ops))}" for what, ops in parts.items() if ops]
        notes += ["short rows: 64 at a time, copied transposed, a row a lane"] if self.rows else \
            ["column order: r outside, a block of x inside"] if self.column else []
        notes += [f"tiles of {self.tile} x {self.tile}, transposed reads through toy_tile"] if self.tiles else []
        notes += ["a gather along the vector loop: vectorised as GCC's cost model says"] if self.gathers() else []
        return "    // vector paths: " + "; ".join(notes)

    def footer(self):
        return ["}"]

    def gathers(self) -> bool:
        """Whether an index read from memory changes along the vectorised loop (``x.gather(1, i)``; not an
        embedding's row index, nor upsampling's, computed from the position; nor, in a row reduction, the row's
        own index: a layer norm of embedded tokens gathers one row and reads along it). GCC then vectorises as its
        cost model says, not as ``omp simd`` forces: forced, a gather of [4096, 500] floats took 8.7 ms,
        scalar 5.8, as GCC chose 3.7 (one thread; torch.compile 2.9). Nearest upsampling's gathers run
        faster forced: 29.5 ms against 34.5 over [16, 64, 56, 56]."""
        inner = f"r{len(self.rr) - 1}" if self.rr and not self.column else f"x{len(self.xr) - 1}"  # the vector loop
        return any(inner in {str(s) for i in index_exprs(v) for s in i.xreplace(self.vars(n)).free_symbols}
                   for n in self.kernel.nodes for ld in loads(n.body) for _, v, _ in ld.indirect if loads(v))

    def finish(self):
        if not self.gathers():
            return super().finish()
        return [(re.sub(r"(?<=parallel for) simd", "", line), owner) for line, owner in super().finish()
                if not line.strip().startswith("#pragma omp simd")]

    # -- loops ----------------------------------------------------------------------
    def setup(self):
        # 1 thread, this project's 2-core CPU, column reductions over [1000, 1037] in blocks of 256 columns rather
        # than 64: a softmax over dim 0 0.99 ms against 1.10, a column sum 0.083 against 0.091. 2 threads, 5
        # blocks of 256 between them, softmax 0.60 against 0.43, var 0.095 against 0.064 (torch.compile 0.45, 0.11)
        # Short rows (see short_rows) run in column order over their transposed copy; ``rowwise`` is set once the
        # last loop, over the output a row at a time, opens: its loads read memory, not the copy
        self.rows, self.rowwise = self.short_rows(), False
        self.column |= bool(self.rows)
        self.xblock = 64 if self.rows or self.xnumel.is_Integer and self.xnumel < 4 * XBLOCK * torch.get_num_threads() \
            else XBLOCK
        # Tiles: (pointer, index) -> the local array that holds it, for each transposed load (transposed_loads).
        #
        # Such a kernel runs in tiles of N x N (``self.tile``). Each tile first copies what a transposed load reads, a
        # row of N neighbours at a time, and transposes the copy in vector registers (``toy_tile``, whose
        # loops GCC turns into shuffles); the loop over the tile then reads the copy in order, like every
        # other load. Inductor does the same (``transpose_mxn`` in its C++ vector headers). Read straight
        # from memory, the load took 3.6 ms on [1024, 1024] floats against torch.compile's 0.34 (1 thread),
        # and 1.1 ms in tiles without the copy: the N rows of a tile, 4 KiB apart, share one set of
        # the L1 cache.
        #
        # A row of a tile fills one vector register with the kernel's widest element (at most 16 elements): its
        # transpose is then shuffles of whole registers. One thread, AVX2, toycompiler against torch.compile, tiles
        # of 8, 16 and 32 floats: x.t() + y over [1000, 1037] 1.86x, 0.76x and 1.21x; NHWC to NCHW of [16, 56, 56,
        # 64] 1.29x, 0.54x and 0.75x; NCHW to NHWC 1.37x, 0.90x, 1.46x. Doubles in tiles of 4, 8 and 16: x.t() + y
        # 1.47x, 1.26x, 0.80x (but an int64 transpose 1.64x, 2.16x, 1.24x: for 8-byte elements the rule is not the
        # best everywhere); int16 in tiles of 8 and 16 4.22x and 5.39x; uint8 in tiles of 8, 16 and 32 2.86x, 6.50x
        # and 1.80x. (16 floats, a register of AVX-512, was chosen on an AVX-512 machine.)
        #
        # The last tile of a row or column starts N before the end, overlapping the one before it, so
        # every loop runs exactly N times (the loops that vectorise best). An element in the overlap is
        # computed twice, to the same value: a kernel never reads memory it writes (a write into a graph input
        # runs in a kernel of its own, reading another buffer: ``scheduler.can_fuse``; eager refuses a copy
        # between overlapping tensors). Loops shorter than N, or of a symbolic size, run untiled.
        self.tile = min(16, VECTOR_BYTES // max(self.dtypes[b].itemsize for b in self.ptr))
        static = all(s.is_Integer and s >= self.tile for s in self.xr[-2:])
        self.tiles = {read: f"tile{k}" for k, read in enumerate(self.transposed_loads() if static else [])}

    def short_rows(self) -> dict[tuple[str, sympy.Expr], str]:
        """The loads a row reduction over short rows reads from a transposed copy (pointer, index -> the copy's name).

        A row of 20 fills one vector and part of another, and each row ends in work that waits on all of its lanes:
        the lanes combined, and a masked or scalar rest (four scalar ``expf`` calls a row of 20). Over rows that
        short, the kernel runs as a column reduction instead: a block of 64 rows at a time, first copied into a
        local array transposed (``rows0[r0][x0 - xb]``, row r0 of the copy holding element r0 of each row), so that
        the loops over r read the copy along x, one row a lane, and nothing is left to combine. The last loop,
        which writes the output, runs a row at a time and reads the input from memory, in order. One thread, toy
        before and after against torch.compile, 1M floats: log_softmax over rows of 20 0.75x and 1.85x, of 7 0.69x
        and 3.46x, of 3 0.70x and 5.5x; logsumexp over rows of 12 0.79x and 2.10x; softmax over rows of 20 1.21x
        and 1.57x; an amax over rows of 3 1.36x and 9.3x; an argmax over rows of 3 0.13x and 1.03x.

        Only rows shorter than 8 (of 32 where the kernel calls one of SLEEF's functions, an ``exp`` or ``log``,
        whose scalar rest is the cost): copying costs what a cheap row reduction saves (a sum over rows of 20 took
        0.23 ms, 0.09 without), and rows of a whole number of vectors of 16 have no rest (a softmax over rows of 16
        took 1.30 ms, 0.97 without; over rows of 33 1.47, 1.01 without)."""
        row = self.rr[0] if len(self.rr) == 1 and self.xr and not self.column else sympy.S.Zero  # (0: not a row)
        if not (row.is_Integer and row % 16 and row < (32 if self.kernel_ops & SLEEF_OPS else 8)):
            return {}
        r, x = index_vars(1, "r")[0], index_vars(len(self.xr), "x")[-1]
        reads = dict.fromkeys((self.ptr[ld.buf], i) for ld, i in self.load_indices(self.inputs)
                              if not ld.indirect and i.coeff(r) == 1 and i.coeff(x) != 0)
        return {read: f"rows{k}" for k, read in enumerate(reads)}

    def loops(self, prefix: str, ranges: tuple, pragmas: list[str]) -> list[str]:
        """One ``for`` per dimension, named like the index variables (``x0``, ``x1``...): no div/mod per element.

        ``pragmas[k]`` goes before loop k (empty: none)."""
        lines = [line for k, (v, size) in enumerate(zip(index_vars(len(ranges), prefix), ranges))
                 for line in (pragmas[k], f"for (int64_t {v} = 0; {v} < {self.printer(size)}; ++{v}) {{", "@INDENT@")]
        return [line for line in lines if line]  # (no empty pragma)

    def x_loop_open(self):
        """Pointwise: ``parallel for`` over the outer dims, ``simd`` over the innermost. Reductions: parallel
        over rows; a column reduction (:meth:`column_order`) over blocks of ``self.xblock`` columns instead,
        each block of short rows first copied transposed (:meth:`short_rows`).

        A pointwise kernel whose innermost loop is very short (1 to 4 elements: a ``torch.stack`` of a few
        tensors along a new last dim, a slice ``x[:, :3]``, boxes of 4 coordinates) vectorises the loop around it
        instead, and the innermost is unrolled (``#pragma GCC unroll``), each copy with its own element of the
        short dim, its reads and writes interleaved by shuffles. One thread, AVX2: ``torch.stack([x, y], -1).sin()``
        of two [1000, 1000] floats took 20.4 ms as a vector loop of 2 (torch.compile 6.2), 4.0 so; ``x.sin() +
        x[:, :1]`` over [400000, 3] 13.1 ms, 3.4 so (torch.compile 10.7); a stack of 4 values, then ``exp``, ran at
        0.62x torch.compile as a vector loop of 4 (which GCC did not vectorise), 1.9x so. Not for 5 to 7: GCC
        vectorised no such loop ("no vectype"), and a vector loop of 7 ran at 1.5x torch.compile."""
        xr = self.xr or (1,)
        n = len(xr)
        if self.tiles:
            return self.tile_loops(xr)
        if self.kernel.kind == "pointwise":
            v = n - 1 - bool(n > 1 and xr[-1].is_Integer and xr[-1] < 5)  # the loop that vectorises
            pragmas = [f"#pragma omp parallel for collapse({v}) if(xnumel > 16384)"] * (v > 0) + [""] * (v - 1) + \
                ["#pragma omp simd" if v else "#pragma omp parallel for simd if(parallel: xnumel > 16384)"]
            self.piece_pragma = "#pragma GCC unroll 8" if v < n - 1 else pragmas.pop()  # the innermost loop's
            return self.loops("x", xr[:-1], pragmas)
        parallel = [f"#pragma omp parallel for collapse({n}) if(xnumel * rnumel > 16384)", *[""] * (n - 1)]
        if not self.column:
            return self.loops("x", xr, parallel)
        self.xlast = f"x{n - 1}"
        # A column reduction's stored elements that read no row value are computed first, in a loop nest of their
        # own that writes memory in order: over the x loops but the last, over r, and over the last x loop
        # (vectorised). The reductions then read them back where they would compute them again (a bias's gradient,
        # the column sum of the input's: one GELU derivative an element, not two, as torch.compile does). Stored
        # beside the reductions, a block of columns at a time down every row, 1 KiB runs a row apart, writing was
        # half as fast: the input gradient of ``(x.relu() * w).sum()`` over [2048, 1531] floats beside w's gradient
        # (a column sum) took 1.27 ms so, 0.75 in order (one thread).
        if not self.rows and (first := [e for e in self.stored_elements() if not self.row_inputs[e.name]]):
            self.emit(f"#pragma omp parallel for collapse({n - 1 + len(self.rr)}) if(xnumel * rnumel > 16384)",
                      *self.loops("x", xr[:-1], [""] * n), *self.loops("r", self.rr, [""] * len(self.rr)),
                      "#pragma omp simd", f"for (int64_t {self.xlast} = 0; {self.xlast} < {self.printer(xr[-1])}; "
                                          f"++{self.xlast}) {{", "@INDENT@")
            for e in first:
                self.store_element(e)
            self.emit(*["@DEDENT@", "}"] * (n + len(self.rr)))
            self.spilled |= {e.name: e.name for e in first}
        lines = self.loops("x", xr[:-1], parallel[:-1]) + parallel[-1:]  # the block loop is collapsed too
        size = self.printer(xr[-1])
        copies = [line for (p, i), rows in self.rows.items() for line in (  # (see short_rows)
            f"std::decay_t<decltype(*{p})> {rows}[{self.rr[0]}][{self.xblock}];  // {rows}[r0][{self.xlast} - xb]",
            *self.r_loop_open(""), f"{rows}[r0][{self.xlast} - xb] = {p}[{self.printer(i)}];", *self.r_loop_close())]
        return lines + [f"for (int64_t xb = 0; xb < {size}; xb += {self.xblock}) {{", "@INDENT@",
                        f"const int64_t xe = std::min<int64_t>(xb + {self.xblock}, {size});", *copies]

    def body_pointwise(self):
        """The innermost loop and the body in it; or, cut into pieces, a loop and the body for each piece. The
        loop is cut where a clamped load (:func:`unclamped`) starts or stops reading its buffer: a
        ``torch.cat([x, y * 2, x[:, :5]], -1)`` of [4000, 999] floats at ``[0, 999, 1998, 2003]``, one loop per
        input, each its own ``for``, with the same body.

        In each piece every guard and every ``where`` between the inputs has one value, which GCC knows from the
        loop's bounds and folds away: the loop is a plain copy of one input. In one loop over the whole row it
        computed every guard and every input's value for every element, in 64-bit integers (4 lanes) beside the
        floats (8 lanes): that cat took 29 ms on an AVX2 CPU, torch.compile 6.7 (it writes each input into its
        slice of the output, a loop each); cut, 5.9. A pad of a row is cut at its borders. Only loops of a
        known size are cut, into at most 8 pieces (each piece is the body once more, to compile)."""
        if self.tiles:  # (tile_loops opened the innermost loop)
            return super().body_pointwise()
        x, size = index_vars(len(self.xr) or 1, "x")[-1], self.xr[-1] if self.xr else sympy.S.One
        # A clamp of x + c: Min(x + c, b) reads its own element up to x = b - c, Max(x + c, b) from x = b - c
        # (``atoms`` finds both clamps of Min(Max(x + c, 0), b))
        cuts = {b - u + x + isinstance(g, sympy.Min) for _, index in self.load_indices(self.inputs)
                for g in index.atoms(sympy.Min, sympy.Max) if (u := unclamped(g)) is not None and (u - x).is_Integer
                for b in g.args if b.is_Integer}
        cuts = [0, *sorted(c for c in cuts if 0 < c < size), size] if size.is_Integer else [0, size]
        for lo, hi in zip(cuts, cuts[1:]) if len(cuts) <= 9 else [(0, size)]:
            self.emit(self.piece_pragma, f"for (int64_t {x} = {lo}; {x} < {self.printer(hi)}; ++{x}) {{", "@INDENT@")
            super().body_pointwise()
            self.emit("@DEDENT@", "}")

    def tile_loops(self, xr) -> list[str]:
        """The loops of a kernel with transposed reads (``self.tiles``, see setup): parallel over the outer
        dims and the tiles; in each tile, its copies, then N x N elements (``self.tile``), the inner loop vectorised."""
        n, (a, b), sizes = len(xr), index_vars(len(xr), "x")[-2:], tuple(map(self.printer, xr[-2:]))
        lines = [f"#pragma omp parallel for collapse({n}) if(xnumel > 16384)",
                 *self.loops("x", xr[:-2], [""] * (n - 2))]
        for v, size in zip((a, b), sizes):  # the tiles; the last of a row or column starts N before its end
            lines += [f"for (int64_t {v}t = 0; {v}t < {size}; {v}t += {self.tile}) {{", "@INDENT@"]
        lines += [f"const int64_t {v}s = std::min<int64_t>({v}t, {size} - {self.tile});"
                  for v, size in zip((a, b), sizes)]
        lines += [f"const auto {tile} = toy_tile<{self.tile}>({a}s, {b}s, [&](int64_t {a}, int64_t {b}) "
                  f"{{ return {p}[{self.printer(i)}]; }});" for (p, i), tile in self.tiles.items()]
        for v, pragma in ((a, []), (b, ["#pragma omp simd"])):  # the elements of a tile
            lines += [*pragma, f"for (int64_t {v} = {v}s; {v} < {v}s + {self.tile}; ++{v}) {{", "@INDENT@"]
        return lines

    def x_loop_close(self):
        return ["@DEDENT@", "}"] * (len(self.scopes) - 1)  # every loop still open (a scope each): the loops over x

    def row_loop_open(self):
        """Column reductions: the innermost loop, over the block of columns (vectorised), opened on its own
        (for a row value or a row's store; ``r_loop_open`` and ``row_loops`` open it inside the loops over r).
        Closed by ``row_loop_close``, or with the loops over r. Row reductions: none."""
        return ["#pragma omp simd", f"for (int64_t {self.xlast} = xb; {self.xlast} < xe; ++{self.xlast}) {{",
                "@INDENT@"] if self.column else []

    def r_loop_open(self, purpose):
        """Row reductions: one loop per reduced dimension, the innermost vectorised (``purpose`` is its
        pragma: a ``simd`` reduction into the accumulators, or ``store``). Column reductions: the same
        loops, then the loop over the block of columns."""
        rr = self.rr or (1,)
        if self.rows and purpose == "store":  # short rows: the elements a row at a time (see short_rows)
            self.rowwise = True
            return self.row_loop_open()[1:] + self.loops("r", rr, ["#pragma omp simd"])  # (the block loop, not simd)
        inner = "" if self.column else "#pragma omp simd" if purpose == "store" else purpose
        return self.loops("r", rr, [""] * (len(rr) - 1) + [inner]) + self.row_loop_open()  # (column order: the block)

    def r_loop_close(self):
        return ["@DEDENT@", "}"] * (len(self.rr or (1,)) + self.column)  # r_loop_open's loops (and the block loop)

    def row_loop_close(self):
        return ["@DEDENT@", "}"] if self.column else []  # row_loop_open's loop over the block of columns

    def row_value(self, n) -> str:
        """In a column reduction, a row node (the ``log(sum)`` of a log_softmax over dim 0) has one value per
        column: computed in a loop over the block of columns into an array, as the accumulators are. Inlined
        into each element's expression instead, it was computed again for every row: a log_softmax over
        dim 0 of [1000, 1037] took 1.19 ms so (torch.compile 0.80; one thread)."""
        if not self.column:
            return super().row_value(n)
        row = self.fresh("row")
        self.emit(f"{self.type_name(self.compute_dtype(n.layout.dtype))} {row}[{self.xblock}];", *self.row_loop_open())
        self.emit(f"{row}[{self.xlast} - xb] = {super().row_value(n)};", *self.row_loop_close())
        return f"{row}[{self.xlast} - xb]"

    def tmp(self, code, dtype):
        """In a vectorised loop (``omp simd``), a temporary that reads nothing the loop changes is computed before
        it: an embedding's row index, read once a row. GCC moves such code itself, but not out of an ``omp simd``
        loop where a load's address is read from memory: a layer norm of GPT-2's embedded tokens ([8, 1024]
        tokens of 768, each row's ``x[0]`` its shift, read through the token's index) did not vectorise, and
        took 7.4 ms, 3.0 so (one thread; torch.compile 4.2). Accumulators, arrays and outputs change in loops:
        what reads them stays, as does the loop variables' and the loop's own temporaries' readers."""
        loop, scope = self.scopes[-1].get("@FOR@", 0), self.scopes[-1]  # the ``for``, its pragma on the line before
        # the kernel's local names in it: temporaries and loop variables (tmp3, x1, r0), and what loops change
        # (accumulators, arrays, outputs, block bounds: acc0, acc0_part, row2, rows0, tile0, out_ptr0, xb, r0s, x1t),
        # and a tree sum's lane (l: see row_loops)
        names = set(re.findall(r"\b(?:(?:tmp|acc|rows?|tile|out_ptr|[xr])\d+\w*|x[be]|l)\b", code))
        # what the loop defines: its variable, in its ``for`` or on the line after (a tree sum's r0 = r0s + l)
        defined = re.findall(r"int64_t (\w+) =", " ".join(line for line, _ in self.lines[loop:loop + 2]))
        if not loop or not re.match(r"\s*#pragma omp (parallel for )?simd", self.lines[loop - 1][0]) \
                or any(code in s for s in self.scopes) or any(not re.fullmatch(r"(tmp|x|r)\d+", n) for n in names) \
                or names & {*scope.values(), *defined}:
            return super().tmp(code, dtype)
        name = self.scopes[-2][code] = self.fresh("tmp")
        self.lines.insert(loop - 1, ("    " * (len(self.scopes) - 1) + self.assign(name, code, dtype), self.owner))
        scope["@FOR@"] += 1
        return name

    def var_defs(self, prefix, ranges, flat, text):
        return []  # the index variables are the loop variables

    def reductions(self, nodes):
        """``acc = init; for (r) acc = combine(acc, body)``, one accumulator per node in one ``simd`` loop; a
        row's value is its accumulator (in a column reduction, one accumulator per column of the block:
        ``acc0[x1 - xb]``). Two nodes that combine the same value share one accumulator (the max and the
        argmax of ``torch.max(x, 1)``).

        The reduction clauses are OpenMP's own (``REDUCE_CLAUSE``), whose lanes GCC combines at the end of the row (a
        sum's one after another: ``lanes``; a sum over whole vectors adds into ``acc0_lanes[16]`` instead, then ``acc0``
        is the lanes' sum, ``toy_sum_lanes``). A max and min were once reductions declared with ``toy_maximum`` (``omp
        declare reduction``), for its NaN: GCC combined their lanes one after another, a branch each, so the end of a
        row cost more than the row when it was short: an amax over [400000, 16] floats took 18 ms (torch.compile 2.2;
        one thread, this project's 2-core x86-64 machine), now 1.3 to 1.6 (two runs), and a masked softmax [1024, 1024]
        0.7. (Sixteen accumulators in an array, one per lane, combined by shuffles, were as fast on whole vectors; but
        their loops of 16 elements, where one also read a mask of bytes, GCC vectorised with vectors of 8 bytes
        (-fopt-info-vec): that masked softmax took 6.2 ms.)

        An argmax is a max, then a second loop for its index, as a compare-and-branch per element would keep
        one loop from vectorising: a ``simd`` min over the indices whose value equals the max (ties: the
        first, as in eager); a NaN max is found as the first NaN (``v != v``).

        In column order (and over short rows) each lane is a column of its own, with nothing to combine across
        lanes, so the index is kept in the max's own loop, a select before each fold: ``i = v > m || v != v &&
        m == m ? r0 : i`` (strictly greater: ties keep the first; a NaN once: the first NaN), from index 0. A
        second loop computed each value again, and a value from an ``exp`` or ``sin`` need not come out the
        same twice (GCC vectorised the two loops differently, a lane one way and a scalar call the other):
        ``torch.max(x.exp(), 0)`` found no element equal to the max in 7% of the columns of [20, 131] floats,
        and returned INT64_MAX as their index. One loop is faster too: ``torch.max(x, 0)`` over [1000, 1037]
        floats took 1.01 ms in two loops, 0.36 in one (torch.compile 0.9; one thread)."""
        ops, accs = [n.reduction.op.removeprefix("arg") for n in nodes], [self.fresh("acc") for _ in nodes]
        first: dict[tuple, str] = {}  # (op, body, its loop variables) -> the accumulator that combines it
        alias = {acc: first.setdefault((op, n.body, tuple(self.vars(n).items())), acc)
                 for n, op, acc in zip(nodes, ops, accs)}
        folds = [(n, op, acc) for n, op, acc in zip(nodes, ops, accs) if alias[acc] == acc]  # those with a loop's work
        nans = [acc for n, op, acc in folds  # (the max and min of floats in a row: see REDUCE_CLAUSE)
                if op in ("max", "min") and self.expr_dtype(n.body).is_floating_point and not self.column]
        lanes, held = self.lanes(folds)
        staged, tree = held == "staged", lanes == "tree"
        where = f"[{self.xlast} - xb]" if self.column else "_lanes[r0 - r0s]" if tree else ""
        declare = (lambda t, a, init: [f"{t} {a}[{self.xblock}];", f"std::fill_n({a}, {self.xblock}, {init});"]) \
            if self.column else (lambda t, a, init: [f"{t} {a} = {init};"])
        start = 0 if self.column else "INT64_MAX"  # an argmax's index before its loop (see above)
        wide = [acc for n, op, acc in zip(nodes, ops, accs) if self.wide(op, self.expr_dtype(n.body))]  # (see wide)
        for n, op, acc in zip(nodes, ops, accs):
            dtype = self.compute_dtype(self.expr_dtype(n.body))  # (bfloat16: float)
            self.emit(*[f"toy_lanes<{self.type_name(dtype)}, {self.width}> {acc}_lanes{{}};" if acc in wide else
                        f"{self.type_name(dtype)} {acc}_lanes[{self.width}] = {{}};"] * (tree and alias[acc] == acc))
            self.emit(*declare("double" if acc in wide else self.type_name(dtype), acc, self.init(op, dtype))
                      if alias[acc] == acc and (acc in wide or not tree) else [])
            self.emit(*[f"int {acc}_nan = 0;"] if acc in nans else [])
            self.emit(*[f"{self.type_name(dtype)} {acc}_row[{self.printer(self.rr[0])}];"] if held else [])
            self.emit(*declare("int64_t", f"{acc}_index", start) if op != n.reduction.op else [])
        clauses = [f" reduction({REDUCE_CLAUSE[op]}:{acc})" for _, op, acc in folds]
        pragma = "#pragma omp simd" + "".join(clauses + [f" reduction(|:{a}_nan)" for a in nans])
        flat = self.printer(linear_index(index_vars(len(self.rr or (1,)), "r"), contiguous_strides(self.rr or (1,))))
        split = bool(nans) and {op for _, op, _ in folds} <= {"max", "min"}  # (see row_loops)
        kept: dict[str, str] = {}  # a staged value -> the array element that holds it (see spill)
        for open_, close in self.row_loops("#pragma omp simd" if staged or tree else pragma + lanes, split, wide, tree):
            self.emit(*open_)
            for n, op, acc in folds:
                with self.owning(n):
                    value, dtype = self.expr(n.body, self.vars(n), n), self.expr_dtype(n.body)
                    value = f"({self.masks[0]} ? {value} : {self.init(op, dtype)})" if self.masks else value  # (a rest)
                    fold = self.ops[COMBINE[op]].format(acc + where, value) if self.column or op not in ("max", "min") \
                        else f"std::{op}({acc}, {value})"
                    line = f"{acc}_row[{flat}] = {value};" if staged else f"{acc}{where} = {fold};"  # (see lanes)
                    line = f"{acc}_part += {value};" if self.column and acc in wide else line
                    kept |= {value: f"{acc}_row[{flat}]"} if held else {}
                    a, gt = f"{acc}{where}", ">" if op == "max" else "<"  # (an argmax in column order: see above)
                    index = [f"{i}_index{where} = {value} {gt} {a} || {value} != {value} && {a} == {a} ? {flat} : "
                             f"{i}_index{where};" for m, o, i in zip(nodes, ops, accs)
                             if self.column and alias[i] == acc and o != m.reduction.op]
                    kept_line = [f"{acc}_row[{flat}] = {value};"] * (held == "kept")  # beside the fold (see lanes)
                    self.emit(*index, line, *kept_line, *[f"{acc}_nan |= {value} != {value};"] * (acc in nans))
            self.spill(kept)
            self.emit(*close)
        self.emit(*[f"{acc} += toy_sum_lanes<{self.width}>({acc}_lanes);" if acc in wide else
                    f"auto {acc} = toy_sum_lanes<{self.width}>({acc}_lanes);" for _, _, acc in folds if tree])
        if staged:  # the staged values, folded in a loop of their own (see lanes)
            self.emit(*self.r_loop_open(pragma + lanes))
            self.emit(*[f"{acc} = {self.ops[COMBINE[op]].format(acc, f'{acc}_row[{flat}]')};" for _, op, acc in folds])
            self.emit(*self.r_loop_close())
        for n, acc in [(n, acc) for n, _, acc in folds if acc in nans]:
            with self.owning(n):
                self.emit(f"{acc} = {acc}_nan ? {self.constant(math.nan, self.expr_dtype(n.body))} : {acc};")
        # an argmax's index in a row: loops as the max's, over the same values (in column order: in the max's loop)
        for n, acc in [(n, acc) for n, op, acc in zip(nodes, ops, accs) if op != n.reduction.op and not self.column]:
            for open_, close in self.row_loops(f"#pragma omp simd reduction(min:{acc}_index)", split, []):
                self.emit(*open_)
                with self.owning(n):
                    v, i, m = self.expr(n.body, self.vars(n), n), f"{acc}_index{where}", alias[acc] + where
                    # an ``if``: GCC 12 miscompiles the same update written as a select in a masked rest
                    # loop for AVX2 (no int64 vector min), losing lanes: argmax over rows of 1037 floats
                    # found no index for an element at 1028, and returned INT64_MAX
                    self.emit(f"if ({v} == {m} || {v} != {v}) {i} = std::min<int64_t>({i}, {flat});")
                self.emit(*close)
        value = {acc: alias[acc] + ("" if tree else where) for acc in accs}  # (a tree's: its lanes' sum)
        return [f"{acc}_index{where}" if op != n.reduction.op else self.cast(value[acc], torch.float32)
                if acc in wide else value[acc] for n, op, acc in zip(nodes, ops, accs)]

    def wide(self, op: str, dtype: torch.dtype) -> bool:
        """Whether a float sum adds in double: a row loop's values each into a double accumulator; in column
        order, float *parts* of a step's 8 rows, each added into the double when its loop ends (``acc0[x0 - xb]
        += acc0_part``); in a sum into lanes (``lanes``: a row's length known only when running), 4096 values at
        a time, 256 a lane, in float, then into the double.

        A lane adds its values one after another, each add rounded to float, so the error grows with their count.
        ``x.var()`` over 4M floats of mean 100 came out 9.4e-4 from the float64 value (eager 1.6e-8, torch.compile
        1.0e-7: both add in blocks, a cascade), a sum over dim 0 of [10^6, 17] 3.2e-5 (eager 1.1e-7). In column
        order each column's accumulator adds every row. A lane of a row loop adds a sixteenth of the row; where
        the row is several loops (``x.mean((0, 2, 3))`` of NCHW), a sixteenth of the inner loop, whose lanes are
        combined into the accumulator each time it ends (OpenMP's reduction), which so adds one value a run of
        the inner loop. Past 256 values in any of these (or a count known only when running) the sum adds in
        double, now 1e-7 and 3e-8 from float64.

        Timed on an AVX2 CPU, one thread. In a row loop the double was faster, not slower: a sum over [64, 100003]
        floats took 2.8 ms, 7.3 in float, a ``mse_loss`` of 4M floats 2.5 and 4.6 (GCC adds the halves of each
        vector of floats into two vectors of doubles, two chains of adds instead of one). In column order a double
        in the loop made it slower: a sum over dim 1 of [32, 512, 1000] took 7.4 ms against 5.4, and 5.5 with
        parts.
        Never in a kernel that calls SLEEF: the doubles changed the width GCC gives the whole loop, exp included
        (cross entropy over rows of 50257, 25% slower); the values summed there are an exp's, all positive, and
        the log of a log_softmax narrows the error."""
        rr = self.rr or (sympy.S.One,)
        counts = [sympy.Mul(*rr)] if self.column else [rr[-1] / 16, sympy.Mul(*rr[:-1])]
        return op == "sum" and dtype == torch.float32 and not self.kernel_ops & SLEEF_OPS and not all(
            count.is_Number and count <= 256 for count in counts)

    def lanes(self, folds) -> tuple[str, str]:
        """How many lanes a row reduction's vectors have (``simdlen``), from the row's length, or ``"tree"``: a sum
        into lanes of its own; and whether the row's values are *staged*: computed into an array in one loop, then
        folded in a loop of their own (or *kept*, below).

        GCC ends each ``simd`` reduction loop by adding its lanes one after another, each waiting for the last (float
        addition is not associative, so without -fassociative-math, off here, GCC keeps the order of the adds; a max's
        lanes it combines in vector steps): a short row spends more time there than in its loop. Fewer lanes are fewer
        steps. A sum over 6.4M floats in rows of 20, 33, 64, 100 and 1037 took 1.91, 1.27, 0.71, 0.62 and 0.52 ms in
        GCC's vectors of 16; 0.60, 0.61, 0.57, 5.26 and 1.10 in vectors of 4; 1.18, 0.80, 0.55, 0.55 and 0.62 in vectors
        of 8 (one thread; torch.compile took 0.92 over rows of 20, 0.84 over rows of 33).

        A sum over a row of whole vectors of 16 shorter than 256 (16, 32, ... 240 values; one loop over r, and no call
        of SLEEF's; and a row with a rest, below) needs no such end at all: the row loop adds each vector into 16 lanes
        of its own (``acc0_lanes[r0 - r0s]``: a loop over the row's vectors, a ``simd`` loop over the vector's 16
        values, no reduction clause), and the end of the row adds the lanes up as a tree (``toy_sum_lanes``: the halves
        added lane by lane, then the halves of that: 4 vector steps, not 16 adds one after another). Where each value is
        cheap to find, the row's end was half its time: a sum of squared differences over rows of 64 (``((a[:, None] -
        b[None]) ** 2).sum(-1)``, [1024, 64] against [512, 64] floats) took 1.72 ms in vectors of 8, 0.94 so
        (torch.compile 1.00); dot products over rows of 32, 64 and 128 ([1024, n] against [512, n]) 1.02, 1.52 and 2.91
        ms, then 0.65, 0.85 and 1.46 (torch.compile 0.64, 0.84 and 1.40); a sum of bfloat16 over rows of 64 0.62 ms,
        0.39 so (torch.compile 0.25, reading 32 values a step); a memory-bound sum of floats over rows of 64, 0.47 and
        0.43 (0.41).

        A sum that reads 2-byte values (bfloat16) takes 32 lanes (``width``), a vector of 32 values a step, over a
        row of any length known when compiling, its rest masked as below, read again or not: in 16 lanes GCC read
        16 bfloat16 values a step. A row sum over [4096, 1024] bfloat16 took 0.129 ms in OpenMP's reduction, 0.130
        in vectors of 32 (``simdlen(32)``), 0.187 in 16 lanes of its own, 0.103 in 32 (torch.compile 0.106). Row
        sums over [65536, 64], [40960, 100], [4096, 1000] and [204800, 20] went from 0.262, 0.383, 0.151 and 0.787
        ms to 0.182, 0.170, 0.109 and 0.482 (torch.compile 0.169, 0.152, 0.107 and 0.410), ``x.float().mean(-1)``
        over [40960, 100] from 0.372 to 0.169 (0.143; one thread).

        A row with a rest (40 = 2 x 16 + 8) adds it into the lanes too, as one more vector of 16 whose loads and
        values past the row are masked off (``r0 < rnumel ? in_ptr0[...] : 0.0f``, and the value added ``(r0 <
        rnumel ? tmp8 : 0.0f)``; see ``row_loops``), where the rows read their inputs again: the elements they fold
        are at least twice those of the kernel's inputs (a dot product of each row of one input with each of
        another; ``reread``), so that the row's end, not memory, is its cost. Dot products over rows of 40, 100 and
        200 ([1024, n] against [512, n]) took 1.25, 3.78 and 3.77 ms in vectors of 4 or 8, then 0.79, 1.62 and 2.69
        (torch.compile 0.78, 1.60 and 2.71). A sum over rows read once gained nothing so and lost a little (a row
        sum over [160000, 40] 0.61 ms against 0.53, torch.compile 0.58), and keeps GCC's loop. The mask compares
        with the row's length as an argument, ``rnumel``, not as a number: told that a rest of one value (a row of
        16k + 1) leaves 15 of its 16 lanes off, GCC 12 unrolled the rest's loop into scalar code, and dot products
        over rows of 33 took 2.58 ms (1.32 in OpenMP's reduction), 0.81 with ``rnumel`` (torch.compile 0.80); over
        rows of 17, 65 and 129 0.71, 1.28 and 2.28 ms (0.69, 1.27 and 2.28). Left to GCC, a rest written as a
        ``simd`` loop over the rest alone (``r0 < rnumel`` its bound, no masks) took 4.6-5.1 ms over rows of 20, 47,
        50 and 100 (0.71-1.61 masked), or with its body and the lanes' add inside an ``if``, 4.3-6.2 ms over rows
        of 20 (0.78 in vectors of 4).

        Rows that read their inputs again and hold 256 to 4096 values add into the lanes too (no more than 256 adds
        a lane, as ``wide`` allows in float): dot products over rows of 1000 ([1024, n] against [512, n]) took 40.6
        ms in OpenMP's reduction in vectors of 8, 25.3 so (torch.compile 23.8), over rows of 300 12.8 and 8.4 (8.5).

        A sum over a row whose length is known only when running (a kernel compiled for any shape: ``dynamic=True``,
        or a second call with another length) also adds into lanes, where OpenMP's reduction in double had been
        2-3x slower than torch.compile: dot products over rows of 17, 40, 100 and 1000 took 4.25, 6.61, 9.48 and
        55.8 ms, now 1.80, 1.93, 3.79 and 30.7 (torch.compile 2.14, 2.09, 3.51 and 25.2); a row sum over [160000,
        40] floats 0.54 (0.65), [64, 100003] 0.71 (1.97; one thread). Three things made it so, each timed in
        kernels written by hand over rows of 40. The lanes are a vector (``toy_lanes``, GCC's vector extension):
        an array's lanes stayed in memory, a load and a store each step, where GCC could not unroll a loop whose
        count it did not know (10.5 ms). The rest is an ``if`` and a loop over the lanes' numbers (``int l``),
        masked by ``l < rest``: written as the loop over r above, GCC split it at ``r0 < rnumel`` into a loop and a
        ``memset`` of the lanes past it (8.4-11 ms), and ``int(r0 - r0s) < rest`` built its vector of indices each
        time (2.15 against 1.47). The values added in float, every 4096 of them (256 a lane) are added into the
        double ``acc0`` and the lanes start again: rows of 100003 values of mean 100 came out 1e-6 from float64 in
        float lanes alone, within 1.5e-7 so; the check costs 1.47 to 1.9 ms over rows of 40 (lanes of double, two
        vectors of 8, took 5.0). A length known when compiling keeps the array: a vector there took 1.86 ms over
        rows of 40 against 1.30, 32.6 over rows of 1000 against 26.7.

        Only sums and products: GCC's max in vectors of 4 was slower (an amax over rows of 20, 3.6 ms against
        2.2), and so was a loop that calls one of SLEEF's functions (in vectors of 4 it would call glibc's SSE
        clone instead; in vectors of 8 a softmax over rows of 33 took 8.3 ms against 6.5). glibc's own clones
        come in every width: a sum of tanh over rows of 20 took 8.8 ms in vectors of 4, 24.5 in 16 (torch.compile
        16.8); of erf over rows of 33, 8.9 and 7.6 (6.7), over rows of 100 6.8 and 7.1 (4.7).

        A sum in a kernel that calls SLEEF (in the sum's loop, or in another: the kernel's ops are what is known
        before its loops are written) is staged instead, where one loop reduces: the values in GCC's vectors of 16
        (``acc3_row[r0] = std::exp(tmp5)``), then their sum in vectors of 4 or 8. Timed against the unstaged
        loop, toy vs torch.compile (one thread): softmax over rows of 20 0.90x (0.78x), log_softmax 0.76x
        (0.65x), logsumexp 0.70x (0.61x), cross entropy over 10 classes 0.87x (0.82x), a sum of sigmoids over
        rows of 20 0.95x (0.79x), softmax over rows of 100 1.04x (0.96x). Still below torch.compile over rows of 20:
        log_softmax over [52428, 20] took 1.95 ms (torch.compile 1.34); alone, its max loop took 0.35 ms, the
        exp loop and the sum 0.84, the output loop 0.11. Its last 4 values a row are 4 scalar ``expf`` calls:
        one masked vector call instead (a masked SLEEF clone, declared ``inbranch``) saved only 4%, and the exp
        over 32 lanes with masked loads (two whole SLEEF calls) 5%. With parts of that kernel taken out instead,
        it took 0.89 ms without its exp, 1.26 without its max loops, 1.72 without the row's ``log``; the staged
        values summed in 16 lanes, or by a tree written out, took longer than in 4. What made it faster was not
        to end each row in a vector's lanes at all: such rows now run a block of rows at a time (``short_rows``),
        in 0.80 ms.

        A longer row (one loop over r) is *kept* where a costly value feeds an output of a narrower dtype: a
        bfloat16 softmax's exps are float, and rounding them into its bfloat16 output before the division would
        not be eager's answer, so ``spill`` cannot put them there. The sum's loop also writes each value into an
        array (``acc3_row[r0] = tmp7``, beside the fold, which stays in its own vectors), and the last loop reads
        the array instead of calling ``exp`` again. Softmax over [4096, 1024] bfloat16 took 1.7 ms instead of
        3.2, over [800, 5000] 1.6 instead of 3.1 (torch.compile 2.0 and 2.1; one thread). Only there: a float
        softmax over rows of 1024 to 16000 was 10% slower kept than spilled into its output, 10-20% slower
        staged (its values folded apart), and a logsumexp reads no value back."""
        row, ops, sleef = (self.rr or (sympy.S.One,))[-1], {op for _, op, _ in folds}, bool(self.kernel_ops & SLEEF_OPS)
        if self.column or ops - {"sum", "prod"} or sleef and len(self.rr) != 1:
            return "", ""
        reread = (2 * sum(self.ir.buffer(b).layout.numel for b in self.inputs) <= self.xnumel * row) is sympy.true
        self.width = 32 if min((self.dtypes[b].itemsize for b in self.inputs), default=4) == 2 else 16
        if (not row.is_Integer or reread and row <= 4096 or row < 256 and row % 16 == 0 or self.width == 32) \
                and not sleef and ops == {"sum"} and len(self.rr) == 1:
            return "tree", ""
        # a row of 256 or more, or of a length known only when running, is kept where an exp feeds a narrower output
        # (see spill); one loop, on the stack: 64 KB at most
        if not row.is_Integer or row >= 256:
            narrower = len(self.rr) == 1 and any(out.layout.dtype != e.layout.dtype for e in self.kernel.nodes
                                                 if self.costly(e) for out in self.spill_outputs(e))
            return "", "kept" if narrower and row.is_Integer and row * len(folds) <= 16384 else ""
        return f" simdlen({4 if row < 48 else 8})", "staged" if sleef else ""

    def row_loops(self, pragma: str, split: bool, wide: list[str], tree=False) -> Iterator[tuple[list[str], list[str]]]:
        """The loops over r (lines that open one, lines that close it) of a reduction: one, or where ``split`` (a row
        max or min of floats) and the row is not a whole number of vectors of 16, two: the whole vectors, then the
        rest as one more vector of 16 whose lanes past the row do nothing (``if (r0 < 20)``: masked loads). Left to
        GCC, the rest took longer than the row: an amax over [320000, 20] floats 4.7 ms, 2.2 so (torch.compile 2.4),
        over [400000, 7] 4.3 and 1.5 (one thread). Sums ran slower so (rows of 20: 1.9 ms, then 3.1): they keep one
        loop, in fewer lanes (``lanes``). An argmax's index loop runs the same loops as its max, so that each
        element's value is computed the same way in both: an ``exp`` in the masked rest is a scalar call, in a whole
        vector SLEEF's, and an index loop that computed it otherwise found no element equal to the max of
        ``torch.max(x.exp(), -1)``.

        A column reduction reads its rows 8 at a time: in each pass over its block of columns, a loop over 8 rows
        inside the vector loop, which GCC unrolls, so that each column's accumulator is loaded and stored once for
        8 rows, and 8 rows stream from memory at once; then the rest of the rows, one a pass. A sum over dim 1 of
        [64, 512, 1000] floats read 11.5 GB/s a row at a time, 19.7 so; [8, 4096, 1000] 11.3 and 18.0, [1, 8192,
        1037] 12.6 and 18.8 (one thread; a sum of the same floats in memory order 21 GB/s). A loop over the rows'
        count known only when running (``r0 < std::min(r0s + 8, rnumel)``) was slower than a row at a time.
        GCC unrolls the 8 rows only when their body is short, and vectorises the loop over the block only once it
        has: ``#pragma GCC unroll 8`` asks for it always. Without it, the column sums of a layer norm and GELU's
        backward (GELU's derivative recomputed per element, an ``erf`` and an ``exp``) ran one column at a time:
        the training step over [2048, 1024] took 29.6 ms, torch.compile 5.7; now 6.0.

        ``wide`` are the accumulators of the float sums that add in double (see ``wide``): in column order, each pass
        over a column adds its values into a float part first (``acc0_part``, declared in the block loop), then the
        part into the double. (A row loop that splits reduces only a max or min: no sums.)

        A sum into lanes of its own (``tree``, see ``lanes``) runs as a column reduction's steps do: a loop over the
        row's vectors, and in it a ``simd`` loop over a vector's 16 values (32 bfloat16: ``width``); its rest is one
        more such step, where every load and value waits on ``r0 < rnumel`` (``masks``: the load reads nothing past
        the row, the lanes get 0). Over a length known only when running, the rest is an ``if`` around a loop over
        the lanes (``for (int l ...)``, ``r0 = r0s + l``), masked by ``l < rest``, and the loop over the row's
        vectors adds the lanes into the double every 4096 values (see ``lanes``).

        A max or min's rest over a length known only when running is such a loop over lanes too, its body inside
        ``if (l < rest)``: the loop over r with ``if (r0 < s1)`` ran 2-3x slower than torch.compile (GCC splits a
        loop at a bound it cannot see, as ``lanes`` tells). An amax over rows of 20, 7 and 33 (6.4M floats, one
        thread) took 6.37, 7.83 and 3.64 ms, then 2.65, 2.76 and 2.28 (torch.compile 2.88, 2.95 and 2.32); a
        log_softmax over rows of 20 4.69, then 3.49 (1.82: its exp and sum loops are the rest of the gap).

        A loop that would run no times (no whole vectors, no rest) is left out."""
        rr = self.rr or (sympy.S.One,)
        if not split and not self.column and not tree:
            yield self.r_loop_open(pragma), self.r_loop_close()
            return
        r, size, step = f"r{len(rr) - 1}", self.printer(rr[-1]), 8 if self.column else self.width if tree else 16
        decl = [f"float {a}_part = 0;" for a in wide]  # a column's float part sums
        flush = [f"{a}[{self.xlast} - xb] += {a}_part;" for a in wide] if self.column else [  # a tree's: see lanes
            f"if (r0s % 4096 == {4096 - step}) {a} += toy_sum_lanes<{step}>({a}_lanes), {a}_lanes = decltype({a}_lanes)"
            "{};" for a in wide]
        end = rr[-1] - sympy.Mod(rr[-1], step)  # where the whole steps (vectors) end and the rest begins
        e = self.printer(end)
        lane_rest = [] if rr[-1].is_Integer else [  # a length known only when running: a loop over lanes (see lanes)
            f"if ({size} > {e}) {{", "@INDENT@", f"const int64_t {r}s = {e};", f"const int rest = {size} - {r}s;",
            pragma, f"for (int l = 0; l < {step}; ++l) {{", "@INDENT@", f"const int64_t {r} = {r}s + l;"]
        if self.column or tree:  # a step's rows inside the vector loop; the rest a row a pass (a tree's: a step)
            inside = [pragma] if tree else [*self.row_loop_open(), *decl, "#pragma GCC unroll 8"]
            whole, rest = ([f"for (int64_t {r}s = {lo}; {r}s < {self.printer(hi)}; {r}s += {step}) {{", "@INDENT@",
                            *inside, f"for (int64_t {r} = {r}s; {r} < {r}s + {step}; ++{r}) {{", "@INDENT@"]
                           for lo, hi in ((0, end), (e, end + step)))
            rest = (lane_rest or rest) if tree else [f"for (int64_t {r} = {e}; {r} < {size}; ++{r}) {{", "@INDENT@",
                                                      *inside[:-1]]
        else:  # whole vectors; the rest as one more vector, its lanes past the row masked off
            whole = [pragma, f"for (int64_t {r} = 0; {r} < {e}; ++{r}) {{", "@INDENT@"]
            rest = [*lane_rest, "if (l < rest) {", "@INDENT@"] if lane_rest else [
                pragma, f"for (int64_t {r} = {e}; {r} < {self.printer(end + step)}; ++{r}) {{", "@INDENT@",
                f"if ({r} < {size}) {{", "@INDENT@"]
        loops = [lines for lines, runs in ((whole, end != 0), (rest, end != rr[-1])) if runs]
        outer, spilled = self.loops("r", rr[:-1], [""] * (len(rr) - 1)), dict(self.spilled)
        for k, lines in enumerate(loops):
            self.spilled = dict(spilled)  # each loop spills its own elements (KernelRenderer.spill)
            self.masks = [f"{r} < rnumel" if rr[-1].is_Integer else "l < rest"] * (tree and lines is rest)  # see lanes
            levels = lines.count("@INDENT@") + (len(rr) - 1) * (k == len(loops) - 1)  # the last closes the outer loops
            inner = ["@DEDENT@", "}"] * (lines is whole)  # the parts end with a step's loop, or in the block loop
            flushed = flush if self.column or lines is whole else []
            yield (outer if k == 0 else []) + lines, inner + flushed + ["@DEDENT@", "}"] * (levels - len(inner) // 2)
        self.masks = []

    def init(self, op: str, dtype: torch.dtype) -> str:
        """The accumulator's start: ``IDENTITY[op]``, but integers have no infinity (their lowest or max value)."""
        if op in ("max", "min") and not dtype.is_floating_point:
            return f"std::numeric_limits<{self.type_name(dtype)}>::{'lowest' if 'max' in op else 'max'}()"
        return self.constant(IDENTITY[op], dtype)

    def assign(self, tmp, value, dtype):
        return f"{self.type_name(dtype)} {tmp} = {value};"

    def load(self, ptr, index, dtype):
        if dtype == torch.bfloat16:  # its 16 bits (read as an integer type, a 0 of which pads), widened to float
            return f"toy_from_bfloat16({self.load(ptr, index, torch.int16)})"
        if (ptr, index) in self.rows and not self.rowwise:  # copied by x_loop_open, transposed (see short_rows)
            return f"{self.rows[ptr, index]}[r0][{self.xlast} - xb]"
        if (ptr, index) in self.tiles:  # read in memory order by tile_loops, transposed
            a, b = index_vars(len(self.xr), "x")[-2:]
            return f"{self.tiles[ptr, index]}[{self.tile} * ({a} - {a}s) + {b} - {b}s]"
        clamps = {g: unclamped(g) for g in sorted(index.atoms(sympy.Min, sympy.Max), key=sympy.default_sort_key)}
        clamps = {g: u for g, u in clamps.items() if u is not None and not any(g in h.args for h in clamps)}
        if not clamps and not self.masks:
            return f"{ptr}[{self.printer(index)}]"
        inside = " && ".join([*self.masks, *(f"{self.printer(u)} == {self.printer(g)}" for g, u in clamps.items())])
        return f"{inside} ? {ptr}[{self.printer(index.xreplace(clamps))}] : {self.constant(0, dtype)}"

    def store(self, buf, index, value, where):
        value = f"toy_to_bfloat16({value})" if self.dtypes[buf] == torch.bfloat16 else value
        return f"{self.ptr[buf]}[{self.printer(index)}] = {value};"

    def index_value(self, index, dtype):
        return f"static_cast<{self.type_name(dtype)}>({self.printer(index)})"

    def constant(self, value, dtype):
        if dtype.is_floating_point:
            value = float(value)
            if not math.isfinite(value):  # <cmath>'s float INFINITY and NAN convert exactly to a double
                return {math.inf: "INFINITY", -math.inf: "-INFINITY"}.get(value, "NAN")
            return repr(value) if dtype == torch.float64 else f"{value!r}f"  # (half precision: computed in float)
        return f"{self.type_name(dtype)}({int(value)})"  # (a bool: bool(1))

    def cast(self, value, dtype, source=None):
        """A bool becomes a number by a select (``m ? 1.0f : 0.0f``): GCC vectorises no loop that converts a C++
        bool with a cast: ``(x > 0).float().mean()`` ran at 0.35x torch.compile so (one thread, 4M floats)."""
        if source == torch.bool and dtype != torch.bool:
            return f"{value} ? {self.constant(1, dtype)} : {self.constant(0, dtype)}"
        if dtype == torch.bfloat16:  # rounded to bfloat16, and held as a float
            return f"toy_from_bfloat16(toy_to_bfloat16({value}))"
        return f"static_cast<{self.type_name(dtype)}>({value})"

