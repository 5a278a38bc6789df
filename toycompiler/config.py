"""One configuration object for the whole compiler, passed explicitly.

Mirrors ``torch._dynamo.config`` / ``torch._inductor.config`` but as a single
dataclass: every field has a default and a comment that says why.
``config.patch(...)`` works as a context manager and as a decorator.

``toycompiler.config`` holds the user's settings. A ``compile(fn, mode=...,
options={...})`` call does not change it: each compile gets its own copy,
``config.with_options(mode, options)``, which the pipeline hands to every stage.
"""

from __future__ import annotations

import contextlib
import os
import unittest.mock
from dataclasses import dataclass, field, fields, replace

import torch

# torch.compile's modes (toycompiler accepts the same names; see ``Config.mode``).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# The cache directory unless $TOYCOMPILER_CACHE_DIR names another (see ``Config.cache_dir``).
HOME_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "toycompiler")


@dataclass
class Config:
    # -- frontend ----------------------------------------------------------
    # Entries kept per code object before giving up and running eagerly
    # (torch._dynamo.config.recompile_limit is 8 too).
    recompile_limit: int = 8
    # After a recompile caused by a size change, mark that dimension dynamic
    # (torch's "automatic dynamic shapes").
    automatic_dynamic_shapes: bool = True
    # Sizes 0 and 1 are never made symbolic: broadcasting depends on them.
    specialize_zero_one: bool = True
    # Inline calls to user-defined Python functions instead of breaking.
    inline_user_functions: bool = True

    # -- passes ------------------------------------------------------------
    cse: bool = True
    constant_folding: bool = True
    simplify: bool = True
    # Fold an eval-mode BatchNorm into the convolution before it (weights known at compile time).
    fold_conv_bn: bool = True

    # -- backend -----------------------------------------------------------
    # Turn fusion off to see one kernel per operation (lesson 9).
    fusion: bool = True
    # Let pointwise work after a reduction join the reduction's kernel.
    epilogue_fusion: bool = True
    # Let independent nodes over the same range share one loop (sibling fusion).
    sibling_fusion: bool = True
    # Let a new buffer take the memory of one that is dead (memory planning).
    reuse_buffers: bool = True
    # Triton matmuls as a template kernel (tl.dot tiles, with the pointwise work after the matmul fused in)
    # instead of library calls: None tries both in mode="max-autotune" and keeps the faster graph; True or
    # False forces the choice (passes/decompose.py, matmul_as_sum).
    matmul_template: bool | None = None
    # Largest Triton block, in elements; rows longer than this use a looped reduction. A row held whole is
    # read from memory once, where a loop reads it again (from L2 at best) for each pass: a bfloat16 layer
    # norm over [8192, 8192] took 89 us so and 122 looped (H100; torch.compile 99), over [4096, 16384]
    # floats 186 and 209 (263), over [4096, 32768] floats 373 and 463 (367). 32768 floats are 128 KB, 32 a
    # thread at 16 warps (codegen/triton.py's setup has the other times).
    max_block: int = 32768
    # C++ compiler and flags; the cache key includes both.
    cxx: str = field(default_factory=lambda: os.environ.get("CXX", "g++"))
    # -fno-math-errno: nobody reads errno, and setting it stops sqrt/exp loops vectorizing.
    # -fno-tree-sink: a value used in only one arm of a `where` (`c ? erf(a) : pow(b, y)`) would be moved into
    # that arm, where only scalar libm calls can compute it: a transcendental chain ran 2.7x slower.
    # -fno-trapping-math: nobody reads the floating-point exception flags either (the results are IEEE's all the
    # same). Without it, GCC 12 on an AVX2 CPU vectorised no loop with a float compare and a select in it
    # (`(x > 0).float() * x`, a relu, a cat's guarded loads: "control flow in loop"); with AVX-512 it did.
    # -fno-thread-jumps: GCC's jump threading copied the blocks around a select whose arm is a value loaded once
    # for the whole loop (a ReLU's backward, `relu(y) <= 0 ? 0 : grad[0]`; cross entropy's `t != -100 ? g[0] : 0`)
    # into paths that the vectoriser could not merge back ("no vectype"): the loop ran one element at a time. A
    # batch-norm and ReLU training step over [16, 64, 28, 28] took 5.0 ms, torch.compile 0.72; now 0.35. Cross
    # entropy's over [2048, 1000] 7.4 and 1.8 (torch.compile 2.1; one thread, AVX-512).
    # -fno-tree-pre: GCC's partial redundancy elimination carried a value loaded at one place all along (a row's mean,
    # the loss's gradient) from one loop into the next, which stores, reloading it at each element there (a store
    # might change it); that loop, through a ReLU's select, then did not vectorise ("control flow in loop"): a layer
    # norm and ReLU trained over [2048, 1531] took 21 ms in its input gradient's kernel, 0.4 without it (one thread;
    # torch.compile 4 for the whole step). Of 400 kernels the tests generate, 8 had more loops vectorised, none fewer.
    # -mprefer-vector-width=256 where the CPU has AVX2 but not AVX-512: for AMD's first Zen, GCC 12 prefers vectors
    # of 16 bytes, and in them it compiles the masked rest of an argmax's index loop wrongly: torch.max(x, -1)
    # returned INT64_MAX as the index of a NaN or inf in the last 8 of a row of 40. Other AVX2 CPUs get 32 already.
    cxx_flags: tuple[str, ...] = ("-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fno-tree-sink",
                                  "-fno-thread-jumps", "-fno-tree-pre", "-fopenmp", "-shared", "-fPIC",
                                  *["-mprefer-vector-width=256"] * (torch.backends.cpu.get_cpu_capability() == "AVX2"))
    # Where generated code and shared libraries are kept between processes.
    cache_dir: str = field(default_factory=lambda: os.environ.get("TOYCOMPILER_CACHE_DIR", HOME_CACHE_DIR))
    # Check every IR at stage boundaries (tests turn this on).
    verify_ir: bool = False

    # -- runtime -----------------------------------------------------------
    # torch.compile's modes: "default"; "max-autotune" (and "max-autotune-no-cudagraphs")
    # benchmarks block sizes (and warps) per kernel at compile time; "reduce-overhead"
    # replays the graph as a CUDA graph (GPU only). toycompiler.compile(mode=...) sets it.
    mode: str = "default"
    # Reuse compiled graphs from cache_dir across processes (Inductor's FX graph cache).
    graph_cache: bool = True

    def patch(self, **changes: object) -> contextlib.AbstractContextManager:
        """Temporarily change settings: ``with config.patch(fusion=False): ...``, or as a decorator. A name
        that is no setting is refused here, where it is written, not when the block is entered. The
        patching is the standard library's (``unittest.mock.patch.multiple``: the old values come back
        on the way out, also after an exception)."""
        check_options(None, changes)
        return unittest.mock.patch.multiple(self, **changes)

    def with_options(self, mode: str | None, options: dict[str, object]) -> Config:
        """A copy with ``compile(mode=..., options=...)`` applied (both checked by :func:`check_options`)."""
        check_options(mode, options)
        return replace(self, **options, **({"mode": mode} if mode else {}))


def check_options(mode: str | None, options: dict[str, object]) -> None:
    """Refuse an unknown mode or option name, listing the valid ones (as torch.compile does)."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    names = [f.name for f in fields(Config)]
    if unknown := sorted(set(options) - set(names)):
        raise AttributeError(f"unknown option(s) {', '.join(unknown)}; options are the fields of toycompiler.config: "
                             f"{', '.join(names)}")


config = Config()
