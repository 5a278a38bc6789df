"""Triton kernels: each program instance computes a block of XBLOCK elements (or rows).

What a pointwise kernel looks like::

    @triton.jit
    def triton_sin_cos_mul_add_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK: tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)   # this block's elements
        xmask = xindex < 4096                   # the last block is partial (xnumel, a number where known)
        tmp0 = tl.load(in_ptr0 + (xindex), xmask, other=0)
        tmp1 = tl.sin(tmp0)
        ...
        tl.store(out_ptr0 + (xindex), tmp5, xmask)

A reduction kernel works on a ``[XBLOCK, RBLOCK]`` tile of XBLOCK rows
(see :meth:`TritonRenderer.setup` for how the tile is chosen). When the whole row fits in one
block (rnumel <= config.max_block) it is *persistent*: the row is loaded once and ``tl.sum(tile, 1)`` reduces it.
Longer rows are *looped*: ``for roffset in range(0, rnumel, RBLOCK)`` folds
each block into an accumulator tile, reduced at the end. float16/bfloat16 are
computed in float32, as Inductor does.

Mirrors: torch/_inductor/codegen/triton.py (TritonKernel, TritonOverrides,
persistent_reduction) and torch/_inductor/runtime/triton_heuristics.py.
A long reduction with few outputs reaches this renderer already split in two
(``ir.split_reductions``: partial reductions over chunks, then the partials).

A matmul reaches this renderer as a reduction when the matmul template is on
(``passes/decompose.py``, ``matmul_as_sum``): one sum over k of ``a[x0, k] * b[k, x1]``.
:meth:`TritonRenderer.dot_operands` recognises it, and the kernel becomes a
template: one program per ``[BLOCK_M, BLOCK_N]`` tile of the output, a loop over
k accumulating ``tl.dot`` of an ``a`` tile and a ``b`` tile, then the fused
epilogue (bias, activation, residual: the reduction's row nodes) on the tile::

    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    x0 = rm[:, None]          # the output's row of each tile element
    x1 = rn[None, :]          # and its column
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        ...
        acc += tl.dot(a, b)
    tmp3 = acc + tl.load(in_ptr2 + (x1), xmask, other=0)    # + bias, fused

Mirrors torch/_inductor/kernel/mm.py (the mm template) with its epilogue fusion.

Leaves out: 2-D tiling of pointwise kernels, autotuning a reduction's RBLOCK, and the
template's tile sizes (only its warps are tuned) and its grouped tile order for L2 reuse.
"""

from __future__ import annotations

import math
import os
import re

import sympy
import torch

from ..ir import COLUMN_WIDTH, IDENTITY, MATH_OPS, MATH_OPS2, Load, Op, exp_of_difference, index_vars, loads, substitute
from .common import HALF, INFIX, IndexPrinter, KernelRenderer, unclamped

# Triton names a dtype as torch does (torch.float32 is tl.float32), but bool is a 1-bit integer
TL_TYPES = {dtype: f"tl.{str(dtype).removeprefix('torch.')}" for dtype in (torch.float32, torch.float64, torch.float16,
            torch.bfloat16, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)} | {torch.bool: "tl.int1"}
# max/min through combine functions that propagate NaN as torch does (tl.max drops it)
REDUCE = {"sum": "tl.sum({0}, 1)", "max": "tl.reduce({0}, 1, max_combine)", "min": "tl.reduce({0}, 1, min_combine)",
          "prod": "tl.reduce({0}, 1, prod_combine)", "first_index": "tl.min({0}, 1).to(tl.int64)"}
COMBINE = {"sum": "{acc} + {v}", "prod": "{acc} * {v}", "max": "max_combine({acc}, {v})",
           "min": "min_combine({acc}, {v})"}


ONLINE_MIN_ROW_BYTES = 65536  # longer rows of a looped softmax take its max and sum in one loop (reduction_group)

TL_DOT = (torch.float32, torch.float16, torch.bfloat16)  # input dtypes of the matmul template
# (BLOCK_M, BLOCK_N, BLOCK_K) for float32 / half inputs: on an H100 the fastest of 6-7 tilings tried on a narrow
# linear layer with a GELU epilogue (larger tiles leave too few threads for the epilogue's transcendentals)
TILES = {False: (64, 64, 32), True: (64, 64, 64)}


def _widened(e):
    """What ``e`` computes from, past views (``identity``) and exact widening casts to float32."""
    while isinstance(e, Op) and (e.op == "identity" or e.op == "to_dtype" and e.dtype == torch.float32):
        e = e.args[0]
    return e


def next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class TritonRenderer(KernelRenderer):
    language = "triton"
    types = TL_TYPES
    printer = IndexPrinter(minmax="tl.{which}imum({args})")
    ops = {
        **{op: f"libdevice.{op}({{0}})" for op in MATH_OPS},
        **{op: f"libdevice.{op}({{0}}, {{1}})" for op in ("fmod", *MATH_OPS2)},
        **{op: f"tl.{op}({{0}})" for op in ("sin", "cos", "exp", "log", "sqrt", "erf", "rsqrt", "abs", "sigmoid",
                                             "floor", "ceil")},  # tl.sin(x)...
        **{op: f"{{0}} {operator} {{1}}" for op, operator in INFIX.items()},  # add: {0} + {1}...
        "round": "libdevice.nearbyint({0})", "reciprocal": "1 / {0}", "neg": "-{0}", "isnan": "{0} != {0}",
        "relu": "tl.where({0} != {0}, {0}, tl.maximum({0}, 0))", "where": "tl.where({0}, {1}, {2})",
        "sign": "tl.where({0} > 0, 1, tl.where({0} < 0, -1, 0)).to({dtype})",
        # C's (truncating) remainder and division. Float remainder is libdevice's exact fmod: Triton's float `%`
        # becomes LLVM's frem, which the GPU computes as a - trunc(a / b) * b (1e10 % 0.3 off by 12).
        "imod": "{0} % {1}", "truncdiv": "{0} // {1}",  # (fmod: libdevice's, above)
        **{op: f"tl.{op}({{0}}, {{1}}, propagate_nan=tl.PropagateNan.ALL)" for op in ("maximum", "minimum")},
        "logical_not": "{0} == 0", "logical_and": "({0} != 0) & ({1} != 0)", "logical_or": "({0} != 0) | ({1} != 0)",
        "bitwise_not": "~{0}", "signbit": "libdevice.signbit({0}) != 0",
    }

    # -- block sizes ---------------------------------------------------------------
    def setup(self):
        """The reduction tile ``[XBLOCK, RBLOCK]``, chosen from the strides and the sizes.

        A row reduction (reads contiguous along r) takes whole rows, one row per program when rows are
        long, several short rows per program otherwise. A column reduction (``x.sum(0)``: contiguous
        along x, see :meth:`column_order`) takes 64 columns per program, so each load reads 64
        neighbouring elements of a row (coalesced) and the tile is reduced across its rows.
        """
        self.dot, self.full = self.dot_operands(), False
        self.online: dict[str, str] = {}  # a softmax's sum -> its max, computed in one loop (reduction_group)
        if self.dot:  # a matmul template: one [BLOCK_M, BLOCK_N] tile of the output per program, k in BLOCK_K steps
            (m, n), k = map(int, self.xr), int(self.rr[0])
            tile = TILES[self.dtypes[self.dot[0][0].buf] in HALF]
            fit = [min(t, max(16, next_power_of_2(size))) for t, size in zip(tile, (m, n, k))]
            self.blocks = (("M", m), ("N", n), ("K", k), *zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), fit))
            return
        rows = next_power_of_2(self.rnumel) if self.rnumel.is_Integer else None
        # x: a pointwise block / 16, 1 .. 64, fewer for small xnumel (the block: the smallest power of two covering
        # xnumel, between 16 and 1024; 1024 for a symbolic xnumel)
        x = min(max(next_power_of_2(self.xnumel), 16), 1024) // 16 if self.xnumel.is_Integer else 64
        # A column reduction takes 64 columns per program where that makes 512 programs or more (a split
        # column sum's partials), else 32 or 16 (512 programs or more), or 8 (32 bytes of a row) for at most
        # 2048 columns. The final sum of a split column sum's partials, [256, 1037], had 17 programs of 64
        # columns; with 8 columns the column sum took 25.7 us instead of 33.0 (H100). Unsplit, [500, 12000]
        # took 20.1 us with 64 columns (188 programs), 13.2 with 32 (375); the partials of [16384, 3072] in
        # bfloat16, 6144 programs, 40.1 us with 64 columns and 48.0 with 16. A sum over dim 1 of [64, 512, 1000]
        # (1000 programs of 64 columns) took 35.0 us, in 2000 programs of 32 37.9 (H200, when the bound was 1024).
        few = self.column and self.xnumel.is_Integer and self.xnumel < 512 * COLUMN_WIDTH  # programs of 64 columns
        x = min(x, 32 if self.xnumel >= 16384 else 16 if self.xnumel > 2048 else 8) if few else x
        # A row is held whole up to max_block elements; a column reduction's tile (x columns of each row) up to half
        # of that, 16384 elements (256 rows of 64 columns: 128 floats a thread at Triton's 4 warps). Held whole, a
        # softmax over the 256 channels of NCHW [64, 256, 28, 28] reads them once, not three times: log_softmax
        # took 30.6 us, 61.0 looped in steps of 8 rows when the bound was an eighth (torch.compile 44.7); softmax
        # over 128 channels 15.5 and 22.9 (24.5); var over dim 0 of [192, 16384] 8.0 and 10.1 (8.6), a split one
        # over [16384, 2048] 39.9 and 49.0 (44.8), its partial sums over 128 rows; argmax over dim 0 of [150, 20000]
        # 8.8 and 10.7 (20.0). A column sum [32765, 1037] took 41.4 and 40.6 us, a softmax over dim 0 of [200, 5000]
        # 13.0 and 12.6 (H200)
        held = rows is not None and rows * (2 * x if self.column else 1) <= self.config.max_block
        # but a tile of 64 columns by more than 8 rows read in one pass (each node a reduction of the kernel's inputs
        # alone: a sum, a max, a split reduction's partials) streams through in [32, 8] steps (see the column blocks),
        # or, where a load walks the rows alone (a factor per row: ``(x * s).sum(0)``, an RMS norm's weight
        # gradient), is looped in [64, 8] steps. H200, [32, 8] / [64, 8] / torch.compile (us): (x * s).sum(0) over
        # [32768, 1024] floats 58.8 / 42.7 / 38.4, float16 48.1 / 30.9 / 26.8, [30001, 1037] floats 57.9 / 45.4 /
        # 71.2, (x * s).sum((0, 1)) over [64, 512, 256] 22.3 / 17.5 / 18.7; the training step of an RMS norm times a
        # weight, [8192, 2048] floats 114.1 / 105.6 / 79.4, bfloat16 [8192, 4096] 133.0 / 114.5 / 255.9
        one_pass = rows is not None and rows > 8 and not few and self.column \
            and all(n.reduction for n in self.kernel.nodes) and not self.kernel.reads() & self.kernel.names()
        indices = self.load_indices(self.inputs)  # (once: the pointwise blocks below read them too)
        # the loads along r, in the loops as rendered (as load_indices gives them)
        along_r = [(ld.buf, i) for ld, i in indices if i.free_symbols & set(index_vars(len(self.rr), "r"))]
        # a load that reads one element for neighbouring columns (the last x) but walks the rows: a factor per row,
        # ``s`` of ``(x * s).sum(0)``; in a split sum's partials ``s[x // 1024 * 32 + r]``
        column = index_vars(len(self.xr), "x")[-1:]
        held = held and not (one_pass and any(i.subs(column[0], 1) == i.subs(column[0], 0) for _, i in along_r))
        streams = held and one_pass
        self.persistent = self.kernel.kind == "pointwise" or held and not streams
        if self.kernel.kind == "pointwise":
            # the block is 16 * x (see above), with 8 elements per thread (Triton's default 4 warps
            # for a block of 1024, as Inductor's). H200, 8 and 4 floats a thread over 2^24 elements: sin + cos 47.6
            # and 51.0 us (torch.compile 48.2), tanh-GELU 33.5 and 34.1 (33.3), the bench's transcendental chain
            # 141.9 and 136.7 (137.7); an add, a chain of 8 ops and the 10-op function within 0.5%. (On an H100
            # an earlier transcendental chain had run 1.1-1.9x slower with 8 a thread.) 2-byte data take 8 a
            # thread only where Triton can load them together (loads_together): a bfloat16 tanh-GELU over 2^26
            # elements took 91.7 us so, 105.3 with 4 a thread (torch.compile 91.2); over 2^24 + 2, 26.1 and 28.8
            # (26.1), a silu(x) * y 31.6 and 37.9 (32.8). Loaded one by one, 8 a thread are slower: 59.3 us for a
            # GELU over 2^24 + 37 bfloat16 elements, where 4 a thread took 31.9 (H100; before full blocks)
            # A read along x with a stride (a pooling window's, ``x[:, ::2]``; its clamps set aside) takes 1 element
            # a thread, blocks of 256: with 8, a warp's loads of one element each touched 32 lines. H200, 3x3 max
            # pool, stride 2, padding 1, over [64, 128, 112, 112] floats: 269 us with 8 a thread, 267 with 4, 149
            # with 2, 143 with 1 (torch.compile 153); a 3x3 average, stride 2, over [64, 128, 56, 56] 82, 75, 49, 43
            # (48); the same with stride 1 (not strided) 142, 129, 129, 128 (84). A 2x2 max pool 131 us either way. A
            # flip reads backwards, one element apart: 8 a thread (x.flip(-1) + x.roll(3, 0) over [8192, 4096]
            # floats 73 us, 113 with 1 a thread; torch.compile 73).
            strided = column and any(i.xreplace({g: unclamped(g) or g for g in i.atoms(sympy.Min, sympy.Max)}).coeff(
                column[0]) not in (-1, 0, 1) for _, i in indices)  # (column: the last x)
            x = min(x, 16) if strided else x
            self.full = self.xnumel.is_Integer and self.xnumel % 16 and self.xnumel > 16 * x  # see finish
            per_thread = 2 if strided else 16 if self.loads_together() else 8  # (twice the elements a thread takes)
            self.blocks = (("XBLOCK", 16 * x), ("num_warps", max(1, x // per_thread)))
            # A transposed read (transposed_loads): 2-D blocks, YBLOCK rows (every loop but the last, flattened)
            # by XBLOCK columns, so that each load is contiguous along one of the block's axes: Triton lays out
            # each load along its own contiguous axis and moves values between the two layouts through shared
            # memory. The 1-D kernel read x.t() + x over [8192, 8192] floats in 601 us (torch.compile 265), a
            # permute of [64, 56, 56, 256] to NCHW in 433 (134). Blocks of 64 x 128 with 8 warps, H100: 264 and
            # 142 us; x.t() * y + 1 over [7001, 6000] 187 (180), bfloat16 x.t() + y over [8192, 8192] 136 (135),
            # x.permute(0, 2, 1) + y over [64, 1030, 1024] 349 (264). Under 2^22 elements, 32 x 64 with 4 warps:
            # x.t() + y over [200, 300] took 4.9 us, 5.8 in the larger blocks (4.7). Columns are the grid's axis
            # 0, the one that varies fastest, as in Inductor: the programs that share a row band run together,
            # so rows whose length is not a multiple of 32 (the permute's rows of 1030) have their shared cache
            # lines in L2 still. With the row blocks first that permute took 349 us, with the columns 266.
            # Rows are axis 1: at most 65535 row blocks. Blocks of 64 x 64 with 8 warps (not 128 columns): H200,
            # toy 64 x 64 / 64 x 128 / torch.compile (us): x.permute(0, 2, 1).contiguous() * 2 over [64, 1024, 1000]
            # 127.2 / 148.8 / 125.0, the permute of [64, 1030, 1024] plus y 187.6 / 188.9 / 186.8, NHWC to NCHW of
            # [64, 56, 56, 256] 99.3 / 100.7 / 96.8, x.t() + x over [8192, 8192] 181.2 / 181.9 / 185.7, bfloat16
            # x.t() + y 95.5 / 96.1 / 95.3, x.t() + y over [1037, 32744] 102.5 / 102.7 / 102.0 (32 x 32 blocks
            # or 4 warps were slower on all but the first).
            if self.transposed_loads() and self.xnumel.is_Integer and self.xnumel // self.xr[-1] < 65536 * 32:
                y, x, warps = (64, 64, 8) if self.xnumel >= 1 << 22 else (32, 64, 4)
                rows_cols = (("R", int(self.xnumel // self.xr[-1])), ("C", int(self.xr[-1])))
                self.blocks, self.full = (*rows_cols, ("YBLOCK", y), ("XBLOCK", x), ("num_warps", warps)), False
        elif self.column:  # looped: steps of 512 elements, [64, 8] as Inductor's outer reductions. [64, 64]
            # steps had a column sum [32765, 1037] take 55.0 us instead of 51.4, in float16 45.4 instead of 31
            # (H100); [8, 8] steps, the final sum of 1024 partials per column ran 7 us longer than [8, 64].
            # Fewer programs of 16 or 32 columns take steps of 1024 with 8 warps, more loads in flight each:
            # a column sum [3000, 9000] (563 programs of 16 columns) took 43.1 us so, 52.3 in steps of 512
            # (fewer than 8 columns, a program's 64 channels of NCHW, keep steps of 512: a mean over (0, 2, 3) of
            # [128, 64, 56, 56] ran at 95.5% of a copy's bandwidth so, 90.0% in steps of 1024 with 8 warps; H100)
            # A tile that would be held whole but is read in one pass (streams) takes [32, 8] steps, faster on most
            # column reductions timed (a profile gave the partials' kernel's time, not why). H200, held whole / [32, 8]
            # steps / [64, 8] steps / torch.compile (us): float16 x.sum(0) over [32765, 1037] 39.9 / 30.8 / 30.5 / 32.2
            # (the partials' kernel, profiled: 33.7 us held whole, Inductor's 25.1), bfloat16 41.1 / 31.3 / 31.6 / 32.9,
            # float32 46.5 / 41.8 / 39.6 / 39.6; float16 [65536, 512] 30.1 / 25.7 / 27.2 / 25.5, [16384, 4096] 44.7 /
            # 42.0 / 40.8 / 39.6; float32 [8192, 768] 14.1 / 12.6 / 15.0 / 14.0; x.var(0) over float16 [16384, 2048]
            # 35.3 / 31.0 / 32.7 / 29.6, float32 39.9 / 39.2 / 49.0 / 45.3; x.amax(0) over float16 [30000, 1000] 30.5 /
            # 26.4 / 27.7 / 25.3; a mean over (0, 2, 3) of float16 [128, 64, 56, 56] 19.1 / 18.4 / 19.9 / 22.7; float16
            # x.sum(0) over [100000, 257] 31.7 / 26.8 / - / 29.7. No one tile was best for all: x.sum(1) over [256, 200,
            # 300] took 19.7 / 21.3 / 19.6 / 19.4 in float32, 13.1 / 15.6 / 13.2 / 13.7 in bfloat16, and x.amax(0) over
            # bfloat16 [50000, 300] 17.0 / 18.9 / 19.9 / 19.4, where x.sum(1) over [1024, 60, 256] took 19.8 / 18.8 /
            # 21.8 / 30.0. Read in several passes (log_softmax over the channels of float32 [64, 256, 28, 28]), the tile
            # held whole took 31.0 us, [32, 8] steps 59.2 (45.4)
            wide = few and x > 8 and not self.persistent  # 16 or 32 columns a program
            x, step = (32, 8) if streams else (x, rows if self.persistent else (1024 if wide else 512) // x)
            self.blocks = (("XBLOCK", x), ("RBLOCK", step), *((("num_warps", 8),) if wide else ()))
        elif self.persistent:
            block = max(1, min(x, 1024 // rows))
            row_bytes = block * int(self.rnumel) * max((self.dtypes[b].itemsize for b, _ in along_r), default=4)
            # a warp per KB of the rows (to the nearest power of two), 2 to 8 (4 for 1024 floats). The rows' own bytes,
            # not the tile's, which pads them to a power of two: a max with its index over rows of 1037 floats took 54.5
            # us with 8 warps (the tile's 8 KB), 47.6 with 4 (H100, torch.compile 157.4); over rows of 600, 52.9 with 4
            # and 48.1 with 2; a bfloat16 softmax over rows of 1100, 46.4 and 44.1. A bfloat16 layer norm over rows of
            # 1024 took 50.2 us with 4 warps, 44.3 us with 2 (H100). 2 warps for 1024 floats, rows of 768 in GPT-2 and
            # ViT, made their steps 1-3% slower. Only loads along the row count: cross entropy's int64 targets (one a
            # row) made its tile over [65536, 1000] floats take 8 warps and 142 us, where 4 took 101 (torch.compile
            # 105). Rows of more than 16384 elements take 16 warps (32 floats a thread): a layer norm over [4096, 32768]
            # floats took 372.9 us so, 463.1 looped (torch.compile 366.5), over [4096, 20000] 228.4 and 321.2 (334.5);
            # softmax over [1024, 32768] 92.5 and 123.6 (117.9), over bfloat16 [4096, 32000] 192.4 and 217.2 (297.8);
            # cross entropy over [8192, 32000] floats 368.6 and 362.9 (383.9). 32 warps were within 2% of 16 either way.
            # A kernel that finds an index (argmax, argmin, torch.max(x, dim)) takes a warp per 2 KB, 1 to 8. H200,
            # 1, 2, 4 and 8 warps: torch.max(x, -1) over [32765, 1037] floats 35.7, 36.7, 40.5, 52.5 us (a copy of
            # the same bytes 36.0), in bfloat16 32.5, 35.2, 40.6, 52.2; argmax of the floats 35.3, 36.3, 40.0, 51.5;
            # bfloat16 argmin over [16384, 3000] 45.7, 35.8, 37.1, 46.1; torch.max over [16384, 2048] floats 35.0,
            # 37.5, 34.7, 34.6. A max alone (amax, softmax) and a sum were within 1% from 1 to 4 warps over rows of
            # 1024 or 1037 floats
            index = any(n.reduction.op in ("argmax", "argmin") for n in self.kernel.nodes if n.reduction)
            per_warp = row_bytes / (1024 << index)
            warps = max(2 >> index, min(16 if rows > 16384 else 8, 1 << round(math.log2(max(per_warp, 1)))))
            self.blocks = (("XBLOCK", block), ("RBLOCK", rows), ("num_warps", warps))
        else:  # looped rows: steps of 8192 elements and 32 warps (1024 threads, 8 elements each) keep few rows
            # in flight, so a row read again by a later loop is still in L2. H100, RMS norm over [2048, 32768]
            # floats: 196.4 us (torch.compile 179.3; 260.8 in steps of 2048 with 16 warps, Inductor's default
            # config); over [4096, 20000] 225.1 (312.7; 294.0); layer norm over [1024, 65536] 246.3 (290.5;
            # 264.6 in steps of 4096 with 16 warps). A kernel with a max (softmax, log_softmax, cross entropy)
            # keeps steps of 2048 with 16 warps: the benchmark's cross entropy over [4096, 50257] floats took
            # 465.3 us in steps of 8192 (torch.compile 350.1; 309 before, bench/results/h100.json). So does one that
            # compares (a min, an argmax): 8 floats a thread made argmax over [4096, 50257] take 422 us, 4 took 212
            # (steps of 2048 with 16 warps or 1024 with 8; torch.compile 260; H200); bfloat16 argmin 206 and 112 (148)
            compares = {n.reduction.op for n in self.kernel.nodes if n.reduction} & {"max", "min", "argmax", "argmin"}
            step = min(next_power_of_2(self.config.max_block), 2048 if compares else 8192)
            self.blocks = (("XBLOCK", 1), ("RBLOCK", step), ("num_warps", 16 if compares else 32))

    def loads_together(self) -> bool:
        """Whether Triton can move this pointwise kernel's narrow data (under 4 bytes an element) several
        elements at a time: every such load reads along the innermost index (or one element for all of it: a
        broadcast), and the kernel's element count is even (a symbolic count: where sympy can tell) or its full
        blocks are unmasked (:meth:`finish`). The mask's bound is that number itself (:meth:`bound`), so Triton
        knows that neighbouring elements share a mask at least in pairs, and loads 2 to 8 of them at once (16
        bytes where 16 divides the count). Floats loaded one by one still fill a warp's 128-byte line."""
        x = index_vars(len(self.xr), "x")[-1:]  # (a kernel of one element has none, and 1 is odd)
        narrow = [b for b in self.inputs if self.dtypes[b].itemsize < 4]
        return not narrow or bool(self.xnumel.is_even or self.full) \
            and all(i.coeff(x[0]) in (0, 1) for _, i in self.load_indices(narrow))

    def dot_operands(self):
        """``((a, index), (b, index))`` if the kernel's one reduction is a matmul, else None.

        A matmul is a sum over one r of a product of two loads, the first indexed by (x0, r0), the second
        by (r0, x1), in one floating dtype, with static sizes; every other node of the kernel works on
        the (x0, x1) result (its epilogue). Anything else is a plain reduction.
        """
        reductions = [n for n in self.kernel.nodes if n.reduction]
        if len(reductions) != 1 or reductions[0].reduction.op != "sum" or len(self.xr) != 2 or len(self.rr) != 1 \
                or "element" in self.where.values() \
                or not all(s.is_Integer for s in (*self.xr, *self.rr)):
            return None
        node = reductions[0]
        loads = [_widened(a) for a in node.body.args] if isinstance(node.body, Op) and node.body.op == "mul" else []
        if len(loads) != 2 or not all(isinstance(ld, Load) and ld.buf in self.inputs for ld in loads) \
                or len({self.dtypes[ld.buf] for ld in loads}) != 1 or self.dtypes[loads[0].buf] not in TL_DOT:
            return None
        (x0, x1), (r0,) = index_vars(2, "x"), index_vars(1, "r")
        a, b = (sympy.expand(ld.index.xreplace(self.vars(node))) for ld in loads)
        return ((loads[0], a), (loads[1], b)) if a.free_symbols == {x0, r0} and b.free_symbols == {r0, x1} else None

    def dot_loop(self, node):
        """The template's loop over k: ``acc += tl.dot(a_tile, b_tile)``, products and sums in float32.

        float32 inputs multiply in full precision (``input_precision="ieee"``) unless torch allows TF32
        for matmuls (``torch.backends.cuda.matmul.allow_tf32``), as cuBLAS would."""
        (a, ia), (b, ib) = self.dot
        r0, ka, kb = index_vars(1, "r")[0], sympy.Symbol("ka"), sympy.Symbol("kb")
        tf32 = self.dtypes[a.buf] != torch.float32 or torch.backends.cuda.matmul.allow_tf32
        # Triton's CPU interpreter multiplies bfloat16 tiles as raw bits (numpy has no bfloat16): widen them there
        to = ".to(tl.float32)" if self.dtypes[a.buf] == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") == "1" \
            else ""
        with self.owning(node):
            self.emit("acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)", "for k in range(0, K, BLOCK_K):", "@INDENT@",
                      "ka = k + tl.arange(0, BLOCK_K)[None, :]", "kb = k + tl.arange(0, BLOCK_K)[:, None]",
                      f"a = tl.load({self.ptr[a.buf]} + ({self.printer(ia.xreplace({r0: ka}))}), "
                      "(x0 < M) & (ka < K), other=0)",
                      f"b = tl.load({self.ptr[b.buf]} + ({self.printer(ib.xreplace({r0: kb}))}), "
                      "(kb < K) & (x1 < N), other=0)",
                      f"acc += tl.dot(a{to}, b{to})" if tf32 else 'acc += tl.dot(a, b, input_precision="ieee")',
                      "@DEDENT@")
        return ["acc"]

    def var_defs(self, prefix, ranges, flat, text):
        if "YBLOCK" in dict(self.blocks) and prefix == "x":  # the rows' loop variables; the last is the column
            return super().var_defs(prefix, ranges[:-1], "yindex", text)
        return [] if self.dot and prefix == "x" else super().var_defs(prefix, ranges, flat, text)

    # -- structure -----------------------------------------------------------------
    def header(self):
        return ["import triton", "import triton.language as tl",
                "from toycompiler.backend.codegen.triton_libdevice import libdevice, max_combine, min_combine, "
                "prod_combine", "", "", "@triton.jit"]

    def signature(self, sizes):
        blocks = ", ".join(f"{name}: tl.constexpr" for name, _ in self.blocks if name != "num_warps")
        return [f"def {self.name}({', '.join([*self.ptr.values(), *sizes])}, {blocks}):"]  # (inputs, then outputs)

    def x_loop_open(self):
        if self.dot:
            return ["rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
                    "rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)",
                    "x0 = rm[:, None]", "x1 = rn[None, :]", "xmask = (x0 < M) & (x1 < N)"]
        if "YBLOCK" in dict(self.blocks):  # 2-D blocks: YBLOCK rows (all loops but the last) by XBLOCK columns
            last = f"x{len(self.xr) - 1}"
            return ["yindex = tl.program_id(1) * YBLOCK + tl.arange(0, YBLOCK)[:, None]",
                    f"{last} = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
                    f"xindex = yindex * C + {last}", f"xmask = (yindex < R) & ({last} < C)"]
        if self.kernel.kind == "pointwise":
            return ["xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)", f"xmask = xindex < {self.bound('x')}"]
        # a persistent kernel's tile holds its whole row: rindex is rbase, with no loop over r (see r_loop_open)
        whole_row = ["rindex = rbase", f"rmask = rindex < {self.bound('r')}", "@RVARS@"] if self.persistent else []
        return ["xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]", "xmask = xindex < xnumel",
                "rbase = tl.arange(0, RBLOCK)[None, :]", *whole_row]

    def bound(self, axis: str) -> str:
        """``xnumel`` or ``rnumel`` for a mask: the number itself where it is known when compiling.

        Triton then knows the largest power of two that divides it (of an argument it knows only whether
        16 does), and so how many neighbouring elements share a mask: rows of 1000 bfloat16, masked past
        1000 in a tile of 1024, are loaded 8 elements (16 bytes) at a time instead of one by one."""
        numel = self.xnumel if axis == "x" else self.rnumel
        return str(numel) if numel.is_Integer else f"{axis}numel"

    def x_loop_close(self):
        return []

    def r_loop_open(self, purpose):
        # (persistent: no loop, the whole row is already in the tile)
        return [] if self.persistent else ["for roffset in range(0, rnumel, RBLOCK):", "@INDENT@",
                                           "rindex = roffset + rbase", f"rmask = rindex < {self.bound('r')}", "@RVARS@"]

    def r_loop_close(self):
        return [] if self.persistent else ["@DEDENT@"]

    def reduction_group(self, first):
        """Looped over rows of more than 64 KB, a ``max`` also takes the ``sum`` of ``exp(v - max)`` over the
        same ``v`` (a softmax's or cross entropy's denominator) into its loop: *online softmax*, as Inductor's
        ``online_softmax``. Each lane keeps the largest ``v`` so far, ``m``, and the sum of ``exp(v - m)``,
        rescaled by ``exp(m_old - m)`` whenever ``m`` grows; after the loop each lane's sum is rescaled to the
        row's max. The row is read once for both instead of twice, at the cost of a second ``exp`` a value.
        H100, three loops vs online, torch.compile in brackets: softmax over [4096, 50257] floats 1415 vs
        1186 us (1127), [1000, 100000] 546 vs 417 (421); bfloat16 cross entropy over [2048, 128256] 512 vs 393
        (361). A shorter row stays in L2 between loops (about 500 rows in flight, 32 MB of the
        H100's 50 MB at 64 KB a row), so the second read costs less than the second ``exp``: bfloat16
        cross entropy over [8192, 32000] (rows of 64 KB) took 304 us without, 391 with."""
        group, x = super().reduction_group(first), dict(self.blocks).get("XBLOCK", 1)  # rows (columns) a program reads
        for m in [m for m in group if m.reduction.op == "max" and not self.persistent]:
            v = substitute(m.body, self.vars(m))
            itemsize = max((self.dtypes[ld.buf].itemsize for ld in loads(m.body)), default=4)  # 4: an index's max
            s = next((s for s in self.kernel.nodes if (self.rnumel * itemsize * x - ONLINE_MIN_ROW_BYTES).is_positive
                      and s.reduction and s.reduction.op == "sum" and s not in group
                      and self.row_inputs[s.name] <= self.row_values.keys() | {m.name}
                      and exp_of_difference(substitute(s.body, self.vars(s)), v, m.name)), None)
            if s:
                self.online[s.name] = m.name
                group.append(s)
        return group

    def reductions(self, nodes):
        """Persistent: each node's tile reduced along r. Looped: one loop over r for all the nodes, one
        accumulator tile each (the row is loaded once), each tile reduced after the loop.

        An argmax is the least index whose value is the row's max or a NaN, as in C++ (``tl.argmax``
        passes a NaN by on a GPU, where eager answers with the first NaN); a max of the same tile is shared.
        Looped, each lane keeps the index of its own first max (or first NaN) beside its max, and the least of
        the indices of the lanes that hold the row's max is the answer: the row is still read once."""
        if self.dot:
            return self.dot_loop(nodes[0])
        dtypes = [self.compute_dtype(self.expr_dtype(n.body)) for n in nodes]
        inits = [self.constant(_identity(n.reduction.op, dtype), dtype) for n, dtype in zip(nodes, dtypes)]
        if self.persistent:
            tiles = [self.tmp(f"tl.where(xmask & rmask, {self.expr(n.body, self.vars(n), n)}, {init})", dtype)
                     for n, init, dtype in zip(nodes, inits, dtypes)]
        else:
            tiles = [self.fresh("acc") for _ in nodes]
            acc_of = {n.name: acc for n, acc in zip(nodes, tiles)}
            self.emit(*[f"{acc} = tl.full([XBLOCK, RBLOCK], {init}, {self.type_name(dtype)})"
                        for acc, init, dtype in zip(tiles, inits, dtypes)],
                      *[f"{acc}_index = tl.zeros([XBLOCK, RBLOCK], tl.int32)"
                        for n, acc in zip(nodes, tiles) if n.reduction.op in ("argmax", "argmin")],
                      *self.r_loop_open("reduce"))
            for n, acc, dtype in [t for t in zip(nodes, tiles, dtypes) if t[0].name not in self.online]:
                with self.owning(n):
                    v, op = self.expr(n.body, self.vars(n), n), n.reduction.op
                    if op in ("argmax", "argmin"):  # each lane: the index of its first max (or first NaN) so far
                        take = f"({v} {'>' if op == 'argmax' else '<'} {acc}) | (({v} != {v}) & ({acc} == {acc}))"
                        self.emit(f"{acc}_index = tl.where(xmask & rmask & ({take}), rindex, {acc}_index)")
                    combined = COMBINE[op.removeprefix("arg")].format(acc=acc, v=v)
                    for s in [s for s in nodes if self.online.get(s.name) == n.name]:  # before the max moves on
                        combined = self.tmp(combined, dtype)  # the new max; -inf (no value yet) shifts by 0
                        shift = self.tmp(f"tl.where({combined} == float('-inf'), 0, {combined})", dtype)
                        with self.owning(s):
                            self.emit(f"# online softmax: {s.name}'s sum, rescaled by exp(old max - new max)")
                            self.emit(f"{acc_of[s.name]} = tl.where(xmask & rmask, {acc_of[s.name]} * tl.exp({acc} - "
                                      f"{shift}) + tl.exp({v} - {shift}), {acc_of[s.name]})")
                    self.emit(f"{acc} = tl.where(xmask & rmask, {combined}, {acc})")
            self.emit(*self.r_loop_close())
        values: dict[str, str] = {}
        for n, tile, dtype in zip(nodes, tiles, dtypes):  # an online sum: each lane's sum rescaled to the max
            m = self.online.get(n.name)  # (only looped kernels have online sums)
            tile = f"{tile} * tl.exp({acc_of[m]} - {values[m]})" if m else tile
            if (op := n.reduction.op) in ("argmax", "argmin"):  # see the docstring
                best = self.tmp(REDUCE[op.removeprefix("arg")].format(tile) + "[:, None]", dtype)
                index = "rindex" if self.persistent else f"{tile}_index"
                tile, op = f"tl.where(({tile} == {best}) | ({tile} != {tile}), {index}, rnumel)", "first_index"
            values[n.name] = self.tmp(REDUCE[op].format(tile) + "[:, None]", n.layout.dtype)
        return list(values.values())

    def finish(self):
        """A looped row read in two or more loops (a softmax's max, its sum, its output) is kept in L2 for
        the next loop (``evict_last``) and let go in the last (``evict_first``), as Inductor's loads.
        H100, the same kernels without and with the hints: softmax over rows of 16384, 65.6 and 54.8 us;
        bfloat16 rows of 32000, 266.1 and 217.3 us; rows of 50257 floats (200 KB, too long for the rows
        in flight to stay in L2 anyway), 722 and 735 us.

        A pointwise kernel over a known count that 16 does not divide has its body written twice: once for
        the full blocks, whose mask is all True (so Triton loads and stores 16 bytes at a time), once for the
        last block, masked. With one masked body, Triton sees a mask that may change at any element and moves
        them one by one. H200, a bfloat16 tanh-GELU over 2^24 + 37 elements: 29.6 us, 24.2 with the full
        blocks (torch.compile 36.1, a copy of the same bytes 20.8); in float16 the same; in float32 34.9 and
        33.3 (34.1; 35.6)."""
        out, loops, seen = super().finish(), "\n".join(t for t, _ in self.lines).count("for roffset"), 0
        if self.full:  # the body twice: unmasked for full blocks, masked for the last (see the docstring)
            i = next(i for i, (line, _) in enumerate(out) if line.lstrip().startswith("xmask"))
            body = [("    " + line, owner) for line, owner in out[i + 1:]]
            out[i:] = [(f"    if tl.program_id(0) * XBLOCK + XBLOCK <= {self.xnumel}:  # a full block", None),
                       ("        xmask = tl.full([XBLOCK], True, tl.int1)", None), *body, ("    else:", None),
                       ("    " + out[i][0], out[i][1]), *body]
        for i, (line, owner) in enumerate(out):
            seen += line.lstrip().startswith("for roffset")
            hint = f"'evict_{'first' if seen == loops else 'last'}'" if loops > 1 else None
            out[i] = (line.replace(", eviction_policy=@EVICT@", f", eviction_policy={hint}" if hint else ""), owner)
        return out

    # -- elements ------------------------------------------------------------------
    def assign(self, tmp, value, dtype):
        return f"{tmp} = {value}"

    def _pointer(self, ptr: str, index: sympy.Expr) -> tuple[str, str]:
        """``ptr + (index)`` and its mask, broadcast to the tile when the index misses a dimension.

        An index that walks the kernel's elements in order (``290400*x0 + 3025*x1 + x2`` over loops of 64, 96
        and 3025) is printed as ``xindex`` (plus its offset): Triton sees that neighbouring elements are
        contiguous and loads several at once, which it cannot prove of ``x2 = xindex % 3025``. A bfloat16
        ``x * s[None, :, None, None]`` over [64, 96, 55, 55] took 24.0 us so, 30.0 with the div/mod index
        (H100, torch.compile 23.7)."""
        flat = sympy.Add(*(v * sympy.Mul(*self.xr[k + 1:]) for k, v in enumerate(index_vars(len(self.xr), "x"))))
        rest = sympy.expand(index - flat)  # (flat with a size symbol: the var defs need it, size_args would not see it)
        if self.kernel.kind == "pointwise" and len(flat.free_symbols) == len(self.xr) > 1 and rest.is_Integer:
            index = sympy.Symbol("xindex", integer=True, nonnegative=True) + rest
        text = self.printer(index)
        loops = {c for t in re.findall(r"\btmp\d+\b", text) for c in self.indirect_loops.get(t, ())}  # indirect
        has_x = bool(re.search(r"\bx\d+\b|xindex", text)) or "x" in loops
        pointer = f"{ptr} + ({text})"
        if not has_x:  # broadcast to the block (a pointwise kernel's), or to the tile's rows
            pointer += " + tl.zeros_like(xindex)" if self.kernel.kind == "pointwise" else \
                f" + tl.zeros([{'BLOCK_M' if self.dot else 'XBLOCK'}, 1], tl.int32)"
        # (a pointwise kernel has no r: its mask is xmask)
        return pointer, ("xmask & rmask" if re.search(r"\br\d+\b|rindex", text) or "r" in loops else "xmask")

    def load(self, ptr, index, dtype):
        """Under a where branch's mask (``self.guard``) a clamp in the index (``unclamped``) is left out: the lanes it
        would move are those the mask turns off, and an affine index loads neighbours together. H200, a cat of
        ``x.sin()`` and ``y.cos()`` along rows of 2000 and 2096 floats took 75.8 us so, 90.6 clamped (torch.compile
        75.9); masking by the clamp's own range instead, 88.7."""
        if self.guard:  # (bottom up, inner clamps first: a stepped slice_scatter's Min(Max(x1 - 2, 0) // 3, 3))
            index = index.replace(lambda e: unclamped(e) is not None, unclamped)  # (e itself where it is no clamp)
        pointer, mask = self._pointer(ptr, index)
        hint = ", eviction_policy=@EVICT@" if "rmask" in mask and not self.persistent else ""  # see finish
        text = f"tl.load({pointer}, {mask}{self.guard}, other=0{hint})"  # (guard: see KernelRenderer.expr)
        return f"{text}.to(tl.float32)" if dtype in HALF else text

    def store(self, buf, index, value, where):
        pointer, mask = self._pointer(self.ptr[buf], index)
        return f"tl.store({pointer}, {value}, {'xmask' if where == 'row' else mask})"  # a row's result: one per row

    def index_value(self, index, dtype):
        text = self.printer(index)  # a constant index needs no cast; one of loop variables takes the dtype
        return f"({text}).to({self.type_name(dtype)})" if re.search(r"\b[xr]\d+\b", text) else text

    def zero(self, dtype):  # a tensor, not a Python number: a cast (``.to``) applies to it
        return f"tl.full([1], {self.constant(0, dtype)}, {self.type_name(dtype)})"

    def constant(self, value, dtype):
        if dtype.is_floating_point:
            return repr(float(value)) if math.isfinite(value) else f'float("{float(value)}")'
        return str(bool(value)) if dtype == torch.bool else str(int(value))

    def cast(self, value, dtype, source=None):
        text = f"{value}.to({self.type_name(dtype)})"
        # round to half precision, keep computing in float32
        return f"{text}.to(tl.float32)" if dtype in HALF else text


def _identity(op: str, dtype: torch.dtype) -> int | float:
    """What a reduction starts from; for integers, the type's extremes stand for -inf and inf."""
    if dtype.is_floating_point or op in ("sum", "prod"):
        return IDENTITY[op]
    low, high = (0, 1) if dtype == torch.bool else (torch.iinfo(dtype).min, torch.iinfo(dtype).max)
    return low if "max" in op else high
