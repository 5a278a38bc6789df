"""Training: compile the forward *and* the backward graph, through torch's AOTAutograd.

When an input requires grad, the captured graph must also say how to compute
gradients. AOTAutograd (torch/_functorch/aot_autograd.py) traces the graph
together with its derivative (autograd's own formulas), then partitions the
joint graph into two graphs::

    forward(primals...)              -> (outputs..., saved tensors...)
    backward(saved..., tangents...)  -> (grad of each input, or None)

and hands each to a compiler: here, toycompiler's own backend, so both become
fused kernels. The result is an ``autograd.Function`` whose ``forward`` and
``backward`` run the generated code.

The split is AOTAutograd's min-cut partitioner, as Inductor's: it saves the
fewest bytes it can and lets the backward recompute cheap pointwise values
from them (the default partitioner saves whatever the backward reads). A
hand-written RMS norm's training step over [8192, 2048] floats then no longer
writes ``x * rstd`` in the forward to read it back in the backward: 0.78x
torch.compile before, 0.88x after (an H200, GPU time); a softmax's 1.13x
became 1.35x.

Mirrors: torch/_inductor/compile_fx.py (``compile_fx`` handing
``fw_compiler``/``bw_compiler``/``partition_fn`` to ``aot_autograd``).
Leaves out: inference graphs compiled without autograd when grad mode is off
at call time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.fx
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ..passes.decompose import TRACING, decomposition_table, nearest_as_expand
from . import CompiledGraph

CompileFn = Callable[[torch.fx.GraphModule, list], CompiledGraph]  # one graph -> kernels (never raises)


def compile_training(gm: torch.fx.GraphModule, example_inputs: list, compile_graph: CompileFn) -> CompiledGraph:
    """A callable whose outputs carry a compiled backward; artifacts hold both graphs.

    ``compile_graph`` compiles one graph (the pipeline passes its own): the forward and the backward
    each go through it, so either may fall back to eager on its own, with its reason.
    """
    if any(isinstance(s, torch.SymInt) for n in gm.graph.nodes if n.op == "placeholder"
           for s in getattr(n.meta.get("val", n.meta.get("example_value")), "shape", ())):  # guards admit other sizes
        raise NotImplementedError("training with symbolic sizes: AOTAutograd traces the example's sizes here, "
                                  "so the kernels would fit that size only")
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch import config as functorch_config
    from torch._functorch.aot_autograd import make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    artifacts: dict[str, Any] = {}  # "forward", "backward" -> what compiling that graph recorded

    def compile_one(kind: str, graph: torch.fx.GraphModule, inputs: list) -> Callable:  # kind: forward or backward
        graph, kept = drop_none_outputs(graph)
        with unset_fake_temporarily():  # AOTAutograd calls this inside its fake mode; constants are real
            result = compile_graph(graph, list(inputs))
        call = result.call if kept is None else _with_nones(result.call, *kept)
        call = _with_traced_layouts(call, inputs) if kind == "backward" else call
        arts = result.artifacts  # a fallback's reason says which of the two graphs ran eagerly
        artifacts[kind] = arts if arts.fallback_reason is None else dataclasses.replace(
            arts, backend=f"{arts.backend} ({kind})", fallback_reason=f"{kind} graph: {arts.fallback_reason}")
        return make_boxed_func(call)  # AOTAutograd passes one list, freed as it goes

    # Compile the backward now rather than at the first .backward(), so the report shows it.
    eager_backward = functorch_config.patch(force_non_lazy_backward_lowering=True)
    # The inference path's decompositions; attention takes its math form (matmuls and a softmax) before
    # autograd differentiates it, so that the backward is made of ops the backend lowers too; so does nearest
    # upsampling by whole factors (an expand: passes/decompose.py's upsample_nearest).
    math_attention = torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH)
    with eager_backward, TRACING, nearest_as_expand(), math_attention:
        run = aot_autograd(fw_compiler=partial(compile_one, "forward"), bw_compiler=partial(compile_one, "backward"),
                           decompositions=decomposition_table(), partition_fn=min_cut_rematerialization_partition)(
            gm, example_inputs)
    return CompiledGraph(run, dataclasses.replace(artifacts["forward"], backward=artifacts.get("backward")))


def drop_none_outputs(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, tuple | None]:
    """A backward graph returns None for inputs that need no gradient; kernels only make tensors.

    Returns a copy of ``gm`` without those outputs, and (positions kept, total) to put them back.
    """
    values = list(gm.graph.output_node().args[0])
    kept = tuple(i for i, v in enumerate(values) if v is not None)
    if len(kept) == len(values):
        return gm, None
    # A new graph over the same modules, not a deepcopy: a node's meta may hold what cannot be copied.
    graph = torch.fx.Graph()
    outputs = graph.graph_copy(gm.graph, {})
    graph.output(tuple(outputs[i] for i in kept))
    return torch.fx.GraphModule(gm, graph), (kept, len(values))


def _with_traced_layouts(call: Callable, inputs: list) -> Callable:
    """The backward's code reads its inputs with the strides AOTAutograd traced them with, but a saved
    tensor is what the compiled forward returned, and that may be laid out otherwise (a view in eager
    that the forward computed into a buffer of its own, say with a batch of 1). Such an input is copied
    into the traced layout first. The forward's code returns the same layouts on every call, so which
    inputs need it is found once."""
    # sizes and strides as plain ints (with dynamic shapes they are symbols: those inputs are left as they come)
    static = [isinstance(t, torch.Tensor) and all(isinstance(v, int) for v in (*t.shape, *t.stride())) for t in inputs]
    traced = [(t.shape, t.stride()) if ok else None for t, ok in zip(inputs, static)]
    mismatched: list[int] | None = None

    def run(*args: Any) -> Any:
        nonlocal mismatched
        if mismatched is None:
            mismatched = [i for i, (a, t) in enumerate(zip(args, traced)) if t and a.stride() != t[1]]
        if mismatched:
            args = [a.new_empty_strided(*traced[i]).copy_(a) if i in mismatched else a for i, a in enumerate(args)]
        return call(*args)
    return run


def _with_nones(call: Callable, kept: tuple[int, ...], total: int) -> Callable:
    def run(*args: Any) -> list:
        values = dict(zip(kept, call(*args)))
        return [values.get(i) for i in range(total)]  # None where the graph returned None
    return run
