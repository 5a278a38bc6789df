"""Launching Triton kernels cheaply: the code that runs on *every* call.

``kernel[grid](*args)`` goes through Triton's JIT each time: bind the
arguments, work out a specialization key (each pointer's alignment, whether
each integer is 1 or a multiple of 16), look the key up, and only then launch.
That Python costs tens of microseconds, more than a small kernel runs.

Inductor pays it once. It compiles each kernel for its argument signature and
then calls the compiled binary's launcher directly. :class:`TritonLauncher`
does the same: it stands in for the ``@triton.jit`` function in the output
code, with the same ``launcher[grid](*args, XBLOCK=...)`` spelling, so the
wrapper does not change. Its first call goes through the JIT (compiling, and
returning the compiled kernel); later calls skip straight to::

    binary.run(grid_x, grid_y, grid_z, stream, binary.function, binary.packed_metadata,
               None, enter_hook, exit_hook, *args, *constexpr_values)

That call spelling is shared by Triton 3.3 through 3.7 (constexpr values are
passed too, and ignored by the launcher). A call whose pointers are less
aligned, or whose integers differ, from the first call's takes the JIT path
again, since the binary was specialized for them. On the CPU (Triton's
interpreter) every call takes the JIT path: there is no binary.

Mirrors: torch/_inductor/runtime/triton_heuristics.py (CachingAutotuner,
TritonCompileResult.make_launcher) and its autotuning (``benchmark_all_configs``).
Leaves out: Inductor's static CUDA launcher, and autotuning reduction block sizes.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from ..artifacts import AutotuneArtifact, AutotuneChoice, FusionDecision
from ..config import Config


def direct_launch_available() -> tuple[bool, str]:
    """Whether compiled binaries can be launched directly, and why not when they can't."""
    import os

    if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
        return False, "Triton's CPU interpreter runs the kernel: every call goes through kernel[grid]"
    from triton import knobs

    hooks = (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook)
    if any(h is not None and getattr(h, "calls", True) for h in hooks):
        return False, "a Triton launch hook is installed (a profiler?): kept the JIT path, which calls it"
    return True, "compiled once, then launched directly through the binary's launcher"


class TritonLauncher:
    """What the output code calls instead of a ``@triton.jit`` function (same ``[grid](...)`` spelling)."""

    def __init__(self, kernel: Any, name: str):
        self.kernel, self.name = kernel, name
        self.direct, self.reason = direct_launch_available()
        self.arg_names: list[str] = list(kernel.arg_names)
        self.tune = False  # set while autotuning: the next first call benchmarks candidates
        self.choice: AutotuneChoice | None = None  # the tuned meta-parameters, once chosen
        self._launches: dict[tuple, _Launch] = {}

    def __getitem__(self, grid: tuple) -> _Launch:  # one _Launch per grid, made on its first use
        return self._launches.get(grid) or self._launches.setdefault(grid, _Launch(self, grid))

    # -- autotuning (mode="max-autotune") -------------------------------------------
    def candidates(self, meta: dict) -> list[dict]:
        """Block sizes (and warps on a GPU) to try; only XBLOCK changes the grid.

        A kernel with other block sizes (a reduction's RBLOCK) may rely on them
        covering a whole row: only its warps are tuned.
        """
        if not self.tunes_xblock(meta):
            return [meta | {"num_warps": w} for w in (1, 2, 4, 8, 16)] if self.direct else [dict(meta)]
        blocks = (64, 128, 256, 512, 1024, 2048)
        if not self.direct:  # Triton's interpreter has no warps
            return [{"XBLOCK": block} for block in blocks]
        # Each thread (32 a warp) takes 1 to 16 of the block's elements: fewer leave threads idle.
        return [{"XBLOCK": block, "num_warps": w} for block in blocks for w in (1, 2, 4, 8)
                if 32 * w <= block <= 32 * 16 * w]

    def tunes_xblock(self, meta: dict) -> bool:
        """Whether XBLOCK is the kernel's one block size, over ``xnumel``: then autotuning tries other XBLOCKs
        and the grid follows the one chosen. Other kernels (a reduction's RBLOCK, 2-D blocks of rows and
        columns, a matmul template's tiles) keep their blocks and the grid the output code gives."""
        return "XBLOCK" in meta and "xnumel" in self.arg_names and not set(meta) - {"XBLOCK", "num_warps"}

    def grid_for(self, meta: dict, args: tuple, grid: tuple) -> tuple:
        if not self.tunes_xblock(meta):
            return grid
        return (max(1, -(-args[self.arg_names.index("xnumel")] // meta["XBLOCK"])), *grid[1:])  # cdiv(xnumel, XBLOCK)

    def benchmark(self, grid: tuple, args: tuple, meta: dict) -> AutotuneChoice:
        # each candidate timed now, its meta-parameters and the grid they give bound as the lambda's defaults
        timings = [(_time(lambda c=c, g=self.grid_for(c, args, grid): self.kernel[g](*args, **c), self.direct), c)
                   for c in self.candidates(meta)]
        best_time, best = min(timings, key=lambda t: t[0])
        table = tuple((_meta_str(c), t) for t, c in timings)
        return AutotuneChoice(self.name, _meta_str(best), best_time, table, dict(best))


class _Launch:
    """One grid of one kernel: JIT on the first call, the binary's launcher afterwards."""

    def __init__(self, owner: TritonLauncher, grid: tuple):
        self.owner, self.grid = owner, grid
        self.run: Callable | None = None

    def __call__(self, *args: Any, **meta: Any) -> None:
        if self.run is not None:
            for i in self.aligned:  # the binary assumed these pointers 16-byte aligned
                if args[i].data_ptr() & 15:
                    return self.jit(args, meta)
            if args[self.first_int:self.last_int] != self.ints:
                return self.jit(args, meta)
            return self.run(*self.launch_grid, torch._C._cuda_getCurrentRawStream(self.device), self.function,
                            self.metadata, None, self.enter, self.exit, *args, *self.tail)
        # The first call: benchmark the candidates if autotuning, compile through the JIT (which binds the binary).
        if self.owner.tune and self.owner.choice is None:
            self.owner.choice = self.owner.benchmark(self.grid, args, meta)
        return self.jit(args, meta)

    def jit(self, args: tuple, meta: dict) -> Any:
        """A call through Triton's JIT, with the tuned meta-parameters; while no launcher is bound (the first call,
        or a grid that keeps the JIT path), the binary it returns is bound (:meth:`prepare`)."""
        meta = meta | (self.owner.choice.meta if self.owner.choice else {})
        binary = self.owner.kernel[self.owner.grid_for(meta, args, self.grid)](*args, **meta)
        if self.run is None and self.owner.direct:
            self.prepare(binary, args, meta)
        return binary

    def prepare(self, binary: Any, args: tuple, meta: dict) -> None:
        """Remember what the binary was specialized for (``meta``: the tuned one, as the JIT ran it), and bind its
        launcher."""
        from triton import knobs

        try:
            run, self.function, self.metadata = binary.run, binary.function, binary.packed_metadata
        except AttributeError as e:  # a Triton whose CompiledKernel differs: keep the JIT path
            self.owner.direct, self.owner.reason = False, f"this Triton's compiled kernel has no {e.name}"
            return
        names = self.owner.arg_names
        ints = [i for i, a in enumerate(args) if isinstance(a, int)]
        if any(n not in meta for n in names[len(args):]) or (ints and ints != list(range(ints[0], ints[-1] + 1))):
            return  # unusual signature (defaulted constexprs, interleaved sizes): this grid keeps the JIT path
        self.tail = tuple(meta[n] for n in names[len(args):])  # constexprs, passed positionally
        self.aligned = tuple(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.data_ptr() % 16 == 0)
        self.first_int, self.last_int = (ints[0], ints[-1] + 1) if ints else (0, 0)
        self.ints = args[self.first_int:self.last_int]
        self.device = next(a.device.index for a in args if isinstance(a, torch.Tensor))
        self.launch_grid = (*self.owner.grid_for(meta, args, self.grid), 1, 1)[:3]  # (x, y, z): a missing one is 1
        self.enter, self.exit = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
        self.run = run


def _time(run: Callable, on_gpu: bool) -> float:
    """Median seconds per call of ``run`` (after a warm-up that compiles it)."""
    run()
    if on_gpu:
        from triton.testing import do_bench

        return do_bench(run, warmup=5, rep=20, return_mode="median") / 1e3
    return statistics.median(timeit.repeat(run, number=1, repeat=3))


def _meta_str(meta: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in meta.items())


# -- autotuning a whole compiled graph -------------------------------------------------


def autotune(module: Any, example_inputs: list, target: str, constants: list = ()) -> AutotuneArtifact:
    """Run the output code once on random inputs like the examples, each kernel trying its candidates."""
    launchers = [v for v in vars(module).values() if isinstance(v, TritonLauncher)]  # its kernels, in order
    if target != "triton":
        return AutotuneArtifact((), f"nothing to tune: {target} kernels have no block size")
    if not launchers:
        return AutotuneArtifact((), "nothing to tune: no Triton kernels")
    try:
        inputs = [random_like(t) if isinstance(t, torch.Tensor) else t for t in example_inputs]
    except Exception as e:  # e.g. sizes known only at run time
        return AutotuneArtifact((), f"not tuned: could not make example inputs ({type(e).__name__}: {e})")
    for launcher in launchers:
        launcher.tune = True
    try:
        module.call(*inputs, *constants)
    finally:
        for launcher in launchers:
            launcher.tune = False
            launcher._launches.clear()  # the real first call compiles for the real inputs
    choices = tuple(launcher.choice for launcher in launchers if launcher.choice is not None)
    where = "on the GPU (triton.testing.do_bench)" if launchers[0].direct \
        else "in Triton's interpreter (not meaningful)"
    return AutotuneArtifact(choices, f"benchmarked each candidate once at compile time, {where}")


def matmul_race(built: tuple, target: str, config: Config) -> bool:
    """Whether to build the graph again with matmuls as template kernels and keep the faster: in
    max-autotune on Triton, when the decomposed graph has a matmul the library would compute, unless the
    user chose (``config.matmul_template``)."""
    return config.matmul_template is None and target == "triton" and config.mode.startswith("max-autotune") \
        and any(n.target in ("mm.default", "addmm.default") for n in built[0].passes.final.nodes)


def faster_graph(library: tuple, template: tuple, example_inputs: list) -> tuple:
    """Time both builds of one graph on random inputs like the examples; keep the faster, say why.

    ``library`` calls torch's matmul and runs the work after it in separate kernels; ``template`` computes
    the matmul in a generated kernel with that work fused in. Inductor's max-autotune makes the same
    choice per matmul (``select_algorithm``); here it is made for the whole graph. The two times go into
    the autotune record and the fusion view.
    """
    try:
        inputs = [random_like(t) if isinstance(t, torch.Tensor) else t for t in example_inputs]
    except Exception:  # sizes known only at run time: nothing to time, and no template for them either
        return library
    on_gpu = any(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs)
    rows = [(_time(lambda b=b: b[2].call(*inputs, *b[1]), on_gpu), name, b) for name, b in
            (("library matmul + separate kernels", library), ("matmul template with fused epilogue", template))]
    (seconds, best, (arts, constants, module)), (other_seconds, other, _) = sorted(rows, key=lambda r: r[0])
    choice = AutotuneChoice("matmul", best, seconds, ((best, seconds), (other, other_seconds)), {})
    tuning = replace(arts.runtime.autotune, choices=(*arts.runtime.autotune.choices, choice))
    decision = FusionDecision("matmul", "epilogue", arts is template[0], f"timed, chose the {best}: "
                              f"{seconds * 1e6:.1f} us vs {other_seconds * 1e6:.1f} us ({other})")
    schedule = replace(arts.schedule, decisions=(*arts.schedule.decisions, decision))
    return replace(arts, schedule=schedule, runtime=replace(arts.runtime, autotune=tuning)), constants, module


def apply_choices(launchers: list[TritonLauncher], artifact: AutotuneArtifact | None) -> None:
    """Give a freshly loaded output module the block sizes chosen when it was compiled (cache hits)."""
    by_name = {c.kernel: c for c in artifact.choices} if artifact else {}
    for launcher in launchers:
        launcher.choice = by_name.get(launcher.name, launcher.choice)


def random_like(t: torch.Tensor) -> torch.Tensor:
    """A real tensor with ``t``'s sizes, strides, dtype and device (``t`` may be fake)."""
    size, stride = [int(s) for s in t.shape], [int(s) for s in t.stride()]
    with torch._subclasses.fake_tensor.unset_fake_temporarily():
        out = torch.empty_strided(size, stride, dtype=t.dtype, device=t.device)
        return out.normal_() if t.dtype.is_floating_point else out.random_(0, 2 if t.dtype == torch.bool else 16)


# -- allocating output buffers -----------------------------------------------------------


class _Allocators(dict):
    """``empty_strided[device](size, stride, dtype)``, the fastest correct allocator per device.

    ``torch.empty(size, dtype=..., device=...)`` parses keyword arguments and
    costs microseconds. The entry points Inductor's output code uses take
    sizes, strides and dtype positionally and cost a fraction of that, but
    allocate on the *current* device of their kind: right for the CPU, and for
    a GPU when there is only one.
    """

    def __missing__(self, device: str) -> Callable:
        kind, guards = device.split(":")[0], torch._C._dynamo.guards
        alloc = guards._empty_strided_cpu if kind == "cpu" else guards._empty_strided_cuda \
            if kind == "cuda" and torch.cuda.device_count() == 1 else \
            lambda size, stride, dtype: torch.empty_strided(size, stride, dtype=dtype, device=device)
        return self.setdefault(device, alloc)


empty_strided = _Allocators()
