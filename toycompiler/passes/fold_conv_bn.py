"""Fold an eval-mode BatchNorm into the convolution that feeds it.

In eval mode BatchNorm is an affine map per channel, ``y = (x - mean) / sqrt(var + eps) * w + b``,
so ``bn(conv(x))`` equals one convolution with rescaled weights and a new bias. This is done only
when the convolution's and the BatchNorm's tensors are constants of the graph (``get_attr`` nodes):
graph *inputs* may change between calls, so they are left alone.

Runs before decomposition, on the graph a backend receives. The frontend (like TorchDynamo) inlines
``Module.forward``, so that graph holds no ``call_module`` node; a graph already at ATen level whose
weights are constants (``make_fx`` of a module: its weights become ``get_attr`` nodes) can match.
The pass matches ``convolution -> native_batch_norm / _native_batch_norm_legit_no_training`` with
``training=False``. The new weights come from ``torch.nn.utils.fusion``.

Mirrors: torch/_inductor/fx_passes/freezing_patterns.py and torch/fx/experimental/optimization.py
(``fuse``). Leaves out: linear + BatchNorm, BatchNorm in training mode (statistics change), and
graphs of ``nn.Module`` calls (``fx.symbolic_trace`` output), which ``fuse`` handles.
"""

from __future__ import annotations

import copy
import operator

import torch
from torch.nn.utils.fusion import fuse_conv_bn_weights

from .fold import constant_node

aten = torch.ops.aten
BATCH_NORM, BATCH_NORM_EVAL = aten.native_batch_norm.default, aten._native_batch_norm_legit_no_training.default


def fold_conv_bn(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, list[str]]:
    """Return a graph module (a copy, if anything changed) and what was folded."""
    if not any(map(_foldable, gm.graph.nodes)):
        return gm, []
    gm = copy.deepcopy(gm)
    changes = [_fold(gm, node) for node in list(gm.graph.nodes) if _foldable(node)]
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm, changes


def _foldable(node: torch.fx.Node) -> bool:
    """An eval-mode batch norm of a convolution that nothing else reads, all their tensors constants."""
    if node.target not in (BATCH_NORM, BATCH_NORM_EVAL) or (node.target is BATCH_NORM and node.args[5]):
        return False  # not a batch norm, or one in training mode
    conv = node.args[0]
    # a convolution read by nothing else, not transposed; weights, biases and statistics (None: left out) its own
    # constants, not graph inputs; the batch norm's results read only through getitem
    return isinstance(conv, torch.fx.Node) and conv.target is aten.convolution.default and len(conv.users) == 1 \
        and not conv.args[6] and all(t is None or t.op == "get_attr" for t in conv.args[1:3] + node.args[1:5]) \
        and all(u.target is operator.getitem for u in node.users)


def _fold(gm: torch.fx.GraphModule, bn: torch.fx.Node) -> str:
    """New weights and bias for the convolution; the batch norm's output becomes the convolution's."""
    conv = bn.args[0]
    w, b, bn_w, bn_b, mean, var = (None if n is None else getattr(gm, n.target) for n in conv.args[1:3] + bn.args[1:5])
    attrs = [constant_node(gm, f"_folded_{conv.name}_{what}", value.detach(), before=conv)
             for value, what in zip(fuse_conv_bn_weights(w, b, mean, var, bn.args[-1], bn_w, bn_b), ("weight", "bias"))]
    conv.args = (conv.args[0], *attrs, *conv.args[3:])
    for user in [u for u in bn.users if u.args[1] == 0]:  # its normalised output (the others: statistics)
        user.replace_all_uses_with(conv)
    return f"{bn.name} folded into {conv.name}: new weights and bias, one op fewer"
