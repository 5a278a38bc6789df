"""``mode="reduce-overhead"``: replay the whole compiled graph as one CUDA graph.

Launching k kernels costs k launches of CPU time, however small the tensors.
A CUDA graph records those launches once and replays them with a single call.
The recording fixes every pointer, so the graph runs on *static* buffers: each
call copies its inputs into the static inputs, replays, and hands back copies
of the static outputs.

The copies out are a choice for correctness: Inductor hands back the static
outputs themselves (the next replay overwrites them, and it raises if a
stale one is read). toycompiler never returns a tensor that a later call
could change behind the caller's back, and pays one copy per output for it.

Mirrors: torch/_inductor/cudagraph_trees.py (and the simpler
``cudagraphify_impl`` in torch/_inductor/compile_fx.py).
Leaves out: memory pools shared between graphs, and static (parameter) inputs
that skip the copy. A new input shape records a new graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def cudagraphs_decision(mode: str, example_inputs: list) -> tuple[bool, str]:
    """Whether calls replay a CUDA graph, and why (not)."""
    if mode != "reduce-overhead":
        return False, f"off (mode={mode!r}; mode='reduce-overhead' turns them on)"
    if not torch.cuda.is_available():
        return False, "off: no CUDA GPU (CUDA graphs record GPU launches); runs as mode='default'"
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        return False, "off: a graph input is not a tensor"
    if not example_inputs or any(t.device.type != "cuda" for t in example_inputs):
        return False, "off: an input is not on the GPU"
    if any(not isinstance(s, int) for t in example_inputs for s in t.shape):
        return False, "off: symbolic sizes (a recorded graph has fixed sizes)"
    return True, "on: the first call records the graph; later calls copy inputs in, replay, copy outputs out"


class CUDAGraphRunner:
    """Callable like the compiled graph; records on the first call of each input shape, replays afterwards."""

    def __init__(self, call: Callable):
        self.call = call
        self.graphs: dict[tuple, _Recording] = {}  # one recording per set of input shapes and strides

    def __call__(self, *args: torch.Tensor) -> Any:
        if (key := tuple((a.shape, a.stride()) for a in args)) not in self.graphs:
            self.graphs[key] = _Recording(self.call, args)
        return self.graphs[key].replay(args)


class _Recording:
    """One CUDA graph over static copies of the inputs it was recorded with."""

    def __init__(self, call: Callable, args: tuple):
        self.static_inputs = [a.new_empty_strided(a.shape, a.stride()).copy_(a) for a in args]  # (a's dtype, device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up: compile kernels, allocate, outside the recording
            call(*self.static_inputs)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_outputs = call(*self.static_inputs)

    def replay(self, args: tuple) -> tuple:
        torch._foreach_copy_(self.static_inputs, args)  # each input into its static copy, in one call
        self.graph.replay()
        return tuple(out.clone() for out in self.static_outputs)
